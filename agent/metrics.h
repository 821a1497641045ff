// AgentMetrics: the agent's live Prometheus metrics, exported from per-thread snapshots.
//
// A custom prometheus-cpp Collectable: nothing on the read path calls Prometheus. At scrape time Collect() walks
// the registered ranks and merges their loader threads' IoStats snapshots (IoSnapshot +=), so a scrape costs a
// few microseconds per rank and the hot path only increments its own counters.
// Labels: job_id, agent, rank (never `job`, which Prometheus keeps for the scrape job).
// Exported (base units; see docs/metrics.md): dlio_read_bytes_total, dlio_read_ops_total, dlio_samples_total,
// dlio_read_latency_seconds (histogram; bucket bounds are the powers of two of LatencyHistogram from 1 us to 2^40 ns),
// dlio_write_bytes_total, dlio_steps_total, dlio_epoch, dlio_accelerator_utilization_ratio.
// Thread-safety: every method may be called from any thread; RankMetrics fields are atomics or guarded by mu.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/io_stats.h"
#include "prometheus/collectable.h"

namespace dlio {

class Loader;

// Live state of one rank, updated by the rank's step thread (atomics) and at loader start/end (under mu).
struct RankMetrics {
  std::mutex mu;
  IoSnapshot retired ABSL_GUARDED_BY(mu);          // read I/O of finished epochs
  const Loader* live ABSL_GUARDED_BY(mu) = nullptr;  // the running epoch's loader, if any
  IoSnapshot written ABSL_GUARDED_BY(mu);          // generation I/O
  std::atomic<double> au_ratio{0};
  std::atomic<uint64_t> steps{0};
  std::atomic<int> epoch{0};

  void AttachLoader(const Loader* l);
  // Folds the loader's counters into `retired` and forgets it (call before destroying the loader).
  void DetachLoader();
  void AddWritten(const IoSnapshot& s);
};

class AgentMetrics : public prometheus::Collectable {
 public:
  explicit AgentMetrics(std::string agent) : agent_(std::move(agent)) {}
  // The state of (job, rank), created on first use; stays valid for the agent's life.
  RankMetrics* Rank(const std::string& job_id, int rank);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string agent_;
  mutable std::mutex mu_;
  // Bounded in practice: one entry per (job, rank) this agent ran. Keyed in order for a stable output.
  std::map<std::pair<std::string, int>, std::unique_ptr<RankMetrics>> ranks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dlio
