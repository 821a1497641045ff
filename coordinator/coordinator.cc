#include "coordinator/coordinator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/atomic_file.h"
#include "base/text.h"
#include "coordinator/coordinator_job.h"
#include "coordinator/messages.h"
#include "results/limit.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

namespace fs = std::filesystem;

// Job ids sort by submission time and stay unique across coordinator restarts: <UTC time>-<counter>-<random>.
std::string NewJobId(int64_t counter) {
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

// Job ids name folders under the results folder: letters, digits, '-', '_' and '.', not starting with '.'.
bool ValidJobId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

// ListJobs page tokens: the submission number the next page continues below. Submission numbers only grow (and
// survive a restart in the store), so a token stays valid while jobs are added; clients treat it as opaque.
constexpr absl::string_view kPageTokenPrefix = "before-";

std::string PageToken(int64_t seq) { return absl::StrCat(kPageTokenPrefix, seq); }

// About the bytes of a job's ListJobs entry: its text, plus 256 for the numbers, tags and verdict figures.
size_t InfoBytes(const JobInfoData& d) {
  const JobRecord& r = d.record;
  size_t n = 256 + r.id.size() + r.source_name.size() + r.phase_id.size() + r.message.size() + d.result_dir.size() +
             d.verdict.reason.size();
  for (const std::string& a : r.agent_names) n += a.size() + 2;
  return n;
}

}  // namespace

