#include "agent/relay.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/relay_credentials.h"
#include "base/steady_ns.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/credentials.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace dlio {

// --- RelayHub ---

RelayHub::Phase* RelayHub::StateFor(const std::string& job, const std::string& phase) {
  Phase& p = jobs_[job];
  if (p.phase == phase) return &p;
  // Phase ids of a job never repeat; an open phase is the relay's current one and a closed one is over, so a message
  // of another phase is either late (dropped) or early (the next phase: it replaces a closed one).
  if (p.open || phase == p.closed) return nullptr;
  std::string closed = std::move(p.closed);
  p = Phase();
  p.phase = phase;
  p.closed = std::move(closed);
  return &p;
}

void RelayHub::Open(const std::string& job, const std::string& phase, const std::vector<std::string>& group,
                    const std::string& self, Forward forward, Lost lost) {
  OpenLevels(job, phase, std::vector<std::vector<std::string>>{group}, self, std::move(forward), std::move(lost));
}

std::vector<std::vector<std::string>> RelayHub::LevelsOf(const PhaseOrder& order) {
  std::vector<std::vector<std::string>> levels;
  if (order.barrier_group.empty()) return levels;
  levels.push_back(order.barrier_group);
  levels.insert(levels.end(), order.barrier_upper.begin(), order.barrier_upper.end());
  return levels;
}

void RelayHub::OpenLevels(const std::string& job, const std::string& phase,
                          const std::vector<std::vector<std::string>>& levels, const std::string& self,
                          Forward forward, Lost lost) {
  MutexLock lk(&mu_);
  Phase& p = jobs_[job];
  if (p.phase != phase) {
    std::string closed = std::move(p.closed);
    p = Phase();
    p.phase = phase;
    p.closed = std::move(closed);
  }
  p.open = true;
  p.self = self;
  p.index.clear();
  p.levels.assign(levels.size(), Phase::Level());
  for (size_t l = 0; l < levels.size(); ++l) {
    Phase::Level& v = p.levels[l];
    v.members = levels[l];
    v.agg.Reset(levels[l].size());
    for (size_t k = 0; k < levels[l].size(); ++k) {
      if (levels[l][k] == self) {
        v.self = k;
      } else {
        p.index[levels[l][k]] = {l, k};
      }
    }
  }
  p.forward = std::move(forward);
  p.lost = std::move(lost);
  std::vector<Arrival> pending = std::move(p.pending);
  p.pending.clear();
  for (const Arrival& a : pending) ArriveLocked(p, a);
}

void RelayHub::Close(const std::string& job, const std::string& phase) {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.phase != phase) return;
  it->second.open = false;
  it->second.closed = phase;
  it->second.forward = nullptr;
  it->second.lost = nullptr;
}

void RelayHub::Join(const std::string& job, const std::string& phase, const std::string& member, Reply reply) {
  MutexLock lk(&mu_);
  if (Phase* p = StateFor(job, phase)) p->replies[member] = std::move(reply);
}

void RelayHub::Leave(const std::string& job, const std::string& phase, const std::string& member, bool broken,
                     const std::string& why) {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.phase != phase) return;
  Phase& p = it->second;
  p.replies.erase(member);
  if (broken && p.open && p.lost && p.index.count(member) != 0) p.lost(member, why);  // a plain member, any level
}

void RelayHub::Arrive(const std::string& job, const std::string& phase, const std::string& member, uint64_t step,
                      int64_t compute_left_ns, int64_t now_ns) {
  MutexLock lk(&mu_);
  Phase* p = StateFor(job, phase);
  if (p == nullptr) return;
  const Arrival a{member, step, compute_left_ns, now_ns};
  if (!p->open) {
    p->pending.push_back(a);
    return;
  }
  ArriveLocked(*p, a);
}

void RelayHub::ArriveLocked(Phase& p, const Arrival& a) {
  if (p.levels.empty()) return;
  if (a.member == p.self) return ArriveAt(p, 0, p.levels[0].self, a);  // its own arrival enters at its lowest level
  auto it = p.index.find(a.member);
  if (it == p.index.end()) return;  // not of this relay's groups: dropped
  ArriveAt(p, it->second.first, it->second.second, a);
}

