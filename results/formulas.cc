// DLIO's metric formulas and the one reduction (results.h, reduction.h): a block's AU and samples/s, a rank's
// epoch, an epoch over ranks, the summary over epochs, the checkpoint figures, and the figures a job's window will
// leave unmeasured.
#include "results/results.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "plan/checkpoint_schedule.h"
#include "plan/epoch_plan.h"
#include "results/reduction.h"

namespace dlio {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// sum(v[a:b]) with Python's slice rules (negative bounds count from the end, then clamp), as DLIO's numpy code.
double SliceSum(const std::vector<double>& v, int64_t a, int64_t b) {
  const auto n = static_cast<int64_t>(v.size());
  auto norm = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  double s = 0;
  for (int64_t i = norm(a), end = norm(b); i < end; ++i) s += v[static_cast<size_t>(i)];
  return s;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Population standard deviation (numpy's np.std default, ddof = 0).
double PopulationStdev(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

// Mean and population stdev of the measured values; nullopt when none is.
std::optional<double> OverMeasured(const std::vector<std::optional<double>>& v,
                                   double (*reduce)(const std::vector<double>&)) {
  std::vector<double> m;
  for (const auto& x : v) {
    if (x) m.push_back(*x);
  }
  if (m.empty()) return std::nullopt;
  return reduce(m);
}
std::optional<double> MeanOf(const std::vector<std::optional<double>>& v) { return OverMeasured(v, Mean); }
std::optional<double> StdevOf(const std::vector<std::optional<double>>& v) { return OverMeasured(v, PopulationStdev); }
std::optional<double> Times(const std::optional<double>& v, double k) {
  if (!v) return std::nullopt;
  return *v * k;
}

}  // namespace

namespace results_internal {

// Steps per epoch as DLIO counts them (its self.steps): the plan's, else the most any rank recorded.
int64_t EpochSteps(const JobResult& job) {
  absl::StatusOr<int64_t> steps = EpochPlan::Steps(TrainPlanParams(job.spec, job.world));
  if (steps.ok()) return *steps;
  int64_t most = 0;
  for (const RankEpochResult& r : job.train) {
    int64_t n = 0;
    for (const BlockTimings& b : r.blocks) n += static_cast<int64_t>(b.compute.size());
    most = std::max(most, n);
  }
  return most;
}

int64_t EvalSteps(const JobResult& job) {
  absl::StatusOr<int64_t> steps = EpochPlan::Steps(EvalPlanParams(job.spec, job.world));
  if (steps.ok()) return *steps;
  int64_t most = 0;
  for (const RankEpochResult& r : job.eval) {
    if (!r.blocks.empty()) most = std::max(most, static_cast<int64_t>(r.blocks[0].compute.size()));
  }
  return most;
}

namespace {

// One result per (rank, epoch): the last one given wins.
std::map<int, std::map<int, const RankEpochResult*>> ByEpochAndRank(const JobResult& job) {
  std::map<int, std::map<int, const RankEpochResult*>> by;
  for (const RankEpochResult& r : job.train) by[r.epoch][r.rank] = &r;
  return by;
}

// "epoch 1: AU not measured: ..." reasons, from the plan's steps (the same text --explain prints before the run).
std::string NotMeasuredReason(const JobResult& job, int64_t epoch_steps, bool au) {
  for (const std::string& w : UnmeasuredFigureWarnings(job.spec, epoch_steps, 0)) {
    if (w.rfind(au ? "AU" : "samples/s", 0) == 0) return w;
  }
  return au ? "AU: no rank measured it (no step inside the metric window, or no timed window)"
            : "samples/s: no rank measured it (fewer than 3 steps in a block, or no timed window)";
}

// One epoch (training or evaluation) reduced over its ranks, the block formula the only difference.
struct EpochReduction {
  EpochMetric metric;
  Computed::EpochExtra extra;
  IoSnapshot io;
  std::map<int, std::optional<double>> rank_au;
};

EpochReduction ReduceEpoch(int epoch, const std::map<int, const RankEpochResult*>& ranks, const MetricWindow& w,
                           BlockFormula formula, double record_mib) {
  EpochReduction red;
  EpochMetric& m = red.metric;
  Computed::EpochExtra& x = red.extra;
  m.epoch = epoch;
  double au_sum = 0, tp_sum = 0;
  bool au_all = true, tp_all = true;
  for (const auto& [rank, r] : ranks) {
    const RankEpochMetric rm = ComputeRankEpoch(*r, w, formula);
    red.rank_au[rank] = rm.au_percent;
    if (rm.au_percent) {
      au_sum += *rm.au_percent;
      x.au_min_rank = std::min(x.au_min_rank.value_or(*rm.au_percent), *rm.au_percent);
      x.au_max_rank = std::max(x.au_max_rank.value_or(*rm.au_percent), *rm.au_percent);
    }
    au_all = au_all && rm.au_percent.has_value();
    if (rm.samples_per_second) tp_sum += *rm.samples_per_second;
    tp_all = tp_all && rm.samples_per_second.has_value();
    x.timed_seconds = std::max(x.timed_seconds, rm.timed_seconds);
    x.duration_seconds = std::max(x.duration_seconds, rm.duration_seconds);
    m.read_bytes += r->io.bytes;
    m.dropped_samples += r->dropped_samples;
    red.io += r->io;
  }
  x.ranks = static_cast<int>(ranks.size());
  if (au_all) {
    m.au_percent = au_sum / static_cast<double>(ranks.size());  // DLIO: allreduce(SUM) / comm size
    m.au_min_rank = x.au_min_rank;
  }
  if (tp_all) m.samples_per_second = tp_sum;
  m.mib_per_second = Times(m.samples_per_second, record_mib);
  // Bytes of the whole epoch (the first step's reads too) over the whole epoch: unlike DLIO's window, defined for
  // any number of steps.
  if (x.duration_seconds > 0) m.actual_mb_per_second = static_cast<double>(m.read_bytes) / x.duration_seconds / 1e6;
  return red;
}

// One figure of every epoch, in order.
std::vector<std::optional<double>> Column(const std::vector<EpochMetric>& epochs,
                                          std::optional<double> EpochMetric::*figure) {
  std::vector<std::optional<double>> v;
  for (const EpochMetric& m : epochs) v.push_back(m.*figure);
  return v;
}

}  // namespace

Computed Compute(const JobResult& job) {
  Computed c;
  c.window = TrainWindow(job.spec, EpochSteps(job));
  FleetSummary& s = c.fleet;
  const double record_mib = job.spec.record_length_bytes / kMiB;
  std::map<int, std::vector<std::optional<double>>> rank_au;  // per rank, its AU of each epoch
  for (const auto& [epoch, ranks] : ByEpochAndRank(job)) {
    EpochReduction red = ReduceEpoch(epoch, ranks, c.window, ComputeTrainBlock, record_mib);
    for (const auto& [rank, au] : red.rank_au) rank_au[rank].push_back(au);
    s.io += red.io;
    s.read_bytes += red.metric.read_bytes;
    s.dropped_samples = std::max(s.dropped_samples, red.metric.dropped_samples);
    s.epochs.push_back(red.metric);
    c.extra.push_back(red.extra);
  }
  s.au_mean = MeanOf(Column(s.epochs, &EpochMetric::au_percent));
  s.au_stdev = StdevOf(Column(s.epochs, &EpochMetric::au_percent));
  s.throughput_mean = MeanOf(Column(s.epochs, &EpochMetric::samples_per_second));
  s.throughput_stdev = StdevOf(Column(s.epochs, &EpochMetric::samples_per_second));
  // DLIO: np.mean(throughput) * record_length / 1024 / 1024 (MiB of the nominal record size).
  s.io_mean_mib = Times(s.throughput_mean, record_mib);
  s.io_stdev_mib = Times(s.throughput_stdev, record_mib);
  s.actual_mb_mean = MeanOf(Column(s.epochs, &EpochMetric::actual_mb_per_second));
  for (const auto& [rank, v] : rank_au) {
    if (const std::optional<double> mean = MeanOf(v)) s.au_min_rank = std::min(s.au_min_rank.value_or(*mean), *mean);
  }
  if (!s.epochs.empty() && !s.au_mean) s.au_not_measured = NotMeasuredReason(job, c.window.epoch_steps, true);
  if (!s.epochs.empty() && !s.throughput_mean) {
    s.throughput_not_measured = NotMeasuredReason(job, c.window.epoch_steps, false);
  }
  s.au_meets_expectation = s.au_mean && *s.au_mean >= job.spec.au_threshold * 100;

  // Evaluation: one entry per evaluated epoch, the same reduction with DLIO's eval block formula.
  std::map<int, std::map<int, const RankEpochResult*>> evals;
  for (const RankEpochResult& r : job.eval) evals[r.epoch][r.rank] = &r;
  const MetricWindow ew = EvalWindow(job.spec, EvalSteps(job));
  for (const auto& [epoch, ranks] : evals) {
    EpochReduction red = ReduceEpoch(epoch, ranks, ew, ComputeEvalBlock, record_mib);
    s.eval_io += red.io;
    s.eval.push_back(red.metric);
  }
  s.eval_au_mean = MeanOf(Column(s.eval, &EpochMetric::au_percent));
  s.eval_au_stdev = StdevOf(Column(s.eval, &EpochMetric::au_percent));
  s.eval_throughput_mean = MeanOf(Column(s.eval, &EpochMetric::samples_per_second));
  s.eval_throughput_stdev = StdevOf(Column(s.eval, &EpochMetric::samples_per_second));
  s.eval_io_mean_mib = Times(s.eval_throughput_mean, record_mib);
  s.eval_io_stdev_mib = Times(s.eval_throughput_stdev, record_mib);
  s.eval_au_meets_expectation = s.eval_au_mean && *s.eval_au_mean >= job.spec.au_threshold * 100;
  return c;
}

}  // namespace results_internal

BlockMetric ComputeEvalBlock(const std::vector<double>& proc, const std::vector<double>& compute, double duration_s,
                             const MetricWindow& w) {
  BlockMetric m = ComputeTrainBlock(proc, compute, duration_s, w);
  m.samples_per_second.reset();
  if (m.steps > 0 && duration_s > 0) {
    m.samples_per_second = static_cast<double>(m.steps) * static_cast<double>(w.batch) / duration_s;
  }
  return m;
}

int64_t AuWindowSteps(const MetricWindow& w, int64_t block_steps) {
  // DLIO slices compute[exclude_start : window_end + 1] of the block's own list, window_end from the epoch.
  auto norm = [block_steps](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + block_steps : i, 0, block_steps); };
  return std::max<int64_t>(0, norm(w.epoch_steps - w.exclude_end) - norm(w.exclude_start));
}

BlockMetric ComputeTrainBlock(const std::vector<double>& proc, const std::vector<double>& compute, double duration_s,
                              const MetricWindow& w) {
  BlockMetric m;
  // DLIO's window indices are into the block's own step list, but derived from the epoch's step count.
  const int64_t start = w.exclude_start;
  const int64_t window_end = w.epoch_steps - 1 - w.exclude_end;
  const double compute_sum = SliceSum(compute, start, window_end + 1);
  const double total =
      duration_s - SliceSum(proc, 0, start) - SliceSum(proc, window_end + 1, static_cast<int64_t>(proc.size()));
  m.steps = static_cast<int64_t>(compute.size());
  m.timed_seconds = total;
  // DLIO divides by total_time unguarded and keeps what comes out; a figure the window cannot give is not measured.
  if (total > 0 && AuWindowSteps(w, m.steps) > 0) {
    const double au = compute_sum == 0 ? 0.0 : 100.0 * compute_sum / total;
    // The window's compute lies inside total_time; more than 100 % (beyond clock rounding) means timings that do
    // not belong together, which is no measurement either.
    if (au <= 100.0 + 1e-6) m.au_percent = std::min(au, 100.0);
  }
  if (total > 0 && m.steps >= kMinThroughputSteps) {
    m.samples_per_second = static_cast<double>(m.steps - 2) * static_cast<double>(w.batch) / total;
  }
  return m;
}

RankEpochMetric ComputeRankEpoch(const RankEpochResult& r, const MetricWindow& w, BlockFormula formula) {
  RankEpochMetric m;
  double au_steps = 0, tp_steps = 0, au = 0, tp = 0;
  for (const BlockTimings& b : r.blocks) {
    const BlockMetric bm = formula(b.proc, b.compute, b.duration_s, w);
    const auto n = static_cast<double>(bm.steps);
    if (bm.au_percent) {
      au_steps += n;
      au += *bm.au_percent * n;
    }
    if (bm.samples_per_second) {
      tp_steps += n;
      tp += *bm.samples_per_second * n;
    }
    m.timed_seconds += bm.timed_seconds;
    m.duration_seconds += b.duration_s;
  }
  if (au_steps > 0) m.au_percent = au / au_steps;
  if (tp_steps > 0) m.samples_per_second = tp / tp_steps;
  return m;
}

MetricWindow TrainWindow(const WorkloadSpec& spec, int64_t epoch_steps) {
  MetricWindow w;
  w.epoch_steps = epoch_steps;
  w.exclude_start = spec.exclude_start_steps;
  w.exclude_end = spec.exclude_end_steps;
  w.batch = spec.batch_size;
  return w;
}

MetricWindow EvalWindow(const WorkloadSpec& spec, int64_t eval_steps) {
  MetricWindow w = TrainWindow(spec, eval_steps);
  w.batch = spec.batch_size_eval;
  return w;
}

namespace {

// The step counts of one epoch's blocks (step-based checkpoints split it); empty blocks weigh nothing and are left out.
std::vector<int64_t> BlockSteps(const WorkloadSpec& spec, int64_t epoch_steps) {
  std::vector<int64_t> blocks;
  int64_t prev = 0;
  for (int64_t s : CheckpointStepsInEpoch(spec, epoch_steps)) {
    if (s > prev) blocks.push_back(s - prev);
    prev = s;
  }
  if (epoch_steps > prev) blocks.push_back(epoch_steps - prev);
  return blocks;
}

std::string FewerStepsHint() {
  return "more files or samples per file, a smaller batch, or fewer accelerators give more steps";
}

}  // namespace

std::vector<std::string> UnmeasuredFigureWarnings(const WorkloadSpec& spec, int64_t epoch_steps, int64_t eval_steps) {
  std::vector<std::string> out;
  if (spec.train && epoch_steps > 0) {
    const MetricWindow w = TrainWindow(spec, epoch_steps);
    const std::vector<int64_t> blocks = BlockSteps(spec, epoch_steps);
    const int64_t au_need = std::max<int64_t>(1, spec.exclude_start_steps + spec.exclude_end_steps + 1);
    int64_t au_blocks = 0, tp_blocks = 0;
    for (int64_t b : blocks) {
      au_blocks += AuWindowSteps(w, b) > 0 ? 1 : 0;
      tp_blocks += b >= kMinThroughputSteps ? 1 : 0;
    }
    const std::string split = blocks.size() > 1 ? fmt::format(" (in blocks of {} between step-based checkpoints)",
                                                              fmt::join(blocks, "/"))
                                                : std::string();
    if (au_blocks == 0) {
      out.push_back(fmt::format(
          "AU will not be measured: {} step(s) per epoch{} leave no step inside DLIO's metric window "
          "(output.metric.exclude_start_steps {}, exclude_end_steps {}: it needs at least {} steps); {}",
          epoch_steps, split, spec.exclude_start_steps, spec.exclude_end_steps, au_need, FewerStepsHint()));
    } else if (au_blocks < static_cast<int64_t>(blocks.size())) {
      out.push_back(fmt::format("AU: some blocks{} leave no step inside DLIO's metric window; they are left out of "
                                "the epoch's AU", split));
    }
    if (tp_blocks == 0) {
      out.push_back(fmt::format(
          "samples/s will not be measured: {} step(s) per epoch{}, and DLIO's samples/s = (steps - 2) x batch / time "
          "needs at least {} steps; {}",
          epoch_steps, split, kMinThroughputSteps, FewerStepsHint()));
    } else if (tp_blocks < static_cast<int64_t>(blocks.size())) {
      out.push_back(fmt::format("samples/s: some blocks{} have fewer than {} steps; they are left out of the "
                                "epoch's samples/s", split, kMinThroughputSteps));
    }
  }
  if (spec.evaluation && spec.train && spec.num_files_eval > 0 && eval_steps > 0 &&
      AuWindowSteps(EvalWindow(spec, eval_steps), eval_steps) == 0) {
    out.push_back(fmt::format("evaluation AU will not be measured: {} evaluation step(s) leave no step inside the "
                              "metric window (exclude_start_steps {}, exclude_end_steps {})",
                              eval_steps, spec.exclude_start_steps, spec.exclude_end_steps));
  }
  return out;
}

std::vector<CheckpointMetric> ComputeCheckpoints(const std::vector<RankCheckpointResult>& ranks) {
  std::map<std::pair<bool, int>, std::vector<const RankCheckpointResult*>> groups;
  for (const RankCheckpointResult& r : ranks) groups[{r.load, r.index}].push_back(&r);
  std::vector<CheckpointMetric> out;
  for (const auto& [key, members] : groups) {
    CheckpointMetric m;
    m.load = key.first;
    m.index = key.second;
    const RankCheckpointResult* first = members.front();
    for (const RankCheckpointResult* r : members) {
      m.bytes += r->bytes;
      m.max_duration_s = std::max(m.max_duration_s, r->duration_s);
      if (r->rank < first->rank) first = r;
    }
    m.start_unix_us = first->start_unix_us;
    m.end_unix_us = first->end_unix_us;
    m.rank0_duration_s = first->duration_s;
    const double gib = static_cast<double>(m.bytes) / static_cast<double>(uint64_t{1} << 30);
    m.rank0_gib_per_second = m.rank0_duration_s > 0 ? gib / m.rank0_duration_s : 0;
    m.min_gib_per_second = m.max_duration_s > 0 ? gib / m.max_duration_s : 0;
    out.push_back(m);
  }
  return out;
}

void AddCheckpointSummary(const std::vector<CheckpointMetric>& ckpts, nlohmann::json* metric) {
  if (ckpts.empty()) return;
  for (const bool load : {false, true}) {
    std::vector<double> dur, tp, max_dur, min_tp;
    for (const CheckpointMetric& m : ckpts) {
      if (m.load != load) continue;
      dur.push_back(m.rank0_duration_s);
      tp.push_back(m.rank0_gib_per_second);
      max_dur.push_back(m.max_duration_s);
      min_tp.push_back(m.min_gib_per_second);
    }
    if (dur.empty()) continue;
    const std::string p = load ? "load_checkpoint_" : "save_checkpoint_";
    (*metric)[p + "io_mean_GB_per_second"] = Mean(tp);
    (*metric)[p + "io_stdev_GB_per_second"] = PopulationStdev(tp);
    (*metric)[p + "duration_mean_seconds"] = Mean(dur);
    (*metric)[p + "duration_stdev_seconds"] = PopulationStdev(dur);
    (*metric)[p + "mlperf_io_mean_GB_per_second"] = Mean(min_tp);
    (*metric)[p + "mlperf_io_stdev_GB_per_second"] = PopulationStdev(min_tp);
    (*metric)[p + "mlperf_duration_mean_seconds"] = Mean(max_dur);
    (*metric)[p + "mlperf_duration_stdev_seconds"] = PopulationStdev(max_dur);
  }
  // ComputeCheckpoints sorts saves first.
  (*metric)["checkpoint_size_GB"] = static_cast<double>(ckpts.front().bytes) / static_cast<double>(uint64_t{1} << 30);
}

}  // namespace dlio
