// Results: what ranks measured, the DLIO metric formulas, the one aggregation path, and the result files.
//
// DLIO's definitions, as MLPerf Storage v2.0 pins them (../shared/reference/dlio.md §4.1):
//   per block:  total_time = duration - sum(proc[:exclude_start]) - sum(proc[window_end+1:])
//               where window_end = epoch_steps - 1 - exclude_end (indices into the block's own step list)
//               AU% = 100 * sum(compute[exclude_start : window_end+1]) / total_time   (0 when that sum is 0)
//               samples/s = (n_steps - 2) * batch / total_time                       (DLIO's hard-coded -2)
//   per epoch, per rank: step-weighted mean of the blocks' AU and samples/s
//   per epoch, fleet: AU = mean over ranks, samples/s = sum over ranks
//   summary: mean and population stdev over epochs; "MB/s" = samples/s * record_length_bytes / 2^20 (MiB/s of the
//   nominal record size, DLIO's meaning); train_au_meet_expectation = mean AU >= metric.au * 100.
// Figures that are not measured (docs/results.md): where DLIO's window leaves nothing to measure, DLIO prints a
// negative, zero or > 100 % figure; here the figure is std::nullopt (null in the files, "n/m" in tables) with a
// reason. A block's AU needs at least one step inside its window and a positive total_time; its samples/s needs at
// least kMinThroughputSteps steps (the "-2") and a positive total_time. A rank's epoch figure is the step-weighted
// mean over its measured blocks only (DLIO also averages in the impossible ones); an epoch's fleet figure needs
// every rank's; the summary's mean and stdev run over the measured epochs.
// Our measured additions: metric.train_read_bytes (bytes returned by read calls on data files, all ranks and
// epochs), metric.train_io_actual_mean_MB_per_second (mean over epochs of the epoch's bytes over the epoch's time,
// the longest of the ranks' summed block durations, first step included as its reads are; MB = 10^6) and metric.train_dropped_samples_per_epoch; the
// rest under "dlio_ext" (per-epoch detail, merged read-latency percentiles, generation I/O, the verdict). In
// <rank>_output.json each epoch also has "barrier" {blockN: [s...]} and "dlio_ext" (the rank's I/O counters and
// read latency). epoch_steps (DLIO's self.steps) comes from the epoch plan of the job's spec and world.
//
// Aggregator is the one merge path: a rank, an agent and the fleet are merged by the same code (IoSnapshot and
// LatencyHistogram +=, percentiles after the merge).
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "results/io_stats.h"
#include "base/confined_dir.h"
#include "base/host_facts.h"
#include "base/mount_id.h"
#include "results/host_telemetry.h"
#include "results/s3_stats.h"
#include "job/phase.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {

struct BlockTimings {
  int block = 1;                 // 1-based
  int64_t start_unix_us = 0;     // system clock, for the files
  int64_t end_unix_us = 0;
  double duration_s = 0;         // steady clock
  std::vector<double> load, proc, compute, barrier;  // per step, seconds
};

// One rank's timing of one checkpoint save or load (ranks that write nothing still report, with 0 bytes).
struct RankCheckpointResult {
  int rank = 0;
  int index = 1;                 // 1-based, in order of the job: save_ckptN / load_ckptN
  bool load = false;
  int epoch = 1;                 // the per_epoch_stats entry it is listed under (checkpoint-only mode: 1)
  int64_t start_unix_us = 0;
  int64_t end_unix_us = 0;
  double duration_s = 0;         // steady clock
  uint64_t bytes = 0;
};

