// Coordinator core with fake agent links and a fake clock: registry, leases, placement, barrier, timeouts, cancel,
// and the job store across a restart. No network, no processes.
#include "coordinator/coordinator.h"

#include <atomic>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Records what the coordinator sends; never calls back (the coordinator calls it under its lock).
class FakeLink : public AgentLink {
 public:
  void Accepted(milliseconds hb, milliseconds lease) override {
    std::lock_guard<std::mutex> lk(mu);
    welcomed = true;
    heartbeat = hb;
  }
  void RunPhase(const PhaseOrder& o) override {
    std::lock_guard<std::mutex> lk(mu);
    orders.push_back(o);
  }
  void ReleaseBarrier(const std::string&, const std::string& phase, uint64_t step) override {
    std::lock_guard<std::mutex> lk(mu);
    releases.push_back(step);
  }
  void Cancel(const std::string& job, const std::string& reason) override {
    std::lock_guard<std::mutex> lk(mu);
    cancels.push_back(reason);
  }
  void Drop(const std::string& reason) override {
    std::lock_guard<std::mutex> lk(mu);
    dropped = reason;
  }
  size_t Orders() {
    std::lock_guard<std::mutex> lk(mu);
    return orders.size();
  }
  PhaseOrder Order(size_t i) {
    std::lock_guard<std::mutex> lk(mu);
    return orders.at(i);
  }
  size_t Cancels() {
    std::lock_guard<std::mutex> lk(mu);
    return cancels.size();
  }
  std::string Dropped() {
    std::lock_guard<std::mutex> lk(mu);
    return dropped;
  }
  std::vector<uint64_t> Releases() {
    std::lock_guard<std::mutex> lk(mu);
    return releases;
  }

  std::mutex mu;
  bool welcomed = false;
  milliseconds heartbeat{0};
  std::vector<PhaseOrder> orders;
  std::vector<uint64_t> releases;
  std::vector<std::string> cancels;
  std::string dropped;
};

template <typename F>
bool Eventually(F pred, milliseconds timeout = milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

// skip_listing: the fake agents answer the phases a test drives; a listed dataset would first send agent a alone a
// list-train phase (tests/listing_test.cc runs that on real agents).
std::string Yaml(int epochs) {
  return "workflow:\n  generate_data: false\n  train: true\ndataset:\n  format: npz\n  num_files_train: 8\n"
         "  skip_listing: true\n"
         "  num_samples_per_file: 1\n  record_length_bytes: 1024\nreader:\n  batch_size: 1\n  read_threads: 1\n"
         "train:\n  epochs: " + std::to_string(epochs) + "\n  computation_time: 0.01\n";
}

AgentInfo Info(const std::string& name, int ranks, const std::string& host = "node-1") {
  AgentInfo a;
  a.name = name;
  a.hostname = host;
  a.ranks = ranks;
  a.cpu_count = 2;
  a.memory_gb = 1;
  return a;
}

// One rank's epoch with `steps` steps of 10 ms compute.
std::vector<RankEpochResult> Ranks(const PhaseOrder& o, int steps) {
  std::vector<RankEpochResult> out;
  for (int l = 0; l < o.local_ranks; ++l) {
    RankEpochResult r;
    r.rank = o.first_rank + l;
    r.epoch = o.epoch;
    r.start_unix_us = 1;
    r.end_unix_us = 2;
    BlockTimings b;
    b.duration_s = 0.011 * steps;
    for (int s = 0; s < steps; ++s) {
      b.load.push_back(0.001);
      b.compute.push_back(0.01);
      b.proc.push_back(0.011);
      b.barrier.push_back(0);
    }
    r.blocks.push_back(b);
    out.push_back(r);
  }
  return out;
}

JobEventData FinalEvent(Coordinator& c, const std::string& id, milliseconds timeout = milliseconds(10000)) {
  std::vector<JobEventData> events;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    events.clear();
    EXPECT_TRUE(c.WaitEvents(id, 0, &events, milliseconds(100)).ok());
    if (!events.empty() && events.back().final) return events.back();
  }
  ADD_FAILURE() << "job " << id << " did not end";
  return events.empty() ? JobEventData() : events.back();
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dlio-coord-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.results_dir = (dir_ / "results").string();
    options_.now = [this] { return Coordinator::Clock::time_point(std::chrono::nanoseconds(now_ns_.load())); };
    options_.stop_grace = milliseconds(300);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Coordinator> Make(std::unique_ptr<JobStore> store = nullptr) {
    absl::StatusOr<std::unique_ptr<Coordinator>> c = Coordinator::Create(options_, std::move(store));
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }
  void Advance(milliseconds d) { now_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

  fs::path dir_;
  Coordinator::Options options_;
  std::atomic<int64_t> now_ns_{1'000'000'000'000};
};

TEST_F(CoordinatorTest, SecondAgentWithAnAttachedNameIsRefusedNamingBothUnlessItIsTheSameProcess) {
  auto c = Make();
  auto a = std::make_shared<FakeLink>(), b = std::make_shared<FakeLink>(), a2 = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("gpu-1", 1, "host-a"), "inst-1", a).ok());
  EXPECT_TRUE(a->welcomed);
  const absl::Status s = c->AddAgent(Info("gpu-1", 1, "host-b"), "inst-2", b);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("host-a"), std::string::npos) << s;
  EXPECT_NE(s.message().find("host-b"), std::string::npos) << s;
  EXPECT_FALSE(b->welcomed);
  // The same instance reconnecting replaces its stale session.
  ASSERT_TRUE(c->AddAgent(Info("gpu-1", 1, "host-a"), "inst-1", a2).ok());
  EXPECT_FALSE(a->Dropped().empty());
  EXPECT_EQ(c->AttachedAgents(), 1u);
  // The old session's late removal does not remove the new one.
  c->RemoveAgent("gpu-1", a.get(), "old stream ended");
  EXPECT_EQ(c->AttachedAgents(), 1u);
  c->RemoveAgent("gpu-1", a2.get(), "closed");
  EXPECT_EQ(c->AttachedAgents(), 0u);
}