Coordinator::Coordinator(Options options, std::unique_ptr<JobStore> store)
    : options_(std::move(options)), store_(std::move(store)) {}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(Options options, std::unique_ptr<JobStore> store) {
  if (options.lease < 2 * options.heartbeat_interval) {
    return absl::InvalidArgumentError(absl::StrCat("--lease (", SecsText(options.lease),
                                                   ") must be at least twice --heartbeat-interval (",
                                                   SecsText(options.heartbeat_interval), ")"));
  }
  if (options.keep_jobs < 1) {
    return absl::InvalidArgumentError("--keep-jobs must be at least 1 (the job that just ended is kept)");
  }
  std::unique_ptr<Coordinator> c(new Coordinator(std::move(options), std::move(store)));
  if (c->store_) {
    if (absl::Status s = c->RestoreFromStore(); !s.ok()) return s;
    c->persister_ = std::thread([p = c.get()] { p->PersisterLoop(); });
  }
  c->runner_ = std::thread([p = c.get()] { p->RunnerLoop(); });
  c->watchdog_ = std::thread([p = c.get()] { p->WatchdogLoop(); });
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Restore from the store
// ---------------------------------------------------------------------------------------------------------------

absl::Status Coordinator::RestoreFromStore() {
  absl::StatusOr<std::vector<JobRecord>> records = store_->LoadAll();
  if (!records.ok()) return records.status();
  absl::StatusOr<int64_t> max_seq = store_->MaxSeq();  // dropped jobs' numbers are not handed out again
  if (!max_seq.ok()) return max_seq.status();
  MutexLock lk(&mu_);
  job_counter_ = std::max(job_counter_, *max_seq);
  for (JobRecord& r : *records) {
    if (absl::Status s = RestoreJob(std::move(r)); !s.ok()) return s;
  }
  // Retention at start: the finished jobs in the order they ended (a lower --keep-jobs than before drops the rest;
  // the persister deletes their rows in one transaction once it starts).
  std::vector<const Job*> ended;
  for (const auto& [id, job] : jobs_) {
    if (IsFinal(job->rec.state)) ended.push_back(job.get());
  }
  std::sort(ended.begin(), ended.end(), [](const Job* a, const Job* b) {
    return std::tie(a->rec.ended_unix_us, a->rec.seq) < std::tie(b->rec.ended_unix_us, b->rec.seq);
  });
  for (const Job* j : ended) finished_.push_back(j->rec.id);
  DropOldFinished();
  if (!queue_.empty()) {
    spdlog::info("{} queued job(s) restored from {}; placement waits up to {} for the agents to reattach",
                 queue_.size(), store_->path(), SecsText(options_.restart_grace));
    restart_grace_until_ = options_.now() + options_.restart_grace;
  }
  return absl::OkStatus();
}

absl::Status Coordinator::RestoreJob(JobRecord record) {
  auto job = std::make_unique<Job>();
  job->rec = std::move(record);
  JobRecord& rec = job->rec;
  job_counter_ = std::max(job_counter_, rec.seq);
  if (!ValidJobId(rec.id)) {
    spdlog::error("job store: skipping a job with the malformed id '{}'", rec.id);
    return absl::OkStatus();
  }
  const JobState stored = rec.state;
  JobEventData e;
  if (rec.state == JobState::kQueued) {
    absl::StatusOr<WorkloadSpec> spec = LoadWorkload(rec.workload_yaml, rec.overrides, rec.source_name);
    if (spec.ok()) {
      job->spec = std::move(*spec);
      queue_.push_back(rec.id);
      e.message = absl::StrCat("job ", rec.id, " queued (restored from the job store after a restart)");
    } else {
      rec.state = JobState::kFailed;
      rec.message = absl::StrCat("job ", rec.id, ": its job file no longer loads: ", spec.status().message());
      rec.ended_unix_us = NowUnixUs();
    }
  } else if (rec.state == JobState::kRunning) {
    MarkInterrupted(rec);
  }
  if (IsFinal(rec.state)) {
    e.final = true;
    e.message = rec.message;
  }
  e.state = rec.state;
  e.phase_id = rec.phase_id;
  job->events.push_back(std::move(e));
  if (rec.state != stored) {
    if (absl::Status s = store_->Put(rec); !s.ok()) return s;
  }
  jobs_[rec.id] = std::move(job);
  return absl::OkStatus();
}

void Coordinator::MarkInterrupted(JobRecord& rec) {
  for (const std::string& a : rec.agent_names) {  // the restart grace waits for the agents of every such job
    if (std::find(restart_agents_.begin(), restart_agents_.end(), a) == restart_agents_.end()) {
      restart_agents_.push_back(a);
    }
  }
  rec.state = JobState::kInterrupted;
  rec.ended_unix_us = NowUnixUs();
  const std::string dir = absl::StrCat(options_.results_dir, "/", rec.id);
  if (absl::StatusOr<std::shared_ptr<const ConfinedDir>> folder = OpenResultDir(rec.id, /*create=*/false);
      folder.ok()) {
    // The files on disk are what was kept: a crash between writing an epoch's partial results and recording it in
    // the store leaves the store one epoch behind, so the summary's epoch count wins. It was written as "partial";
    // say what became of the job.
    const absl::StatusOr<std::string> text = ReadFileIn(**folder, "summary.json");
    nlohmann::json j =
        text.ok() ? nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false) : nlohmann::json();
    if (j.is_object()) {
      rec.has_results = true;
      if (j.contains("epochs") && j["epochs"].is_number_integer()) rec.epochs_done = j["epochs"].get<int>();
      j["dlio_ext"]["job_state"] = JobStateName(JobState::kInterrupted);
      if (absl::Status s = WriteFileAtomic(**folder, "summary.json", j.dump(4) + "\n"); !s.ok()) {
        spdlog::error("{}", std::string(s.message()));
      }
    }
  }
  rec.message = absl::StrCat("job ", rec.id, " interrupted: the coordinator stopped while it ran",
                             rec.phase_id.empty() ? "" : absl::StrCat(" phase ", rec.phase_id), "; ",
                             rec.has_results ? absl::StrCat("results of ", rec.epochs_done,
                                                            " completed epoch(s) kept in ", dir)
                                             : std::string("no epoch had completed"));
  spdlog::warn("{}", rec.message);
}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Stop() {
  {
    MutexLock lk(&mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  std::call_once(stop_once_, [&] {
    if (runner_.joinable()) runner_.join();
    if (watchdog_.joinable()) watchdog_.join();
    {
      MutexLock sl(&store_mu_);
      store_stop_ = true;
      store_cv_.notify_all();
    }
    if (persister_.joinable()) persister_.join();  // every record is written when Stop() returns
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------------------------------

absl::Status Coordinator::AddAgent(const AgentInfo& info, const std::string& instance,
                                   std::shared_ptr<AgentLink> link) {
  MutexLock lk(&mu_);
  const Clock::time_point now = options_.now();
  auto it = agents_.find(info.name);
  if (it != agents_.end()) {
    if (instance.empty() || it->second.instance != instance) {
      return absl::AlreadyExistsError(absl::StrCat(
          "agent name '", info.name, "' is already attached (host '", it->second.info.hostname, "', attached ",
          absl::StrFormat("%.0f", Secs(now - it->second.attached)), " s ago); refused the second agent '", info.name,
          "' from host '", info.hostname, "': give each agent a unique --name"));
    }
    const std::string why = "its session was replaced by a reconnect of the same agent (the old connection broke)";
    spdlog::warn("agent '{}': {}", info.name, why);
    LoseAgentLocked(info.name, why);
    it->second.link->Drop(why);
    agents_.erase(it);
  }
  link->Accepted(options_.heartbeat_interval, options_.lease);
  agents_[info.name] = Agent{info, instance, std::move(link), now, now};
  spdlog::info("agent '{}' attached from node {} with {} accelerators ({} attached)", info.name, info.hostname,
               info.ranks, agents_.size());
  cv_.notify_all();
  return absl::OkStatus();
}

void Coordinator::RemoveAgent(const std::string& name, const AgentLink* link, const std::string& why) {
  MutexLock lk(&mu_);
  auto it = agents_.find(name);
  if (it == agents_.end() || it->second.link.get() != link) return;
  LoseAgentLocked(name, why);
  agents_.erase(it);
  spdlog::info("agent '{}' detached: {} ({} attached)", name, why, agents_.size());
  cv_.notify_all();
}

void Coordinator::LoseAgentLocked(const std::string& name, const std::string& why) {
  for (const auto& [id, running] : running_) {  // only the jobs it served
    Job& job = *running;
    if (job.agent_index.count(name) == 0) continue;
    spdlog::warn("agent '{}' lost during job {}: {}", name, job.rec.id, why);
    if (!job.driver.active()) continue;  // before its first phase: RunPhase finds it missing
    job.driver.Lost(name, why);
    cv_.notify_all();
  }
}

Coordinator::Job* Coordinator::RunningJob(const std::string& job_id) const {
  auto it = running_.find(job_id);
  return it == running_.end() ? nullptr : it->second;
}

size_t Coordinator::AttachedAgents() const {
  MutexLock lk(&mu_);
  return agents_.size();
}

bool Coordinator::WaitForAgents(size_t n, std::chrono::milliseconds timeout) const {
  MutexLock lk(&mu_);
  return cv_.WaitFor(&lk, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return agents_.size() >= n; });
}

void Coordinator::ExpireLeases() {
  MutexLock lk(&mu_);
  const Clock::time_point now = options_.now();
  for (auto it = agents_.begin(); it != agents_.end();) {
    const auto silent = now - it->second.last_heard;
    if (silent <= options_.lease) {
      ++it;
      continue;
    }
    const std::string why = absl::StrFormat("no heartbeat for %.1f s (lease %s)", Secs(silent),
                                            SecsText(options_.lease));
    spdlog::warn("agent '{}' dropped: {}", it->first, why);
    LoseAgentLocked(it->first, why);
    it->second.link->Drop(why);
    ++leases_expired_;
    it = agents_.erase(it);
    cv_.notify_all();
  }
}

void Coordinator::WatchdogLoop() {
  // lease/8, within [50 ms, 1 s]: an expired lease is noticed within 1/8 of its length, at a negligible cost.
  const auto period = std::clamp<std::chrono::milliseconds>(options_.lease / 8, std::chrono::milliseconds(50),
                                                            std::chrono::milliseconds(1000));
  MutexLock lk(&mu_);
  while (!stopping_) {
    cv_.WaitFor(&lk, period, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
    if (stopping_) break;
    lk.Unlock();
    ExpireLeases();
    lk.Lock();
  }
}

void Coordinator::Touch(const std::string& agent) {
  auto it = agents_.find(agent);
  if (it != agents_.end()) it->second.last_heard = options_.now();
}

// ---------------------------------------------------------------------------------------------------------------
// Agent events
// ---------------------------------------------------------------------------------------------------------------

void Coordinator::OnHeartbeat(const std::string& agent) {
  MutexLock lk(&mu_);
  Touch(agent);
}

void Coordinator::OnBarrierArrive(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                                  uint64_t step, int64_t compute_left_ns, Clock::time_point received,
                                  std::optional<barrier_timing::EndInterval> end) {
  MutexLock lk(&mu_);
  Touch(agent);
  // An arrival counts only for the running phase's barrier, from one of its agents; anything else (a late arrival of
  // an earlier job or phase, a repeat of a released step) is dropped and counted.
  PhaseDriver::Clock::duration wait{};
  Job* job = RunningJob(job_id);
  if (job == nullptr) {
    ++stale_arrivals_;
    return;
  }
  switch (job->driver.Arrive(agent, job_id, phase_id, step, options_.now(), &wait, compute_left_ns, received,
                             options_.now, end)) {
    case PhaseDriver::Arrival::kStale:
      ++stale_arrivals_;
      return;
    case PhaseDriver::Arrival::kCounted:
      return;
    case PhaseDriver::Arrival::kReleased:
      barrier_wait_[job_id].Record(
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count()));
      if (barrier_wait_.size() > kBarrierWaitJobs) barrier_wait_.erase(barrier_wait_.begin());
      return;
  }
}

void Coordinator::OnProgress(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                             const AgentProgress& progress) {
  MutexLock lk(&mu_);
  Touch(agent);
  if (Job* job = RunningJob(job_id)) job->driver.Report(agent, job_id, phase_id, progress);
}

void Coordinator::OnPhaseDone(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                              std::vector<RankEpochResult> ranks) {
  MutexLock lk(&mu_);
  Touch(agent);
  Job* job = RunningJob(job_id);
  if (job != nullptr && job->driver.Done(agent, job_id, phase_id, std::move(ranks))) cv_.notify_all();
}

void Coordinator::OnAgentError(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                               AgentErrorKind kind, const std::string& raw_message) {
  // The agent's text goes into logs and the job's message: one line, bounded (text.h).
  const std::string message = EscapeText(raw_message, 4096);
  MutexLock lk(&mu_);
  Touch(agent);
  Job* running = RunningJob(job_id);
  if (running == nullptr || !running->driver.active()) {
    spdlog::warn("agent '{}' job {} phase {}: {}", agent, EscapeText(job_id, 128), EscapeText(phase_id, 128), message);
    return;
  }
  Job& job = *running;
  PhaseDriver& driver = job.driver;
  if (phase_id != driver.id()) return;
  driver.Settle(agent);
  // A cancelled phase confirms a stop we asked for; anything else is the job's failure (the first one wins).
  const bool stop_confirmation =
      kind == AgentErrorKind::kCancelled && (job.cancel_requested || stopping_ || !driver.error().empty());
  // A refusal (agent/preflight.h) is the job's answer, said once by its final event: logged at info, so `run` with
  // four agents does not print it four times more.
  if (kind == AgentErrorKind::kRefused) {
    spdlog::info("agent '{}' job {} phase {}: {}", agent, job_id, phase_id, message);
  } else if (!stop_confirmation) {
    spdlog::error("agent '{}' job {} phase {}: {}", agent, job_id, phase_id, message);
  }
  if (!job.cancel_requested && !stopping_) driver.Fail(message, kind == AgentErrorKind::kRefused);
  cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------------------------
// Client verbs
// ---------------------------------------------------------------------------------------------------------------

absl::StatusOr<std::string> Coordinator::Submit(const JobRequest& request) {
  std::vector<std::string> warnings;  // keys where DLIO behaves differently: logged once the job has its id
  absl::StatusOr<WorkloadSpec> spec =
      LoadWorkload(request.workload_yaml, request.overrides, request.source_name, &warnings);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = CheckPlacementOptions(request.agents, request.accelerators_per_agent,
                                             request.wait_for_agents_s, request.barrier_timeout_s);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckText(request.source_name, "job name (the job file's path)", kMaxSourceNameBytes);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckAgentNames(request.agent_names, request.agents); !s.ok()) return s;
  MutexLock lk(&mu_);
  if (stopping_) return absl::UnavailableError("the coordinator is shutting down; submit again after its restart");
  if (absl::Status s = CheckFleetCanPlace(request); !s.ok()) return s;
  auto job = std::make_unique<Job>();
  JobRecord& rec = job->rec;
  rec.seq = ++job_counter_;
  rec.id = NewJobId(rec.seq);
  rec.state = JobState::kQueued;
  rec.source_name = request.source_name;
  rec.workload_yaml = request.workload_yaml;
  rec.overrides = request.overrides;
  if (!spec->s3_secret_access_key.empty()) {
    // The job file (or an override) holds an S3 secret: the store keeps the normalised workload, which never
    // carries it. A job restored after a coordinator restart then uses the agents' own credentials.
    rec.workload_yaml = ToYaml(*spec);
    rec.overrides.clear();
  }
  rec.agents = request.agents;
  rec.accelerators_per_agent = request.accelerators_per_agent;
  rec.wait_for_agents_s = request.wait_for_agents_s;
  rec.barrier_timeout_s = request.barrier_timeout_s;
  rec.requested_agents = request.agent_names;
  rec.share_agents = request.share_agents;
  rec.submitted_unix_us = NowUnixUs();
  rec.epochs_total = spec->train ? static_cast<int>(spec->epochs) : 0;
  rec.message = absl::StrCat("job ", rec.id, " queued (", queue_.size() + running_.size(), " ahead)");
  if (store_) {
    // A job the store cannot hold is refused rather than run without a trace. Written here, off the lock: the job
    // is not visible before it is in the store, so no later record of it can overtake this one.
    lk.Unlock();
    const absl::Status s = store_->Put(rec);
    lk.Lock();
    if (!s.ok()) return absl::InternalError(absl::StrCat("job not queued: ", s.message()));
  }
  job->spec = std::move(*spec);
  const std::string id = rec.id;
  // Info, not warn: `run` shows the client's own warning lines and the embedded coordinator logs warnings only.
  for (const std::string& w : warnings) spdlog::info("job {}: warning: {}", id, w);
  JobEventData e;
  e.state = JobState::kQueued;
  e.message = rec.message;
  job->events.push_back(e);
  jobs_[id] = std::move(job);
  queue_.push_back(id);
  cv_.notify_all();
  return id;
}

absl::StatusOr<bool> Coordinator::Cancel(const std::string& job_id) {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  Job& job = *it->second;
  if (job.rec.state == JobState::kQueued && running_.count(job_id) == 0) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
    EndJob(job, JobState::kCancelled,
           absl::StrCat("job ", job_id, job.wait_deadline ? " cancelled while waiting for agents"
                                                          : " cancelled before it started"),
           false);
    return true;
  }
  if (!IsFinal(job.rec.state)) {
    job.cancel_requested = true;
    cv_.notify_all();
    return true;
  }
  return false;
}

absl::Status Coordinator::WaitEvents(const std::string& job_id, size_t from, std::vector<JobEventData>* out,
                                     std::chrono::milliseconds timeout) const {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  // Looked up again after the wait: a finished job may have been dropped meanwhile (retention).
  auto find = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto j = jobs_.find(job_id);
    return j == jobs_.end() ? nullptr : j->second.get();
  };
  cv_.WaitFor(&lk, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Job* job = find();
    return job == nullptr || job->events.size() > from;
  });
  const Job* job = find();
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  for (size_t i = from; i < job->events.size(); ++i) out->push_back(job->events[i]);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Coordinator::Watch(const std::string& job_id, EventSink sink) {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  Job& job = *it->second;
  const uint64_t id = ++watch_counter_;
  for (const JobEventData& e : job.events) sink(e);
  if (job.events.empty() || !job.events.back().final) {
    job.watchers.emplace(id, std::move(sink));
    watch_jobs_.emplace(id, job_id);
  }
  return id;
}

void Coordinator::Unwatch(uint64_t id) {
  MutexLock lk(&mu_);
  auto w = watch_jobs_.find(id);
  if (w == watch_jobs_.end()) return;
  auto it = jobs_.find(w->second);
  if (it != jobs_.end()) it->second->watchers.erase(id);
  watch_jobs_.erase(w);
}

JobInfoData Coordinator::InfoLocked(const Job& job) const {
  JobInfoData d;
  d.record = job.rec;
  d.done = job.done;
  d.total = job.total;
  const auto q = std::find(queue_.begin(), queue_.end(), job.rec.id);
  if (q != queue_.end()) d.queue_position = static_cast<int>(q - queue_.begin() + running_.size());
  d.result_dir = absl::StrCat(options_.results_dir, "/", job.rec.id);
  if (job.rec.state == JobState::kRunning) {
    d.completed_au_percent = job.completed_au_percent;
    d.completed_samples_per_second = job.completed_samples_per_second;
  }
  if (!job.rec.verdict_json.empty()) {
    d.verdict = VerdictFromJson(nlohmann::json::parse(job.rec.verdict_json, nullptr, /*allow_exceptions=*/false));
  } else {
    d.verdict.target_percent = job.spec.au_threshold * 100;
    d.verdict.reason = IsFinal(job.rec.state) ? absl::StrCat("the job ", JobStateName(job.rec.state))
                                              : absl::StrCat("the job is ", JobStateName(job.rec.state));
  }
  return d;
}

absl::StatusOr<JobInfoData> Coordinator::GetJob(const std::string& job_id) const {
  MutexLock lk(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, ": no such job"));
  return InfoLocked(*it->second);
}

std::vector<JobInfoData> Coordinator::ListJobs() const {
  MutexLock lk(&mu_);
  std::vector<JobInfoData> out;
  for (const auto& [id, job] : jobs_) out.push_back(InfoLocked(*job));
  std::sort(out.begin(), out.end(),
            [](const JobInfoData& a, const JobInfoData& b) { return a.record.seq < b.record.seq; });
  return out;
}

absl::StatusOr<JobPage> Coordinator::ListJobsPage(size_t page_size, const std::string& page_token) const {
  int64_t before = std::numeric_limits<int64_t>::max();
  if (!page_token.empty() && (!absl::StartsWith(page_token, kPageTokenPrefix) ||
                              !absl::SimpleAtoi(page_token.substr(kPageTokenPrefix.size()), &before) || before < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ListJobs: page_token '", EscapeText(page_token, 64),
        "' is not one this coordinator gave: pass the next_page_token of the previous answer, or none for the first "
        "page"));
  }
  if (page_size == 0 || page_size > kMaxJobsPageSize) page_size = kMaxJobsPageSize;
  MutexLock lk(&mu_);
  std::vector<const Job*> older;
  for (const auto& [id, job] : jobs_) {
    if (job->rec.seq < before) older.push_back(job.get());
  }
  const size_t take = std::min(page_size, older.size());
  std::partial_sort(older.begin(), older.begin() + static_cast<std::ptrdiff_t>(take), older.end(),
                    [](const Job* a, const Job* b) { return a->rec.seq > b->rec.seq; });
  JobPage page;
  size_t bytes = 0;
  for (size_t i = 0; i < take; ++i) {
    JobInfoData d = InfoLocked(*older[i]);
    bytes += InfoBytes(d);
    if (i > 0 && bytes > kJobsPageBytes) break;
    page.jobs.push_back(std::move(d));
  }
  if (page.jobs.size() < older.size()) page.next_page_token = PageToken(page.jobs.back().record.seq);
  return page;
}

