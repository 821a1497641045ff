// AgentSession (the agent's side of the Attach protocol) with a fake coordinator link, a fake phase host and an
// injected clock: Hello and Welcome, phase orders and their refusals, idempotent repeats across a reconnect, the step
// barrier and stale releases, cancel, lease and heartbeat, and the end of a session. No network, no phases run.
#include "agent/agent_session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlio/v1/convert.h"

namespace dlio {
namespace {

using std::chrono::milliseconds;
using Clock = AgentSession::Clock;

// A fixed point of the steady clock: every test runs on this injected time, never on the real one.
const Clock::time_point kT0 = Clock::time_point(std::chrono::seconds(1000));

// Records every message the session sends, in order; Send() may come from the test and a waiting thread at once.
class FakeLink : public CoordinatorLink {
 public:
  bool Send(const v1::AgentMessage& m) override {
    std::lock_guard<std::mutex> lk(mu_);
    sent_.push_back(m);
    return true;
  }
  std::vector<v1::AgentMessage> Sent() {
    std::lock_guard<std::mutex> lk(mu_);
    return sent_;
  }
  // The messages sent since the last Take().
  std::vector<v1::AgentMessage> Take() {
    std::lock_guard<std::mutex> lk(mu_);
    return std::exchange(sent_, {});
  }

 private:
  std::mutex mu_;
  std::vector<v1::AgentMessage> sent_;
};

// Records what the session asks of it; the test calls AgentSession::Finish() itself, when it chooses.
class FakeHost : public PhaseHost {
 public:
  void Start(PhaseCommand cmd) override {
    std::lock_guard<std::mutex> lk(mu_);
    started_.push_back(std::move(cmd));
  }
  void Released(const std::string& job_id, uint64_t step) override {
    std::lock_guard<std::mutex> lk(mu_);
    released_.push_back(step);
  }
  void Stop(const std::string& job_id) override {
    std::lock_guard<std::mutex> lk(mu_);
    ++stops_;
  }
  const PhaseProgress& progress(const std::string& job_id) const override { return progress_; }

  std::vector<PhaseCommand> Started() {
    std::lock_guard<std::mutex> lk(mu_);
    return started_;
  }
  std::vector<uint64_t> ReleasedSteps() {
    std::lock_guard<std::mutex> lk(mu_);
    return released_;
  }
  int Stops() {
    std::lock_guard<std::mutex> lk(mu_);
    return stops_;
  }
  PhaseProgress progress_;

