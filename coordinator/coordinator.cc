#include "coordinator/coordinator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

int64_t NowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Job ids sort by submission time and stay unique across coordinator restarts: <UTC time>-<counter>-<random>.
std::string NewJobId(uint64_t counter) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", rd() & 0xffff);
  return absl::StrCat(buf, "-", counter, "-", suffix);
}

}  // namespace

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "unknown";
}

struct Coordinator::Phase {
  std::string id;
  bool generate = false;
  int epoch = 0;
  std::set<std::string> pending;     // agents whose PhaseDone is still missing
  uint64_t barrier_step = 0;         // the step the barrier is collecting arrivals for
  std::set<std::string> arrived;
  std::chrono::steady_clock::time_point first_arrival;  // of barrier_step, for the barrier-wait histogram
  std::map<std::string, std::array<uint64_t, 4>> progress;  // per agent: done, total, samples, bytes
  std::vector<RankEpochResult> results;
  std::string error;                 // first failure, one line
};

struct Coordinator::Job {
  std::string id;
  JobRequest request;
  WorkloadSpec spec;
  JobState state = JobState::kQueued;
  std::vector<JobEventData> events;
  bool cancel_requested = false;
  std::vector<std::string> agent_names;  // the job's agents, in rank order
  std::unique_ptr<Phase> phase;          // the running phase
  JobResult result;
};

Coordinator::Coordinator(Options options) : options_(std::move(options)) {
  runner_ = std::thread([this] { RunnerLoop(); });
}

Coordinator::~Coordinator() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    if (running_ != nullptr) running_->cancel_requested = true;
    cv_.notify_all();
  }
  runner_.join();
}

absl::Status Coordinator::AddAgent(const AgentInfo& info, std::shared_ptr<AgentLink> link) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = agents_.find(info.name);
  if (it != agents_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("agent name '", info.name, "' is already attached (host '",
                                                 it->second.info.hostname, "'); refused the second agent from host '",
                                                 info.hostname, "': give each agent a unique --name"));
  }
  link->Accepted();
  agents_[info.name] = Agent{info, std::move(link)};
  spdlog::info("agent '{}' attached from {} with {} accelerators ({} attached)", info.name, info.hostname, info.ranks,
               agents_.size());
  cv_.notify_all();
  return absl::OkStatus();
}

void Coordinator::RemoveAgent(const std::string& name, const std::string& why) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = agents_.find(name);
  if (it == agents_.end()) return;
  const AgentInfo info = it->second.info;
  agents_.erase(it);
  const bool in_job = running_ != nullptr && std::find(running_->agent_names.begin(), running_->agent_names.end(),
                                                       name) != running_->agent_names.end();
  if (in_job) {
    spdlog::warn("agent '{}' detached during job {}: {}", name, running_->id, why);
  } else {
    spdlog::info("agent '{}' detached: {}", name, why);
  }
  if (running_ != nullptr && running_->phase != nullptr &&
      std::find(running_->agent_names.begin(), running_->agent_names.end(), name) != running_->agent_names.end()) {
    Phase& p = *running_->phase;
    if (p.error.empty()) {
      int first = 0, count = 0;
      for (const AgentInfo& a : running_->result.agents) {
        if (a.name == name) first = a.first_rank, count = a.ranks;
      }
      p.error = absl::StrCat("agent '", name, "' (ranks ", first, "..", first + count - 1, ") lost during job ",
                             running_->id, " phase ", p.id, " at step ", p.barrier_step, ": ", why);
    }
  }
  cv_.notify_all();
}

size_t Coordinator::AttachedAgents() const {
  std::lock_guard<std::mutex> lk(mu_);
  return agents_.size();
}

bool Coordinator::WaitForAgents(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return agents_.size() >= n; });
}

void Coordinator::OnBarrierArrive(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                                  uint64_t step) {
  std::lock_guard<std::mutex> lk(mu_);
  if (running_ == nullptr || running_->id != job_id || !running_->phase || running_->phase->id != phase_id) return;
  Phase& p = *running_->phase;
  if (step != p.barrier_step) return;  // a repeat of a released step
  if (p.arrived.empty()) p.first_arrival = std::chrono::steady_clock::now();
  p.arrived.insert(agent);
  if (p.arrived.size() < running_->agent_names.size()) return;
  barrier_wait_[job_id].Record(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - p.first_arrival)
          .count()));
  if (barrier_wait_.size() > kBarrierWaitJobs) barrier_wait_.erase(barrier_wait_.begin());
  p.arrived.clear();
  ++p.barrier_step;
  for (const std::string& name : running_->agent_names) {
    auto it = agents_.find(name);
    if (it != agents_.end()) it->second.link->ReleaseBarrier(job_id, phase_id, step);
  }
}