std::vector<AgentStatusData> Coordinator::ListAgents() const {
  MutexLock lk(&mu_);
  const Clock::time_point now = options_.now();
  std::vector<AgentStatusData> out;
  for (const auto& [name, a] : agents_) {
    AgentStatusData d;
    d.info = a.info;
    d.attached_s = Secs(now - a.attached);
    d.last_heard_s = Secs(now - a.last_heard);
    std::vector<std::string> serving;  // the running jobs it serves (more than one when they share it)
    for (const auto& [id, running] : running_) {
      if (running->agent_index.count(name) != 0) serving.push_back(id);
    }
    d.job_id = absl::StrJoin(serving, ",");
    out.push_back(std::move(d));
  }
  return out;
}

absl::StatusOr<std::string> Coordinator::ResultDir(const std::string& job_id) const {
  if (!ValidJobId(job_id)) return absl::InvalidArgumentError(absl::StrCat("'", job_id, "' is not a job id"));
  const std::string dir = absl::StrCat(options_.results_dir, "/", job_id);
  // The results folder is the only place the coordinator writes: refuse a job folder that resolves elsewhere
  // (a symlink planted under the results folder).
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(options_.results_dir), ec);
  const fs::path canon = fs::weakly_canonical(fs::absolute(dir), ec);
  if (ec || canon.parent_path() != root) {
    return absl::PermissionDeniedError(absl::StrCat("results of job ", job_id, ": '", dir, "' resolves to '",
                                                    canon.string(), "', outside the results folder '",
                                                    root.string(), "'"));
  }
  return dir;
}

