#include "agent/preflight.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plan/checkpoint_plan.h"

namespace dlio {

namespace fs = std::filesystem;

namespace {

std::string Human(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (b >= 1000 && u < 6) b /= 1000, ++u;
  return absl::StrFormat("%.1f %s", b, units[u]);
}

// a * b, saturating at UINT64_MAX (a declared 10^20-byte dataset must not wrap around to "fits").
uint64_t Mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

// `path`, or its nearest existing ancestor.
fs::path NearestExisting(const fs::path& path) {
  fs::path p = path;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return p;
}

// The dataset files (extension `ext`) already under data_dir/train, and their bytes: generation replaces them.
struct ExistingFiles {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

ExistingFiles ExistingDataset(const fs::path& data_dir, const std::string& ext) {
  ExistingFiles existing;
  std::error_code ec;
  const fs::path train = data_dir / "train";
  if (!fs::is_directory(train, ec)) return existing;
  const std::string suffix = "." + ext;
  for (fs::recursive_directory_iterator it(train, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      ++existing.files;
      existing.bytes += it->file_size(ec);
    }
  }
  return existing;
}

uint64_t ExistingDatasetBytes(const fs::path& data_dir, const std::string& ext) {
  return ExistingDataset(data_dir, ext).bytes;
}

// True when both paths (or their nearest existing ancestors) are on one file system.
bool SameFileSystem(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::stat(NearestExisting(a).c_str(), &sa) == 0 && ::stat(NearestExisting(b).c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev;
}

// "rank 3" or "ranks 2-3".
std::string Ranks(const PhaseOrder& order) {
  if (order.local_ranks == 1) return absl::StrCat("rank ", order.first_rank);
  return absl::StrCat("ranks ", order.first_rank, "-", order.first_rank + order.local_ranks - 1);
}

// What this agent's ranks save over the job: the bytes of one save, and of the files already at the saves' paths
// less the largest file of each rank (see the header).
struct AgentCheckpoints {
  uint64_t per_save = 0;
  uint64_t reclaimable = 0;
};

AgentCheckpoints AgentShare(const fs::path& folder, const CheckpointPlan& plan, const PhaseOrder& order,
                            const std::vector<std::string>& dirs) {
  AgentCheckpoints a;
  uint64_t existing = 0, coexisting = 0;
  for (int r = order.first_rank; r < order.first_rank + order.local_ranks; ++r) {
    if (r < 0 || static_cast<size_t>(r) >= plan.ranks.size()) continue;
    int64_t largest = 0;
    for (const CheckpointFile& f : plan.ranks[static_cast<size_t>(r)].files) {
      a.per_save += static_cast<uint64_t>(f.bytes);
      largest = std::max(largest, f.bytes);
      for (const std::string& d : dirs) {
        std::error_code ec;
        const uint64_t size = fs::file_size(folder / d / f.name, ec);
        if (!ec) existing += size;
      }
    }
    coexisting += static_cast<uint64_t>(largest);
  }
  a.reclaimable = existing > coexisting ? existing - coexisting : 0;
  return a;
}

}  // namespace

uint64_t DatasetBytes(const WorkloadSpec& spec) {
  const auto d = static_cast<uint64_t>(std::max<int64_t>(0, spec.SampleDim()));
  return Mul(Mul(static_cast<uint64_t>(std::max<int64_t>(0, spec.num_files_train)),
                 static_cast<uint64_t>(std::max<int64_t>(0, spec.num_samples_per_file))),
             Mul(d, d));
}

absl::StatusOr<uint64_t> FreeBytes(const fs::path& path) {
  const fs::path p = NearestExisting(path);
  struct statvfs st {};
  if (statvfs(p.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("statvfs '", p.string(), "': ", std::strerror(errno)));
  }
  return Mul(static_cast<uint64_t>(st.f_bavail), static_cast<uint64_t>(st.f_frsize));
}

absl::Status CheckSpace(const fs::path& dir, const std::string& key, uint64_t need, uint64_t reclaimable,
                        const std::string& what) {
  absl::StatusOr<uint64_t> free = FreeBytes(dir);
  if (!free.ok()) return free.status();
  const uint64_t available = *free + reclaimable;
  if (need <= available) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      key, " '", dir.string(), "': ", what, " needs about ", need, " bytes (", Human(need),
      ") but its file system has only ", available, " bytes (", Human(available), ") available",
      reclaimable > 0 ? absl::StrCat(", counting the ", reclaimable, " bytes of files it replaces") : "",
      "; refused before writing any file (the capacity gate, MLPerf Storage CAP-01)"));
}

absl::Status CheckDatasetFits(const fs::path& data_dir, const WorkloadSpec& spec, const std::string& ext) {
  return CheckSpace(data_dir, "dataset.data_folder", DatasetBytes(spec), ExistingDatasetBytes(data_dir, ext),
                    absl::StrCat("the dataset (", spec.num_files_train, " files x ", spec.num_samples_per_file,
                                 " samples x ", spec.SampleDim(), "^2 bytes)"));
}

bool ReadsExistingDataset(const PhaseOrder& order, const WorkloadSpec& spec) {
  if (spec.generate_data || spec.IsS3() || !spec.train) return false;
  // The job's listing of train/ (issue 27 item 3) is its first read, on one agent; the epochs then carry it.
  if (order.kind == PhaseKind::kList) return order.list_split == "train";
  return order.kind == PhaseKind::kTrainEpoch && order.epoch == 1 && order.listing.split.empty();
}

absl::Status CheckDatasetPresent(const fs::path& data_dir, const PhaseOrder& order, const WorkloadSpec& spec,
                                 const std::string& ext) {
  if (!ReadsExistingDataset(order, spec) || ExistingDataset(data_dir, ext).files > 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "dataset.data_folder '", (data_dir / "train").string(), "': no .", ext, " file of the dataset there (",
      spec.num_files_train, " expected by dataset.num_files_train) and workflow.generate_data is false: generate it "
      "first (workflow.generate_data: true) or point dataset.data_folder at it; refused before the run"));
}