 private:
  std::mutex mu_;
  std::vector<PhaseCommand> started_;
  std::vector<uint64_t> released_;
  int stops_ = 0;
};

const char* const kYaml =
    "workflow:\n  generate_data: false\n  train: true\ndataset:\n  format: npz\n  num_files_train: 12\n"
    "  num_samples_per_file: 1\n  record_length_bytes: 1024\nreader:\n  batch_size: 3\n  read_threads: 2\n"
    "train:\n  epochs: 2\n  computation_time: 0.01\n";

v1::RunPhase Order(const std::string& job, const std::string& phase, const std::string& yaml = kYaml) {
  v1::RunPhase rp;
  rp.set_job_id(job);
  rp.set_phase_id(phase);
  rp.set_kind(v1::PHASE_KIND_TRAIN_EPOCH);
  rp.set_workload_yaml(yaml);
  rp.set_world_size(6);
  rp.set_first_rank(2);
  rp.set_local_ranks(2);
  rp.set_epoch(1);
  rp.set_num_agents(3);
  rp.set_agent_index(1);
  return rp;
}

v1::CoordinatorMessage RunMsg(const v1::RunPhase& rp) {
  v1::CoordinatorMessage m;
  *m.mutable_run_phase() = rp;
  return m;
}

v1::CoordinatorMessage Release(const std::string& job, const std::string& phase, uint64_t step) {
  v1::CoordinatorMessage m;
  v1::BarrierRelease* r = m.mutable_barrier_release();
  r->set_job_id(job);
  r->set_phase_id(phase);
  r->set_step(step);
  return m;
}

v1::CoordinatorMessage CancelOf(const std::string& job) {
  v1::CoordinatorMessage m;
  m.mutable_cancel()->set_job_id(job);
  m.mutable_cancel()->set_reason("client asked");
  return m;
}

v1::CoordinatorMessage Echo() {
  v1::CoordinatorMessage m;
  m.mutable_heartbeat()->set_agent_time_ns(1);
  return m;
}

PhaseOrder OrderOf(const std::string& job, const std::string& phase) {
  PhaseOrder o;
  o.job_id = job;
  o.phase_id = phase;
  o.first_rank = 2;
  o.local_ranks = 2;
  o.epoch = 1;
  return o;
}

std::vector<RankEpochResult> Results(const PhaseOrder& o) {
  std::vector<RankEpochResult> out;
  for (int l = 0; l < o.local_ranks; ++l) {
    RankEpochResult r;
    r.rank = o.first_rank + l;
    r.epoch = o.epoch;
    r.start_unix_us = 100;
    r.end_unix_us = 200 + l;
    out.push_back(r);
  }
  return out;
}

double StaleReleases(const AgentMetrics& metrics) {
  for (const prometheus::MetricFamily& f : metrics.Collect()) {
    if (f.name == "dlio_stale_barrier_releases_total") return f.metric.at(0).counter.value;
  }
  ADD_FAILURE() << "no dlio_stale_barrier_releases_total family";
  return -1;
}

AgentSession::Identity Id() {
  AgentSession::Identity id;
  id.name = "agent-7";
  id.node_name = "node-3";
  id.instance = "inst-42";
  id.accelerators = 4;
  id.metrics_endpoint = "node-3:9101";
  id.host_memory_bytes = 64ull << 30;
  id.host_memory_source = "cgroup";
  id.host_cpu_count = 16;
  id.provenance.kernel = "6.1.0";
  id.provenance.cpu_model = "Test CPU";
  return id;
}

// A session attached on a fake link at kT0, with a fake host and metrics.
struct Fixture {
  explicit Fixture(AgentSession::Identity id = Id()) : session(std::move(id), &host, &metrics) {
    session.Begin(link, kT0, AgentSession::Timing());
  }
  // The one message sent since the last Take(); a test failure when there is not exactly one.
  v1::AgentMessage One() {
    std::vector<v1::AgentMessage> sent = link->Take();
    EXPECT_EQ(sent.size(), 1u);
    return sent.empty() ? v1::AgentMessage() : sent[0];
  }
  // Runs job/phase and finishes it with PhaseDone; returns that answer.
  v1::AgentMessage RunToDone(const std::string& job, const std::string& phase) {
    session.OnMessage(RunMsg(Order(job, phase)), kT0);
    const PhaseOrder o = OrderOf(job, phase);
    session.Finish(o, Results(o));
    return One();
  }

  FakeHost host;
  AgentMetrics metrics{"agent-7"};
  std::shared_ptr<FakeLink> link = std::make_shared<FakeLink>();
  AgentSession session;
};

// Expects an Error of `code` naming agent, job and phase (message and fields), its message containing `what`.
void ExpectError(const v1::AgentMessage& m, v1::ErrorCode code, const std::string& job, const std::string& phase,
                 const std::string& what) {
  ASSERT_TRUE(m.has_error()) << m.DebugString();
  const v1::Error& e = m.error();
  EXPECT_EQ(e.code(), code) << e.message();
  EXPECT_EQ(e.agent(), "agent-7");
  EXPECT_EQ(e.job_id(), job);
  EXPECT_EQ(e.phase_id(), phase);
  for (const std::string& part : {std::string("agent-7"), job, phase, what}) {
    EXPECT_NE(e.message().find(part), std::string::npos) << "'" << part << "' not in: " << e.message();
  }
}

// --- Hello and Welcome ---

TEST(AgentSession, HelloCarriesTheIdentityAndTheProtocolVersion) {
  FakeHost host;
  const v1::Hello h = AgentSession(Id(), &host).Hello().hello();
  EXPECT_EQ(h.protocol_version(), kProtocolVersion);
  EXPECT_EQ(h.name(), "agent-7");
  EXPECT_EQ(h.hostname(), "node-3");
  EXPECT_EQ(h.instance(), "inst-42");
  EXPECT_EQ(h.accelerators(), 4u);
  EXPECT_EQ(h.metrics_endpoint(), "node-3:9101");
  EXPECT_EQ(h.host_memory_bytes(), 64ull << 30);
  EXPECT_EQ(h.host_memory_source(), "cgroup");
  EXPECT_EQ(h.host_cpu_count(), 16u);
  EXPECT_EQ(h.kernel(), "6.1.0");
  EXPECT_EQ(h.processor_name(), "Test CPU");

  AgentSession::Identity other = Id();
  other.protocol_version = kProtocolVersion + 1;  // tests announce another version to check the refusal
  EXPECT_EQ(AgentSession(other, &host).Hello().hello().protocol_version(), kProtocolVersion + 1);
}

TEST(AgentSession, WelcomeGivesTheTiming) {
  FakeHost host;
  AgentSession s(Id(), &host);
  v1::CoordinatorMessage w;
  w.mutable_welcome()->set_heartbeat_interval_ms(200);
  w.mutable_welcome()->set_lease_ms(3000);
  absl::StatusOr<AgentSession::Timing> t = s.Welcome(w);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->heartbeat, milliseconds(200));
  EXPECT_EQ(t->lease, milliseconds(3000));

