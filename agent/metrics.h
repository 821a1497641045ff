// AgentMetrics: the agent's live Prometheus metrics, exported from per-thread and per-rank snapshots.
//
// A custom prometheus-cpp Collectable: nothing on the read path or in the step loop calls Prometheus. The loader
// threads count into their own IoStats; the step thread records each step's batch wait, step time and barrier wait
// into its rank's LatencyHistograms (one uncontended mutex per *step*, never per I/O). At scrape time Collect()
// walks the registered ranks and merges copies, so a scrape costs a few microseconds per rank.
// Labels: agent, job_id, rank (never `job`, which Prometheus keeps for the scrape job); the I/O counters also carry
// `phase` (train or eval for reads, generate for dataset writes); the checkpoint families carry `operation`
// (save or load).
// Object storage: the process's S3 request statistics (storage/s3/client.h S3Metrics, per operation: requests, bytes,
// retries, errors by HTTP status, a latency histogram), labelled agent and operation, once the agent has sent an
// S3 request (no S3 series before).
// Every family, its HELP text and unit are listed in docs/metrics.md; a test compares that file with a scrape.
// Histogram buckets: see results/prometheus_histogram.h (powers of two from ~1 us to ~37 min, + +Inf).
// Thread-safety: every method may be called from any thread; RankMetrics fields are atomics or guarded by mu.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "results/io_stats.h"
#include "results/latency_histogram.h"
#include "base/mutex.h"
#include "results/prometheus_histogram.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "storage/s3/client.h"

namespace dlio {

class Loader;

// What a rank is doing, exported as dlio_phase{phase="<name>"} 1 (one series per rank, info-style).
// kCheckpoint covers a whole checkpoint (its time_between_checkpoints sleep and barriers included).
// A rank's state, not a phase's kind (job/phase.h PhaseKind), so a concept of its own: a rank is idle between
// phases, and inside one training-epoch phase it moves between kTrain and kCheckpoint (step-based saves). Its names
// are the dlio_phase label values dashboards select on ("train", not the phase id's "train-epoch").
enum class RankPhase { kIdle = 0, kGenerate, kTrain, kEval, kCheckpoint };
const char* RankPhaseName(RankPhase p);

// Live state of one rank, updated by the rank's step thread (atomics, RecordStep) and at loader start/end.
struct RankMetrics {
  Mutex mu;
  IoSnapshot retired ABSL_GUARDED_BY(mu);            // read I/O of finished training epochs
  IoSnapshot retired_eval ABSL_GUARDED_BY(mu);       // read I/O of finished evaluations
  const Loader* live ABSL_GUARDED_BY(mu) = nullptr;  // the running epoch's (or evaluation's) loader, if any
  bool live_eval ABSL_GUARDED_BY(mu) = false;        // `live` reads the evaluation split
  IoSnapshot written ABSL_GUARDED_BY(mu);            // generation I/O
  LatencyHistogram batch_wait ABSL_GUARDED_BY(mu);   // per step: waiting for the batch (DLIO's load)
  LatencyHistogram step_time ABSL_GUARDED_BY(mu);    // per step: load + compute + barrier
  LatencyHistogram barrier_wait ABSL_GUARDED_BY(mu); // per step: time in the step barrier
  LatencyHistogram checkpoint_save ABSL_GUARDED_BY(mu);  // per checkpoint save of the rank
  LatencyHistogram checkpoint_load ABSL_GUARDED_BY(mu);  // per checkpoint load of the rank
  uint64_t checkpoint_save_bytes ABSL_GUARDED_BY(mu) = 0;
  uint64_t checkpoint_load_bytes ABSL_GUARDED_BY(mu) = 0;
  std::atomic<double> au_ratio{0};
  std::atomic<double> au_target_ratio{0};           // the job's metric.au (DLIO's expectation), 0..1
  std::atomic<uint64_t> steps{0};
  // Wall-clock time (unix ms) the last training step ended: the timestamp dlio_steps_completed carries, so ranks are
  // compared at their own step times, not at their (skewed) scrape times. 0 = no step yet.
  std::atomic<int64_t> last_step_unix_ms{0};
  // Bytes/s this rank reads at 100 % AU in training (client/explain.h), 0 when unbounded or not yet trained.
  std::atomic<double> demand_bytes_per_second{0};
  std::atomic<int> epoch{0};
  std::atomic<int> phase{static_cast<int>(RankPhase::kIdle)};