absl::StatusOr<std::shared_ptr<const ConfinedDir>> Coordinator::OpenResultDir(const std::string& job_id,
                                                                               bool create) const {
  absl::StatusOr<std::string> checked = ResultDir(job_id);
  if (!checked.ok()) return checked.status();
  std::error_code ec;
  if (create) {
    fs::create_directories(options_.results_dir, ec);
    if (ec) return ErrnoStatus(ec.value(), absl::StrCat(options_.results_dir, ": cannot create directory"));
  } else if (!fs::is_directory(options_.results_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("results of job ", job_id, ": no results folder '",
                                            options_.results_dir, "'"));
  }
  // The results folder's own path may hold links (the operator chose it); below it, none is followed.
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> root =
      ConfinedDir::OpenRoot(options_.results_dir, {"--results-dir", "the coordinator", "its results folder"});
  if (!root.ok()) return root.status();
  return (*root)->Sub(job_id, create ? ConfinedDir::Mode::kCreate : ConfinedDir::Mode::kExisting,
                      absl::StrCat("results of job ", job_id));
}

Coordinator::Counts Coordinator::GetCounts() const {
  MutexLock lk(&mu_);
  Counts c;
  c.agents = agents_.size();
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kInterrupted}) {
    c.jobs[s] = 0;
  }
  for (const auto& [id, job] : jobs_) ++c.jobs[job->rec.state];
  c.barrier_wait = barrier_wait_;
  c.leases_expired = leases_expired_;
  c.stale_arrivals = stale_arrivals_;
  c.limit_job_id = limit_job_id_;
  c.limit_class = limit_class_;
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Job life
// ---------------------------------------------------------------------------------------------------------------

