// libFuzzer target: the coordinator's handlers of what agents send (coordinator/agent_dispatch.h, the code the
// Attach stream runs) driving a real Coordinator (no network, no store).
//
// Each input: a Coordinator, two well-formed agents and a third whose Hello comes from the input, one job placed on
// the first two; then up to 96 agent messages built from the input (FuzzedDataProvider): barrier arrivals, phase
// results (well-formed ones that advance the job, and hostile ones: foreign ranks, NaN timings, continuations,
// parts), progress, errors, heartbeats and raw protobuf bytes, with job and phase ids either the running ones or
// arbitrary. A crash, a sanitizer report or a hang is a finding; so is a job whose reported figures are impossible
// (an AU or a throughput that is NaN, infinite or negative: a result the checks should have refused).
// Run: tests/fuzz/run.sh (bounded, in the suite) or by hand: build/fuzz/bin/fuzz_coordinator -max_total_time=600.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "coordinator/agent_dispatch.h"
#include "coordinator/coordinator.h"
#include "dlio/v1/convert.h"
#include "spdlog/spdlog.h"

namespace {

using dlio::PhaseOrder;

class FakeLink : public dlio::AgentLink {
 public:
  void Accepted(std::chrono::milliseconds, std::chrono::milliseconds) override {}
  void RunPhase(const PhaseOrder& o) override {
    std::lock_guard<std::mutex> lk(mu_);
    last_ = o;
    ++orders_;
    step_ = 0;
  }
  void ReleaseBarrier(const std::string&, const std::string&, uint64_t) override {}
  void Cancel(const std::string&, const std::string&) override {}
  void Drop(const std::string&) override {}
  bool Last(PhaseOrder* o, uint64_t* step) {
    std::lock_guard<std::mutex> lk(mu_);
    *o = last_;
    *step = step_++;
    return orders_ > 0;
  }

