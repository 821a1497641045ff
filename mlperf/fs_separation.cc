#include "mlperf/fs_separation.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/host_facts.h"

namespace dlio {

FsProbe ProbeFileSystem(const std::string& path) {
  FsProbe p;
  p.path = path;
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(path.empty() ? "." : path, ec);
  if (ec) at = path;
  struct stat st {};
  while (::stat(at.c_str(), &st) != 0) {  // the nearest existing ancestor: a folder the run will create
    if (!at.has_parent_path() || at.parent_path() == at) {
      p.error = absl::StrCat("stat '", path, "': ", std::strerror(errno));
      return p;
    }
    at = at.parent_path();
  }
  p.probed = at.string();
  p.device = absl::StrCat(major(st.st_dev), ":", minor(st.st_dev));
  struct statfs sf {};
  p.fs_type = ::statfs(at.c_str(), &sf) == 0 ? FsTypeName(static_cast<int64_t>(sf.f_type)) : "unknown";
  return p;
}

FsSeparation ProbeSeparation(const std::string& data, const std::string& results, const std::string& storage_type) {
  FsSeparation s;
  s.object_storage = storage_type == "s3";
  s.data = ProbeFileSystem(data);
  s.results = ProbeFileSystem(results);
  s.separate = s.object_storage ||
               (s.data.error.empty() && s.results.error.empty() && s.data.device != s.results.device);
  return s;
}

std::string FsSeparationRule(bool checkpointing) { return checkpointing ? "Rules.md 4.4.2" : "Rules.md 3.4.2"; }

nlohmann::json FsSeparationJson(const FsSeparation& s, bool checkpointing) {
  auto probe = [](const FsProbe& p) {
    nlohmann::json j = {{"path", p.path}, {"probed", p.probed}, {"device", p.device}, {"fs_type", p.fs_type}};
    if (!p.error.empty()) j["error"] = p.error;
    return j;
  };
  return {{"rule", FsSeparationRule(checkpointing)},
          {"data", s.object_storage ? nlohmann::json({{"storage_type", "s3"}}) : probe(s.data)},
          {"results", probe(s.results)},
          {"separate", s.separate}};
}

}  // namespace dlio