void Coordinator::Emit(Job& job, JobEventData e) {
  e.state = job.rec.state;
  job.events.push_back(std::move(e));
  for (const auto& [id, sink] : job.watchers) sink(job.events.back());
  if (job.events.back().final) {  // a job's final event is its last: its watchers are done
    for (const auto& [id, sink] : job.watchers) watch_jobs_.erase(id);
    job.watchers.clear();
  }
  cv_.notify_all();
}

void Coordinator::Save(Job& job) { Persist(job.rec.id, job.rec); }

void Coordinator::Persist(const std::string& id, std::optional<JobRecord> rec) {
  if (!store_) return;
  MutexLock sl(&store_mu_);
  if (!store_stop_) {
    store_pending_[id] = std::move(rec);  // a newer record (or the deletion) of the same job replaces one not written
    store_cv_.notify_all();
    return;
  }
  // After Stop() (a cancel arriving during shutdown): once the persister's last batch is written, at once.
  store_cv_.Wait(&sl, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_mu_) { return !store_writing_ && store_pending_.empty(); });
  const absl::Status s = rec ? store_->Put(*rec) : store_->Delete({id});
  if (!s.ok()) spdlog::error("{}", std::string(s.message()));
}

void Coordinator::PersisterLoop() {
  MutexLock lk(&store_mu_);
  while (true) {
    store_cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_mu_) { return store_stop_ || !store_pending_.empty(); });
    if (store_pending_.empty()) break;  // stopping, and everything is written
    std::map<std::string, std::optional<JobRecord>> batch;
    batch.swap(store_pending_);
    store_writing_ = true;
    lk.Unlock();
    std::vector<std::string> dropped;  // deleted in one transaction (thousands at a start with a lower --keep-jobs)
    for (const auto& [id, rec] : batch) {
      if (!rec) {
        dropped.push_back(id);
      } else if (absl::Status s = store_->Put(*rec); !s.ok()) {
        spdlog::error("{}", std::string(s.message()));
      }
    }
    if (absl::Status s = store_->Delete(dropped); !s.ok()) spdlog::error("{}", std::string(s.message()));
    lk.Lock();
    store_writing_ = false;
    store_cv_.notify_all();
  }
}

