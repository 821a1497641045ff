#include "client/workload_lookup.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/nearest.h"
#include "base/text.h"

namespace dlio {

namespace fs = std::filesystem;

namespace {

// The most names an error lists.
constexpr size_t kListedNames = 5;

bool HasYamlExtension(const std::string& name) {
  return absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml");
}

// The first folder of `folders` that exists ("" when none does).
std::string FirstExisting(const std::vector<std::string>& folders) {
  for (const std::string& f : folders) {
    std::error_code ec;
    if (fs::is_directory(f, ec)) return f;
  }
  return "";
}

// "(near names: a, b)" or, with none near, "(it holds N workloads, e.g. a, b, ...)".
std::string Suggestions(const std::string& name, const std::string& folder) {
  const std::vector<std::string> names = WorkloadNames(folder);
  if (names.empty()) return "(it holds no workload file)";
  const std::vector<std::string> near = NearNames(name, names, kListedNames);
  if (!near.empty()) return absl::StrCat("(near names: ", absl::StrJoin(near, ", "), ")");
  std::vector<std::string> some(names.begin(), names.begin() + std::min(names.size(), kListedNames));
  return absl::StrCat("(it holds ", names.size(), " workloads, e.g. ", absl::StrJoin(some, ", "), ")");
}

// NAME (a name, never a path) in the first existing folder: its path, or the error `what` + where it was looked for.
absl::StatusOr<std::string> FindWorkload(const std::string& name, const std::vector<std::string>& folders,
                                         const std::string& what) {
  const std::string folder = FirstExisting(folders);
  if (folder.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ", and no folder of shipped workloads was found (looked in ",
                                                   EscapeText(absl::StrJoin(folders, " and ")), ")"));
  }
  const std::string file = HasYamlExtension(name) ? name : name + ".yaml";
  const fs::path path = fs::path(folder) / file;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path.string();
  const std::string stem = HasYamlExtension(name) ? fs::path(name).stem().string() : name;
  return absl::InvalidArgumentError(
      absl::StrCat(what, " in ", EscapeText(folder), " ", EscapeText(Suggestions(stem, folder))));
}

}  // namespace

std::vector<std::string> ShippedWorkloadFolders() {
  std::vector<std::string> folders;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) folders.push_back((self.parent_path() / DLIO_WORKLOADS_FROM_BINDIR).lexically_normal().string());
  folders.push_back(DLIO_SOURCE_WORKLOADS);
  return folders;
}

std::vector<std::string> WorkloadNames(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (absl::EndsWith(file, ".yaml") && it->is_regular_file(ec)) names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::string> ResolveJobArgument(const std::string& arg, const std::vector<std::string>& folders) {
  const std::string kForm = "workload=";
  if (absl::StartsWith(arg, kForm)) {  // DLIO's Hydra form: a name from the workload folder, never a path
    const std::string name = arg.substr(kForm.size());
    if (name.empty() || absl::StrContains(name, '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          EscapeText(arg), ": expected workload=NAME, NAME a shipped workload (e.g. workload=unet3d_h100); give a "
          "job file by its path"));
    }
    return FindWorkload(name, folders, absl::StrCat(EscapeText(arg), ": no workload ", EscapeText(name)));
  }
  std::error_code ec;
  if (absl::StrContains(arg, '/') || fs::exists(fs::symlink_status(arg, ec)) || arg.empty()) return arg;
  // A bare name that is no file here: the file's own error first, then where the name was looked for.
  const std::string what =
      absl::StrCat(EscapeText(arg), ": cannot read the job file (", std::strerror(ENOENT), "), nor is it a workload");
  return FindWorkload(arg, folders, what);
}

}  // namespace dlio
