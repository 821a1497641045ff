#include "mlperf/checkpoint_v3.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plan/checkpoint_plan.h"

namespace dlio {

namespace {
std::string Gb(double bytes) { return absl::StrFormat("%.3g GB", bytes / 1e9); }
}  // namespace

std::vector<std::string> CheckpointV3Problems(const CheckpointV3Input& in) {
  std::vector<std::string> p;
  const std::string model = in.workload != nullptr ? in.workload->name : "this model";
  if (in.hosts > 0 && in.world > 0) {
    const int64_t per_host = in.world / in.hosts;
    if (per_host <= kV3CheckpointMinRanksPerHost) {
      p.push_back(absl::StrCat("Rules.md 4.6.2: ", in.world, " ranks on ", in.hosts, " host(s) is ", per_host,
                               " per host; a checkpointing run needs more than ", kV3CheckpointMinRanksPerHost,
                               " ranks per host"));
    }
  }
  if (!in.accelerator.empty() && in.world > 0) {
    const int64_t gb = MlperfAcceleratorMemoryGb(in.accelerator);
    const double aggregate = static_cast<double>(gb) * 1e9 * static_cast<double>(in.world);
    if (gb == 0) {
      p.push_back(absl::StrCat("Rules.md 4.3.4: accelerator '", in.accelerator,
                               "' has no memory figure (known: b200, mi355, a100, h100)"));
    } else if (aggregate < static_cast<double>(in.checkpoint_bytes)) {
      p.push_back(absl::StrCat("Rules.md 4.3.4: ", in.world, " x ", in.accelerator, " at ", gb, " GB = ",
                               Gb(aggregate), " of accelerator memory is below the ", model, " checkpoint of ",
                               Gb(static_cast<double>(in.checkpoint_bytes)),
                               " (more ranks, or an accelerator with more memory)"));
    }
  }
  if (in.subset && (in.workload == nullptr || in.workload->name != "llama3-8b")) {
    p.push_back(absl::StrCat("Rules.md 4.3.5: checkpoint.mode: subset is legal only for llama3-8b (storage #841), "
                             "not for ", model, "; run it at its full rank count"));
  }
  if (!in.cache_flush && in.hosts > 0 && in.host_memory_bytes > 0) {
    const double per_host = static_cast<double>(in.checkpoint_bytes) / static_cast<double>(in.hosts);
    const double bound = kV3CheckpointRamMultiple * static_cast<double>(in.host_memory_bytes);
    if (per_host <= bound) {
      p.push_back(absl::StrCat("Rules.md 4.3.1: ", Gb(per_host), " of checkpoint data per host is not above 3x the "
                               "host's RAM (", Gb(bound), ") and the cache is not flushed between the writes and "
                               "the reads (dlio_ext.checkpoint_evict_cache)"));
    }
  }
  return p;
}

CheckpointV3Input CheckpointV3InputFor(const WorkloadSpec& spec, const ExplainFleet& fleet,
                                       const std::string& accelerator, bool cache_flush) {
  CheckpointV3Input in;
  in.workload = FindMlperfCheckpointWorkload(spec.model_name);
  in.world = fleet.agents * fleet.accelerators_per_agent;
  in.hosts = static_cast<int64_t>(fleet.nodes.size());
  for (const ExplainNode& n : fleet.nodes) {
    if (n.memory_bytes > 0 && (in.host_memory_bytes == 0 || n.memory_bytes < in.host_memory_bytes)) {
      in.host_memory_bytes = n.memory_bytes;
    }
  }
  in.accelerator = accelerator;
  in.subset = spec.checkpoint_mode == "subset";
  in.cache_flush = cache_flush;
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  absl::StatusOr<CheckpointPlan> plan = model.ok() ? MakeCheckpointPlan(*model, in.world) : model.status();
  if (plan.ok()) in.checkpoint_bytes = static_cast<uint64_t>(plan->TotalBytes());
  return in;
}

}  // namespace dlio