void Coordinator::EndJob(Job& job, JobState state, const std::string& message, bool error) {
  job.rec.state = state;
  job.rec.message = message;
  job.rec.ended_unix_us = NowUnixUs();
  JobEventData e;
  e.message = message;
  e.final = true;
  e.refused = job.refused;
  e.phase_id = job.rec.phase_id;
  job.result.spec = job.spec;  // the same once the job started; a job that never started has only job.spec
  const FleetSummary summary = Aggregator(job.result).Summarize();
  if (!job.result.train.empty()) {
    e.epochs = summary.epochs;
    e.mean.au_percent = summary.au_mean;
    e.mean.au_min_rank = summary.au_min_rank;
    e.mean.samples_per_second = summary.throughput_mean;
    e.mean.mib_per_second = summary.io_mean_mib;
    e.mean.actual_mb_per_second = summary.actual_mb_mean;
    e.mean.read_bytes = summary.read_bytes;
    e.mean.dropped_samples = summary.dropped_samples;
  }
  e.checkpoints = ComputeCheckpoints(job.result.checkpoints);
  e.verdict = JudgeJobAndLimit(job.result, summary, JobStateName(state));
  job.rec.verdict_json = VerdictJson(*e.verdict).dump();
  if (!e.verdict->limit_class.empty()) {
    limit_job_id_ = job.rec.id;
    limit_class_ = e.verdict->limit_class;
  }
  Save(job);
  Emit(job, std::move(e));
  // A refused job (bad input for this fleet) is the client's answer, which it prints once: not a coordinator error.
  if (error && !job.refused) {
    spdlog::error("{}", message);
  } else {
    spdlog::info("{}", message);
  }
  finished_.push_back(job.rec.id);  // the newest finished job: kept, as keep_jobs >= 1
  DropOldFinished();
}

void Coordinator::DropOldFinished() {
  std::vector<std::string> dropped, held;
  while (finished_.size() > options_.keep_jobs) {
    std::string id = std::move(finished_.front());
    finished_.pop_front();
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !IsFinal(it->second->rec.state)) continue;
    if (running_.count(id) != 0) {  // ended, its thread not yet let go of it: dropped at a later end
      held.push_back(std::move(id));
      continue;
    }
    jobs_.erase(it);
    Persist(id, std::nullopt);
    dropped.push_back(id);
  }
  for (auto it = held.rbegin(); it != held.rend(); ++it) finished_.push_front(std::move(*it));
  if (dropped.empty()) return;
  spdlog::info("dropped {} finished job(s) beyond --keep-jobs {} ({}{}); their result folders stay under {}",
               dropped.size(), options_.keep_jobs, dropped.front(),
               dropped.size() > 1 ? absl::StrCat(" .. ", dropped.back()) : std::string(), options_.results_dir);
}

}  // namespace dlio
