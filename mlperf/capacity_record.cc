#include "mlperf/capacity_record.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "plan/checkpoint_plan.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

uint64_t Mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

uint64_t U(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(0, v)); }

// The bytes of the regular files below `dir` (0 when it does not exist).
uint64_t BytesBelow(const fs::path& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    if (it->is_regular_file(e)) n += it->file_size(e);
  }
  return n;
}

// The checkpoints' bytes: the plan on `world` ranks x the saves the job writes (or, a read-only job, reads).
void NeedCheckpoints(const WorkloadSpec& spec, int64_t world, CapacityRecord* c) {
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  absl::StatusOr<CheckpointPlan> plan = model.ok() ? MakeCheckpointPlan(*model, world) : model.status();
  if (!plan.ok()) {
    c->error = absl::StrCat("the checkpoint plan on ", world, " ranks: ", plan.status().message());
    return;
  }
  const uint64_t saves = std::max<uint64_t>(CheckpointSaveDirs(spec, world).size(), U(spec.num_checkpoints_read));
  c->needed_bytes = Mul(saves, U(plan->TotalBytes()));
  c->what = absl::StrCat("the checkpoints (", saves, " save(s) x ", plan->TotalBytes(), " bytes on ", world,
                         " ranks)");
}

}  // namespace

CapacityRecord ProbeCapacity(const WorkloadSpec& spec, const std::string& data_root, int64_t world) {
  CapacityRecord c;
  const bool ckpt = spec.checkpoint && !spec.train && !spec.generate_data;
  c.key = ckpt ? "checkpoint.checkpoint_folder" : "dataset.data_folder";
  c.object_storage = spec.IsS3();
  if (c.object_storage) return c;
  const fs::path folder = (fs::path(data_root) / (ckpt ? spec.checkpoint_folder : spec.data_folder)).lexically_normal();
  c.where = folder.string();
  if (ckpt) {
    NeedCheckpoints(spec, std::max<int64_t>(1, world), &c);
  } else {
    const uint64_t d = U(spec.SampleDim());
    c.needed_bytes = Mul(Mul(U(spec.num_files_train), U(spec.num_samples_per_file)), Mul(d, d));
    c.what = absl::StrCat("the dataset (", spec.num_files_train, " files x ", spec.num_samples_per_file,
                          " samples x ", spec.SampleDim(), "^2 bytes)");
  }
  fs::path at = folder;
  std::error_code ec;
  while (!fs::exists(at, ec) && at.has_parent_path() && at.parent_path() != at) at = at.parent_path();
  c.probed = at.string();
  struct statvfs st {};
  if (::statvfs(at.c_str(), &st) != 0) {
    c.error = absl::StrCat("statvfs '", at.string(), "': ", std::strerror(errno));
    return c;
  }
  c.free_bytes = Mul(st.f_bavail, st.f_frsize);
  c.present_bytes = BytesBelow(folder);
  return c;
}

json CapacityRecordJson(const CapacityRecord& c) {
  if (c.object_storage) {
    return {{"rule", kCapacityRule}, {"key", c.key}, {"storage_type", "s3"}, {"probed", false}, {"fits", true}};
  }
  json j = {{"rule", kCapacityRule},          {"key", c.key},
            {"where", c.where},               {"probed", c.probed},
            {"what", c.what},                 {"free_bytes", c.free_bytes},
            {"present_bytes", c.present_bytes}, {"needed_bytes", c.needed_bytes},
            {"fits", c.fits()}};
  if (!c.error.empty()) j["error"] = c.error;
  return j;
}

std::string CapacityRecordProblem(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    return "missing: the capacity gate's record (free space seen, bytes needed, where), which --mlperf writes into "
           "every run folder";
  }
  std::ifstream in(file);
  const json j = json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("fits")) return "unreadable: not the capacity gate's JSON record";
  // Object storage, or remote agents that each applied the gate themselves (mlperf/run_records.h).
  if (j.value("storage_type", "") == "s3" || j.contains("checked_by")) return "";
  if (j.contains("error")) {
    return absl::StrCat("the gate could not probe ", j.value("where", "?"), ": ", j.value("error", ""));
  }
  const uint64_t free_bytes = j.value("free_bytes", uint64_t{0}), present = j.value("present_bytes", uint64_t{0});
  const uint64_t need = j.value("needed_bytes", uint64_t{0});
  if (free_bytes + present >= need) return "";
  return absl::StrCat(j.value("key", "dataset.data_folder"), " '", j.value("where", "?"), "': ",
                      j.value("what", "the data"), " needs ", need, " bytes but its file system had ", free_bytes,
                      " bytes free and ", present, " bytes of the job's files: short by ", need - free_bytes - present,
                      " bytes");
}

}  // namespace dlio