  // A heartbeat below 50 ms is raised to 50 ms; no lease means eight intervals.
  w.mutable_welcome()->set_heartbeat_interval_ms(10);
  w.mutable_welcome()->set_lease_ms(0);
  t = s.Welcome(w);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->heartbeat, milliseconds(50));
  EXPECT_EQ(t->lease, milliseconds(400));
}

TEST(AgentSession, ARefusalBecomesAnErrorNamingTheCause) {
  FakeHost host;
  AgentSession s(Id(), &host);
  v1::CoordinatorMessage refusal;
  refusal.mutable_error()->set_code(v1::ERROR_CODE_PROTOCOL_MISMATCH);
  refusal.mutable_error()->set_message(
      "agent 'agent-7' speaks protocol version 3, this coordinator speaks version 4; run matching builds");
  absl::StatusOr<AgentSession::Timing> t = s.Welcome(refusal);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("speaks protocol version 3"), std::string::npos) << t.status();

  // Anything but a Welcome or an Error first is a refusal too.
  t = s.Welcome(RunMsg(Order("j", "p")));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("no Welcome"), std::string::npos) << t.status();
}

// --- phase orders ---

TEST(AgentSession, RunPhaseStartsTheHostWithTheOrderAndItsParsedWorkload) {
  Fixture f;
  v1::RunPhase rp = Order("job-1", "checkpoint-2");
  rp.set_kind(v1::PHASE_KIND_CHECKPOINT);
  rp.set_epoch(3);
  rp.set_checkpoint_load(true);
  rp.set_checkpoint_index(2);
  rp.set_checkpoint_step(40);
  rp.set_s3_secret_access_key("s3cret");
  f.session.OnMessage(RunMsg(rp), kT0);

  std::vector<PhaseCommand> started = f.host.Started();
  ASSERT_EQ(started.size(), 1u);
  const PhaseCommand& c = started[0];
  EXPECT_EQ(c.job_id, "job-1");
  EXPECT_EQ(c.phase_id, "checkpoint-2");
  EXPECT_EQ(c.kind, PhaseKind::kCheckpoint);
  EXPECT_EQ(c.workload_yaml, kYaml);
  EXPECT_EQ(c.world, 6);
  EXPECT_EQ(c.first_rank, 2);
  EXPECT_EQ(c.local_ranks, 2);
  EXPECT_EQ(c.epoch, 3);
  EXPECT_EQ(c.num_agents, 3);
  EXPECT_EQ(c.agent_index, 1);
  EXPECT_TRUE(c.checkpoint_load);
  EXPECT_EQ(c.checkpoint_index, 2);
  EXPECT_EQ(c.checkpoint_step, 40);
  EXPECT_EQ(c.s3_secret_access_key, "s3cret");
  // The parsed workload, and the secret beside it.
  EXPECT_EQ(c.spec.num_files_train, 12);
  EXPECT_EQ(c.spec.batch_size, 3);
  EXPECT_EQ(c.spec.read_threads, 2);
  EXPECT_EQ(c.spec.s3_secret_access_key, "s3cret");
  EXPECT_FALSE(f.session.cancel_flag()->load());
  EXPECT_TRUE(f.link->Sent().empty());  // the answer comes with Finish()
}

TEST(AgentSession, AWorkloadThatDoesNotLoadIsRefused) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1", "dataset:\n  num_files_train: -1\n")), kT0);
  EXPECT_TRUE(f.host.Started().empty());
  ExpectError(f.One(), v1::ERROR_CODE_BAD_WORKLOAD, "job-1", "train-epoch-1", "dataset.num_files_train");
}