struct RankEpochResult {
  int rank = 0;
  int epoch = 1;                 // 1-based
  int64_t start_unix_us = 0;
  int64_t end_unix_us = 0;
  std::vector<BlockTimings> blocks;
  IoSnapshot io;
  // This rank's share of the fleet's dropped samples; the agent puts the plan's whole DroppedSamples() on rank 0
  // and 0 on the others, and the aggregator sums over ranks.
  uint64_t dropped_samples = 0;
  // Checkpoints this rank took in the phase (step-based ones inside a training phase; the one of a CHECKPOINT
  // phase); the coordinator moves them into JobResult::checkpoints.
  std::vector<RankCheckpointResult> checkpoints;
  // --trace: this rank's events of the phase (its step thread and loader threads) in TraceBuffer's wire form
  // (results/trace_buffer.h), and the events its full buffers dropped. Empty unless dlio_ext.trace is on; the
  // coordinator moves them into the trace file and clears them when the phase ends.
  std::string trace_events;
  uint64_t trace_dropped = 0;
  // Object storage: the agent's S3 requests during the phase (process-wide, so on the agent's first local rank
  // only, empty on the others); the coordinator sums them into JobResult::s3.
  S3Snapshot s3;
  // Host telemetry of the phase (results/host_telemetry.h), likewise on the agent's first local rank only: the
  // coordinator moves the series into JobResult::host_series and keeps the whole-phase sample here (the limit and
  // dlio_ext.host read it).
  HostTelemetry host;
  // dlio_ext.evict_cache (agent/cache_drop.h): how this agent cleared the page cache before the training epoch
  // ("drop_caches", "fadvise"; empty when it did not), and the bytes the block device under its data root delivered
  // during the epoch (/proc/diskstats; -1 when not measured: no block device, or no drop). The same on every local
  // rank of the agent; the summary counts each host once.
  std::string cache_drop;
  int64_t device_read_bytes = -1;
  // Host facts (results/host_facts_json.h), on the agent's first local rank: its wire text ({"start"} at its first
  // phase of the job, {"end"} when they changed since); the coordinator folds it into JobResult::host_facts.
  std::string host_facts;
  // A kList phase (job/phase.h): the split's listing, on the listing agent's first local rank only; the coordinator
  // keeps it for the split's later orders and moves its figures into JobResult::listings.
  SplitListing listing;
};

// One line of <agent>_host.jsonl: a sample and the phase it was taken in.
struct HostLine {
  std::string phase_id;
  HostSample sample;
};

struct MetricWindow {
  int64_t epoch_steps = 0;       // steps expected per epoch (DLIO's self.steps)
  int64_t exclude_start = 1;
  int64_t exclude_end = 0;
  int64_t batch = 1;
};

// samples/s = (n - 2) x batch / total_time needs n >= 3 to be a rate at all.
inline constexpr int64_t kMinThroughputSteps = 3;

// Steps of a block of `block_steps` steps that fall inside DLIO's AU window (Python slice rules).
int64_t AuWindowSteps(const MetricWindow& w, int64_t block_steps);

struct BlockMetric {
  std::optional<double> au_percent;          // nullopt: not measured (no step in the window, or no timed window)
  std::optional<double> samples_per_second;  // nullopt: not measured (fewer than 3 steps, or no timed window)
  int64_t steps = 0;
  double timed_seconds = 0;      // total_time of the formula
};

BlockMetric ComputeTrainBlock(const std::vector<double>& proc, const std::vector<double>& compute, double duration_s,
                              const MetricWindow& w);

// DLIO's eval block (statscounter.py compute_metrics_eval): AU as for training over the eval window, but
// samples/s = n_steps x batch_eval / duration (the whole wall time, no "-2").
BlockMetric ComputeEvalBlock(const std::vector<double>& proc, const std::vector<double>& compute, double duration_s,
                             const MetricWindow& w);

struct RankEpochMetric {
  std::optional<double> au_percent;
  std::optional<double> samples_per_second;
  double timed_seconds = 0;      // sum of the blocks' total_time
  double duration_seconds = 0;   // sum of the blocks' durations (the whole epoch, checkpoints left out)
};
// How a block's figures come from its timings: ComputeTrainBlock or ComputeEvalBlock (the only difference between
// the training and the evaluation reduction).
using BlockFormula = BlockMetric (*)(const std::vector<double>& proc, const std::vector<double>& compute,
                                     double duration_s, const MetricWindow& w);
// Step-weighted mean over the rank's measured blocks (nullopt when none is).
RankEpochMetric ComputeRankEpoch(const RankEpochResult& r, const MetricWindow& w,
                                 BlockFormula formula = ComputeTrainBlock);

struct EpochMetric {
  int epoch = 1;
  std::optional<double> au_percent;            // mean over ranks (nullopt unless every rank's is measured)
  std::optional<double> samples_per_second;    // sum over ranks (likewise)
  std::optional<double> mib_per_second;        // samples/s * record_length / 2^20
  std::optional<double> actual_mb_per_second;  // measured bytes over the epoch's time (max over ranks), 10^6
  std::optional<double> au_min_rank;           // the least busy rank's AU
  uint64_t read_bytes = 0;
  uint64_t dropped_samples = 0;
};