TEST_F(CoordinatorTest, SilentAgentLosesItsLeaseAndTheJobFailsNamingAgentRanksJobPhaseAndStep) {
  auto c = Make();
  auto a = std::make_shared<FakeLink>(), b = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("a", 1), "1", a).ok());
  ASSERT_TRUE(c->AddAgent(Info("b", 1), "2", b).ok());
  JobRequest r;
  r.workload_yaml = Yaml(1);
  absl::StatusOr<std::string> id = c->Submit(r);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 1 && b->Orders() == 1; }));
  c->OnBarrierArrive("a", *id, "train-epoch-1", 0);
  c->OnBarrierArrive("b", *id, "train-epoch-1", 0);
  EXPECT_EQ(a->Releases(), std::vector<uint64_t>{0});
  // b goes silent; a keeps sending heartbeats.
  Advance(options_.lease / 2);
  c->OnHeartbeat("a");
  c->ExpireLeases();
  EXPECT_EQ(c->AttachedAgents(), 2u);
  Advance(options_.lease / 2 + milliseconds(100));
  c->OnHeartbeat("a");
  c->ExpireLeases();
  EXPECT_EQ(c->AttachedAgents(), 1u);
  EXPECT_NE(b->Dropped().find("lease"), std::string::npos) << b->Dropped();
  // The job fails naming the agent, its rank, the job, the phase and the step; a is told to stop.
  c->OnAgentError("a", *id, "train-epoch-1", AgentErrorKind::kCancelled, "a: cancelled");
  const JobEventData e = FinalEvent(*c, *id);
  EXPECT_EQ(e.state, JobState::kFailed);
  for (const std::string& part : {std::string("agent 'b'"), std::string("rank 1"), *id, std::string("train-epoch-1"),
                                  std::string("after step 1"), std::string("lease")}) {
    EXPECT_NE(e.message.find(part), std::string::npos) << part << " missing in: " << e.message;
  }
  EXPECT_GE(a->Cancels(), 1u);
  EXPECT_EQ(c->GetCounts().leases_expired, 1u);
}