  void AttachLoader(const Loader* l, bool eval = false);
  // Folds the loader's counters into `retired` and forgets it (call before destroying the loader).
  void DetachLoader();
  void AddWritten(const IoSnapshot& s);
  // One training step: called once per step by the rank's step thread (one short uncontended lock).
  void RecordStep(uint64_t batch_wait_ns, uint64_t step_ns, uint64_t barrier_ns);
  // One checkpoint save or load of the rank (once per checkpoint).
  void RecordCheckpoint(bool load, uint64_t duration_ns, uint64_t bytes);
  void SetPhase(RankPhase p) { phase.store(static_cast<int>(p), std::memory_order_relaxed); }
};

class AgentMetrics : public prometheus::Collectable {
 public:
  // Per-job series are kept for the last kJobsKept jobs the agent ran (as the coordinator keeps its barrier-wait
  // histograms for its 16 most recent jobs), so /metrics stays bounded however long the agent lives: the series of
  // an older job leave the scrape when a newer job registers its first rank. Prometheus has them by then.
  static constexpr size_t kJobsKept = 16;

  explicit AgentMetrics(std::string agent, size_t jobs_kept = kJobsKept)
      : agent_(std::move(agent)), jobs_kept_(jobs_kept) {}
  // The state of (job, rank), created on first use. Shared: a phase still running when its job leaves the window
  // keeps updating its own copy, which is no longer exported.
  std::shared_ptr<RankMetrics> Rank(const std::string& job_id, int rank);
  std::vector<prometheus::MetricFamily> Collect() const override;
  // A barrier release the agent dropped because it was not for the phase it runs (a late release of an earlier
  // job or phase; agent/step_barrier.h ReleaseBoard).
  void CountStaleRelease() { stale_releases_.fetch_add(1, std::memory_order_relaxed); }
  // dlio_ext.barrier: announce: the largest timing error bound of the running (or last) training phase's steps, ns
  // (agent/step_barrier.h AnnounceBarrier; base/barrier_timing.h ErrorBound). Exported as NaN until set.
  void SetBarrierErrorBound(int64_t ns) { barrier_error_bound_ns_.store(ns, std::memory_order_relaxed); }
  // The same phase's median per-step bound, ns (AnnounceBarrier::p50_error_bound_ns). Exported as NaN until set.
  void SetBarrierErrorBoundP50(int64_t ns) { barrier_error_bound_p50_ns_.store(ns, std::memory_order_relaxed); }

 private:
  struct Job {
    uint64_t last_use = 0;  // recency: Rank() calls stamp it, the least recently used job goes first
    std::map<int, std::shared_ptr<RankMetrics>> ranks;  // keyed in order for a stable output
  };
  const std::string agent_;
  const size_t jobs_kept_;
  std::atomic<uint64_t> stale_releases_{0};
  std::atomic<int64_t> barrier_error_bound_ns_{-1};  // -1: no announce barrier ran yet
  std::atomic<int64_t> barrier_error_bound_p50_ns_{-1};
  mutable Mutex mu_;
  uint64_t uses_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);  // at most jobs_kept_ entries
};

// The S3 families of `s3` (nothing when it counts no request), appended to `out`.
void AppendS3Families(const std::string& agent, const S3Snapshot& s3, std::vector<prometheus::MetricFamily>* out);
// The per-endpoint S3 series (label endpoint; storage/s3/endpoints.h), appended by AppendS3Families.
void AppendS3EndpointFamilies(const std::string& agent, const S3Snapshot& s3,
                              std::vector<prometheus::MetricFamily>* out);

// The host:port an agent advertises for its /metrics endpoint: the host of --metrics-listen with the port actually
// bound. A wildcard or empty host (0.0.0.0, ::, "") is passed on as is; the coordinator replaces it by the address
// it sees the agent's connection come from (see coordinator/targets_file.h).
std::string AdvertisedMetricsEndpoint(const std::string& listen, int bound_port);

}  // namespace dlio