bool FirstWritingPhase(const PhaseOrder& order, const WorkloadSpec& spec) {
  if (spec.generate_data) return order.kind == PhaseKind::kGenerate;
  if (spec.train) return order.kind == PhaseKind::kTrainEpoch && order.epoch == 1;
  return order.kind == PhaseKind::kCheckpoint && !order.checkpoint_load && order.checkpoint_index == 1;
}

absl::Status CheckCheckpointsFit(const ConfinedDir& root, const PhaseOrder& order, const WorkloadSpec& spec,
                                 const std::string& ext) {
  if (!spec.checkpoint || spec.IsS3() || !FirstWritingPhase(order, spec)) return absl::OkStatus();
  const std::vector<std::string> dirs = CheckpointSaveDirs(spec, order.world);
  if (dirs.empty()) return absl::OkStatus();
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  absl::StatusOr<CheckpointPlan> plan = model.ok() ? MakeCheckpointPlan(*model, order.world) : model.status();
  if (!plan.ok()) return plan.status();  // the phase would fail with it too (PreRunRefusals refuses it before)
  absl::StatusOr<std::string> rel = root.Relative(spec.checkpoint_folder, "checkpoint.checkpoint_folder");
  if (!rel.ok()) return rel.status();
  const fs::path folder = fs::path(root.path()) / *rel;
  const AgentCheckpoints mine = AgentShare(folder, *plan, order, dirs);
  if (mine.per_save == 0) return absl::OkStatus();  // ranks that write no file
  const uint64_t saves = dirs.size();
  uint64_t need = Mul(saves, mine.per_save);
  std::string what = absl::StrCat("saving the checkpoints of ", Ranks(order), " (", saves, " save(s) x ",
                                  mine.per_save, " bytes)");
  if (order.kind == PhaseKind::kGenerate) {
    absl::StatusOr<std::string> data = root.Relative(spec.data_folder, "dataset.data_folder");
    const fs::path data_dir = fs::path(root.path()) / (data.ok() ? *data : std::string("."));
    if (data.ok() && SameFileSystem(folder, data_dir)) {
      const uint64_t dataset = DatasetBytes(spec), existing = ExistingDatasetBytes(data_dir, ext);
      const uint64_t first = dataset > existing ? dataset - existing : 0;
      if (first > 0) {
        need = need > std::numeric_limits<uint64_t>::max() - first ? std::numeric_limits<uint64_t>::max()
                                                                    : need + first;
        what += absl::StrCat(" after the dataset's ", first, " new bytes on the same file system");
      }
    }
  }
  return CheckSpace(folder, "checkpoint.checkpoint_folder", need, mine.reclaimable, what);
}

}  // namespace dlio
