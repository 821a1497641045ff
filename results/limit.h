// Limit: which resource held the run back, named with its evidence (issue 26 item 2). Pure logic over the run's
// figures: ClassifyLimit() applies the rules below to LimitFigures; LimitFiguresOf() gathers those figures from a
// JobResult (step timings, read latency per epoch, the agents' host telemetry, the S3 bytes).
//
// The rules, first match wins (docs/results.md "The limit" repeats them; the thresholds are the k* constants):
//   undetermined  no training step was timed, or no rule below matched (the figures are given, never a guess)
//   page cache    the readers asked for at least kPageCacheMinBytes and the storage delivered (the agent processes'
//                 block-layer read_bytes, or the data root's devices' reads where the kernel counted none for the
//                 process, plus the S3 GET bytes) less than kPageCacheDeliveredShare of it: the run did not measure
//                 the storage
//   none          the verdict is PASS: the target was met; the headroom is the share of step time spent waiting
//   harness       batch wait < kHarnessBatchWaitShare of the step and barrier wait >= kHarnessBarrierShare: the
//                 fleet's own coordination, not I/O
//   network       batch wait >= kWaitShare and an agent's interface at >= kBusyPercent of its link speed
//   client CPU    batch wait >= kWaitShare and an agent process using >= kBusyPercent of the cores it may use
//                 (its affinity and cgroup CPU quota), or its host's cores >= kBusyPercent busy with the agent
//                 process the main user (>= kAgentShareOfBusy of the busy time; a host kept busy by others is
//                 quoted in the line, not named the limit)
//   storage       batch wait >= kWaitShare, with host telemetry from every agent showing none of the above
// The line reads "storage: ranks waited 41 % of each step for data; agents' CPU 23 %, NIC 12 % of 25 Gb/s; read
// p99 38 ms (x6 of the first epoch)" (the verdict's line prefixes "limit: ").
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "results/host_telemetry.h"
#include "results/results.h"
#include "results/verdict.h"

namespace dlio {

enum class LimitClass { kUndetermined, kNone, kStorage, kClientCpu, kNetwork, kPageCache, kHarness };
// "undetermined", "none", "storage", "client CPU", "network", "page cache", "harness".
const char* LimitClassName(LimitClass c);

inline constexpr double kWaitShare = 0.10;               // batch wait share of the step that counts as waiting
inline constexpr double kHarnessBatchWaitShare = 0.05;   // "near zero" batch wait
inline constexpr double kHarnessBarrierShare = 0.20;     // barrier wait dominating
inline constexpr double kBusyPercent = 90.0;             // a CPU or NIC at the limit
inline constexpr double kAgentShareOfBusy = 0.5;         // the agent process is the main user of a busy host
inline constexpr double kPageCacheDeliveredShare = 0.5;  // storage delivered less than half of what was read
inline constexpr uint64_t kPageCacheMinBytes = 8ull << 20;  // below this the bytes say nothing

// The figures the rules read, fleet-wide over the training epochs.
struct LimitFigures {
  bool timed = false;              // at least one training step was timed
  bool passed = false;             // the verdict is PASS
  // Sum of batch waits / sum of step times (load + compute + barrier), 0..1, each block's first step left out.
  double batch_wait_share = 0;
  double barrier_share = 0;        // sum of barrier waits / sum of step times
  // The 99th percentile of the per-step batch waits (each block's first step left out), nearest rank; nullopt when
  // no step was timed. The ramp's "wait p99" column (client/ramp.h).
  std::optional<double> batch_wait_p99_s;
  std::optional<double> read_p99_s, first_epoch_read_p99_s;  // merged read latency: the worst epoch, the first
  // Host telemetry: true only when every agent of the job sent it.
  bool host_known = false;
  double cpu_busy_percent = 0;     // the busiest agent host's mean CPU busy share
  double process_cpu_percent_of_cores = 0;  // the busiest agent process, percent of the cores it may use
  double process_cpu_limit_cores = 0;  // the cores that busiest process may use, when fewer than its host's (0 else)
  double process_share_of_busy = 0;  // on the busiest host: the agent process's share of the busy CPU time, 0..1
  double nic_percent = -1;         // the busiest interface's utilisation of its link (-1 unknown)
  int64_t nic_speed_mbps = -1;     // its link speed
  uint64_t asked_bytes = 0;        // what the readers' read calls returned (train)
  double delivered_bytes = 0;      // what the storage delivered (block layer or devices, plus S3)
  bool delivered_known = false;    // host telemetry (or S3 counters) measured it
};

struct Limit {
  LimitClass cls = LimitClass::kUndetermined;
  std::string line;                // "storage: ranks waited ..." (without "limit: ")
  nlohmann::json evidence;         // the figures, as in LimitJson
};

Limit ClassifyLimit(const LimitFigures& f);
// The figures of `job` (host telemetry from RankEpochResult::host of the training epochs), and `passed` from the
// job's verdict; `epoch` > 0: that training epoch's figures only.
LimitFigures LimitFiguresOf(const JobResult& job, bool passed, int epoch = 0);
// Per epoch, when the epochs differ: each entry of summary.json's dlio_ext.train_epochs gets "limit" {"class",
// "line"} from its own figures (passed = its AU >= the target) when the classes of the epochs are not all the
// same; nothing when they agree (the job's limit says it).
void AddEpochLimits(const JobResult& job, nlohmann::json* train_epochs);
// summary.json's dlio_ext (`ext`): "host" (HostSummariesJson, when any agent sent telemetry) and AddEpochLimits on
// its "train_epochs".
void AddHostAndEpochLimits(const JobResult& job, nlohmann::json* ext);
// {"class", "line", "evidence": {...}} (dlio_ext.verdict.limit, --json).
nlohmann::json LimitJson(const Limit& l);
// Classifies `job` and sets the verdict's limit fields (results/verdict.h), for jobs with training results; others
// are left unclassified.
void AddLimit(const JobResult& job, Verdict* v);
// JudgeJob (results/verdict.h) of `job` and its summary `s`, then AddLimit.
Verdict JudgeJobAndLimit(const JobResult& job, const FleetSummary& s, std::string_view job_state);
// The agents' host summaries (dlio_ext.host): {"<agent>": {...HostSummaryJson}}; empty when no agent sent any.
nlohmann::json HostSummariesJson(const JobResult& job);

}  // namespace dlio