// One checkpoint save or load of the fleet, with DLIO's rank-0 figures and MLPerf's (../shared/reference/dlio.md
// §4.1, §4.3). DLIO: duration measured on rank 0, throughput = checkpoint GiB of all ranks / that duration.
// MLPerf: duration = max over ranks; throughput = min over ranks of DLIO's per-rank figure (GiB / the rank's
// duration), i.e. GiB / the max duration.
struct CheckpointMetric {
  int index = 1;
  bool load = false;
  int64_t start_unix_us = 0;     // rank 0's
  int64_t end_unix_us = 0;
  uint64_t bytes = 0;            // sum over ranks
  double rank0_duration_s = 0;
  double rank0_gib_per_second = 0;
  double max_duration_s = 0;
  double min_gib_per_second = 0;
};
// Groups by (load, index); result sorted saves first, then by index. A duration of 0 gives a throughput of 0.
std::vector<CheckpointMetric> ComputeCheckpoints(const std::vector<RankCheckpointResult>& ranks);
// Adds DLIO's summary keys ({save,load}_checkpoint_io_{mean,stdev}_GB_per_second, ..._duration_{mean,stdev}_seconds
// from the rank-0 figures, checkpoint_size_GB = GiB of the first save, or of the first load without saves) and the
// MLPerf ones beside them ({save,load}_checkpoint_mlperf_io_{mean,stdev}_GB_per_second and
// ..._mlperf_duration_{mean,stdev}_seconds). "GB" is GiB, as in DLIO. Nothing is added when `ckpts` is empty.
void AddCheckpointSummary(const std::vector<CheckpointMetric>& ckpts, nlohmann::json* metric);

struct AgentInfo {
  std::string name;
  std::string hostname;
  double memory_gb = 0;
  int cpu_count = 0;
  int first_rank = 0;
  int ranks = 0;
  // Provenance the agent reported at attach (empty from older agents): uname, CPU model, data-root file system.
  std::string kernel;
  std::string cpu_model;
  std::string data_root_fs;
  // DLIO's host_cpuinfo / host_meminfo / host_processor_name of the agent's host (empty from older agents).
  std::map<std::string, std::string> cpuinfo, meminfo;
  std::string processor_name;
  std::vector<NicInfo> nics;   // the host's NICs (empty from older agents)
  std::string memory_source;   // where memory_gb came from: "meminfo", "cgroup", "--host-memory"; empty if unknown
  // host:port of its step-barrier relay listener (Hello.relay_endpoint, resolved); empty = it cannot relay. Not
  // written to result files.
  std::string relay_endpoint;
  std::string relay_tls_name;  // the name in its relay listener's TLS certificate (Hello.relay_tls_name); empty = plain
  // The mount holding the data root (base/mount_id.h); empty from older agents. Last, so that positional
  // initialisers of the fields above keep their meaning.
  MountId data_root_mount;
};

struct JobResult {
  std::string job_id;
  WorkloadSpec spec;
  int world = 1;
  std::vector<AgentInfo> agents;
  int64_t start_unix_us = 0;
  int64_t end_unix_us = 0;
  std::vector<RankEpochResult> train;  // one per (rank, epoch), any order
  std::vector<RankEpochResult> eval;   // one per (rank, epoch evaluated after), blocks[0] = the eval steps
  IoSnapshot generate_io;              // summed over ranks; empty when no generation
  double generate_seconds = 0;
  // How the job stands when the files are written, as dlio_ext.job_state in summary.json when set: "partial"
  // (written after an epoch, more to come), "succeeded", "failed", "cancelled" or "interrupted".
  std::string job_state;
  std::vector<RankCheckpointResult> checkpoints;  // one per (rank, save or load)
  S3Snapshot s3;                       // every phase's S3 requests (dlio_ext.s3 in summary.json)
  // Every phase's host telemetry series per agent, in the order received: <agent>_host.jsonl.
  std::map<std::string, std::vector<HostLine>> host_series;
  // Every agent's host facts, {"start", "end"} (MergeHostFactsWire): <agent>_host_facts.json.
  std::map<std::string, nlohmann::json> host_facts;
  // The job's listings, one per split listed (kList phases; names_zstd dropped): dlio_ext.listing in summary.json.
  std::vector<SplitListing> listings;
};