TEST(AgentSession, AWorkloadNeedingTooManyLoaderThreadsIsRefused) {
  AgentSession::Identity id = Id();
  id.accelerators = 32;
  Fixture f(id);
  // 256 loader threads per rank (the most a rank may have) x 17 ranks is above what one agent runs.
  v1::RunPhase rp = Order("job-1", "train-epoch-1",
                          "dataset:\n  num_files_train: 64\nreader:\n  read_threads: 256\n");
  rp.set_world_size(17);
  rp.set_first_rank(0);
  rp.set_local_ranks(17);
  f.session.OnMessage(RunMsg(rp), kT0);
  EXPECT_TRUE(f.host.Started().empty());
  ExpectError(f.One(), v1::ERROR_CODE_BAD_WORKLOAD, "job-1", "train-epoch-1", "reader.read_threads");
}

TEST(AgentSession, AnOrderThatDoesNotFitTheAcceleratorsOrTheWorldIsRefused) {
  Fixture f;  // 4 accelerators
  struct Case {
    uint32_t world, first, local;
    std::string what;
  };
  for (const Case& c : {Case{8, 0, 5, "ranks 0-4 of 8"}, Case{6, 4, 3, "ranks 4-6 of 6"},
                        Case{6, 0, 0, "no local ranks"}}) {
    SCOPED_TRACE(c.what);
    v1::RunPhase rp = Order("job-1", "train-epoch-1");
    rp.set_world_size(c.world);
    rp.set_first_rank(c.first);
    rp.set_local_ranks(c.local);
    f.session.OnMessage(RunMsg(rp), kT0);
    EXPECT_TRUE(f.host.Started().empty());
    ExpectError(f.One(), v1::ERROR_CODE_BAD_ORDER, "job-1", "train-epoch-1", c.what);
  }
  // A refused order leaves the agent idle: the next one runs.
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 1u);
}

TEST(AgentSession, ASecondOrderWhileBusyIsRefused) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  f.session.OnMessage(RunMsg(Order("job-2", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 1u);
  const v1::AgentMessage m = f.One();
  // Names the refused order, and the one that runs.
  ExpectError(m, v1::ERROR_CODE_BUSY, "job-2", "train-epoch-1", "still running job job-1");
}

// Issue 30: jobs ordered with share_agent run side by side, each with its own barrier and cancel; an exclusive job's
// phase, or more ranks than the accelerators left, is still refused BUSY naming what runs.
TEST(AgentSession, PhasesOfJobsSharingTheAgentRunSideBySideEachWithItsOwnBarrierAndCancel) {
  Fixture f;  // 4 accelerators; every order asks for 2
  v1::RunPhase a = Order("job-1", "train-epoch-1"), b = Order("job-2", "train-epoch-1");
  a.set_share_agent(true);
  b.set_share_agent(true);
  f.session.OnMessage(RunMsg(a), kT0);
  f.session.OnMessage(RunMsg(b), kT0);
  ASSERT_EQ(f.host.Started().size(), 2u);
  EXPECT_TRUE(f.link->Sent().empty()) << "neither is refused";
  // A third sharing job finds no accelerator left; an exclusive one may not join at all.
  v1::RunPhase c = Order("job-3", "train-epoch-1");
  c.set_share_agent(true);
  f.session.OnMessage(RunMsg(c), kT0);
  ExpectError(f.One(), v1::ERROR_CODE_BUSY, "job-3", "train-epoch-1", "on 4 of its 4 accelerator(s), 2 more asked");
  f.session.OnMessage(RunMsg(Order("job-4", "train-epoch-1")), kT0);
  ExpectError(f.One(), v1::ERROR_CODE_BUSY, "job-4", "train-epoch-1", "still running job job-1 phase train-epoch-1");
  EXPECT_EQ(f.host.Started().size(), 2u);
  // Releases reach the job they name only.
  f.session.OnMessage(Release("job-2", "train-epoch-1", 0), kT0);
  EXPECT_TRUE(f.session.WaitRelease("job-2", 0).ok());
  std::future<absl::Status> waiting = std::async(std::launch::async, [&] { return f.session.WaitRelease("job-1", 0); });
  EXPECT_EQ(waiting.wait_for(milliseconds(50)), std::future_status::timeout) << "job-1's barrier is not released";
  // A cancel stops its own job only.
  f.session.OnMessage(CancelOf("job-1"), kT0);
  EXPECT_TRUE(f.session.cancel_flag("job-1")->load());
  EXPECT_FALSE(f.session.cancel_flag("job-2")->load());
  EXPECT_FALSE(waiting.get().ok());
  EXPECT_EQ(f.host.Stops(), 1);
}

// --- idempotency ---

TEST(AgentSession, ARepeatOfTheRunningPhaseIsIgnored) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 1u);
  EXPECT_TRUE(f.link->Sent().empty());  // neither an error nor an answer
}