TEST_F(CoordinatorTest, StepBarrierReleasesWhenAllArriveAndTimesOutNamingTheMissingAgent) {
  options_.barrier_timeout = milliseconds(5000);
  auto c = Make();
  auto a = std::make_shared<FakeLink>(), b = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("a", 2), "1", a).ok());
  ASSERT_TRUE(c->AddAgent(Info("b", 2), "2", b).ok());
  JobRequest r;
  r.workload_yaml = Yaml(1);
  absl::StatusOr<std::string> id = c->Submit(r);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 1 && b->Orders() == 1; }));
  EXPECT_EQ(b->Order(0).first_rank, 2);
  EXPECT_EQ(b->Order(0).world, 4);
  c->OnBarrierArrive("a", *id, "train-epoch-1", 0);
  EXPECT_TRUE(a->Releases().empty()) << "released before every agent arrived";
  c->OnBarrierArrive("b", *id, "train-epoch-1", 0);
  EXPECT_EQ(b->Releases(), std::vector<uint64_t>{0});
  c->OnBarrierArrive("a", *id, "train-epoch-1", 0);  // a repeat of a released step changes nothing
  c->OnBarrierArrive("a", *id, "train-epoch-1", 1);
  Advance(milliseconds(5100));
  const JobEventData e = FinalEvent(*c, *id);
  EXPECT_EQ(e.state, JobState::kFailed);
  EXPECT_NE(e.message.find("barrier timeout"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("b (ranks 2-3)"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("1 of 2"), std::string::npos) << e.message;
}

TEST_F(CoordinatorTest, PlacementNeedsEqualAcceleratorsAndEnoughAgents) {
  auto c = Make();
  auto a = std::make_shared<FakeLink>(), b = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("a", 1), "1", a).ok());
  ASSERT_TRUE(c->AddAgent(Info("b", 2), "2", b).ok());
  JobRequest r;
  r.workload_yaml = Yaml(1);
  absl::StatusOr<std::string> id = c->Submit(r);
  ASSERT_TRUE(id.ok());
  JobEventData e = FinalEvent(*c, *id);
  EXPECT_EQ(e.state, JobState::kFailed);
  EXPECT_NE(e.message.find("a: 1, b: 2"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("--accelerators-per-agent"), std::string::npos) << e.message;

  // More agents than attached: refused at submit, never queued (issue 26 item 6).
  r.agents = 3;
  id = c->Submit(r);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << id.status();
  EXPECT_NE(id.status().message().find("needs 3 agent(s); 2 attached (accelerators: a: 1, b: 2)"), std::string::npos)
      << id.status();
  EXPECT_NE(id.status().message().find("--wait-for-agents"), std::string::npos) << id.status();
  // Fewer attached agents with the accelerators asked than --agents: refused the same way, naming the eligible.
  r.agents = 2;
  r.accelerators_per_agent = 2;
  id = c->Submit(r);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("needs 2 agent(s) with at least 2 accelerator(s) each; 2 attached "
                                       "(accelerators: a: 1, b: 2), 1 of them eligible"),
            std::string::npos)
      << id.status();
  // Waiting for agents: queued, and it fails after the wait, as before.
  r.agents = 3;
  r.accelerators_per_agent = 0;
  r.wait_for_agents_s = 1;
  id = c->Submit(r);
  ASSERT_TRUE(id.ok()) << id.status();
  e = FinalEvent(*c, *id);
  EXPECT_NE(e.message.find("needs 3 agent(s)"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("after waiting 1 s"), std::string::npos) << e.message;
  r.wait_for_agents_s = 0;

  // One accelerator from each: both agents take part with one rank each.
  r.agents = 2;
  r.accelerators_per_agent = 1;
  id = c->Submit(r);
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 1 && b->Orders() == 1; }));
  EXPECT_EQ(b->Order(0).local_ranks, 1);
  EXPECT_EQ(b->Order(0).world, 2);
  for (auto* l : {a.get(), b.get()}) {
    const PhaseOrder o = l->Order(0);
    c->OnPhaseDone(o.first_rank == 0 ? "a" : "b", *id, o.phase_id, Ranks(o, 4));
  }
  e = FinalEvent(*c, *id);
  EXPECT_EQ(e.state, JobState::kSucceeded) << e.message;
  absl::StatusOr<JobInfoData> info = c->GetJob(*id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->record.ranks_per_agent, 1);
  EXPECT_TRUE(fs::exists(dir_ / "results" / *id / "summary.json"));
}