 private:
  std::mutex mu_;
  PhaseOrder last_;
  int orders_ = 0;
  uint64_t step_ = 0;
};

const char* kJobs[] = {
    "workflow:\n  train: true\ndataset:\n  format: npz\n  num_files_train: 8\n  record_length_bytes: 1024\n"
    "train:\n  epochs: 2\n",
    "workflow:\n  train: true\n  evaluation: true\ndataset:\n  format: npz\n  num_files_train: 8\n"
    "  num_files_eval: 2\ntrain:\n  epochs: 2\nreader:\n  batch_size: 2\n",
    "workflow:\n  train: false\n  checkpoint: true\ncheckpoint:\n  num_checkpoints_write: 2\n"
    "  num_checkpoints_read: 1\n",
};

dlio::v1::Hello GoodHello(const std::string& name, uint32_t accelerators) {
  dlio::v1::Hello h;
  h.set_protocol_version(dlio::kProtocolVersion);
  h.set_name(name);
  h.set_hostname("node-" + name);
  h.set_instance("i");
  h.set_accelerators(accelerators);
  return h;
}

// A result the agent of `o` could really send.
void WellFormedResult(const PhaseOrder& o, FuzzedDataProvider& in, dlio::v1::PhaseDone* d) {
  for (int r = 0; r < o.local_ranks; ++r) {
    dlio::v1::RankResult* rr = d->add_ranks();
    rr->set_rank(static_cast<uint32_t>(o.first_rank + r));
    rr->set_epoch(static_cast<uint32_t>(o.epoch));
    dlio::v1::BlockTimings* b = rr->add_blocks();
    b->set_block(1);
    b->set_duration_s(in.ConsumeFloatingPointInRange(0.0, 10.0));
    const int steps = in.ConsumeIntegralInRange(0, 4);
    for (int s = 0; s < steps; ++s) {
      b->add_load_s(in.ConsumeFloatingPointInRange(0.0, 1.0));
      b->add_proc_s(in.ConsumeFloatingPointInRange(0.0, 1.0));
      b->add_compute_s(in.ConsumeFloatingPointInRange(0.0, 1.0));
      b->add_barrier_s(in.ConsumeFloatingPointInRange(0.0, 1.0));
    }
    rr->set_bytes(in.ConsumeIntegral<uint32_t>());
    rr->set_samples(in.ConsumeIntegral<uint16_t>());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The results folder of every input's coordinator; removed when the process exits (libFuzzer ends with exit()).
  struct Folder {
    std::string path;
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder folder = [] {
    spdlog::set_level(spdlog::level::off);
    Folder f{std::filesystem::temp_directory_path() / ("dlio-fuzz-coordinator-" + std::to_string(::getpid()))};
    std::filesystem::create_directories(f.path);
    return f;
  }();
  const std::string& results = folder.path;
  FuzzedDataProvider in(data, size);
  dlio::Coordinator::Options o;
  o.results_dir = results;
  o.stop_grace = std::chrono::milliseconds(1);
  absl::StatusOr<std::unique_ptr<dlio::Coordinator>> made = dlio::Coordinator::Create(o, nullptr);
  if (!made.ok()) std::abort();
  dlio::Coordinator& core = **made;

  std::vector<std::shared_ptr<FakeLink>> links;
  std::vector<std::unique_ptr<dlio::AgentInbox>> inboxes;
  auto admit = [&](const dlio::v1::Hello& h) {
    if (!dlio::CheckHello(h).ok()) return;
    auto link = std::make_shared<FakeLink>();
    if (!core.AddAgent(dlio::AgentInfoFromHello(h), h.instance(), link).ok()) return;
    links.push_back(link);
    inboxes.push_back(std::make_unique<dlio::AgentInbox>(&core, h.name(), nullptr));
  };
  const uint32_t accel = in.ConsumeIntegralInRange<uint32_t>(1, 2);
  admit(GoodHello("a0", accel));
  admit(GoodHello("a1", accel));
  if (in.ConsumeBool()) {
    dlio::v1::Hello h;
    if (h.ParseFromString(in.ConsumeRandomLengthString(256))) admit(h);
  }
  dlio::JobRequest r;
  r.workload_yaml = kJobs[in.ConsumeIntegralInRange<size_t>(0, 2)];
  r.agents = 2;
  if (!core.Submit(r).ok()) std::abort();
  // The runner places the job and sends the first orders.
  PhaseOrder cur;
  uint64_t step = 0;
  for (int i = 0; i < 200 && !(links[0]->Last(&cur, &step) && links[1]->Last(&cur, &step)); ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (int n = 0; n < 96 && in.remaining_bytes() > 0; ++n) {
    const size_t k = in.ConsumeIntegralInRange<size_t>(0, inboxes.size() - 1);
    links[k]->Last(&cur, &step);
    const bool ours = in.ConsumeProbability<float>() < 0.8f;
    const std::string job = ours ? cur.job_id : in.ConsumeRandomLengthString(24);
    const std::string phase = ours ? cur.phase_id : in.ConsumeRandomLengthString(24);
    dlio::v1::AgentMessage m;
    switch (in.ConsumeIntegralInRange(0, 7)) {
      case 0: {
        dlio::v1::BarrierArrive* a = m.mutable_barrier_arrive();
        a->set_job_id(job);
        a->set_phase_id(phase);
        a->set_step(in.ConsumeBool() ? step : in.ConsumeIntegral<uint64_t>());
        break;
      }
      case 1:
      case 2: {  // a well-formed result, maybe cut into parts
        dlio::v1::PhaseDone d;
        d.set_job_id(job);
        d.set_phase_id(phase);
        WellFormedResult(cur, in, &d);
        const size_t budget = in.ConsumeIntegralInRange<size_t>(64, 4096);
        std::vector<dlio::v1::PhaseDone> parts = dlio::SplitPhaseDone(d, budget);
        for (size_t p = 0; p + 1 < parts.size(); ++p) {
          dlio::v1::AgentMessage pm;
          *pm.mutable_phase_done() = parts[p];
          inboxes[k]->Deliver(pm);
        }
        *m.mutable_phase_done() = parts.back();
        break;
      }
      case 3: {  // a hostile result
        dlio::v1::PhaseDone* d = m.mutable_phase_done();
        d->set_job_id(job);
        d->set_phase_id(phase);
        d->set_more(in.ConsumeProbability<float>() < 0.2f);
        const int ranks = in.ConsumeIntegralInRange(0, 3);
        for (int i = 0; i < ranks; ++i) {
          dlio::v1::RankResult* rr = d->add_ranks();
          rr->set_rank(in.ConsumeBool() ? static_cast<uint32_t>(cur.first_rank + i) : in.ConsumeIntegral<uint32_t>());
          rr->set_epoch(in.ConsumeIntegral<uint32_t>());
          rr->set_continuation(in.ConsumeProbability<float>() < 0.2f);
          const int blocks = in.ConsumeIntegralInRange(0, 2);
          for (int b = 0; b < blocks; ++b) {
            dlio::v1::BlockTimings* bt = rr->add_blocks();
            bt->set_block(in.ConsumeIntegral<uint32_t>());
            bt->set_duration_s(in.ConsumeFloatingPoint<double>());
            const int steps = in.ConsumeIntegralInRange(0, 3);
            for (int s = 0; s < steps; ++s) bt->add_load_s(in.ConsumeFloatingPoint<double>());
            for (int s = 0; s < in.ConsumeIntegralInRange(0, 3); ++s) bt->add_proc_s(in.ConsumeFloatingPoint<double>());
            for (int s = 0; s < steps; ++s) bt->add_compute_s(in.ConsumeFloatingPoint<double>());
            for (int s = 0; s < steps; ++s) bt->add_barrier_s(in.ConsumeFloatingPoint<double>());
          }
          if (in.ConsumeBool()) {
            dlio::v1::CheckpointTiming* c = rr->add_checkpoints();
            c->set_index(in.ConsumeIntegral<uint32_t>());
            c->set_duration_s(in.ConsumeFloatingPoint<double>());
            c->set_bytes(in.ConsumeIntegral<uint64_t>());
          }
          rr->set_bytes(in.ConsumeIntegral<uint64_t>());
          rr->set_ops(in.ConsumeIntegral<uint64_t>());
          rr->set_samples(in.ConsumeIntegral<uint64_t>());
          rr->set_dropped_samples(in.ConsumeIntegral<uint64_t>());
          rr->set_trace_events(in.ConsumeRandomLengthString(96));
        }
        break;
      }
      case 4: {
        dlio::v1::Progress* p = m.mutable_progress();
        p->set_job_id(job);
        p->set_phase_id(phase);
        p->set_done(in.ConsumeIntegral<uint64_t>());
        p->set_total(in.ConsumeIntegral<uint64_t>());
        p->set_samples(in.ConsumeIntegral<uint64_t>());
        p->set_bytes(in.ConsumeIntegral<uint64_t>());
        break;
      }
      case 5: {
        dlio::v1::Error* e = m.mutable_error();
        e->set_job_id(job);
        e->set_phase_id(phase);
        e->set_code(static_cast<dlio::v1::ErrorCode>(in.ConsumeIntegral<int32_t>()));  // undeclared values too
        e->set_message(in.ConsumeRandomLengthString(256));
        break;
      }
      case 6:
        m.mutable_heartbeat()->set_agent_time_ns(in.ConsumeIntegral<int64_t>());
        break;
      default:
        if (!m.ParseFromString(in.ConsumeRandomLengthString(512))) m.Clear();
        break;
    }
    inboxes[k]->Deliver(m);
    if (n % 8 == 7) std::this_thread::sleep_for(std::chrono::microseconds(100));  // let the runner move on
  }
  // Whatever became of the job, a figure it reports is a number >= 0, or not measured (never impossible).
  auto impossible = [](const std::optional<double>& v) { return v.has_value() && !(std::isfinite(*v) && *v >= 0); };
  for (const dlio::JobInfoData& j : core.ListJobs()) {
    std::vector<dlio::JobEventData> events;
    if (!core.WaitEvents(j.record.id, 0, &events, std::chrono::milliseconds(0)).ok()) std::abort();
    for (const dlio::JobEventData& e : events) {
      for (const dlio::EpochMetric& em : e.epochs) {
        if (impossible(em.au_percent) || impossible(em.samples_per_second)) std::abort();
      }
    }
  }
  core.Stop();
  return 0;
}
