// The dispatcher and the job runner of the Coordinator (coordinator.h): the runner thread places the queue's first
// job as soon as it fits (placement.cc) and starts a thread for it, so several jobs run at once; each job's thread
// runs it from its start to its end state: StartJob (the pre-run refusals), RunPhases (each phase on the job's own
// PhaseDriver: orders, the wait with its barrier timeout and progress events, stop or result collection) and
// FinishJob (trace, result files, the end state). Every function here runs with mu_ held, letting go of it only
// around waits and file writes (of data only the job's own thread changes).
#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "plan/checkpoint_plan.h"
#include "plan/checkpoint_schedule.h"
#include "plan/epoch_plan.h"
#include "plan/measurement_guards.h"
#include "plan/preflight.h"
#include "results/host_facts_json.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_job.h"
#include "coordinator/messages.h"
#include "spdlog/spdlog.h"

namespace dlio {

absl::StatusOr<std::shared_ptr<const ConfinedDir>> Coordinator::JobFolder(Job& job) {
  if (job.folder) return job.folder;
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> folder = OpenResultDir(job.rec.id, /*create=*/true);
  if (folder.ok()) job.folder = *folder;
  return folder;
}

void Coordinator::WriteResults(Job& job, MutexLock& lk, const std::string& job_state) {
  job.result.job_state = job_state;
  job.result.end_unix_us = NowUnixUs();
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> dir = JobFolder(job);
  // Only this thread changes job.result, so the files are written without the lock (a fleet's files take a while).
  mu_.Unlock();
  absl::Status s = dir.ok() ? WriteResultFiles(**dir, job.result) : dir.status();
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
  auto join_ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<std::thread> ended;
    for (const std::string& id : ended_threads_) {
      auto it = job_threads_.find(id);
      if (it == job_threads_.end()) continue;
      ended.push_back(std::move(it->second));
      job_threads_.erase(it);
    }
    ended_threads_.clear();
    if (ended.empty()) return;
    mu_.Unlock();  // the Mutex itself, as WriteResults does: the analysis follows it into this lambda, not `lk`
    for (std::thread& t : ended) t.join();
    mu_.Lock();
  };
  while (!stopping_) {
    join_ended();
    std::optional<Clock::time_point> until;
    if (!queue_.empty() && DispatchHead(*jobs_.at(queue_.front()), lk, &until)) continue;
    if (stopping_) break;
    // Every change that may let the first job in (an agent attached or left, a job ended, a submit, a cancel)
    // notifies cv_; the second is a safety net, the deadline a --wait-for-agents that runs out.
    std::chrono::milliseconds wait(1000);
    if (until) {
      wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(*until - Clock::now()),
                        std::chrono::milliseconds(1), wait);
    }
    cv_.WaitFor(&lk, wait);
  }
  // Stopping: every running job ends INTERRUPTED on its own thread; the runner waits for them all.
  while (!job_threads_.empty()) {
    cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ended_threads_.empty(); });
    join_ended();
  }
}

void Coordinator::SetWaiting(Job& job, const std::string& why) {
  if (job.waiting == why) return;
  job.waiting = why;
  job.rec.message = why;
  Save(job);
  JobEventData e;
  e.message = why;
  Emit(job, std::move(e));
}