TEST_F(CoordinatorTest, CancelStopsTheAgentsAndSaysTheyConfirmed) {
  auto c = Make();
  auto a = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("a", 1), "1", a).ok());
  JobRequest r;
  r.workload_yaml = Yaml(3);
  absl::StatusOr<std::string> id = c->Submit(r);
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 1; }));
  // Epoch 1 completes; epoch 2's order goes out first, then epoch 1's results reach the disk while epoch 2 runs, and
  // the record counts the epoch only once they are there.
  c->OnPhaseDone("a", *id, "train-epoch-1", Ranks(a->Order(0), 8));
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 2; }));
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<JobInfoData> info = c->GetJob(*id);
    return info.ok() && info->record.epochs_done == 1;
  }));
  EXPECT_TRUE(fs::exists(dir_ / "results" / *id / "summary.json"));
  ASSERT_TRUE(c->Cancel(*id).ok());
  ASSERT_TRUE(Eventually([&] { return a->Cancels() == 1; }));
  c->OnAgentError("a", *id, "train-epoch-2", AgentErrorKind::kCancelled, "agent 'a': cancelled at step 3");
  const JobEventData e = FinalEvent(*c, *id);
  EXPECT_EQ(e.state, JobState::kCancelled);
  EXPECT_NE(e.message.find("every agent stopped"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("1 completed epoch"), std::string::npos) << e.message;
  EXPECT_EQ(e.epochs.size(), 1u);
  EXPECT_FALSE(*c->Cancel(*id)) << "a finished job is not cancelled again";
}

TEST_F(CoordinatorTest, StoreKeepsJobsAcrossARestart) {
  const std::string path = (dir_ / "jobs.db").string();
  {
    // What a coordinator killed mid-job leaves behind: one job running, one queued.
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord running;
    running.id = "20260101-000000-1-aaaa";
    running.seq = 1;
    running.state = JobState::kRunning;
    running.workload_yaml = Yaml(2);
    running.phase_id = "train-epoch-2";
    running.epochs_done = 1;
    running.epochs_total = 2;
    running.has_results = true;
    running.agent_names = {"a"};  // the restart grace ends as soon as "a" is back
    ASSERT_TRUE((*store)->Put(running).ok());
    JobRecord queued = running;
    queued.id = "20260101-000001-2-bbbb";
    queued.seq = 2;
    queued.state = JobState::kQueued;
    queued.has_results = false;
    queued.epochs_done = 0;
    queued.phase_id.clear();
    queued.agent_names.clear();
    queued.wait_for_agents_s = 30;
    ASSERT_TRUE((*store)->Put(queued).ok());
    // A second opener is refused while the first holds the store.
    absl::StatusOr<std::unique_ptr<JobStore>> second = JobStore::Open(path);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("in use by another coordinator"), std::string::npos)
        << second.status();
  }
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto c = Make(std::move(*store));
  std::vector<JobInfoData> jobs = c->ListJobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].record.state, JobState::kInterrupted);
  EXPECT_NE(jobs[0].record.message.find("train-epoch-2"), std::string::npos) << jobs[0].record.message;
  EXPECT_NE(jobs[0].record.message.find("1 completed epoch"), std::string::npos) << jobs[0].record.message;
  EXPECT_EQ(jobs[1].record.state, JobState::kQueued);
  // The queued job runs once an agent attaches; new jobs get later sequence numbers.
  auto a = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("a", 1), "1", a).ok());
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 1; }));
  EXPECT_EQ(a->Order(0).job_id, "20260101-000001-2-bbbb");
  JobRequest r;
  r.workload_yaml = Yaml(1);
  absl::StatusOr<std::string> id = c->Submit(r);
  ASSERT_TRUE(id.ok());
  EXPECT_NE(id->find("-3-"), std::string::npos) << *id;
  c->Stop();  // the running job ends interrupted: the agent's cancel confirmation is not needed for that
  EXPECT_EQ(c->GetJob("20260101-000001-2-bbbb")->record.state, JobState::kInterrupted);
  EXPECT_EQ(c->GetJob(*id)->record.state, JobState::kQueued);
}

// D6 of issue 13: a restarted coordinator gives its agents the restart grace to reattach before it places the
// queued jobs it restored (before, they started ~20 ms after the restart and failed with "none attached").
TEST_F(CoordinatorTest, RestoredQueuedJobsWaitForTheAgentsToReattach) {
  const std::string path = (dir_ / "jobs.db").string();
  {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord queued;
    queued.id = "20260101-000001-1-bbbb";
    queued.seq = 1;
    queued.state = JobState::kQueued;
    queued.workload_yaml = Yaml(1);
    ASSERT_TRUE((*store)->Put(queued).ok());
  }
  options_.restart_grace = milliseconds(3000);
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto c = Make(std::move(*store));
  std::this_thread::sleep_for(milliseconds(300));  // the agent reconnects a moment after the restart
  EXPECT_EQ(c->GetJob("20260101-000001-1-bbbb")->record.state, JobState::kQueued);
  auto a = std::make_shared<FakeLink>();
  ASSERT_TRUE(c->AddAgent(Info("a", 1), "1", a).ok());
  ASSERT_TRUE(Eventually([&] { return a->Orders() == 1; })) << c->GetJob("20260101-000001-1-bbbb")->record.message;
  EXPECT_EQ(a->Order(0).job_id, "20260101-000001-1-bbbb");
  c->Stop();
}

