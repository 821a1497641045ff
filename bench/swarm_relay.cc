#include "bench/swarm_relay.h"

#include <atomic>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/steady_ns.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/credentials.h"

namespace dlio::swarm {

namespace {

// Links not yet over (SwarmRelayLink::Live).
std::atomic<int> live_links{0};

// One member's Join stream on the relay listener: routed at its first arrival to the member's relay hub.
class JoinReactor final : public grpc::ServerBidiReactor<v1::RelayArrive, v1::BarrierRelease> {
 public:
  JoinReactor(grpc::CallbackServerContext* ctx, SwarmRelayRouter* router)
      : ctx_(ctx),
        router_(router),
        out_(std::make_shared<WriteQueue<v1::BarrierRelease>>(kMaxQueued,
                                                              [this](const v1::BarrierRelease* m) { StartWrite(m); })) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End();
      return;
    }
    if (member_.empty()) {
      job_ = in_.job_id(), phase_ = in_.phase_id(), member_ = in_.agent();
      hub_ = router_->HubOf(job_, member_);
      if (hub_ == nullptr) {
        out_->Close();
        Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            absl::StrCat("swarm relay: member '", member_, "' of job ", job_,
                                         " has no relay session routed (its order named none of this swarm)")));
        return;
      }
      hub_->Join(job_, phase_, member_,
                 [out = out_, job = job_, phase = phase_](uint64_t step, const barrier_timing::Release& r) {
                   const auto p = out->Push(RelayRelease(job, phase, step, r));
                   return p == WriteQueue<v1::BarrierRelease>::Pushed::kStarted ||
                          p == WriteQueue<v1::BarrierRelease>::Pushed::kQueued;
                 });
    }
    hub_->Arrive(job_, phase_, member_, in_.step(), in_.compute_left_ns(), SteadyNs());
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    if (out_->Done(ok)) Finish(grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  // Far above what a member is sent (one release per step).
  static constexpr size_t kMaxQueued = 1024;

  // The member's stream ended: a clean end (WritesDone) leaves the group, a cancelled one is a member lost.
  void End() {
    if (hub_ != nullptr) {
      const bool broken = ctx_->IsCancelled();
      hub_->Leave(job_, phase_, member_, broken, broken ? "its barrier stream to the relay broke" : "");
    }
    if (out_->Close()) Finish(grpc::Status::OK);
  }

  grpc::CallbackServerContext* const ctx_;
  SwarmRelayRouter* const router_;
  // Shared with the hub's reply: a reply after the stream's end finds the queue closed.
  const std::shared_ptr<WriteQueue<v1::BarrierRelease>> out_;
  v1::RelayArrive in_;
  std::string job_, phase_, member_;  // from the first arrival (touched by the reading reaction only)
  RelayHub* hub_ = nullptr;
};

class RelayService final : public v1::BarrierRelay::CallbackService {
 public:
  explicit RelayService(SwarmRelayRouter* router) : router_(router) {}
  grpc::ServerBidiReactor<v1::RelayArrive, v1::BarrierRelease>* Join(grpc::CallbackServerContext* ctx) override {
    return new JoinReactor(ctx, router_);
  }

 private:
  SwarmRelayRouter* const router_;
};

}  // namespace

// --- SwarmRelayRouter ---

void SwarmRelayRouter::AddHub(const std::string& relay, RelayHub* hub) {
  MutexLock lk(&mu_);
  hubs_[relay] = hub;
}

void SwarmRelayRouter::Route(const std::string& job, const std::string& member, const std::string& relay) {
  MutexLock lk(&mu_);
  routes_[{job, member}] = relay;
}

RelayHub* SwarmRelayRouter::HubOf(const std::string& job, const std::string& member) const {
  MutexLock lk(&mu_);
  auto r = routes_.find({job, member});
  if (r == routes_.end()) return nullptr;
  auto h = hubs_.find(r->second);
  return h == hubs_.end() ? nullptr : h->second;
}

// --- SwarmRelayServer ---

struct SwarmRelayServer::Impl {
  std::unique_ptr<RelayService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

SwarmRelayServer::SwarmRelayServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SwarmRelayServer::~SwarmRelayServer() { Shutdown(); }

void SwarmRelayServer::Shutdown() {
  // 1 s: the members' streams end with their phases; one still open at teardown is cut.
  if (impl_->server) impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

std::string SwarmRelayServer::endpoint() const { return absl::StrCat("127.0.0.1:", impl_->port); }

absl::StatusOr<std::unique_ptr<SwarmRelayServer>> SwarmRelayServer::Start(SwarmRelayRouter* router) {
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<RelayService>(router);
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", ServerCredentials(Transport()), &impl->port);
  b.RegisterService(impl->service.get());
  b.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  impl->server = b.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return absl::UnavailableError("--relay on: the swarm cannot listen for its relay sessions on 127.0.0.1:0");
  }
  return std::unique_ptr<SwarmRelayServer>(new SwarmRelayServer(std::move(impl)));
}

// --- SwarmRelayLink ---

SwarmRelayLink::SwarmRelayLink(v1::BarrierRelay::Stub* stub, std::string job, std::string phase, std::string member,
                               OnRelease on_release)
    : job_(std::move(job)),
      phase_(std::move(phase)),
      member_(std::move(member)),
      on_release_(std::move(on_release)),
      queue_(kMaxQueued, [this](const v1::RelayArrive* m) { StartWrite(m); }) {
  live_links.fetch_add(1);
  stub->async()->Join(&context_, this);
  AddHold();  // the write side, released once WritesDone is through: writes start from the owner's threads
  StartRead(&in_);
  StartCall();
}

int SwarmRelayLink::Live() { return live_links.load(); }

bool SwarmRelayLink::Send(uint64_t step, int64_t compute_left_ns) {
  v1::RelayArrive a;
  a.set_job_id(job_);
  a.set_phase_id(phase_);
  a.set_agent(member_);
  a.set_step(step);
  a.set_compute_left_ns(compute_left_ns);
  const auto p = queue_.Push(std::move(a));
  return p == WriteQueue<v1::RelayArrive>::Pushed::kStarted || p == WriteQueue<v1::RelayArrive>::Pushed::kQueued;
}

void SwarmRelayLink::Close(bool cancel) {
  if (cancel) context_.TryCancel();
  if (queue_.Close(/*drain=*/!cancel)) StartWritesDone();
}

void SwarmRelayLink::OnWriteDone(bool ok) {
  if (queue_.Done(ok)) StartWritesDone();
}

void SwarmRelayLink::OnWritesDoneDone(bool /*ok*/) { RemoveHold(); }

void SwarmRelayLink::OnReadDone(bool ok) {
  if (!ok) return;
  on_release_(in_);
  StartRead(&in_);
}

void SwarmRelayLink::OnDone(const grpc::Status& /*s*/) {
  live_links.fetch_sub(1);
  delete this;
}

}  // namespace dlio::swarm