TEST(AgentSession, ARepeatOfTheFinishedPhaseResendsItsAnswer) {
  Fixture f;
  const v1::AgentMessage done = f.RunToDone("job-1", "train-epoch-1");
  ASSERT_TRUE(done.has_phase_done()) << done.DebugString();
  EXPECT_EQ(done.phase_done().job_id(), "job-1");
  EXPECT_EQ(done.phase_done().phase_id(), "train-epoch-1");
  ASSERT_EQ(done.phase_done().ranks_size(), 2);
  EXPECT_EQ(done.phase_done().ranks(1).rank(), 3);

  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 1u);  // not run again
  EXPECT_EQ(f.One().SerializeAsString(), done.SerializeAsString());

  // Also while another phase runs (not BUSY: the coordinator asks for an answer it lost).
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-2")), kT0);
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 2u);
  EXPECT_EQ(f.One().SerializeAsString(), done.SerializeAsString());
}

TEST(AgentSession, AReconnectKeepsTheLastAnswer) {
  Fixture f;
  const v1::AgentMessage done = f.RunToDone("job-1", "train-epoch-1");
  f.session.End();
  auto link2 = std::make_shared<FakeLink>();
  f.session.Begin(link2, kT0 + std::chrono::seconds(5), AgentSession::Timing());
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0 + std::chrono::seconds(5));
  EXPECT_EQ(f.host.Started().size(), 1u);
  std::vector<v1::AgentMessage> sent = link2->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].SerializeAsString(), done.SerializeAsString());
  EXPECT_TRUE(f.link->Sent().empty());  // nothing on the old link
}

TEST(AgentSession, AnAnswerFinishedWhileDisconnectedIsSentOnTheRepeat) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "generate")), kT0);
  f.session.End();  // the host was told to stop, but its phase completes anyway
  EXPECT_EQ(f.host.Stops(), 1);
  const PhaseOrder o = OrderOf("job-1", "generate");
  f.session.Finish(o, Results(o));
  EXPECT_TRUE(f.link->Sent().empty());  // no link to send it on

  auto link2 = std::make_shared<FakeLink>();
  f.session.Begin(link2, kT0, AgentSession::Timing());
  f.session.OnMessage(RunMsg(Order("job-1", "generate")), kT0);
  EXPECT_EQ(f.host.Started().size(), 1u);
  std::vector<v1::AgentMessage> sent = link2->Take();
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_TRUE(sent[0].has_phase_done()) << sent[0].DebugString();
  EXPECT_EQ(sent[0].phase_done().phase_id(), "generate");
}

TEST(AgentSession, AFailedPhaseSendsPhaseFailedAndIsNotKeptAsTheAnswer) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  f.session.Finish(OrderOf("job-1", "train-epoch-1"),
                   absl::DataLossError("agent 'agent-7' rank 2 job job-1 phase train-epoch-1: short read"));
  ExpectError(f.One(), v1::ERROR_CODE_PHASE_FAILED, "job-1", "train-epoch-1", "short read");
  // The agent is idle again; the coordinator's repeat runs the phase again rather than re-sending the failure.
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 2u);
  EXPECT_TRUE(f.link->Sent().empty());
}

// --- the step barrier ---

TEST(AgentSession, ArriveSendsBarrierArriveOfTheOrder) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  ASSERT_TRUE(f.session.Arrive(OrderOf("job-1", "train-epoch-1"), 7));
  const v1::AgentMessage m = f.One();
  ASSERT_TRUE(m.has_barrier_arrive()) << m.DebugString();
  EXPECT_EQ(m.barrier_arrive().job_id(), "job-1");
  EXPECT_EQ(m.barrier_arrive().phase_id(), "train-epoch-1");
  EXPECT_EQ(m.barrier_arrive().step(), 7u);
  f.session.End();
  EXPECT_FALSE(f.session.Arrive(OrderOf("job-1", "train-epoch-1"), 8));  // the session is gone
}

TEST(AgentSession, AReleaseOfTheRunningPhaseWakesWaitReleaseAndTellsTheHost) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  std::future<absl::Status> waiting = std::async(std::launch::async, [&] { return f.session.WaitRelease(3); });

  // An earlier step of the phase does not release step 3.
  f.session.OnMessage(Release("job-1", "train-epoch-1", 2), kT0);
  EXPECT_EQ(waiting.wait_for(milliseconds(100)), std::future_status::timeout);
  f.session.OnMessage(Release("job-1", "train-epoch-1", 3), kT0);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
  EXPECT_EQ(f.host.ReleasedSteps(), (std::vector<uint64_t>{2, 3}));
  EXPECT_TRUE(f.session.WaitRelease(1).ok());  // releases are cumulative: 3 released means 1 is
  EXPECT_EQ(StaleReleases(f.metrics), 0);
}

