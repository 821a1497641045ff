#include "plan/preflight.h"

#include <algorithm>
#include <optional>
#include <set>

#include "plan/checkpoint_plan.h"
#include "plan/epoch_plan.h"
#include "job/format_traits.h"
#include "job/s3_limits.h"
#include "fmt/format.h"

namespace dlio {
namespace {

// Under a size spread every generated file has its own sample shape: check each distinct one (the generator would
// stop at the first file whose shape the format refuses).
void CheckFileShapes(const WorkloadSpec& spec, std::vector<std::string>* out) {
  if (!spec.generate_data || spec.record_length_bytes_stdev <= 0) return;
  if (!FormatTraitsOf(spec.format).shape_rules()) return;
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

// Object storage: data files are uploaded in kS3PartBytes parts, checkpoint files in parts of the checkpoint
// buffer, at most kS3MaxParts each (job/s3_limits.h); a larger object would fail its upload mid-run. The data
// file's size counted is its samples' bytes (headers add a little: never an overstatement).
void CheckObjectSizes(const WorkloadSpec& spec, const CheckpointPlan* plan, const JobWorld& world,
                      std::vector<std::string>* out) {
  if (!spec.IsS3()) return;
  if (spec.generate_data) {
    const double item = static_cast<double>(std::max<size_t>(1, ElementBytes(spec.record_element_type)));
    double sample = item;
    int64_t file = 0;  // the file with the largest samples (they differ only under a size spread)
    if (spec.record_length_bytes_stdev > 0) {
      int64_t side = 0;
      const int64_t files = spec.num_files_train + std::max<int64_t>(0, spec.num_files_eval);
      for (int64_t n = 0; n < files; ++n) {
        if (spec.SampleDimForFile(n) > side) side = spec.SampleDimForFile(n), file = n;
      }
      sample *= static_cast<double>(side) * static_cast<double>(side);
    } else {
      for (int64_t d : spec.SampleShape()) sample *= static_cast<double>(d);
    }
    // Loading bounds a file to 1 TiB (kMaxFileBytes), so the figures are exact integers.
    const double bytes = sample * static_cast<double>(spec.num_samples_per_file);
    const uint64_t most = S3MaxObjectBytes(kS3PartBytes);
    if (bytes > static_cast<double>(most)) {
      out->push_back(fmt::format(
          "dataset.num_samples_per_file: {} would be {} samples x {} bytes = {} bytes, more than the {} bytes an "
          "object takes in {} parts of {} bytes (storage.storage_type: s3); lower num_samples_per_file or "
          "record_length_bytes",
          spec.record_length_bytes_stdev > 0 ? fmt::format("data file {}", file) : std::string("a data file"),
          spec.num_samples_per_file, static_cast<uint64_t>(sample), static_cast<uint64_t>(bytes), most, kS3MaxParts,
          kS3PartBytes));
    }
  }
  if (plan == nullptr) return;
  const uint64_t most = S3MaxObjectBytes(kCheckpointBufferBytes);
  for (size_t r = 0; r < plan->ranks.size(); ++r) {
    for (const CheckpointFile& f : plan->ranks[r].files) {
      if (static_cast<uint64_t>(f.bytes) <= most) continue;
      out->push_back(fmt::format(
          "checkpoint: rank {}'s file {} would be {} bytes, more than the {} bytes an object takes in {} parts of {} "
          "bytes (storage.storage_type: s3; {}); shard the model over more ranks or make it smaller",
          r, f.name, f.bytes, most, kS3MaxParts, kCheckpointBufferBytes, DescribeWorld(world)));
      return;  // one line is enough: the other ranks' files are the same refusal
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
  std::optional<CheckpointPlan> plan;
  if (spec.checkpoint) {
    absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
    absl::StatusOr<CheckpointPlan> p = model.ok() ? MakeCheckpointPlan(*model, ranks) : model.status();
    if (p.ok()) {
      plan = std::move(*p);
    } else {
      out.push_back(fmt::format("{} ({})", std::string(p.status().message()), DescribeWorld(world)));
    }
  }
  CheckObjectSizes(spec, plan ? &*plan : nullptr, world, &out);
  return out;
}

}  // namespace dlio
