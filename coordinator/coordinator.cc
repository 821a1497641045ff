#include "coordinator/trace_writer.h"
#include "coordinator/coordinator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/checkpoint_plan.h"
#include "common/checkpoint_schedule.h"
#include "common/epoch_plan.h"
#include "common/preflight.h"
#include "common/text.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

namespace fs = std::filesystem;

int64_t NowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Secs(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string SecsText(std::chrono::milliseconds d) { return absl::StrFormat("%g s", d.count() / 1000.0); }

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

// "a, b, c and 5 more": keeps messages about big fleets on one readable line.
std::string NameList(const std::vector<std::string>& names, size_t max = 8) {
  if (names.size() <= max) return absl::StrJoin(names, ", ");
  std::vector<std::string> head(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(max));
  return absl::StrCat(absl::StrJoin(head, ", "), " and ", names.size() - max, " more");
}

std::string RankRange(int first, int count) {
  if (count <= 1) return absl::StrCat("rank ", first);
  return absl::StrCat("ranks ", first, "-", first + count - 1);
}

// What an agent reports for a phase must be about its own ranks, each once, with timings that are numbers: a
// rank outside them would name result files after it (2^32-1 became "-1_output.json") and NaN would poison the means.
absl::Status CheckPhaseResults(const AgentInfo& a, const std::vector<RankEpochResult>& ranks) {
  if (ranks.size() != static_cast<size_t>(a.ranks)) {
    return absl::InvalidArgumentError(absl::StrCat(ranks.size(), " rank result(s) for its ", a.ranks, " rank(s)"));
  }
  std::set<int> seen;
  auto bad_time = [](double v) { return !(v >= 0 && v < 1e9); };  // NaN fails: every comparison with it is false
  for (const RankEpochResult& r : ranks) {
    if (r.rank < a.first_rank || r.rank >= a.first_rank + a.ranks || !seen.insert(r.rank).second) {
      return absl::InvalidArgumentError(absl::StrCat("a result for rank ", r.rank, ", not one of its ",
                                                     RankRange(a.first_rank, a.ranks), " (or twice)"));
    }
    for (const BlockTimings& b : r.blocks) {
      const size_t n = b.load.size();
      if (b.proc.size() != n || b.compute.size() != n || b.barrier.size() != n || bad_time(b.duration_s)) {
        return absl::InvalidArgumentError(absl::StrCat("malformed block ", b.block, " of rank ", r.rank));
      }
      for (const auto* v : {&b.load, &b.proc, &b.compute, &b.barrier}) {
        if (std::any_of(v->begin(), v->end(), bad_time)) {
          return absl::InvalidArgumentError(absl::StrCat("a step time that is not a number of seconds in block ",
                                                         b.block, " of rank ", r.rank));
        }
      }
    }
    for (const RankCheckpointResult& c : r.checkpoints) {
      if (c.rank != r.rank || bad_time(c.duration_s)) {
        return absl::InvalidArgumentError(absl::StrCat("a malformed checkpoint timing of rank ", r.rank));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct Coordinator::Phase {
  std::string id;
  bool generate = false;
  bool train = false;                // a training epoch (live AU is reported for it)
  AgentProgress last_reported;       // the fleet's progress in the last progress event
  int epoch = 0;
  std::set<std::string> pending;     // agents whose PhaseDone (or Error) is still missing
  uint64_t barrier_step = 0;         // the step the barrier collects arrivals for = steps released so far
  // Per agent of the job (Job::agent_index): its link when the orders went out, and whether it arrived at the
  // current step. An arrival is a hash lookup and a flag; a release is one pass over the links.
  std::vector<std::shared_ptr<AgentLink>> links;
  std::vector<char> arrived;
  size_t arrived_count = 0;
  Clock::time_point first_arrival;   // of the current step
  Clock::time_point last_advance;    // phase start or the last release
  std::map<std::string, AgentProgress> progress;  // per agent, its latest report
  std::vector<RankEpochResult> results;
  std::string error;                 // first failure, one line
};

struct Coordinator::Job {
  JobRecord rec;
  WorkloadSpec spec;
  std::vector<JobEventData> events;
  bool cancel_requested = false;
  std::unique_ptr<Phase> phase;      // the running phase
  JobResult result;
  uint64_t done = 0, total = 0;      // last progress over the fleet
  JobState end_state = JobState::kFailed;
  std::string end_message;
  int next_save_index = 1;           // the index the job's next checkpoint save gets
  int completed_epoch = 0;           // the last epoch whose phases all succeeded (rec.epochs_done trails it)
  std::string spec_yaml;             // ToYaml(spec), made once: every phase order carries it
  std::unordered_map<std::string, size_t> agent_index;  // rec.agent_names[i] -> i, once placed
  std::map<uint64_t, EventSink> watchers;  // Watch(): sinks fed by Emit() until the final event
  std::unique_ptr<TraceWriter> trace;  // dlio_ext.trace: the merged trace, fed phase by phase (runner thread only)
  bool refused = false;              // refused at placement (common/preflight.h): its final event says so
};

Coordinator::Coordinator(Options options, std::unique_ptr<JobStore> store)
    : options_(std::move(options)), store_(std::move(store)) {}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(Options options, std::unique_ptr<JobStore> store) {
  if (options.lease < 2 * options.heartbeat_interval) {
    return absl::InvalidArgumentError(absl::StrCat("--lease (", SecsText(options.lease),
                                                   ") must be at least twice --heartbeat-interval (",
                                                   SecsText(options.heartbeat_interval), ")"));
  }
  std::unique_ptr<Coordinator> c(new Coordinator(std::move(options), std::move(store)));
  if (c->store_) {
    absl::StatusOr<std::vector<JobRecord>> records = c->store_->LoadAll();
    if (!records.ok()) return records.status();
    MutexLock lk(&c->mu_);
    for (JobRecord& r : *records) {
      auto job = std::make_unique<Job>();
      job->rec = std::move(r);
      JobRecord& rec = job->rec;
      c->job_counter_ = std::max(c->job_counter_, rec.seq);
      if (!ValidJobId(rec.id)) {
        spdlog::error("job store: skipping a job with the malformed id '{}'", rec.id);
        continue;
      }
      JobEventData e;
      if (rec.state == JobState::kQueued) {
        absl::StatusOr<WorkloadSpec> spec = LoadWorkload(rec.workload_yaml, rec.overrides, rec.source_name);
        if (spec.ok()) {
          job->spec = std::move(*spec);
          c->queue_.push_back(rec.id);
          e.message = absl::StrCat("job ", rec.id, " queued (restored from the job store after a restart)");
        } else {
          rec.state = JobState::kFailed;
          rec.message = absl::StrCat("job ", rec.id, ": its job file no longer loads: ", spec.status().message());
          rec.ended_unix_us = NowUnixUs();
        }
      } else if (rec.state == JobState::kRunning) {
        c->restart_agents_ = rec.agent_names;
        rec.state = JobState::kInterrupted;
        rec.ended_unix_us = NowUnixUs();
        const std::string dir = absl::StrCat(c->options_.results_dir, "/", rec.id);
        if (absl::StatusOr<std::string> checked = c->ResultDir(rec.id); checked.ok()) {
          // The files on disk are what was kept: a crash between writing an epoch's partial results and recording
          // it in the store leaves the store one epoch behind, so the summary's epoch count wins. It was written as
          // "partial"; say what became of the job.
          const std::string path = *checked + "/summary.json";
          std::ifstream in(path);
          nlohmann::json j = in ? nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false) : nlohmann::json();
          if (j.is_object()) {
            rec.has_results = true;
            if (j.contains("epochs") && j["epochs"].is_number_integer()) rec.epochs_done = j["epochs"].get<int>();
            j["dlio_ext"]["job_state"] = JobStateName(JobState::kInterrupted);
            if (absl::Status s = WriteFileAtomic(path, j.dump(4) + "\n"); !s.ok()) {
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
      if (IsFinal(rec.state)) {
        e.final = true;
        e.message = rec.message;
      }
      e.state = rec.state;
      e.phase_id = rec.phase_id;
      job->events.push_back(std::move(e));
      if (absl::Status s = c->store_->Put(rec); !s.ok()) return s;
      c->jobs_[rec.id] = std::move(job);
    }
    if (!c->queue_.empty()) {
      spdlog::info("{} queued job(s) restored from {}; placement waits up to {} for the agents to reattach",
                   c->queue_.size(), c->store_->path(), SecsText(c->options_.restart_grace));
      c->restart_grace_until_ = c->options_.now() + c->options_.restart_grace;
    }
  }
  if (c->store_) c->persister_ = std::thread([p = c.get()] { p->PersisterLoop(); });
  c->runner_ = std::thread([p = c.get()] { p->RunnerLoop(); });
  c->watchdog_ = std::thread([p = c.get()] { p->WatchdogLoop(); });
  return c;
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

std::string Coordinator::RanksOf(const Job& job, const std::string& agent) const {
  const auto it = job.agent_index.find(agent);
  if (it == job.agent_index.end()) return "no ranks";
  const AgentInfo& a = job.result.agents[it->second];
  return RankRange(a.first_rank, a.ranks);
}

void Coordinator::LoseAgentLocked(const std::string& name, const std::string& why) {
  if (running_ == nullptr) return;
  Job& job = *running_;
  const auto& names = job.rec.agent_names;
  if (std::find(names.begin(), names.end(), name) == names.end()) return;
  spdlog::warn("agent '{}' lost during job {}: {}", name, job.rec.id, why);
  if (job.phase == nullptr) return;  // between phases: the next RunPhase finds it missing
  Phase& p = *job.phase;
  p.pending.erase(name);
  if (!p.error.empty()) return;
  std::string where;
  if (p.generate) {
    const auto it = p.progress.find(name);
    where = it == p.progress.end()
                ? std::string("before reporting progress")
                : absl::StrCat("after writing ", it->second.done, " of its ", it->second.total, " files");
  } else {
    uint64_t total = 0, done = 0;
    for (const auto& [agent, v] : p.progress) total = std::max(total, v.total), done = std::max(done, v.done);
    // A single-agent job has no barrier here: its last progress report says how far it got.
    const uint64_t step = names.size() > 1 ? p.barrier_step : done;
    where = absl::StrCat("after step ", step, total > 0 ? absl::StrCat(" of ", total) : std::string());
  }
  p.error = absl::StrCat("agent '", name, "' (", RanksOf(job, name), ") lost during job ", job.rec.id, " phase ",
                         p.id, " ", where, ": ", why);
  cv_.notify_all();
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
                                  uint64_t step) {
  MutexLock lk(&mu_);
  Touch(agent);
  // An arrival counts only for the running phase's barrier, from one of its agents; anything else (a late arrival of
  // an earlier job or phase, a repeat of a released step) is dropped and counted.
  const bool current = running_ != nullptr && running_->rec.id == job_id && running_->phase &&
                       running_->phase->id == phase_id && step == running_->phase->barrier_step;
  const auto index = current ? running_->agent_index.find(agent) : decltype(running_->agent_index)::iterator();
  if (!current || index == running_->agent_index.end() || index->second >= running_->phase->arrived.size()) {
    ++stale_arrivals_;
    return;
  }
  Phase& p = *running_->phase;
  const Clock::time_point now = options_.now();
  if (p.arrived_count == 0) p.first_arrival = now;
  if (!p.arrived[index->second]) {
    p.arrived[index->second] = 1;
    ++p.arrived_count;
  }
  if (p.arrived_count < p.arrived.size()) return;
  barrier_wait_[job_id].Record(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - p.first_arrival).count()));
  if (barrier_wait_.size() > kBarrierWaitJobs) barrier_wait_.erase(barrier_wait_.begin());
  std::fill(p.arrived.begin(), p.arrived.end(), 0);
  p.arrived_count = 0;
  ++p.barrier_step;
  p.last_advance = now;
  // A link whose agent left is closed: its calls do nothing (and the phase fails through LoseAgentLocked()).
  for (const std::shared_ptr<AgentLink>& link : p.links) {
    if (link) link->ReleaseBarrier(job_id, phase_id, step);
  }
}

void Coordinator::OnProgress(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                             const AgentProgress& progress) {
  MutexLock lk(&mu_);
  Touch(agent);
  if (running_ == nullptr || running_->rec.id != job_id || !running_->phase || running_->phase->id != phase_id) return;
  running_->phase->progress[agent] = progress;
}

void Coordinator::OnPhaseDone(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                              std::vector<RankEpochResult> ranks) {
  MutexLock lk(&mu_);
  Touch(agent);
  if (running_ == nullptr || running_->rec.id != job_id || !running_->phase || running_->phase->id != phase_id) return;
  Phase& p = *running_->phase;
  if (p.pending.count(agent) == 0) return;  // a repeated PhaseDone
  const auto index = running_->agent_index.find(agent);
  if (index == running_->agent_index.end()) return;
  const AgentInfo& info = running_->result.agents[index->second];  // placed in the order of agent_index
  p.pending.erase(agent);
  if (absl::Status s = CheckPhaseResults(info, ranks); !s.ok()) {
    if (p.error.empty()) {
      p.error = absl::StrCat("agent '", agent, "' (", RanksOf(*running_, agent), ") sent an invalid result for job ",
                             job_id, " phase ", phase_id, ": ", s.message());
    }
    cv_.notify_all();
    return;
  }
  for (RankEpochResult& r : ranks) p.results.push_back(std::move(r));
  cv_.notify_all();
}

void Coordinator::OnAgentError(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                               AgentErrorKind kind, const std::string& raw_message) {
  // The agent's text goes into logs and the job's message: one line, bounded (text.h).
  const std::string message = EscapeText(raw_message, 4096);
  MutexLock lk(&mu_);
  Touch(agent);
  if (running_ == nullptr || running_->rec.id != job_id || !running_->phase) {
    spdlog::warn("agent '{}' job {} phase {}: {}", agent, EscapeText(job_id, 128), EscapeText(phase_id, 128), message);
    return;
  }
  Job& job = *running_;
  Phase& p = *job.phase;
  if (phase_id != p.id) return;
  p.pending.erase(agent);
  // A cancelled phase confirms a stop we asked for; anything else is the job's failure (the first one wins).
  const bool stop_confirmation =
      kind == AgentErrorKind::kCancelled && (job.cancel_requested || stopping_ || !p.error.empty());
  if (!stop_confirmation) spdlog::error("agent '{}' job {} phase {}: {}", agent, job_id, phase_id, message);
  if (p.error.empty() && !job.cancel_requested && !stopping_) p.error = message;
  cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------------------------
// Client verbs
// ---------------------------------------------------------------------------------------------------------------

absl::Status CheckPlacementOptions(int64_t agents, int64_t accelerators_per_agent, int64_t wait_for_agents_s,
                                   double barrier_timeout_s) {
  auto range = [](const char* flag, int64_t v, int64_t max) {
    if (v >= 0 && v <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(flag, ": must be an integer in [0, ", max, "], got ", v));
  };
  if (absl::Status s = range("--agents", agents, 65536); !s.ok()) return s;
  if (absl::Status s = range("--accelerators-per-agent", accelerators_per_agent, kMaxAcceleratorsPerAgent); !s.ok()) {
    return s;
  }
  if (absl::Status s = range("--wait-for-agents", wait_for_agents_s, 86400); !s.ok()) return s;
  if (!(barrier_timeout_s >= 0 && barrier_timeout_s <= 604800)) {  // NaN fails both comparisons
    return absl::InvalidArgumentError(
        absl::StrFormat("--barrier-timeout: must be a number of seconds in [0, 604800], got %g", barrier_timeout_s));
  }
  return absl::OkStatus();
}

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
  MutexLock lk(&mu_);
  if (stopping_) return absl::UnavailableError("the coordinator is shutting down; submit again after its restart");
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
  rec.submitted_unix_us = NowUnixUs();
  rec.epochs_total = spec->train ? static_cast<int>(spec->epochs) : 0;
  rec.message = absl::StrCat("job ", rec.id, " queued (", queue_.size() + (running_ != nullptr ? 1 : 0), " ahead)");
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
  if (job.rec.state == JobState::kQueued && running_ != &job) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
    EndJob(job, JobState::kCancelled, absl::StrCat("job ", job_id, " cancelled before it started"), false);
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
  const Job& job = *it->second;
  cv_.WaitFor(&lk, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return job.events.size() > from; });
  for (size_t i = from; i < job.events.size(); ++i) out->push_back(job.events[i]);
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
  if (q != queue_.end()) d.queue_position = static_cast<int>(q - queue_.begin()) + (running_ != nullptr ? 1 : 0);
  d.result_dir = absl::StrCat(options_.results_dir, "/", job.rec.id);
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

std::vector<AgentStatusData> Coordinator::ListAgents() const {
  MutexLock lk(&mu_);
  const Clock::time_point now = options_.now();
  std::vector<AgentStatusData> out;
  for (const auto& [name, a] : agents_) {
    AgentStatusData d;
    d.info = a.info;
    d.attached_s = Secs(now - a.attached);
    d.last_heard_s = Secs(now - a.last_heard);
    if (running_ != nullptr) {
      const auto& names = running_->rec.agent_names;
      if (std::find(names.begin(), names.end(), name) != names.end()) d.job_id = running_->rec.id;
    }
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

void Coordinator::Save(Job& job) {
  if (!store_) return;
  MutexLock sl(&store_mu_);
  if (!store_stop_) {
    store_pending_[job.rec.id] = job.rec;  // a newer record of the same job replaces one not written yet
    store_cv_.notify_all();
    return;
  }
  // After Stop() (a cancel arriving during shutdown): once the persister's last batch is written, at once.
  store_cv_.Wait(&sl, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_mu_) { return !store_writing_ && store_pending_.empty(); });
  if (absl::Status s = store_->Put(job.rec); !s.ok()) spdlog::error("{}", std::string(s.message()));
}

void Coordinator::PersisterLoop() {
  MutexLock lk(&store_mu_);
  while (true) {
    store_cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_mu_) { return store_stop_ || !store_pending_.empty(); });
    if (store_pending_.empty()) break;  // stopping, and everything is written
    std::map<std::string, JobRecord> batch;
    batch.swap(store_pending_);
    store_writing_ = true;
    lk.Unlock();
    for (const auto& [id, rec] : batch) {
      if (absl::Status s = store_->Put(rec); !s.ok()) spdlog::error("{}", std::string(s.message()));
    }
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
  e.verdict = JudgeJob(summary, job.spec, JobStateName(state));
  job.rec.verdict_json = VerdictJson(*e.verdict).dump();
  Save(job);
  Emit(job, std::move(e));
  if (error) {
    spdlog::error("{}", message);
  } else {
    spdlog::info("{}", message);
  }
}

void Coordinator::WriteResults(Job& job, MutexLock& lk, const std::string& job_state) {
  job.result.job_state = job_state;
  job.result.end_unix_us = NowUnixUs();
  absl::StatusOr<std::string> dir = ResultDir(job.rec.id);
  // Only this thread changes job.result, so the files are written without the lock (a fleet's files take a while).
  mu_.Unlock();
  absl::Status s = dir.ok() ? WriteResultFiles(*dir, job.result) : dir.status();
  mu_.Lock();
  if (s.ok()) {
    job.rec.has_results = true;
  } else {
    spdlog::error("job {}: writing results failed: {}", job.rec.id, std::string(s.message()));
    if (job.end_message.empty()) job.end_message = absl::StrCat("writing results failed: ", s.message());
  }
}

void Coordinator::RecordCompletedEpoch(Job& job, MutexLock& lk) {
  if (job.completed_epoch > job.rec.epochs_done && job.completed_epoch < job.spec.epochs) {
    // The record counts the epoch only once its files are written (WriteResults lets go of the lock meanwhile), and
    // the store gets it under the same lock, so no status ever shows an epoch that a crash would lose.
    WriteResults(job, lk, "partial");
    job.rec.epochs_done = job.completed_epoch;
  }
  Save(job);
}

void Coordinator::RunnerLoop() {
  MutexLock lk(&mu_);
  while (true) {
    cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); });
    if (stopping_) break;
    Job& job = *jobs_[queue_.front()];
    queue_.pop_front();
    running_ = &job;
    lk.Unlock();
    RunJob(job);
    lk.Lock();
    running_ = nullptr;
  }
}

void Coordinator::WaitForRestartedAgents(Job& job, MutexLock& lk) {
  JobRecord& rec = job.rec;
  // Just restarted: the agents of the previous session reconnect within a few seconds; placing now would find
  // none (or a part) of them.
  if (options_.now() < restart_grace_until_) {
    auto all_back = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (restart_agents_.empty()) return false;
      for (const std::string& a : restart_agents_) {
        if (!agents_.count(a)) return false;
      }
      return true;
    };
    JobEventData e;
    e.message = absl::StrCat("job ", rec.id, " waits up to ", SecsText(options_.restart_grace),
                             " for the agents to reattach after the coordinator's restart (", agents_.size(),
                             " attached)");
    Emit(job, std::move(e));
    cv_.WaitFor(&lk, restart_grace_until_ - options_.now(),
                [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return all_back() || job.cancel_requested || stopping_; });
    restart_grace_until_ = Clock::time_point();  // once: later jobs place at once
  }
}

void Coordinator::FailUnplaced(Job& job, size_t eligible) {
  JobRecord& rec = job.rec;
  const size_t want_agents = rec.agents > 0 ? static_cast<size_t>(rec.agents) : 0;  // 0 = all eligible
  const int want_accel = rec.accelerators_per_agent;
  std::vector<std::string> offered;
  for (const auto& [name, a] : agents_) offered.push_back(absl::StrCat(name, ": ", a.info.ranks));
  const std::string need =
      want_agents > 0 ? absl::StrCat(want_agents, " agent(s)") : std::string("at least 1 agent");
  const std::string accel = want_accel > 0 ? absl::StrCat(" with at least ", want_accel, " accelerator(s) each")
                                           : std::string();
  const std::string have =
      agents_.empty() ? std::string("none attached")
                      : absl::StrCat(agents_.size(), " attached (accelerators: ", NameList(offered), ")",
                                     want_accel > 0 ? absl::StrCat(", ", eligible, " of them eligible") : "");
  EndJob(job, JobState::kFailed,
         absl::StrCat("job ", rec.id, " needs ", need, accel, "; ", have,
                      rec.wait_for_agents_s > 0 ? absl::StrCat(" after waiting ", rec.wait_for_agents_s, " s")
                                                : std::string(" (use --wait-for-agents SECONDS to wait for them)")),
         true);
}

bool Coordinator::Place(Job& job, MutexLock& lk) {
  JobRecord& rec = job.rec;
  WaitForRestartedAgents(job, lk);
  const size_t want_agents = rec.agents > 0 ? static_cast<size_t>(rec.agents) : 0;  // 0 = all eligible
  const int want_accel = rec.accelerators_per_agent;
  auto eligible = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<const Agent*> v;
    for (const auto& [name, a] : agents_) {
      if (want_accel == 0 || a.info.ranks >= want_accel) v.push_back(&a);
    }
    return v;
  };
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return eligible().size() >= std::max<size_t>(1, want_agents); };
  if (!enough() && rec.wait_for_agents_s > 0) {
    JobEventData e;
    e.message = absl::StrCat("job ", rec.id, " waits up to ", rec.wait_for_agents_s, " s for ",
                             std::max<size_t>(1, want_agents), " agent(s); ", agents_.size(), " attached");
    Emit(job, std::move(e));
    cv_.WaitFor(&lk, std::chrono::seconds(rec.wait_for_agents_s),
                [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return enough() || job.cancel_requested || stopping_; });
  }
  if (job.cancel_requested) {
    EndJob(job, JobState::kCancelled, absl::StrCat("job ", rec.id, " cancelled while waiting for agents"), false);
    return false;
  }
  if (stopping_) {  // not started: it stays queued in the store and runs after the restart
    queue_.push_front(rec.id);
    return false;
  }
  const std::vector<const Agent*> ok = eligible();
  if (!enough()) {
    FailUnplaced(job, ok.size());
    return false;
  }
  std::vector<const Agent*> chosen = ok;
  if (want_agents > 0) chosen.resize(want_agents);
  int per_agent = want_accel;
  if (per_agent == 0) {
    per_agent = chosen.front()->info.ranks;
    bool same = true;
    std::vector<std::string> offered;
    for (const Agent* a : chosen) {
      same = same && a->info.ranks == per_agent;
      offered.push_back(absl::StrCat(a->info.name, ": ", a->info.ranks));
    }
    if (!same) {
      EndJob(job, JobState::kFailed,
             absl::StrCat("job ", rec.id, ": its agents offer different numbers of accelerators (", NameList(offered),
                          "); every agent must run the same number (MLPerf): pass --accelerators-per-agent N"),
             true);
      return false;
    }
  }
  int world = 0;
  for (const Agent* a : chosen) {
    AgentInfo info = a->info;
    info.first_rank = world;
    info.ranks = per_agent;
    world += per_agent;
    job.agent_index[info.name] = rec.agent_names.size();
    rec.agent_names.push_back(info.name);
    job.result.agents.push_back(info);
  }
  rec.world = world;
  rec.ranks_per_agent = per_agent;
  return true;
}

void Coordinator::RunJob(Job& job) {
  MutexLock lk(&mu_);
  if (!StartJob(job, lk)) return;
  const bool ok = RunPhases(job, lk);
  FinishJob(job, lk, ok);
}

bool Coordinator::StartJob(Job& job, MutexLock& lk) {
  if (job.cancel_requested) {
    EndJob(job, JobState::kCancelled, absl::StrCat("job ", job.rec.id, " cancelled before it started"), false);
    return false;
  }
  if (!Place(job, lk)) return false;
  // What the job's own values make impossible on the fleet it got (common/preflight.h) ends it here, before any
  // phase (the "warning:" events of WarnUnmeasured below are the harmless kind).
  const JobWorld placed{static_cast<int64_t>(job.rec.agent_names.size()), job.rec.ranks_per_agent};
  if (const std::vector<std::string> refusals = PreRunRefusals(job.spec, placed); !refusals.empty()) {
    job.refused = true;
    EndJob(job, JobState::kFailed,
           absl::StrCat("job ", job.rec.id, " refused on ", DescribeWorld(placed), ": ", absl::StrJoin(refusals, "; ")),
           true);
    return false;
  }
  // "random" shuffles get a seed drawn once here and written into the normalised spec, so every agent agrees.
  if (job.spec.file_shuffle == ShuffleMode::kRandom || job.spec.sample_shuffle == ShuffleMode::kRandom) {
    job.spec.seed = static_cast<int64_t>(std::random_device{}() & 0x7fffffff);
  }
  JobRecord& rec = job.rec;
  job.result.job_id = rec.id;
  job.result.spec = job.spec;
  job.result.world = rec.world;
  job.result.start_unix_us = NowUnixUs();
  rec.state = JobState::kRunning;
  rec.started_unix_us = job.result.start_unix_us;
  rec.message = absl::StrCat("job ", rec.id, " running on ", rec.agent_names.size(), " agent(s), ", rec.world,
                             " rank(s): ", NameList(rec.agent_names));
  Save(job);
  {
    JobEventData e;
    e.message = rec.message;
    Emit(job, std::move(e));
  }
  WarnUnmeasured(job);
  return true;
}

bool Coordinator::RunPhases(Job& job, MutexLock& lk) {
  JobRecord& rec = job.rec;
  bool ok = true;
  if (job.spec.generate_data) {
    const auto t0 = std::chrono::steady_clock::now();
    ok = RunPhase(job, lk, "generate", PhaseOrder::Kind::kGenerate, 0);
    job.result.generate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // A save (or load) of one checkpoint as its own phase; see common/checkpoint_schedule.h.
  auto checkpoint_phase = [&](bool load, int index, int epoch, int64_t step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    PhaseOrder c;
    c.checkpoint_load = load;
    c.checkpoint_index = index;
    c.checkpoint_step = step;
    return RunPhase(job, lk, absl::StrCat(load ? "load-checkpoint-" : "save-checkpoint-", index),
                    PhaseOrder::Kind::kCheckpoint, epoch, c);
  };
  for (int e = 1; ok && job.spec.train && e <= job.spec.epochs; ++e) {
    PhaseOrder first;
    first.checkpoint_index = job.next_save_index;  // step-based saves inside the epoch count up from here
    ok = RunPhase(job, lk, absl::StrCat("train-epoch-", e), PhaseOrder::Kind::kTrainEpoch, e, first);
    if (ok) EmitEpochLine(job, e);
    if (ok && CheckpointAfterEpoch(job.spec, e)) {
      absl::StatusOr<EpochPlan> plan = EpochPlan::Make(TrainPlanParams(job.spec, rec.world), e);
      const int64_t steps = plan.ok() ? plan->steps() : 0;
      ok = checkpoint_phase(false, job.next_save_index++, e, EpochCheckpointStep(steps));
    }
    if (ok && job.spec.EvaluatesAfter(e)) {
      ok = RunPhase(job, lk, absl::StrCat("eval-epoch-", e), PhaseOrder::Kind::kEval, e);
    }
    // Completed epochs reach the disk while the next phase runs (RecordCompletedEpoch, called by RunPhase once its
    // orders are out), so the agents do not wait for the result files and the store between epochs.
    if (ok) job.completed_epoch = e;
  }
  for (const CheckpointOp& op : CheckpointOnlySequence(job.spec)) {
    if (!ok) break;
    ok = checkpoint_phase(op.load, op.index, op.epoch, op.step);
  }
  return ok;
}

void Coordinator::FinishJob(Job& job, MutexLock& lk, bool ok) {
  JobRecord& rec = job.rec;
  job.phase.reset();
  if (job.completed_epoch > rec.epochs_done) {  // the last epoch: the final WriteResults below writes its files
    rec.epochs_done = job.completed_epoch;
    Save(job);
  }
  job.result.end_unix_us = NowUnixUs();
  // The merged trace (dlio_ext.trace) is written whatever the outcome: completed phases are kept.
  std::string trace_note;
  if (job.trace) {
    mu_.Unlock();
    absl::Status ts = job.trace->Finish(job.result.agents);
    mu_.Lock();
    if (ts.ok()) {
      trace_note = absl::StrCat("; trace: ", job.trace->events(), " events (", job.trace->dropped(), " dropped)");
      job.rec.has_results = true;
    } else {
      spdlog::error("job {}: {}", rec.id, std::string(ts.message()));
    }
    job.trace.reset();
  }

  if (ok) {
    job.end_message.clear();
    WriteResults(job, lk, JobStateName(JobState::kSucceeded));
    if (!job.end_message.empty()) {
      EndJob(job, JobState::kFailed, absl::StrCat("job ", rec.id, ": ", job.end_message), true);
      return;
    }
    EndJob(job, JobState::kSucceeded, absl::StrCat("job ", rec.id, " succeeded; results in ", options_.results_dir, "/",
                                                   rec.id, trace_note), false);
    return;
  }
  // Completed epochs (and checkpoints) are written even when a later phase failed.
  const JobState state = job.end_state;
  std::string message = job.end_message;
  if (!job.result.train.empty() || !job.result.checkpoints.empty()) {
    job.end_message.clear();
    WriteResults(job, lk, JobStateName(state));
    message += job.end_message.empty()
                   ? absl::StrCat("; results of ", rec.epochs_done, " completed epoch(s) kept in ",
                                  options_.results_dir, "/", rec.id)
                   : absl::StrCat("; ", job.end_message);
  }
  EndJob(job, state, message, state == JobState::kFailed);
}

bool Coordinator::RunPhase(Job& job, MutexLock& lk, const std::string& phase_id, PhaseOrder::Kind kind,
                           int epoch, const PhaseOrder& ckpt) {
  job.phase = std::make_unique<Phase>();
  Phase& p = *job.phase;
  p.id = phase_id;
  p.generate = kind == PhaseOrder::Kind::kGenerate;
  p.train = kind == PhaseOrder::Kind::kTrainEpoch;
  p.epoch = epoch;
  p.last_advance = options_.now();
  p.links.assign(job.rec.agent_names.size(), nullptr);
  p.arrived.assign(job.rec.agent_names.size(), 0);
  job.rec.phase_id = phase_id;
  job.done = job.total = 0;
  if (job.spec_yaml.empty()) job.spec_yaml = ToYaml(job.spec);
  const auto t0 = std::chrono::steady_clock::now();
  {
    JobEventData e;
    e.phase_id = phase_id;
    e.message = absl::StrCat("phase ", phase_id, " started");
    Emit(job, std::move(e));
  }
  SendPhaseOrders(job, kind, epoch, ckpt);
  // With the orders out, the bookkeeping of the previous phases overlaps this one: the last completed epoch's
  // result files, then the store (which then names this phase, for a restart).
  RecordCompletedEpoch(job, lk);
  WaitForPhase(job, lk, kind);
  if (!p.error.empty() || job.cancel_requested || stopping_) {
    StopPhase(job, lk);
    return false;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CollectPhaseResults(job, lk, kind);
  JobEventData e;
  e.phase_id = phase_id;
  e.message = absl::StrCat("phase ", phase_id, " done in ", absl::StrFormat("%.2f", secs), " s");
  Emit(job, std::move(e));
  return true;
}

void Coordinator::SendPhaseOrders(Job& job, PhaseOrder::Kind kind, int epoch, const PhaseOrder& ckpt) {
  Phase& p = *job.phase;
  const std::string& phase_id = p.id;
  const std::string& yaml = job.spec_yaml;
  for (size_t i = 0; i < job.rec.agent_names.size(); ++i) {
    const std::string& name = job.rec.agent_names[i];
    auto it = agents_.find(name);
    if (it == agents_.end()) {
      p.error = absl::StrCat("agent '", name, "' (", RanksOf(job, name), ") detached before job ", job.rec.id,
                             " phase ", phase_id);
      break;
    }
    PhaseOrder o;
    o.job_id = job.rec.id;
    o.phase_id = phase_id;
    o.kind = kind;
    o.workload_yaml = yaml;
    o.s3_secret_access_key = job.spec.s3_secret_access_key;
    o.world = job.result.world;
    o.first_rank = job.result.agents[i].first_rank;
    o.local_ranks = job.result.agents[i].ranks;
    o.epoch = epoch;
    o.num_agents = static_cast<int>(job.rec.agent_names.size());
    o.agent_index = static_cast<int>(i);
    o.checkpoint_load = ckpt.checkpoint_load;
    o.checkpoint_index = ckpt.checkpoint_index;
    o.checkpoint_step = ckpt.checkpoint_step;
    p.pending.insert(name);
    p.links[i] = it->second.link;
    it->second.link->RunPhase(o);
  }
}

void Coordinator::WaitForPhase(Job& job, MutexLock& lk, PhaseOrder::Kind kind) {
  Phase& p = *job.phase;
  const std::string& phase_id = p.id;
  const std::chrono::milliseconds barrier_timeout =
      job.rec.barrier_timeout_s > 0
          ? std::chrono::milliseconds(static_cast<int64_t>(job.rec.barrier_timeout_s * 1000))
          : options_.barrier_timeout;
  Clock::time_point last_emit = options_.now();
  while (p.error.empty() && !job.cancel_requested && !stopping_ && !p.pending.empty()) {
    // 200 ms: how late a barrier timeout may be noticed; events themselves wake this loop at once.
    cv_.WaitFor(&lk, std::chrono::milliseconds(200));
    const Clock::time_point now = options_.now();
    // A single-agent job's barrier is local to the agent (no arrivals here), so only jobs over several agents time out.
    if (kind == PhaseOrder::Kind::kTrainEpoch && job.rec.agent_names.size() > 1 && barrier_timeout.count() > 0 &&
        now - p.last_advance > barrier_timeout && p.error.empty()) {
      std::vector<std::string> missing;
      for (size_t i = 0; i < job.rec.agent_names.size(); ++i) {
        const std::string& name = job.rec.agent_names[i];
        if (p.pending.count(name) && !p.arrived[i]) missing.push_back(absl::StrCat(name, " (", RanksOf(job, name), ")"));
      }
      p.error = absl::StrCat("job ", job.rec.id, " phase ", phase_id, ": no step barrier released for ",
                             SecsText(barrier_timeout), " (barrier timeout) at step ", p.barrier_step, ": ",
                             p.arrived_count, " of ", job.rec.agent_names.size(), " agent(s) arrived; waiting for ",
                             missing.empty() ? std::string("none") : NameList(missing));
      break;
    }
    // Progress to watchers about once a second.
    if (now - last_emit < std::chrono::seconds(1)) continue;
    last_emit = now;
    EmitProgress(job);
  }
}

void Coordinator::StopPhase(Job& job, MutexLock& lk) {
  Phase& p = *job.phase;
  const std::string& phase_id = p.id;
  const bool generate = p.generate;
  uint64_t total = 0, done = 0;
  for (const auto& [agent, v] : p.progress) total = std::max(total, v.total), done = std::max(done, v.done);
  const uint64_t step = job.rec.agent_names.size() > 1 ? p.barrier_step : done;  // single agent: no barrier here
  const std::string where =
      generate ? std::string() : absl::StrCat(" after step ", step, total ? absl::StrCat(" of ", total) : "");
  if (!p.error.empty()) {
    job.end_state = JobState::kFailed;
    job.end_message = p.error;
  } else if (job.cancel_requested) {
    job.end_state = JobState::kCancelled;
    job.end_message = absl::StrCat("job ", job.rec.id, " cancelled during phase ", phase_id, where);
  } else {
    job.end_state = JobState::kInterrupted;
    job.end_message = absl::StrCat("job ", job.rec.id, " interrupted: the coordinator is shutting down (phase ",
                                   phase_id, where, ")");
  }
  // Every agent of the job is told to stop (a repeat is harmless), then gets stop_grace to confirm.
  const auto stop_start = std::chrono::steady_clock::now();
  for (const std::string& name : job.rec.agent_names) {
    auto it = agents_.find(name);
    if (it != agents_.end()) it->second.link->Cancel(job.rec.id, job.end_message);
  }
  cv_.WaitFor(&lk, options_.stop_grace, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return p.pending.empty(); });
  if (!p.pending.empty()) {
    job.end_message += absl::StrCat("; agent(s) ", NameList({p.pending.begin(), p.pending.end()}),
                                    " did not confirm the stop within ", SecsText(options_.stop_grace));
  } else if (job.end_state != JobState::kFailed) {
    job.end_message += absl::StrFormat("; every agent stopped within %.2f s",
                                       Secs(std::chrono::steady_clock::now() - stop_start));
  }
}

void Coordinator::CollectPhaseResults(Job& job, MutexLock& lk, PhaseOrder::Kind kind) {
  Phase& p = *job.phase;
  const std::string& phase_id = p.id;
  const bool generate = p.generate;
  if (job.spec.trace && !generate) {
    // Every PhaseDone is in (pending is empty), so p.results is ours while the lock is released for the file.
    absl::StatusOr<std::string> dir = ResultDir(job.rec.id);
    if (dir.ok() && !job.trace) job.trace = std::make_unique<TraceWriter>(*dir, job.rec.id, job.result.start_unix_us);
    if (job.trace) {
      mu_.Unlock();
      absl::Status ts = job.trace->AddPhase(phase_id, p.results, job.result.agents);
      mu_.Lock();
      if (!ts.ok()) spdlog::error("job {}: {}", job.rec.id, std::string(ts.message()));
    }
  }
  for (const RankEpochResult& r : p.results) job.result.s3 += r.s3;  // object storage, every phase
  if (generate) {
    for (const RankEpochResult& r : p.results) job.result.generate_io += r.io;
  } else {
    // Checkpoints (of a checkpoint phase, or step-based inside training) go to the job's checkpoint list.
    std::set<int> saves;
    for (RankEpochResult& r : p.results) {
      for (RankCheckpointResult& c : r.checkpoints) {
        if (!c.load) saves.insert(c.index);
        job.result.checkpoints.push_back(c);
      }
      r.checkpoints.clear();
    }
    if (kind == PhaseOrder::Kind::kTrainEpoch) job.next_save_index += static_cast<int>(saves.size());
    if (kind != PhaseOrder::Kind::kCheckpoint) {
      auto& into = kind == PhaseOrder::Kind::kEval ? job.result.eval : job.result.train;
      for (RankEpochResult& r : p.results) into.push_back(std::move(r));
    }
  }
}

void Coordinator::EmitProgress(Job& job) {
  Phase& p = *job.phase;
  if (p.progress.empty()) return;
  AgentProgress sum;
  sum.done = UINT64_MAX;
  for (const auto& [agent, v] : p.progress) {
    sum.done = std::min(sum.done, v.done);  // steps: the slowest agent's
    sum.total = std::max(sum.total, v.total);
    sum.samples += v.samples;
    sum.bytes += v.bytes;
    sum.compute_ns += v.compute_ns;
    sum.wall_ns += v.wall_ns;
  }
  if (p.generate) {  // files: summed over agents
    sum.done = sum.total = 0;
    for (const auto& [agent, v] : p.progress) sum.done += v.done, sum.total += v.total;
  }
  const AgentProgress& last = p.last_reported;
  if (sum.done == last.done && sum.total == last.total && sum.samples == last.samples && sum.bytes == last.bytes &&
      sum.compute_ns == last.compute_ns && sum.wall_ns == last.wall_ns) {
    return;
  }
  p.last_reported = sum;
  job.done = sum.done;
  job.total = sum.total;
  JobEventData e;
  e.phase_id = p.id;
  e.done = sum.done;
  e.total = sum.total;
  e.samples = sum.samples;
  e.bytes = sum.bytes;
  if (!p.generate && job.spec.train) {
    e.epoch = p.epoch;
    e.epochs_total = static_cast<int>(job.spec.epochs);
  }
  if (p.train && sum.wall_ns > 0) {
    e.live_au = std::min(100.0, 100.0 * static_cast<double>(sum.compute_ns) / static_cast<double>(sum.wall_ns));
  }
  Emit(job, std::move(e));
}

void Coordinator::WarnUnmeasured(Job& job) {
  const absl::StatusOr<int64_t> steps = EpochPlan::Steps(TrainPlanParams(job.spec, job.rec.world));
  const absl::StatusOr<int64_t> eval_steps = EpochPlan::Steps(EvalPlanParams(job.spec, job.rec.world));
  for (const std::string& w :
       UnmeasuredFigureWarnings(job.spec, steps.ok() ? *steps : 0, eval_steps.ok() ? *eval_steps : 0)) {
    JobEventData e;
    e.message = absl::StrCat("warning: job ", job.rec.id, " on ", job.rec.world, " rank(s): ", w);
    Emit(job, std::move(e));
  }
}

void Coordinator::EmitEpochLine(Job& job, int epoch) {
  const FleetSummary s = Aggregator(job.result).Summarize();
  for (const EpochMetric& m : s.epochs) {
    if (m.epoch != epoch) continue;
    const double target = job.spec.au_threshold * 100;
    JobEventData e;
    e.phase_id = job.rec.phase_id;
    e.epoch = epoch;
    e.epochs_total = static_cast<int>(job.spec.epochs);
    const std::string head = absl::StrCat("epoch ", epoch, " of ", job.spec.epochs, ": ");
    const std::string rate =
        m.samples_per_second ? absl::StrFormat(", %.1f samples/s", *m.samples_per_second) : ", samples/s not measured";
    if (m.au_percent) {
      e.message = absl::StrCat(
          head, absl::StrFormat("AU %.1f %%", *m.au_percent),
          m.au_min_rank ? absl::StrFormat(" (min rank %.1f %%)", *m.au_min_rank) : std::string(),
          absl::StrFormat(" %s target %.1f %%", *m.au_percent >= target ? ">=" : "<", target), rate);
    } else {
      e.message = absl::StrCat(head, absl::StrFormat("AU not measured (target %.1f %%)", target), rate);
    }
    Emit(job, std::move(e));
  }
}

}  // namespace dlio