TEST(AgentSession, AReleaseOfAnotherJobOrPhaseIsDroppedAndCounted) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-2", "train-epoch-1")), kT0);
  std::future<absl::Status> waiting = std::async(std::launch::async, [&] { return f.session.WaitRelease(0); });
  // Every job's first training phase is "train-epoch-1": a late release of job-1's must not let job-2 run past.
  f.session.OnMessage(Release("job-1", "train-epoch-1", 0), kT0);
  f.session.OnMessage(Release("job-2", "train-epoch-0", 0), kT0);
  f.session.OnMessage(Release("", "", 0), kT0);
  EXPECT_EQ(waiting.wait_for(milliseconds(100)), std::future_status::timeout);
  EXPECT_TRUE(f.host.ReleasedSteps().empty());
  EXPECT_EQ(StaleReleases(f.metrics), 3);

  f.session.OnMessage(Release("job-2", "train-epoch-1", 0), kT0);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
  EXPECT_EQ(StaleReleases(f.metrics), 3);
}

TEST(AgentSession, AReleaseOfTheFinishedPhaseIsStale) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  f.session.Finish(OrderOf("job-1", "train-epoch-1"), absl::DataLossError("rank 2: short read"));
  // This agent failed the phase after its arrival at step 4; the other agents then arrived and the coordinator
  // released it: the release comes when no phase runs.
  f.session.OnMessage(Release("job-1", "train-epoch-1", 4), kT0);
  EXPECT_TRUE(f.host.ReleasedSteps().empty());
  EXPECT_EQ(StaleReleases(f.metrics), 1);
}

TEST(AgentSession, ANewPhaseForgetsTheReleasesOfThePreviousOne) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  f.session.OnMessage(Release("job-1", "train-epoch-1", 9), kT0);
  const PhaseOrder o = OrderOf("job-1", "train-epoch-1");
  f.session.Finish(o, Results(o));
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-2")), kT0);
  std::future<absl::Status> waiting = std::async(std::launch::async, [&] { return f.session.WaitRelease(0); });
  EXPECT_EQ(waiting.wait_for(milliseconds(100)), std::future_status::timeout);
  f.session.OnMessage(Release("job-1", "train-epoch-2", 0), kT0);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
}

// --- cancel ---

TEST(AgentSession, ACancelOfTheRunningJobStopsTheHostAndWakesTheBarrier) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  std::future<absl::Status> waiting = std::async(std::launch::async, [&] { return f.session.WaitRelease(0); });
  EXPECT_EQ(waiting.wait_for(milliseconds(50)), std::future_status::timeout);
  f.session.OnMessage(CancelOf("job-1"), kT0);
  EXPECT_TRUE(f.session.cancel_flag()->load());
  EXPECT_EQ(f.host.Stops(), 1);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const absl::Status s = waiting.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_NE(s.message().find("phase cancelled"), std::string::npos) << s;

  // The host's answer to the stop is a CANCELLED error (a confirmation, not a failure), and the agent is free.
  f.session.Finish(OrderOf("job-1", "train-epoch-1"),
                   absl::CancelledError("agent 'agent-7' job job-1 phase train-epoch-1: cancelled"));
  ExpectError(f.One(), v1::ERROR_CODE_CANCELLED, "job-1", "train-epoch-1", "cancelled");
  f.session.OnMessage(RunMsg(Order("job-2", "train-epoch-1")), kT0);
  EXPECT_EQ(f.host.Started().size(), 2u);
  EXPECT_FALSE(f.session.cancel_flag()->load());  // the new phase starts uncancelled
  EXPECT_TRUE(f.link->Sent().empty());
}

TEST(AgentSession, ACancelOfAnotherJobIsIgnored) {
  Fixture f;
  f.session.OnMessage(CancelOf("job-1"), kT0);  // idle
  EXPECT_FALSE(f.session.cancel_flag()->load());
  f.session.OnMessage(RunMsg(Order("job-2", "train-epoch-1")), kT0);
  f.session.OnMessage(CancelOf("job-1"), kT0);
  EXPECT_FALSE(f.session.cancel_flag()->load());
  EXPECT_EQ(f.host.Stops(), 0);
  EXPECT_TRUE(f.link->Sent().empty());
}