// Issue 24 item 7: the job store and ListJobs had no retention and no paging.
std::vector<std::string> IdsOf(const std::vector<JobInfoData>& jobs) {
  std::vector<std::string> ids;
  for (const JobInfoData& j : jobs) ids.push_back(j.record.id);
  return ids;
}

std::vector<std::string> StoredIds(const std::string& path) {
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  absl::StatusOr<std::vector<JobRecord>> all = (*store)->LoadAll();
  EXPECT_TRUE(all.ok()) << all.status();
  std::vector<std::string> ids;
  for (const JobRecord& r : *all) ids.push_back(r.id);
  return ids;
}

// Submission numbers are never handed out twice, even when retention deleted the row holding the highest one
// (page tokens name submission numbers and hold across a restart).
TEST(JobStoreTest, TheHighestSubmissionNumberOutlivesItsDeletedRow) {
  char tmpl[] = "/tmp/dlio_job_store_test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/jobs.db";
  {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int64_t seq : {1, 2, 7}) {
      JobRecord r;
      r.id = "20260101-000000-" + std::to_string(seq) + "-abcd";
      r.seq = seq;
      ASSERT_TRUE((*store)->Put(r).ok());
    }
    EXPECT_EQ(*(*store)->MaxSeq(), 7);
    ASSERT_TRUE((*store)->Delete({"20260101-000000-7-abcd"}).ok());
    EXPECT_EQ(*(*store)->MaxSeq(), 7);
  }
  absl::StatusOr<std::unique_ptr<JobStore>> reopened = JobStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(*(*reopened)->MaxSeq(), 7);
  EXPECT_EQ((*reopened)->LoadAll()->size(), 2u);
  std::filesystem::remove_all(tmpl);
}