bool Coordinator::DispatchHead(Job& job, MutexLock& lk, std::optional<Clock::time_point>* until) {
  const std::string id = job.rec.id;
  WaitForRestartedAgents(job, lk);
  // The wait lets go of the lock: the job may have been cancelled (Cancel ends a queued job itself) meanwhile.
  if (stopping_ || queue_.empty() || queue_.front() != id) return true;
  JobRecord& rec = job.rec;
  Fit fit = TryPlace(job);
  if (fit.kind == Fit::Kind::kBusy) {
    job.wait_deadline.reset();  // the attached fleet can take it once the running jobs let go
    SetWaiting(job, absl::StrCat("job ", id, " queued: ", fit.why));
    return false;
  }
  if (fit.kind == Fit::Kind::kNever && rec.wait_for_agents_s > 0) {
    // Real time, as the client's --wait-for-agents means it (not Options::now, which tests hold still).
    const Clock::time_point now = Clock::now();
    if (!job.wait_deadline) {
      job.wait_deadline = now + std::chrono::seconds(rec.wait_for_agents_s);
      const size_t want = rec.agents > 0 ? static_cast<size_t>(rec.agents)
                                         : std::max<size_t>(1, rec.requested_agents.size());
      SetWaiting(job, absl::StrCat("job ", id, " waits up to ", rec.wait_for_agents_s, " s for ", want,
                                   " agent(s); ", agents_.size(), " attached"));
    }
    if (now < *job.wait_deadline) {
      *until = *job.wait_deadline;
      return false;
    }
  }
  queue_.pop_front();
  if (fit.kind == Fit::Kind::kNever) {
    FailUnplaced(job, fit.why);
    return true;
  }
  if (fit.kind == Fit::Kind::kFailed) {
    EndJob(job, JobState::kFailed, fit.why, true);
    return true;
  }
  for (AgentInfo& info : fit.agents) {
    job.agent_index[info.name] = rec.agent_names.size();
    rec.agent_names.push_back(info.name);
    rec.world += info.ranks;
    job.result.agents.push_back(std::move(info));
  }
  rec.ranks_per_agent = fit.per_agent;
  running_[id] = &job;
  job_threads_[id] = std::thread([this, &job] { RunJob(job); });
  return true;
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

void Coordinator::RunJob(Job& job) {
  MutexLock lk(&mu_);
  if (StartJob(job, lk)) {
    const bool ok = RunPhases(job, lk);
    FinishJob(job, lk, ok);
  }
  job.folder.reset();  // a finished job holds no descriptor (jobs stay in jobs_ for status and results)
  // The job lets go of its agents; the runner joins this thread and places the next job.
  running_.erase(job.rec.id);
  ended_threads_.push_back(job.rec.id);
  cv_.notify_all();
}

bool Coordinator::StartJob(Job& job, MutexLock& lk) {
  JobRecord& rec = job.rec;
  if (job.cancel_requested) {
    EndJob(job, JobState::kCancelled, absl::StrCat("job ", rec.id, " cancelled before it started"), false);
    return false;
  }
  if (stopping_) {  // not started: it stays queued in the store and runs after the restart, placed anew
    rec.agent_names.clear();
    rec.world = rec.ranks_per_agent = 0;
    job.agent_index.clear();
    job.result.agents.clear();
    auto at = std::find_if(queue_.begin(), queue_.end(),
                           [&](const std::string& q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                             return jobs_.at(q)->rec.seq > rec.seq;
                           });
    queue_.insert(at, rec.id);
    return false;
  }
  // What the job's own values make impossible on the fleet it got (plan/preflight.h) ends it here, before any
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
    ok = RunPhase(job, lk, "generate", PhaseKind::kGenerate, 0);
    job.result.generate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // A save (or load) of one checkpoint as its own phase; see plan/checkpoint_schedule.h.
  auto checkpoint_phase = [&](bool load, int index, int epoch, int64_t step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    PhaseOrder c;
    c.checkpoint_load = load;
    c.checkpoint_index = index;
    c.checkpoint_step = step;
    return RunPhase(job, lk, absl::StrCat(load ? "load-checkpoint-" : "save-checkpoint-", index),
                    PhaseKind::kCheckpoint, epoch, c);
  };
  // Issue 27 item 3: a split that is listed is listed once for the job, by the first agent, before its first read;
  // every order of the split then carries the listing (job.result.listings), so no other agent lists.
  std::set<std::string> asked;  // splits a listing phase ran for (once, even when its agent answered none)
  auto listed = [&](const std::string& split, PhaseOrder* o) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (job.spec.SkipsListing(split == "valid" ? job.spec.num_files_eval : job.spec.num_files_train)) return true;
    const auto has = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const SplitListing& l : job.result.listings) {
        if (l.split == split) return &l;
      }
      return static_cast<const SplitListing*>(nullptr);
    };
    if (has() == nullptr && asked.insert(split).second) {
      PhaseOrder list;
      list.list_split = split;
      if (!RunPhase(job, lk, "list-" + split, PhaseKind::kList, 0, list)) return false;
    }
    if (const SplitListing* l = has()) o->listing = *l;
    return true;
  };
  for (int e = 1; ok && job.spec.train && e <= job.spec.epochs; ++e) {
    PhaseOrder first;
    first.checkpoint_index = job.next_save_index;  // step-based saves inside the epoch count up from here
    ok = listed("train", &first) &&
         RunPhase(job, lk, absl::StrCat("train-epoch-", e), PhaseKind::kTrainEpoch, e, first);
    if (ok) EmitEpochLine(job, e);
    if (ok && CheckpointAfterEpoch(job.spec, e)) {
      absl::StatusOr<EpochPlan> plan = EpochPlan::Make(TrainPlanParams(job.spec, rec.world), e);
      const int64_t steps = plan.ok() ? plan->steps() : 0;
      ok = checkpoint_phase(false, job.next_save_index++, e, EpochCheckpointStep(steps));
    }
    if (ok && job.spec.EvaluatesAfter(e)) {
      PhaseOrder eval;
      ok = listed("valid", &eval) && RunPhase(job, lk, absl::StrCat("eval-epoch-", e), PhaseKind::kEval, e, eval);
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
  job.driver.End();
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

bool Coordinator::RunPhase(Job& job, MutexLock& lk, const std::string& phase_id, PhaseKind kind,
                           int epoch, const PhaseOrder& ckpt) {
  job.driver.Begin({job.rec.id, phase_id, kind, epoch, &job.result.agents, &job.agent_index,
                    static_cast<int>(job.spec.barrier_fanout), static_cast<int>(job.spec.barrier_tree_min_agents)},
                   options_.now());
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
  WaitForPhase(job, lk);
  if (!job.driver.error().empty() || job.cancel_requested || stopping_) {
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

void Coordinator::SendPhaseOrders(Job& job, PhaseKind kind, int epoch, const PhaseOrder& ckpt) {
  // A listing phase goes to the first agent only; the others owe it nothing (PhaseDriver counts the ordered ones).
  const size_t agents = kind == PhaseKind::kList ? std::min<size_t>(1, job.rec.agent_names.size())
                                                 : job.rec.agent_names.size();
  for (size_t i = 0; i < agents; ++i) {
    auto it = agents_.find(job.rec.agent_names[i]);
    if (it == agents_.end()) {
      job.driver.Detached(i);
      break;
    }
    PhaseOrder o;
    o.job_id = job.rec.id;
    o.phase_id = job.driver.id();
    o.kind = kind;
    o.workload_yaml = job.spec_yaml;
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
    o.share_agent = job.rec.share_agents;
    o.list_split = ckpt.list_split;
    // Only a shareable listing travels: one too large to share leaves every agent to list (agent/split_listing.h).
    if (!ckpt.listing.split.empty() && (ckpt.listing.pattern || !ckpt.listing.names_zstd.empty())) {
      o.listing = ckpt.listing;
    }
    job.driver.Order(i, it->second.link, o);
  }
}

void Coordinator::WaitForPhase(Job& job, MutexLock& lk) {
  const std::chrono::milliseconds barrier_timeout =
      job.rec.barrier_timeout_s > 0
          ? std::chrono::milliseconds(static_cast<int64_t>(job.rec.barrier_timeout_s * 1000))
          : options_.barrier_timeout;
  Clock::time_point last_emit = options_.now();
  while (job.driver.error().empty() && !job.cancel_requested && !stopping_ && !job.driver.settled()) {
    // 200 ms: how late a barrier timeout may be noticed; events themselves wake this loop at once.
    cv_.WaitFor(&lk, std::chrono::milliseconds(200));
    const Clock::time_point now = options_.now();
    if (job.driver.BarrierTimedOut(now, barrier_timeout)) break;
    // Progress to watchers about once a second.
    if (now - last_emit < std::chrono::seconds(1)) continue;
    last_emit = now;
    EmitProgress(job);
  }
}

void Coordinator::StopPhase(Job& job, MutexLock& lk) {
  const std::string& phase_id = job.driver.id();
  const std::string where = job.driver.generate() ? std::string() : absl::StrCat(" ", job.driver.StepText());
  if (!job.driver.error().empty()) {
    job.end_state = JobState::kFailed;
    job.end_message = job.driver.error();
    job.refused = job.driver.refused();
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
  cv_.WaitFor(&lk, options_.stop_grace, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return job.driver.settled(); });
  if (!job.driver.settled()) {
    job.end_message += absl::StrCat("; agent(s) ", NameList(job.driver.Unsettled()), " did not confirm the stop within ",
                                    SecsText(options_.stop_grace));
  } else if (job.end_state != JobState::kFailed) {
    job.end_message += absl::StrFormat("; every agent stopped within %.2f s",
                                       Secs(std::chrono::steady_clock::now() - stop_start));
  }
}

void Coordinator::CollectPhaseResults(Job& job, MutexLock& lk, PhaseKind kind) {
  const std::string phase_id = job.driver.id();
  const bool generate = job.driver.generate();
  // Every PhaseDone is in (the phase settled): the results are ours, also while the lock is released for the trace.
  std::vector<RankEpochResult> results = job.driver.TakeResults();
  if (job.spec.trace && !generate && kind != PhaseKind::kList) {
    if (!job.trace) {
      absl::StatusOr<std::shared_ptr<const ConfinedDir>> dir = JobFolder(job);
      if (dir.ok()) job.trace = std::make_unique<TraceWriter>(*dir, job.rec.id, job.result.start_unix_us);
    }
    if (job.trace) {
      mu_.Unlock();
      absl::Status ts = job.trace->AddPhase(phase_id, results, job.result.agents);
      mu_.Lock();
      if (!ts.ok()) spdlog::error("job {}: {}", job.rec.id, std::string(ts.message()));
    }
  }
  for (RankEpochResult& r : results) {
    job.result.s3 += r.s3;  // object storage, every phase
    if (!r.host_facts.empty()) {  // host facts at the job's start and end: <agent>_host_facts.json
      for (const AgentInfo& a : job.result.agents) {
        if (r.rank >= a.first_rank && r.rank < a.first_rank + a.ranks) {
          MergeHostFactsWire(r.host_facts, &job.result.host_facts[a.name]);
        }
      }
      r.host_facts.clear();
    }
    // Host telemetry, every phase: the series to <agent>_host.jsonl; the whole-phase sample stays with the result.
    if (r.host.series.empty()) continue;
    for (const AgentInfo& a : job.result.agents) {
      if (r.rank < a.first_rank || r.rank >= a.first_rank + a.ranks) continue;
      std::vector<HostLine>& lines = job.result.host_series[a.name];
      for (HostSample& s : r.host.series) lines.push_back(HostLine{phase_id, std::move(s)});
    }
    r.host.series.clear();
  }
  if (generate) {
    for (const RankEpochResult& r : results) job.result.generate_io += r.io;
    return;
  }
  if (kind == PhaseKind::kList) {  // the split's listing, kept for its orders and summary.json's dlio_ext.listing
    for (RankEpochResult& r : results) {
      if (!r.listing.split.empty()) job.result.listings.push_back(std::move(r.listing));
    }
    return;
  }
  // Checkpoints (of a checkpoint phase, or step-based inside training) go to the job's checkpoint list.
  std::set<int> saves;
  for (RankEpochResult& r : results) {
    for (RankCheckpointResult& c : r.checkpoints) {
      if (!c.load) saves.insert(c.index);
      job.result.checkpoints.push_back(c);
    }
    r.checkpoints.clear();
  }
  if (kind == PhaseKind::kTrainEpoch) job.next_save_index += static_cast<int>(saves.size());
  if (kind != PhaseKind::kCheckpoint) {
    auto& into = kind == PhaseKind::kEval ? job.result.eval : job.result.train;
    for (RankEpochResult& r : results) into.push_back(std::move(r));
  }
}

void Coordinator::EmitProgress(Job& job) {
  PhaseProgress& progress = job.driver.progress();
  const std::optional<AgentProgress> fleet = progress.Fleet();
  if (!fleet || !progress.Publish(*fleet)) return;
  job.done = fleet->done;
  job.total = fleet->total;
  JobEventData e;
  e.phase_id = job.driver.id();
  e.done = fleet->done;
  e.total = fleet->total;
  e.samples = fleet->samples;
  e.bytes = fleet->bytes;
  if (!job.driver.generate() && job.spec.train) {
    e.epoch = job.driver.epoch();
    e.epochs_total = static_cast<int>(job.spec.epochs);
  }
  if (job.driver.train()) e.live_au = progress.WindowedAuPercent(*fleet, options_.now());
  Emit(job, std::move(e));
}

void Coordinator::WarnUnmeasured(Job& job) {
  const absl::StatusOr<int64_t> steps = EpochPlan::Steps(TrainPlanParams(job.spec, job.rec.world));
  const absl::StatusOr<int64_t> eval_steps = EpochPlan::Steps(EvalPlanParams(job.spec, job.rec.world));
  std::vector<std::string> warnings =
      UnmeasuredFigureWarnings(job.spec, steps.ok() ? *steps : 0, eval_steps.ok() ? *eval_steps : 0);
  // The measurement guards on the placed fleet: consecutive agents of one host are one node (placement order is
  // rank order), each with the CPUs and RAM its Hello reported.
  std::vector<GuardNode> nodes;
  for (const AgentInfo& a : job.result.agents) {
    if (nodes.empty() || nodes.back().name != a.hostname) {
      nodes.push_back(
          {a.hostname, a.cpu_count, static_cast<uint64_t>(a.memory_gb * 1024.0 * 1024.0 * 1024.0), 0, 0});
    }
    nodes.back().ranks += a.ranks;
    nodes.back().agents += 1;
  }
  for (std::string& w : MeasurementGuards(job.spec, nodes, job.rec.world)) warnings.push_back(std::move(w));
  for (const std::string& w : warnings) {
    JobEventData e;
    e.message = absl::StrCat("warning: job ", job.rec.id, " on ", job.rec.world, " rank(s): ", w);
    Emit(job, std::move(e));
  }
}

void Coordinator::EmitEpochLine(Job& job, int epoch) {
  const FleetSummary s = Aggregator(job.result).Summarize();
  job.completed_au_percent = s.au_mean;  // status and list of the running job
  job.completed_samples_per_second = s.throughput_mean;
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