// --- lease and heartbeat ---

TEST(AgentSession, TheLeaseExpiresAfterSilenceAndAnyMessageRenewsIt) {
  Fixture f;  // began at kT0
  AgentSession::Timing timing;
  timing.heartbeat = milliseconds(100);
  timing.lease = milliseconds(800);
  Clock::duration silent{};
  EXPECT_FALSE(f.session.LeaseExpired(kT0 + milliseconds(800), timing, &silent));
  EXPECT_EQ(silent, milliseconds(800));
  EXPECT_TRUE(f.session.LeaseExpired(kT0 + milliseconds(801), timing, &silent));
  EXPECT_EQ(silent, milliseconds(801));

  // The heartbeat's echo renews it, as any coordinator message does.
  f.session.OnMessage(Echo(), kT0 + milliseconds(700));
  EXPECT_FALSE(f.session.LeaseExpired(kT0 + milliseconds(1500), timing, &silent));
  EXPECT_EQ(silent, milliseconds(800));
  EXPECT_TRUE(f.session.LeaseExpired(kT0 + milliseconds(1501), timing, nullptr));
  f.session.OnMessage(CancelOf("no-such-job"), kT0 + milliseconds(1600));
  EXPECT_FALSE(f.session.LeaseExpired(kT0 + milliseconds(2000), timing, nullptr));

  // A new connection starts its own lease.
  f.session.End();
  f.session.Begin(f.link, kT0 + milliseconds(5000), AgentSession::Timing());
  EXPECT_FALSE(f.session.LeaseExpired(kT0 + milliseconds(5500), timing, nullptr));
}