TEST_F(CoordinatorTest, KeepJobsDropsTheOldestFinishedJobsWhenOneEndsAndAtStartButNeverQueuedOrRunningOnes) {
  const std::string path = (dir_ / "jobs.db").string();
  options_.keep_jobs = 2;
  std::vector<std::string> q;  // q[0] waits for agents (the runner's job), q[1..5] queue behind it
  {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto c = Make(std::move(*store));
    JobRequest r;
    r.workload_yaml = Yaml(1);
    r.wait_for_agents_s = 60;
    for (int i = 0; i < 6; ++i) {
      absl::StatusOr<std::string> id = c->Submit(r);
      ASSERT_TRUE(id.ok()) << id.status();
      q.push_back(*id);
    }
    // Three queued jobs end (cancelled) one after the other: the first of them is dropped when the third ends.
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(*c->Cancel(q[static_cast<size_t>(i)]));
    const absl::StatusOr<JobInfoData> dropped = c->GetJob(q[1]);
    ASSERT_FALSE(dropped.ok());
    EXPECT_EQ(dropped.status().code(), absl::StatusCode::kNotFound) << dropped.status();
    EXPECT_EQ(IdsOf(c->ListJobs()), (std::vector<std::string>{q[0], q[2], q[3], q[4], q[5]}))
        << "the waiting job and the queued ones are kept however many there are";
    std::vector<JobEventData> events;
    EXPECT_EQ(c->WaitEvents(q[1], 0, &events, milliseconds(10)).code(), absl::StatusCode::kNotFound);
    c->Stop();  // q[0] had not started: it stays queued
  }
  EXPECT_EQ(StoredIds(path), (std::vector<std::string>{q[0], q[2], q[3], q[4], q[5]})) << "its row is deleted too";
  // A restart with a lower --keep-jobs drops the finished jobs beyond it, in the order they ended.
  options_.keep_jobs = 1;
  {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto c = Make(std::move(*store));
    EXPECT_EQ(IdsOf(c->ListJobs()), (std::vector<std::string>{q[0], q[3], q[4], q[5]}));
    c->Stop();
  }
  EXPECT_EQ(StoredIds(path), (std::vector<std::string>{q[0], q[3], q[4], q[5]}));
  options_.keep_jobs = 0;
  EXPECT_EQ(Coordinator::Create(options_, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CoordinatorTest, ListJobsPagesNewestFirstWithTokensThatHoldWhileJobsAreAdded) {
  auto c = Make();
  JobRequest r;
  r.workload_yaml = Yaml(1);
  r.wait_for_agents_s = 60;  // the first job waits for agents; the others stay queued
  std::vector<std::string> ids;
  auto submit = [&] {
    absl::StatusOr<std::string> id = c->Submit(r);
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  };
  for (int i = 0; i < 7; ++i) submit();
  absl::StatusOr<JobPage> p1 = c->ListJobsPage(3, "");
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_EQ(IdsOf(p1->jobs), (std::vector<std::string>{ids[6], ids[5], ids[4]}));
  ASSERT_FALSE(p1->next_page_token.empty());
  submit();  // newer jobs do not shift the pages after the first
  submit();
  absl::StatusOr<JobPage> p2 = c->ListJobsPage(3, p1->next_page_token);
  ASSERT_TRUE(p2.ok()) << p2.status();
  EXPECT_EQ(IdsOf(p2->jobs), (std::vector<std::string>{ids[3], ids[2], ids[1]}));
  absl::StatusOr<JobPage> p3 = c->ListJobsPage(3, p2->next_page_token);
  ASSERT_TRUE(p3.ok()) << p3.status();
  EXPECT_EQ(IdsOf(p3->jobs), (std::vector<std::string>{ids[0]}));
  EXPECT_EQ(p3->next_page_token, "") << "no older job";
  // The page size is capped: 0 and anything larger mean kMaxJobsPageSize.
  while (ids.size() < kMaxJobsPageSize + 2) submit();
  for (size_t size : {size_t{0}, size_t{100000}}) {
    absl::StatusOr<JobPage> all = c->ListJobsPage(size, "");
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->jobs.size(), kMaxJobsPageSize) << size;
    EXPECT_EQ(all->jobs.front().record.id, ids.back());
    absl::StatusOr<JobPage> rest = c->ListJobsPage(size, all->next_page_token);
    ASSERT_TRUE(rest.ok()) << rest.status();
    EXPECT_EQ(IdsOf(rest->jobs), (std::vector<std::string>{ids[1], ids[0]}));
  }
  for (const std::string bad : {"x", "before-", "before-abc", "before--3", "before-0"}) {
    const absl::StatusOr<JobPage> p = c->ListJobsPage(3, bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("page_token '" + bad + "'"), std::string::npos) << p.status();
  }
  c->Stop();
}

TEST_F(CoordinatorTest, ListJobsPagesStayNearTheirByteBoundWhateverTheJobsHold) {
  const std::string path = (dir_ / "jobs.db").string();
  {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 1; i <= 12; ++i) {  // finished jobs with 1 MiB messages; the newest one holds 6 MiB
      JobRecord rec;
      rec.id = "20260101-000000-" + std::to_string(i) + "-abcd";
      rec.seq = i;
      rec.state = JobState::kFailed;
      rec.ended_unix_us = i;
      rec.message = std::string(i == 12 ? (6u << 20) : (1u << 20), 'm');
      ASSERT_TRUE((*store)->Put(rec).ok());
    }
  }
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto c = Make(std::move(*store));
  std::vector<size_t> sizes;
  std::string token;
  do {
    absl::StatusOr<JobPage> page = c->ListJobsPage(0, token);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_FALSE(page->jobs.empty());
    size_t bytes = 0;
    for (const JobInfoData& j : page->jobs) bytes += j.record.message.size();
    EXPECT_TRUE(page->jobs.size() == 1 || bytes <= kJobsPageBytes) << page->jobs.size() << " jobs, " << bytes;
    sizes.push_back(page->jobs.size());
    token = page->next_page_token;
  } while (!token.empty() && sizes.size() < 20);
  // The 6 MiB job alone, then pages of 3 (4 x 1 MiB and their numbers pass 4 MiB): 11 more in 4 pages.
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 3, 3, 3, 2}));
  c->Stop();
}

TEST_F(CoordinatorTest, ResultFoldersStayInsideTheResultsFolder) {
  auto c = Make();
  EXPECT_FALSE(c->ResultDir("../etc").ok());
  EXPECT_FALSE(c->ResultDir("a/b").ok());
  EXPECT_FALSE(c->ResultDir("").ok());
  EXPECT_TRUE(c->ResultDir("20260101-000000-1-abcd").ok());
  fs::create_directories(dir_ / "results");
  fs::create_directories(dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "results" / "planted");
  const absl::StatusOr<std::string> d = c->ResultDir("planted");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("elsewhere"), std::string::npos) << d.status();
}

}  // namespace
}  // namespace dlio