void Coordinator::OnProgress(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                             uint64_t done, uint64_t total, uint64_t samples, uint64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  if (running_ == nullptr || running_->id != job_id || !running_->phase || running_->phase->id != phase_id) return;
  running_->phase->progress[agent] = {done, total, samples, bytes};
}

void Coordinator::OnPhaseDone(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                              std::vector<RankEpochResult> ranks) {
  std::lock_guard<std::mutex> lk(mu_);
  if (running_ == nullptr || running_->id != job_id || !running_->phase || running_->phase->id != phase_id) return;
  Phase& p = *running_->phase;
  if (p.pending.erase(agent) == 0) return;  // a repeated PhaseDone
  for (RankEpochResult& r : ranks) p.results.push_back(std::move(r));
  cv_.notify_all();
}

void Coordinator::OnAgentError(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                               const std::string& message) {
  std::lock_guard<std::mutex> lk(mu_);
  spdlog::error("agent '{}' job {} phase {}: {}", agent, job_id, phase_id, message);
  if (running_ == nullptr || running_->id != job_id || !running_->phase) return;
  if (running_->phase->error.empty()) running_->phase->error = message;
  cv_.notify_all();
}

absl::StatusOr<std::string> Coordinator::Submit(const JobRequest& request) {
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(request.workload_yaml, request.overrides, request.source_name);
  if (!spec.ok()) return spec.status();
  if (request.agents < 0) return absl::InvalidArgumentError("--agents: must be >= 0");
  std::lock_guard<std::mutex> lk(mu_);
  auto job = std::make_unique<Job>();
  job->id = NewJobId(++job_counter_);
  job->request = request;
  job->spec = std::move(*spec);
  const std::string id = job->id;
  JobEventData e;
  e.state = JobState::kQueued;
  e.message = absl::StrCat("job ", id, " queued (", queue_.size(), " ahead)");
  job->events.push_back(e);
  jobs_[id] = std::move(job);
  queue_.push_back(id);
  cv_.notify_all();
  return id;
}

absl::StatusOr<bool> Coordinator::Cancel(const std::string& job_id) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  Job& job = *it->second;
  if (job.state == JobState::kQueued) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
    FailJob(job, JobState::kCancelled, absl::StrCat("job ", job_id, " cancelled before it started"));
    return true;
  }
  if (job.state == JobState::kRunning) {
    job.cancel_requested = true;
    cv_.notify_all();
    return true;
  }
  return false;
}

absl::Status Coordinator::WaitEvents(const std::string& job_id, size_t from, std::vector<JobEventData>* out,
                                     std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lk(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  const Job& job = *it->second;
  cv_.wait_for(lk, timeout, [&] { return job.events.size() > from || stopping_; });
  for (size_t i = from; i < job.events.size(); ++i) out->push_back(job.events[i]);
  return absl::OkStatus();
}

std::string Coordinator::ResultDir(const std::string& job_id) const {
  return options_.results_dir + "/" + job_id;
}

Coordinator::Counts Coordinator::GetCounts() const {
  std::lock_guard<std::mutex> lk(mu_);
  Counts c;
  c.agents = agents_.size();
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled}) {
    c.jobs[s] = 0;
  }
  for (const auto& [id, job] : jobs_) ++c.jobs[job->state];
  c.barrier_wait = barrier_wait_;
  return c;
}

void Coordinator::Emit(Job& job, JobEventData e) {
  e.state = job.state;
  job.events.push_back(std::move(e));
  cv_.notify_all();
}

void Coordinator::FailJob(Job& job, JobState state, const std::string& message) {
  job.state = state;
  JobEventData e;
  e.message = message;
  e.final = true;
  Emit(job, std::move(e));
  spdlog::error("{}", message);
}

