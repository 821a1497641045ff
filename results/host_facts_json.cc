#include "results/host_facts_json.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlio {

using json = nlohmann::json;

json RunHostFactsJson(const RunHostFacts& f) {
  const HostProvenance& p = f.provenance;
  json nics = json::array();
  for (const NicInfo& n : p.nics) {
    nics.push_back({{"name", n.name},
                    {"speed_mbps", n.speed_mbps > 0 ? json(n.speed_mbps) : json(nullptr)},
                    {"mtu", n.mtu},
                    {"state", n.state}});
  }
  json drives = json::array();
  for (const DriveInfo& d : f.drives) {
    drives.push_back({{"name", d.name},
                      {"kind", d.kind},
                      {"vendor", d.vendor},
                      {"model", d.model},
                      {"size_bytes", d.size_bytes},
                      {"rotational", d.rotational < 0 ? json(nullptr) : json(d.rotational == 1)},
                      {"transport", d.transport}});
  }
  json mounts = json::array();
  for (const MountInfo& m : f.mounts) {
    mounts.push_back({{"mount_point", m.mount_point}, {"fs_type", m.fs_type}, {"source", m.source}});
  }
  return {{"hostname", f.hostname},
          {"kernel", p.kernel},
          {"os_release", f.os_release},
          {"cpu_model", p.cpu_model},
          {"memory_bytes", p.memory_bytes},
          {"cgroup_memory_limit_bytes", p.cgroup_memory_limit_bytes},
          {"nics", nics},
          {"sysctl", f.sysctl},
          {"environment", f.environment},
          {"drives", drives},
          {"mounts", mounts},
          {"data_root", {{"path", f.data_root}, {"mount_point", f.data_root_mount}, {"fs_type", p.data_root_fs}}}};
}

namespace {

// name -> value of an object member that is a map of strings (sysctl, environment).
std::map<std::string, std::string> StringMap(const json& facts, const char* member) {
  std::map<std::string, std::string> out;
  const json m = facts.value(member, json::object());
  if (!m.is_object()) return out;
  for (auto it = m.begin(); it != m.end(); ++it) out[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  return out;
}

// key -> description of the elements of an array member (drives by name, mounts by mount point).
std::map<std::string, std::string> Keyed(const json& facts, const char* member, const char* key,
                                         const std::vector<const char*>& shown) {
  std::map<std::string, std::string> out;
  for (const json& e : facts.value(member, json::array())) {
    if (!e.is_object()) continue;
    std::vector<std::string> parts;
    for (const char* s : shown) parts.push_back(e.value(s, json("")).dump());
    out[e.value(key, "")] = absl::StrJoin(parts, ", ");
  }
  return out;
}

void Compare(const std::string& what, const std::map<std::string, std::string>& a,
             const std::map<std::string, std::string>& b, bool values, std::vector<std::string>* out) {
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) {
      out->push_back(absl::StrCat(what, " ", k, " removed"));
    } else if (it->second != v) {
      out->push_back(values ? absl::StrCat(what, " ", k, " ", v, " -> ", it->second)
                            : absl::StrCat(what, " ", k, " changed"));
    }
  }
  for (const auto& [k, v] : b) {
    if (a.count(k) == 0) out->push_back(absl::StrCat(what, " ", k, " added", values ? absl::StrCat(" (", v, ")") : ""));
  }
}

}  // namespace

std::string HostFactsChanges(const json& start, const json& end) {
  if (!start.is_object() || !end.is_object()) return "";
  std::vector<std::string> items;
  if (start.value("kernel", "") != end.value("kernel", "")) {
    items.push_back(absl::StrCat("kernel ", start.value("kernel", ""), " -> ", end.value("kernel", "")));
  }
  Compare("sysctl", StringMap(start, "sysctl"), StringMap(end, "sysctl"), true, &items);
  // Environment values are compared, never shown: a masked one reads the same before and after anyway.
  Compare("environment", StringMap(start, "environment"), StringMap(end, "environment"), false, &items);
  Compare("drive", Keyed(start, "drives", "name", {"model", "size_bytes"}),
          Keyed(end, "drives", "name", {"model", "size_bytes"}), true, &items);
  Compare("mount", Keyed(start, "mounts", "mount_point", {"fs_type", "source"}),
          Keyed(end, "mounts", "mount_point", {"fs_type", "source"}), true, &items);
  constexpr size_t kShown = 8;  // one line in the summary: the rest is in the file
  if (items.size() > kShown) {
    const size_t more = items.size() - kShown;
    items.resize(kShown);
    items.push_back(absl::StrCat("and ", more, " more"));
  }
  return absl::StrJoin(items, "; ");
}

void MergeHostFactsWire(const std::string& text, json* into) {
  if (text.empty()) return;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  if (!into->is_object()) *into = json::object();
  if (j.contains("start") && j["start"].is_object() && !into->contains("start")) (*into)["start"] = j["start"];
  if (j.contains("end") && j["end"].is_object()) (*into)["end"] = j["end"];
}

json HostFactsFileJson(const std::string& agent, const json& merged) {
  const json start = merged.value("start", json::object());
  const json end = merged.contains("end") ? merged["end"] : start;
  return {{"agent", agent}, {"start", start}, {"end", end}, {"changed", HostFactsChanges(start, end)}};
}

}  // namespace dlio
