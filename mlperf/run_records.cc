#include "mlperf/run_records.h"

#include "mlperf/capacity_record.h"
#include "mlperf/code_image.h"
#include "nlohmann/json.hpp"
#include "results/results.h"

namespace dlio {

absl::Status WriteRunRecords(const std::filesystem::path& dir, const WorkloadSpec& spec, const std::string& data_root,
                             int64_t world, const std::filesystem::path& tree_root,
                             const std::vector<MlperfReference>& refs) {
  nlohmann::json cap;
  if (!data_root.empty()) {
    cap = CapacityRecordJson(ProbeCapacity(spec, data_root, world));
  } else {
    cap = {{"rule", kCapacityRule},
           {"probed", false},
           {"checked_by", "each agent, on its data root, before it wrote (its first writing phase); the job ran, so "
                          "none refused"},
           {"fits", true}};
  }
  if (absl::Status s = WriteFileAtomic((dir / kCapacityRecordFile).string(), cap.dump(2) + "\n"); !s.ok()) return s;
  absl::StatusOr<std::string> hash = CaptureCodeImage(tree_root, refs);
  if (!hash.ok()) return hash.status();
  return WriteCodePointer(dir, *hash);
}

}  // namespace dlio