void Coordinator::RunnerLoop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job& job = *jobs_[queue_.front()];
    queue_.pop_front();
    running_ = &job;
    lk.unlock();
    RunJob(job);
    lk.lock();
    running_ = nullptr;
  }
}

void Coordinator::RunJob(Job& job) {
  std::unique_lock<std::mutex> lk(mu_);
  // Placement: the first `agents` attached agents by name; every agent contributes all of its accelerators.
  const size_t needed = job.request.agents > 0 ? static_cast<size_t>(job.request.agents) : 1;
  if (agents_.size() < needed && job.request.wait_for_agents_s > 0) {
    JobEventData e;
    e.message = absl::StrCat("job ", job.id, " waits up to ", job.request.wait_for_agents_s, " s for ", needed,
                             " agent(s); ", agents_.size(), " attached");
    Emit(job, std::move(e));
    cv_.wait_for(lk, std::chrono::seconds(job.request.wait_for_agents_s),
                 [&] { return agents_.size() >= needed || job.cancel_requested || stopping_; });
  }
  const size_t want = job.request.agents > 0 ? static_cast<size_t>(job.request.agents) : agents_.size();
  if (want == 0 || agents_.size() < want) {
    return FailJob(job, JobState::kFailed,
                   absl::StrCat("job ", job.id, " needs ", want == 0 ? 1 : want, " agent(s), ", agents_.size(),
                                " attached", job.request.wait_for_agents_s > 0
                                                 ? absl::StrCat(" after waiting ", job.request.wait_for_agents_s, " s")
                                                 : std::string(" (use --wait-for-agents SECONDS to wait for them)")));
  }
  int world = 0;
  for (auto& [name, a] : agents_) {
    if (job.agent_names.size() == want) break;
    job.agent_names.push_back(name);
    AgentInfo info = a.info;
    info.first_rank = world;
    world += info.ranks;
    job.result.agents.push_back(info);
  }
  // "random" shuffles get a seed drawn once here and written into the normalised spec, so every agent agrees.
  if (job.spec.file_shuffle == ShuffleMode::kRandom || job.spec.sample_shuffle == ShuffleMode::kRandom) {
    job.spec.seed = static_cast<int64_t>(std::random_device{}() & 0x7fffffff);
  }
  job.result.job_id = job.id;
  job.result.spec = job.spec;
  job.result.world = world;
  job.result.start_unix_us = NowUnixUs();
  job.state = JobState::kRunning;
  {
    JobEventData e;
    e.message = absl::StrCat("job ", job.id, " running on ", want, " agent(s), ", world, " rank(s): ",
                             absl::StrJoin(job.agent_names, ", "));
    Emit(job, std::move(e));
  }

  bool ok = true;
  if (job.spec.generate_data) {
    const auto t0 = std::chrono::steady_clock::now();
    ok = RunPhase(job, "generate", PhaseOrder::Kind::kGenerate, 0);
    job.result.generate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  for (int e = 1; ok && job.spec.train && e <= job.spec.epochs; ++e) {
    ok = RunPhase(job, absl::StrCat("train-epoch-", e), PhaseOrder::Kind::kTrainEpoch, e);
    if (ok && job.spec.EvaluatesAfter(e)) ok = RunPhase(job, absl::StrCat("eval-epoch-", e), PhaseOrder::Kind::kEval, e);
  }
  job.result.end_unix_us = NowUnixUs();
  job.phase.reset();

  const bool any_train = !job.result.train.empty();
  std::string write_error;
  if (ok || any_train) {
    // Completed epochs are written even when a later one failed.
    if (absl::Status s = WriteResultFiles(ResultDir(job.id), job.result); !s.ok()) {
      write_error = std::string(s.message());
    }
  }
  if (!ok) {
    if (job.state == JobState::kRunning) job.state = JobState::kFailed;
    return;  // the failing phase already emitted the final event
  }
  if (!write_error.empty()) {
    return FailJob(job, JobState::kFailed, absl::StrCat("job ", job.id, ": writing results failed: ", write_error));
  }
  job.state = JobState::kSucceeded;
  JobEventData e;
  e.final = true;
  e.message = absl::StrCat("job ", job.id, " succeeded; results in ", ResultDir(job.id));
  if (any_train) {
    const FleetSummary summary = Aggregator(job.result).Summarize();
    e.epochs = summary.epochs;
    e.mean.au_percent = summary.au_mean;
    e.mean.samples_per_second = summary.throughput_mean;
    e.mean.mib_per_second = summary.io_mean_mib;
    e.mean.actual_mb_per_second = summary.actual_mb_mean;
    e.mean.read_bytes = summary.read_bytes;
    e.mean.dropped_samples = summary.dropped_samples;
  }
  Emit(job, std::move(e));
}

bool Coordinator::RunPhase(Job& job, const std::string& phase_id, PhaseOrder::Kind kind, int epoch) {
  const bool generate = kind == PhaseOrder::Kind::kGenerate;
  std::unique_lock<std::mutex> lk(mu_, std::adopt_lock);
  job.phase = std::make_unique<Phase>();
  Phase& p = *job.phase;
  p.id = phase_id;
  p.generate = generate;
  p.epoch = epoch;
  const std::string yaml = ToYaml(job.spec);
  const auto t0 = std::chrono::steady_clock::now();
  {
    JobEventData e;
    e.phase_id = phase_id;
    e.message = absl::StrCat("phase ", phase_id, " started");
    Emit(job, std::move(e));
  }
  for (size_t i = 0; i < job.agent_names.size(); ++i) {
    const std::string& name = job.agent_names[i];
    auto it = agents_.find(name);
    if (it == agents_.end()) {
      p.error = absl::StrCat("agent '", name, "' detached before job ", job.id, " phase ", phase_id);
      break;
    }
    PhaseOrder o;
    o.job_id = job.id;
    o.phase_id = phase_id;
    o.kind = kind;
    o.workload_yaml = yaml;
    o.world = job.result.world;
    o.first_rank = job.result.agents[i].first_rank;
    o.local_ranks = job.result.agents[i].ranks;
    o.epoch = epoch;
    o.num_agents = static_cast<int>(job.agent_names.size());
    o.agent_index = static_cast<int>(i);
    p.pending.insert(name);
    it->second.link->RunPhase(o);
  }

  std::array<uint64_t, 4> last_reported{};
  while (p.error.empty() && !job.cancel_requested && !p.pending.empty()) {
    // Progress to watchers about once a second.
    cv_.wait_for(lk, std::chrono::seconds(1));
    std::array<uint64_t, 4> sum{};
    uint64_t min_done = UINT64_MAX;
    for (const auto& [agent, v] : p.progress) {
      min_done = std::min(min_done, v[0]);
      sum[1] = std::max(sum[1], v[1]);
      sum[2] += v[2];
      sum[3] += v[3];
    }
    sum[0] = generate ? 0 : (p.progress.empty() ? 0 : min_done);
    if (generate) {
      for (const auto& [agent, v] : p.progress) sum[0] += v[0];
      sum[1] = 0;
      for (const auto& [agent, v] : p.progress) sum[1] += v[1];
    }
    if (sum != last_reported && !p.progress.empty()) {
      last_reported = sum;
      JobEventData e;
      e.phase_id = phase_id;
      e.done = sum[0];
      e.total = sum[1];
      e.samples = sum[2];
      e.bytes = sum[3];
      Emit(job, std::move(e));
    }
  }

  if (!p.error.empty() || job.cancel_requested) {
    const std::string reason = job.cancel_requested ? absl::StrCat("job ", job.id, " cancelled during phase ", phase_id)
                                                    : p.error;
    for (const std::string& name : job.agent_names) {
      auto it = agents_.find(name);
      if (it != agents_.end()) it->second.link->Cancel(job.id, reason);
    }
    FailJob(job, job.cancel_requested ? JobState::kCancelled : JobState::kFailed, reason);
    lk.release();
    return false;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (generate) {
    for (const RankEpochResult& r : p.results) job.result.generate_io += r.io;
  } else {
    auto& into = kind == PhaseOrder::Kind::kEval ? job.result.eval : job.result.train;
    for (RankEpochResult& r : p.results) into.push_back(std::move(r));
  }
  JobEventData e;
  e.phase_id = phase_id;
  e.message = absl::StrCat("phase ", phase_id, " done in ", absl::StrFormat("%.2f", secs), " s");
  Emit(job, std::move(e));
  lk.release();
  return true;
}

}  // namespace dlio
