#include "agent/preflight.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

}  // namespace

uint64_t DatasetBytes(const WorkloadSpec& spec) {
  const auto d = static_cast<uint64_t>(std::max<int64_t>(0, spec.SampleDim()));
  return Mul(Mul(static_cast<uint64_t>(std::max<int64_t>(0, spec.num_files_train)),
                 static_cast<uint64_t>(std::max<int64_t>(0, spec.num_samples_per_file))),
             Mul(d, d));
}

absl::StatusOr<uint64_t> FreeBytes(const fs::path& path) {
  fs::path p = path;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
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
      "; refused before writing any file"));
}

absl::Status CheckDatasetFits(const fs::path& data_dir, const WorkloadSpec& spec, const std::string& ext) {
  uint64_t existing = 0;
  std::error_code ec;
  const fs::path train = data_dir / "train";
  if (fs::is_directory(train, ec)) {
    const std::string suffix = "." + ext;
    for (fs::recursive_directory_iterator it(train, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (it->is_regular_file(ec) && name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        existing += it->file_size(ec);
      }
    }
  }
  return CheckSpace(data_dir, "dataset.data_folder", DatasetBytes(spec), existing,
                    absl::StrCat("the dataset (", spec.num_files_train, " files x ", spec.num_samples_per_file,
                                 " samples x ", spec.SampleDim(), "^2 bytes)"));
}

}  // namespace dlio