void RelayHub::ArriveAt(Phase& p, size_t l, size_t k, const Arrival& a) {
  if (!p.levels[l].agg.Arrive(k, a.step, a.received_ns, a.left_ns)) return;
  // The forward's instant: the completing arrival's receipt (the climb and the send follow at once; taking it a few
  // microseconds early only adds them to the hop's measured round trip: the bound stays conservative).
  const int64_t now = a.received_ns;
  const int64_t left = p.levels[l].agg.Forward(now);
  if (l + 1 < p.levels.size()) {  // the next level up: the relay's own arrival there, local (latency 0)
    return ArriveAt(p, l + 1, p.levels[l + 1].self, Arrival{p.self, a.step, left, now});
  }
  if (p.forward) p.forward(a.step, left);
}

std::optional<barrier_timing::Release> RelayHub::Released(const std::string& job, const std::string& phase,
                                                          uint64_t step, const barrier_timing::Release& up,
                                                          int64_t received_ns, int64_t now_ns) {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.phase != phase || !it->second.open || it->second.levels.empty()) {
    return std::nullopt;
  }
  Phase& p = it->second;
  const barrier_tree::RelayAggregator& top = p.levels.back().agg;
  if (step != top.step() || top.arrived() != top.members()) {
    return barrier_timing::Release();  // not the step collected: the session drops it as stale, or it is a repeat
  }
  // Down the levels: each level's own release is the release of the level below, received now (local).
  barrier_timing::Release own = up;
  for (size_t l = p.levels.size(); l-- > 0;) {
    Phase::Level& v = p.levels[l];
    const std::vector<barrier_timing::Release> out =
        v.agg.Release(own, l + 1 == p.levels.size() ? received_ns : now_ns, now_ns);
    for (size_t k = 0; k < out.size(); ++k) {
      if (k == v.self) continue;
      auto r = p.replies.find(v.members[k]);
      if (r != p.replies.end() && !r->second(step, out[k])) p.replies.erase(r);
    }
    own = out[v.self];
  }
  return own;
}

int64_t RelayHub::upstream_bound_ns(const std::string& job) const {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job);
  return it == jobs_.end() || it->second.levels.empty() ? -1 : it->second.levels[0].agg.upstream_bound_ns();
}

// --- RelayServer ---

namespace {

using ServerStream = grpc::ServerReaderWriter<v1::BarrierRelease, v1::RelayArrive>;

class RelayService final : public v1::BarrierRelay::Service {
 public:
  RelayService(const Transport& t, RelayHub* hub) : token_(t.token), hub_(hub) {}

  grpc::Status Join(grpc::ServerContext* ctx, ServerStream* stream) override {
    if (!token_.empty()) {
      const auto& md = ctx->client_metadata();
      auto it = md.find(kAuthMetadataKey);
      if (it == md.end() || !TokenMatches(std::string_view(it->second.data(), it->second.size()), token_)) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "relay: missing or wrong token (--token-file)");
      }
    }
    auto write_mu = std::make_shared<Mutex>();
    v1::RelayArrive in;
    std::string job, phase, member;
    while (stream->Read(&in)) {
      if (member.empty()) {
        job = in.job_id(), phase = in.phase_id(), member = in.agent();
        hub_->Join(job, phase, member, [stream, write_mu, job, phase](uint64_t step, const barrier_timing::Release& r) {
          const v1::BarrierRelease m = RelayRelease(job, phase, step, r);
          MutexLock lk(write_mu.get());
          return stream->Write(m);
        });
      }
      hub_->Arrive(job, phase, member, in.step(), in.compute_left_ns(), SteadyNs());
    }
    if (!member.empty()) {
      const bool broken = ctx->IsCancelled();
      hub_->Leave(job, phase, member, broken, broken ? "its barrier stream to the relay broke" : "");
    }
    return grpc::Status::OK;
  }

 private:
  const std::string token_;
  RelayHub* const hub_;
};

}  // namespace

