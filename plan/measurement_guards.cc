#include "plan/measurement_guards.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "plan/checkpoint_plan.h"

namespace dlio {
namespace {

std::string Gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

void LoaderThreadGuards(const WorkloadSpec& spec, const std::vector<GuardNode>& nodes, std::vector<std::string>* out) {
  if (!spec.train) return;  // only training and its evaluations run the loader
  const int64_t per_rank = std::max<int64_t>(1, spec.read_threads);
  for (const GuardNode& n : nodes) {
    const int64_t ranks = (n.ranks + std::max<int64_t>(1, n.agents) - 1) / std::max<int64_t>(1, n.agents);
    const int64_t threads = per_rank * ranks;
    if (n.cores <= 0 || ranks <= 0 || threads <= n.cores) continue;
    out->push_back(fmt::format(
        "reader.read_threads: {} loader thread(s) per rank x {} rank(s) = {} per agent on node {}, which has {} "
        "core(s): the loader competes for CPU and the run measures the client, not the storage (the client CPU "
        "limit); allowed without this warning: at most {} thread(s) per rank",
        per_rank, ranks, threads, n.name, n.cores, std::max<int64_t>(1, n.cores / ranks)));
  }
}

void CheckpointCacheGuards(const WorkloadSpec& spec, const std::vector<GuardNode>& nodes, int64_t world,
                           std::vector<std::string>* out) {
  if (spec.train || !spec.checkpoint || spec.num_checkpoints_read <= 0 || spec.num_checkpoints_write <= 0 ||
      spec.checkpoint_evict_cache || spec.IsS3()) {
    return;
  }
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  if (!model.ok()) return;
  absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(*model, world);
  if (!plan.ok()) return;
  size_t rank = 0;
  for (const GuardNode& n : nodes) {
    double bytes = 0;
    for (int64_t i = 0; i < n.ranks && rank < plan->ranks.size(); ++i) {
      bytes += static_cast<double>(plan->ranks[rank++].bytes());
    }
    if (n.memory_bytes == 0 || bytes <= 0 || bytes >= static_cast<double>(n.memory_bytes)) continue;
    out->push_back(fmt::format(
        "checkpoint: the {} load(s) read checkpoints this job wrote seconds before ({} of each on node {}, RAM {}): "
        "they will come from the page cache, not the storage; set dlio_ext.checkpoint_evict_cache: true to drop "
        "the files' pages before each load",
        spec.num_checkpoints_read, Gib(bytes), n.name, Gib(static_cast<double>(n.memory_bytes))));
  }
}

}  // namespace

std::vector<std::string> MeasurementGuards(const WorkloadSpec& spec, const std::vector<GuardNode>& nodes,
                                           int64_t world) {
  std::vector<std::string> out;
  LoaderThreadGuards(spec, nodes, &out);
  CheckpointCacheGuards(spec, nodes, world, &out);
  return out;
}

}  // namespace dlio