// The Welcome says which steady clock the coordinator reads (Welcome.clock_domain); a heartbeat's echo with the
// coordinator's stamps is one exchange of the session's clock-offset estimate (the announce barriers read it).
TEST(AgentSession, TheWelcomeRelatesTheClocksAndAHeartbeatsEchoPlacesTheOffset) {
  Fixture f;  // began with a default Timing: clocks unrelated
  v1::CoordinatorMessage w;
  w.mutable_welcome()->set_heartbeat_interval_ms(1000);
  w.mutable_welcome()->set_lease_ms(8000);
  w.mutable_welcome()->set_clock_domain(barrier_timing::ClockDomain());
  EXPECT_EQ(f.session.Welcome(w)->clock, barrier_timing::ClockRelation::kSame);
  w.mutable_welcome()->set_clock_domain("elsewhere");
  EXPECT_EQ(f.session.Welcome(w)->clock, barrier_timing::ClockRelation::kUnrelated);
  w.mutable_welcome()->clear_clock_domain();  // a coordinator that does not say
  EXPECT_EQ(f.session.Welcome(w)->clock, barrier_timing::ClockRelation::kUnrelated);

  const auto ns = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  EXPECT_FALSE(f.session.clock().exact());
  EXPECT_FALSE(f.session.clock().PlaceEnd(ns(kT0)).has_value()) << "no exchange yet";
  f.session.OnMessage(Echo(), kT0 + milliseconds(1));  // an echo without the coordinator's stamps: the lease only
  EXPECT_FALSE(f.session.clock().PlaceEnd(ns(kT0)).has_value());
  // Sent at kT0, received 30 us later by a coordinator whose clock is 5 ms ahead, echoed 100 us after, back at
  // kT0 + 200 us: the offset is in [5 ms - 70 us, 5 ms + 30 us].
  v1::CoordinatorMessage echo;
  v1::Heartbeat* h = echo.mutable_heartbeat();
  h->set_agent_time_ns(ns(kT0));
  h->set_coordinator_received_ns(ns(kT0) + 5'030'000);
  h->set_coordinator_sent_ns(ns(kT0) + 5'130'000);
  f.session.OnMessage(echo, kT0 + std::chrono::microseconds(200));
  const std::optional<barrier_timing::EndInterval> end = f.session.clock().PlaceEnd(ns(kT0));
  ASSERT_TRUE(end.has_value());
  EXPECT_NEAR(static_cast<double>(end->lo_ns - ns(kT0)), 4'930'000, 1'000);  // + 200 ppm of its 200 us age: 40 ns
  EXPECT_NEAR(static_cast<double>(end->hi_ns - ns(kT0)), 5'030'000, 1'000);

  // A new connection, to a coordinator on this machine's clock: the offset is exact (0), known at once.
  f.session.End();
  AgentSession::Timing same;
  same.clock = barrier_timing::ClockRelation::kSame;
  f.session.Begin(f.link, kT0 + std::chrono::seconds(1), same);
  EXPECT_TRUE(f.session.clock().exact());
  const std::optional<barrier_timing::EndInterval> exact = f.session.clock().PlaceEnd(ns(kT0));
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(exact->lo_ns, ns(kT0));
  EXPECT_EQ(exact->hi_ns, ns(kT0));
}

// The first heartbeats of a connection come 10 ms apart (clock probes), then one per interval.
TEST(AgentSession, TheFirstHeartbeatsOfAConnectionProbeTheClock) {
  AgentSession::Timing t;
  t.heartbeat = milliseconds(1000);
  for (int n = 0; n < AgentSession::Timing::kClockProbes; ++n) EXPECT_EQ(t.Before(n), milliseconds(10)) << n;
  EXPECT_EQ(t.Before(AgentSession::Timing::kClockProbes), milliseconds(1000));
}

TEST(AgentSession, AHeartbeatIsSentAloneWhenIdleAndWithProgressWhileAPhaseRuns) {
  Fixture f;
  f.session.SendHeartbeat();
  std::vector<v1::AgentMessage> sent = f.link->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].has_heartbeat());

  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  f.host.progress_.done = 5;
  f.host.progress_.total = 12;
  f.host.progress_.samples = 15;
  f.host.progress_.bytes = 15360;
  f.host.progress_.compute_ns = 40'000'000;
  f.host.progress_.wall_ns = 50'000'000;
  f.session.SendHeartbeat();
  sent = f.link->Take();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0].has_heartbeat());
  ASSERT_TRUE(sent[1].has_progress()) << sent[1].DebugString();
  const v1::Progress& p = sent[1].progress();
  EXPECT_EQ(p.job_id(), "job-1");
  EXPECT_EQ(p.phase_id(), "train-epoch-1");
  EXPECT_EQ(p.done(), 5u);
  EXPECT_EQ(p.total(), 12u);
  EXPECT_EQ(p.samples(), 15u);
  EXPECT_EQ(p.bytes(), 15360u);
  EXPECT_EQ(p.compute_ns(), 40'000'000u);
  EXPECT_EQ(p.wall_ns(), 50'000'000u);

  // The agent's sends do not replace the heartbeat (the coordinator's lease counts heartbeats).
  ASSERT_TRUE(f.session.Arrive(OrderOf("job-1", "train-epoch-1"), 0));
  f.link->Take();
  f.session.SendHeartbeat();
  sent = f.link->Take();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0].has_heartbeat());

  // A clock probe (the first heartbeats of a connection) goes alone: the progress stays at about one a second.
  f.session.SendHeartbeat(/*probe=*/true);
  sent = f.link->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].has_heartbeat());

  f.session.End();
  f.session.SendHeartbeat();
  EXPECT_TRUE(f.link->Sent().empty());  // nothing once the session is gone
}

// --- the end of a session ---

TEST(AgentSession, EndWhileAPhaseRunsTellsTheHostToStop) {
  Fixture f;
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  std::future<absl::Status> waiting = std::async(std::launch::async, [&] { return f.session.WaitRelease(0); });
  EXPECT_EQ(waiting.wait_for(milliseconds(50)), std::future_status::timeout);
  f.session.End();
  EXPECT_FALSE(f.session.session_alive());
  EXPECT_TRUE(f.session.cancel_flag()->load());
  EXPECT_EQ(f.host.Stops(), 1);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const absl::Status s = waiting.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_NE(s.message().find("connection to coordinator lost"), std::string::npos) << s;
  f.session.End();  // idempotent
  EXPECT_FALSE(f.session.session_alive());
  EXPECT_TRUE(f.session.cancel_flag()->load());
}

TEST(AgentSession, EndWhileIdleStopsNothing) {
  Fixture f;
  f.session.End();
  EXPECT_EQ(f.host.Stops(), 0);
  EXPECT_FALSE(f.session.session_alive());
}

TEST(AgentSession, AShutdownNoticeNamesTheRunningPhase) {
  Fixture f;
  EXPECT_FALSE(f.session.SendShutdownNotice());  // no phase runs
  f.session.OnMessage(RunMsg(Order("job-1", "train-epoch-1")), kT0);
  ASSERT_TRUE(f.session.SendShutdownNotice());
  ExpectError(f.One(), v1::ERROR_CODE_SHUTDOWN, "job-1", "train-epoch-1", "told to shut down");
}

}  // namespace
}  // namespace dlio
