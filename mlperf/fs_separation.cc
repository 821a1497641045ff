#include "mlperf/fs_separation.h"

#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/host_facts.h"

namespace dlio {
namespace {

std::string LocalHost() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("localhost");
}

}  // namespace

FsProbe ProbeFileSystem(const std::string& path) {
  FsProbe p;
  p.path = path;
  p.mount = ProbeMount(path);  // the nearest existing ancestor: a folder the run will create
  if (!p.mount.error.empty()) {
    p.error = p.mount.error;
    return p;
  }
  p.probed = p.mount.probed;
  p.device = p.mount.device;
  struct statfs sf {};
  p.fs_type = ::statfs(p.probed.c_str(), &sf) == 0 ? FsTypeName(static_cast<int64_t>(sf.f_type)) : "unknown";
  p.host = LocalHost();
  return p;
}

FsSeparation ProbeSeparation(const std::string& data, const std::string& results, const std::string& storage_type) {
  FsSeparation s;
  s.object_storage = storage_type == "s3";
  s.data = ProbeFileSystem(data);
  s.results = ProbeFileSystem(results);
  s.separate = s.object_storage || (s.data.error.empty() && s.results.error.empty() &&
                                     !SameFileSystem(s.data.mount, s.data.host, s.results.mount, s.results.host));
  return s;
}

FsSeparation SeparationFromSummary(const nlohmann::json& summary, const std::string& results,
                                   const std::string& storage_type) {
  FsSeparation s;
  s.object_storage = storage_type == "s3";
  s.results = ProbeFileSystem(results);
  const nlohmann::json prov = summary.value("dlio_ext", nlohmann::json::object()).value("provenance",
                                                                                        nlohmann::json::object());
  for (const nlohmann::json& a : prov.value("agents", nlohmann::json::array())) {
    FsProbe p;
    p.agent = a.value("agent", "");
    p.host = a.value("hostname", "");
    const nlohmann::json m = a.value("data_root_mount", nlohmann::json::object());
    p.mount = {"", m.value("mount_point", ""), m.value("source", ""), m.value("fs_type", ""), m.value("device", ""),
               m.value("fsid", ""), ""};
    p.path = absl::StrCat(p.agent, ":--data-root");
    p.probed = p.mount.mount_point;
    p.device = p.mount.device;
    p.fs_type = p.mount.fs_type;
    if (p.mount.device.empty()) p.error = "the agent reported no data-root mount (an agent older than this client)";
    s.agents.push_back(std::move(p));
  }
  s.separate = s.object_storage || (!s.agents.empty() && s.results.error.empty());
  for (const FsProbe& p : s.agents) {
    if (s.object_storage || (p.error.empty() && !SameFileSystem(p.mount, p.host, s.results.mount, s.results.host))) {
      continue;
    }
    if (s.separate) s.data = p;
    s.separate = false;
  }
  if (s.data.agent.empty() && !s.agents.empty()) s.data = s.agents.front();
  if (s.agents.empty()) s.data.error = "the job's summary.json names no agent";
  return s;
}

std::string FsSeparationRule(bool checkpointing) { return checkpointing ? "Rules.md 4.4.2" : "Rules.md 3.4.2"; }

nlohmann::json FsSeparationJson(const FsSeparation& s, bool checkpointing) {
  auto probe = [](const FsProbe& p) {
    nlohmann::json j = {{"path", p.path},
                        {"probed", p.probed},
                        {"device", p.device},
                        {"fs_type", p.fs_type},
                        {"host", p.host},
                        {"mount", {{"mount_point", p.mount.mount_point},
                                   {"source", p.mount.source},
                                   {"fs_type", p.mount.fs_type},
                                   {"fsid", p.mount.fsid}}}};
    if (!p.agent.empty()) j["agent"] = p.agent;
    if (!p.error.empty()) j["error"] = p.error;
    return j;
  };
  nlohmann::json j = {{"rule", FsSeparationRule(checkpointing)},
                      {"data", s.object_storage ? nlohmann::json({{"storage_type", "s3"}}) : probe(s.data)},
                      {"results", probe(s.results)},
                      {"separate", s.separate}};
  if (!s.agents.empty()) {
    j["compared"] = "each agent's data root, as its Hello reported it, against the results folder probed here: "
                    "network file systems by source, local ones by device on one host";
    j["agents"] = nlohmann::json::array();
    for (const FsProbe& p : s.agents) j["agents"].push_back(probe(p));
  }
  return j;
}

FsSeparation ProbeJobSeparation(const WorkloadSpec& spec, bool checkpointing, const std::string& data_root,
                                const std::string& results) {
  const std::string folder = checkpointing ? spec.checkpoint_folder : spec.data_folder;
  return ProbeSeparation((std::filesystem::path(data_root) / folder).lexically_normal().string(), results,
                         spec.storage_type);
}

void PrintFsRefusal(const FsSeparation& sep, bool checkpointing, const std::string& outcome, std::ostream& err) {
  const char* what = checkpointing ? "checkpoints" : "data";
  err << "MLPerf mode: " << FsSeparationRule(checkpointing) << ": ";
  // A probe that failed (an agent that reports no mount, a folder that cannot be stat'ed) shows nothing shared:
  // say that it could not be told, and why, rather than claim one file system.
  const std::string& why = sep.data.error.empty() ? sep.results.error : sep.data.error;
  if (!why.empty()) {
    err << "cannot tell whether the " << what << " (" << sep.data.path << ") and the results (" << sep.results.path
        << ") are on different file systems: " << why << "; a CLOSED result needs them shown on different file "
        << "systems; " << outcome << "\n";
    return;
  }
  err << "the " << what << " (" << sep.data.path << ", device " << sep.data.device << ", " << sep.data.fs_type
      << ") and the results (" << sep.results.path << ", device " << sep.results.device << ", "
      << sep.results.fs_type << ") are on one file system; a CLOSED result needs them on different file systems; "
      << outcome << "\n";
}

}  // namespace dlio