struct RelayServer::Impl {
  std::unique_ptr<RelayService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

RelayServer::RelayServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RelayServer::~RelayServer() {
  // 1 s: a member's stream that does not end by itself is cut (its phase is over or its job failed).
  if (impl_ && impl_->server) impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

int RelayServer::port() const { return impl_->port; }

absl::StatusOr<std::unique_ptr<RelayServer>> RelayServer::Start(const std::string& listen, const Transport& transport,
                                                                 RelayHub* hub) {
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<RelayService>(transport, hub);
  grpc::ServerBuilder b;
  b.AddListeningPort(listen, ServerCredentials(transport), &impl->port);
  b.RegisterService(impl->service.get());
  b.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  impl->server = b.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--relay-listen: cannot listen on '", listen, "'"));
  }
  return std::unique_ptr<RelayServer>(new RelayServer(std::move(impl)));
}

// --- RelayClient ---

using ClientStream = grpc::ClientReaderWriter<v1::RelayArrive, v1::BarrierRelease>;

namespace {
// gRPC's reason for a channel that did not connect when it is the TLS handshake's, else empty: a call on a channel in
// TRANSIENT_FAILURE fails at once with it (1 s bounds one still connecting, or connecting meanwhile: it then ends
// cleanly, sending nothing).
std::string HandshakeFailure(v1::BarrierRelay::Stub& stub, const Transport& transport) {
  grpc::ClientContext probe;
  probe.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  AddToken(&probe, transport);
  std::unique_ptr<ClientStream> s = stub.Join(&probe);
  s->WritesDone();
  v1::BarrierRelease ignored;
  while (s->Read(&ignored)) {
  }
  const grpc::Status st = s->Finish();
  return !st.ok() && IsHandshakeFailure(st.error_message()) ? st.error_message() : "";
}
}  // namespace

struct RelayClient::Impl {
  std::string job, phase, member;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::BarrierRelay::Stub> stub;
  grpc::ClientContext ctx;
  std::unique_ptr<ClientStream> stream;
  std::thread reader;
  std::string handshake_failure;
  Mutex mu;
  bool closed ABSL_GUARDED_BY(mu) = false;
};

RelayClient::RelayClient(const std::string& endpoint, const Transport& transport, std::string job, std::string phase,
                         std::string member, OnRelease on_release)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.job = std::move(job), im.phase = std::move(phase), im.member = std::move(member);
  im.channel = grpc::CreateCustomChannel(endpoint, ChannelCredentials(transport), SessionChannelArgs(transport));
  im.stub = v1::BarrierRelay::NewStub(im.channel);
  // 2 s to connect, as the agent's session: a relay not there by then is gone (the member waits for the
  // coordinator's verdict; a call on a channel still connecting would fail its first write).
  if (!im.channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(2)) && transport.tls()) {
    im.handshake_failure = HandshakeFailure(*im.stub, transport);
  }
  AddToken(&im.ctx, transport);
  im.stream = im.stub->Join(&im.ctx);
  im.reader = std::thread([&im, on_release = std::move(on_release)] {
    v1::BarrierRelease r;
    while (im.stream->Read(&r)) {
      if (r.job_id() == im.job && r.phase_id() == im.phase) {
        on_release(r.step(), barrier_timing::Release{r.wait_after_compute_end_ns(), r.held_ns()}, SteadyNs());
      }
    }
  });
}

RelayClient::~RelayClient() { Close(); }

const std::string& RelayClient::handshake_failure() const { return impl_->handshake_failure; }

bool RelayClient::Send(uint64_t step, int64_t compute_left_ns) {
  v1::RelayArrive a;
  a.set_job_id(impl_->job);
  a.set_phase_id(impl_->phase);
  a.set_agent(impl_->member);
  a.set_step(step);
  a.set_compute_left_ns(compute_left_ns);
  MutexLock lk(&impl_->mu);
  return !impl_->closed && impl_->stream->Write(a);
}

void RelayClient::Close() {
  {
    MutexLock lk(&impl_->mu);
    if (impl_->closed) return;
    impl_->closed = true;
    impl_->stream->WritesDone();
  }
  impl_->reader.join();
  const grpc::Status st = impl_->stream->Finish();
  if (!st.ok()) {
    spdlog::debug("agent '{}': relay stream of job {} phase {} ended: {}", impl_->member, impl_->job, impl_->phase,
                  absl::StrReplaceAll(st.error_message(), {{"\n", " "}}));
  }
}

v1::BarrierRelease RelayRelease(const std::string& job, const std::string& phase, uint64_t step,
                                const barrier_timing::Release& r) {
  v1::BarrierRelease m;
  m.set_job_id(job);
  m.set_phase_id(phase);
  m.set_step(step);
  m.set_wait_after_compute_end_ns(r.wait_after_end_ns);
  m.set_held_ns(r.held_ns);
  return m;
}

}  // namespace dlio