struct FleetSummary {
  std::vector<EpochMetric> epochs;
  // Mean and population stdev over the measured epochs; nullopt when no epoch's figure is measured.
  std::optional<double> au_mean, au_stdev;
  std::optional<double> throughput_mean, throughput_stdev;
  std::optional<double> io_mean_mib, io_stdev_mib;
  std::optional<double> actual_mb_mean;
  // The least busy rank: min over ranks of the rank's AU averaged over the measured epochs.
  std::optional<double> au_min_rank;
  // Why a figure is not measured (empty when it is): one line each, for the files and the verdict.
  std::string au_not_measured, throughput_not_measured;
  uint64_t read_bytes = 0;
  uint64_t dropped_samples = 0;
  bool au_meets_expectation = false;   // DLIO's train_au_meet_expectation (false when not measured)
  IoSnapshot io;                       // merged over every rank and epoch

  // Evaluation, DLIO's definitions: per rank AU over the eval window and samples/s = steps x batch_eval / wall
  // time (no "-2"); per evaluation, AU = mean over ranks and samples/s = sum over ranks; then mean/stdev.
  std::vector<EpochMetric> eval;       // one per evaluation, `epoch` = the epoch it followed
  std::optional<double> eval_au_mean, eval_au_stdev;
  std::optional<double> eval_throughput_mean, eval_throughput_stdev;
  std::optional<double> eval_io_mean_mib, eval_io_stdev_mib;
  bool eval_au_meets_expectation = false;
  IoSnapshot eval_io;
};

class Aggregator {
 public:
  explicit Aggregator(const JobResult& job);
  FleetSummary Summarize() const;
  // DLIO-layout documents, with our extra keys beside DLIO's.
  nlohmann::json SummaryJson() const;
  nlohmann::json RankOutputJson(int rank) const;
  // Each rank's checkpoints appear as DLIO's "save_ckptN"/"load_ckptN" {start, end, duration (s, a number),
  // throughput (the checkpoint's GiB over all ranks / this rank's duration), and ours: bytes (this rank's own share)}
  // under their epoch.
  nlohmann::json RankPerEpochStatsJson(int rank) const;

 private:
  const JobResult& job_;
  const double data_gb_;  // DLIO's data_size_per_host_GB, computed once (every rank's file repeats it)
};

MetricWindow TrainWindow(const WorkloadSpec& spec, int64_t epoch_steps);
MetricWindow EvalWindow(const WorkloadSpec& spec, int64_t eval_steps);

// Before anything runs: one line per figure of the job that DLIO's window will leave unmeasured with
// `epoch_steps` training steps per epoch (and `eval_steps` per evaluation), blocks of step-based checkpoints
// included; empty when every figure will be measured. --explain prints them, the coordinator warns at job start.
std::vector<std::string> UnmeasuredFigureWarnings(const WorkloadSpec& spec, int64_t epoch_steps, int64_t eval_steps);

// Writes summary.json, <rank>_output.json, <rank>_per_epoch_stats.json, <agent>_host.jsonl (per agent that sent
// host telemetry: one HostSampleJson a line with "agent" and "phase" added), <agent>_host_facts.json (the host
// facts at the job's start and end: results/host_facts_json.h) and job.yaml into the open folder `dir`,
// each under a temporary name then renamed, all through its descriptor (base/atomic_file.h): whatever becomes of
// the folder's path meanwhile, the files land in the folder that was opened, never through a symbolic link.
absl::Status WriteResultFiles(const ConfinedDir& dir, const JobResult& job);

// "<agent>_host.jsonl", the agent's name with any character but letters, digits, ".", "-" and "_" as "_".
std::string HostSeriesFileName(const std::string& agent);
// The file's text: one HostSampleJson a line, with "agent" and "phase" added.
std::string HostSeriesText(const std::string& agent, const std::vector<HostLine>& lines);
// <agent>_host_facts.json, the agent's name made a file name as HostSeriesFileName does.
std::string HostFactsFileName(const std::string& agent);

// Writes `content` to `path` via a temporary name in the same directory and rename() (base/atomic_file.h, relative
// to the folder of `path`, opened once; links in the caller's own path are followed).
absl::Status WriteFileAtomic(const std::string& path, const std::string& content);

// ISO-8601 local-time string with microseconds, DLIO's timestamp format ("2026-11-22T02:03:49.804834").
std::string FormatTimestamp(int64_t unix_us);
// The inverse: a DLIO timestamp (local time, optional fraction of up to 9 digits) to unix microseconds.
absl::StatusOr<int64_t> ParseTimestamp(const std::string& text);

}  // namespace dlio
