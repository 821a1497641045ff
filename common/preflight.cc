#include "common/preflight.h"

#include <set>

#include "common/checkpoint_plan.h"
#include "common/epoch_plan.h"
#include "fmt/format.h"

namespace dlio {
namespace {

// Under a size spread every generated file has its own sample shape: check each distinct one (the generator would
// stop at the first file whose shape the format refuses).
void CheckFileShapes(const WorkloadSpec& spec, std::vector<std::string>* out) {
  if (!spec.generate_data || spec.record_length_bytes_stdev <= 0) return;
  if (spec.format != "hdf5" && spec.format != "jpeg" && spec.format != "png") return;
  std::set<int64_t> dims;
  const int64_t files = spec.num_files_train + std::max<int64_t>(0, spec.num_files_eval);
  for (int64_t n = 0; n < files; ++n) dims.insert(spec.SampleDimForFile(n));
  for (int64_t d : dims) {
    if (absl::Status s = CheckSampleShape(spec, {d, d}, /*check_chunks=*/true); !s.ok()) {
      int64_t first = 0;
      while (spec.SampleDimForFile(first) != d) ++first;
      out->push_back(fmt::format("{} (file {} of the generated dataset: dataset.record_length_bytes_stdev {} gives "
                                 "it {} x {} samples)",
                                 std::string(s.message()), first, spec.record_length_bytes_stdev, d, d));
      return;  // one line is enough: the others are the same refusal for other sizes
    }
  }
}

}  // namespace

std::string DescribeWorld(const JobWorld& w) {
  return fmt::format("world size {} ({} agent(s) x {} accelerator(s))", w.world(), w.agents, w.ranks_per_agent);
}

std::vector<std::string> PreRunRefusals(const WorkloadSpec& spec, const JobWorld& world) {
  std::vector<std::string> out;
  const int64_t ranks = world.world();
  if (absl::Status s = CheckAgentThreads(spec, world.ranks_per_agent); !s.ok()) out.push_back(std::string(s.message()));
  CheckFileShapes(spec, &out);
  if (spec.train) {
    if (absl::StatusOr<int64_t> s = EpochPlan::Steps(TrainPlanParams(spec, ranks)); !s.ok()) {
      out.push_back(std::string(s.status().message()));
    }
    if (spec.evaluation && spec.num_files_eval > 0) {
      if (absl::StatusOr<int64_t> s = EpochPlan::Steps(EvalPlanParams(spec, ranks)); !s.ok()) {
        out.push_back(std::string(s.status().message()));
      }
    }
  }
  if (spec.checkpoint) {
    absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
    absl::Status s = model.ok() ? MakeCheckpointPlan(*model, ranks).status() : model.status();
    if (!s.ok()) out.push_back(fmt::format("{} ({})", std::string(s.message()), DescribeWorld(world)));
  }
  return out;
}

}  // namespace dlio
