// The MLPerf Storage v3.0 submission tree: `mlperf report` writes it, `mlperf check` applies its layout rules
// (submission_v3.h).
#include "mlperf/submission_v3.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/host_facts.h"
#include "client/client.h"
#include "mlperf/code_image.h"
#include "mlperf/packaging.h"
#include "results/results.h"
#include "yaml-cpp/yaml.h"

namespace dlio::submission {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kDivisions[] = {"closed", "open", "whatif"};

bool PlainName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

// The tree's <command> level: checkpointing runs sit under run/ too in v3.0.
std::string CommandOf(const Run& r) { return r.command == "datagen" ? "datagen" : "run"; }

std::string Q(const std::string& s) { return json(s).dump(); }  // a JSON string is a YAML double-quoted scalar
std::string FillIn(const std::string& what) { return Q(absl::StrCat(kFillIn, ": ", what)); }

// The newest report per host of every run's agents (summary.json dlio_ext.provenance.agents[]).
std::map<std::string, json> HostFacts(const Tree& t) {
  std::map<std::string, json> hosts;
  for (const Run& r : t.runs) {
    if (!r.summary.is_object()) continue;
    const json prov = r.summary.value("dlio_ext", json::object()).value("provenance", json::object());
    for (const json& a : prov.value("agents", json::array())) hosts[a.value("hostname", "")] = a;
  }
  return hosts;
}

// The newest host facts per host: of every run's agents (summary.json dlio_ext.provenance.agents[]), the "end" of
// its <agent>_host_facts.json, keyed by the agent's hostname as the provenance names it; the newest run wins.
std::map<std::string, json> RunFactsByHost(const Tree& t) {
  std::map<std::string, std::pair<std::string, json>> newest;  // host -> (datetime, facts)
  for (const Run& r : t.runs) {
    if (!r.summary.is_object()) continue;
    const json prov = r.summary.value("dlio_ext", json::object()).value("provenance", json::object());
    for (const json& a : prov.value("agents", json::array())) {
      absl::StatusOr<json> f = ReadJsonFile(t.root / r.dir / HostFactsFileName(a.value("agent", "")));
      if (!f.ok() || !f->is_object() || !f->value("end", json()).is_object()) continue;
      auto& slot = newest[a.value("hostname", "")];
      if (slot.first.empty() || r.datetime >= slot.first) slot = {r.datetime, (*f)["end"]};
    }
  }
  std::map<std::string, json> out;
  for (auto& [host, v] : newest) out[host] = std::move(v.second);
  return out;
}

// "Linux 6.1.0-18-amd64 #1 SMP ..." -> {"Linux", "6.1.0-18-amd64"}.
std::pair<std::string, std::string> OsOf(const std::string& kernel) {
  const std::vector<std::string> w = absl::StrSplit(kernel, ' ', absl::SkipEmpty());
  return {w.empty() ? "" : w[0], w.size() > 1 ? w[1] : ""};
}

// The drives of a client's host facts as system_under_test.clients[].drives entries: whole disks (device-mapper and
// md devices are no drives), identical ones once with their unit_count; a placeholder for what /sys did not say.
std::vector<std::pair<std::string, int64_t>> DriveEntries(const json& facts) {
  std::map<std::pair<std::string, std::string>, int64_t> count;  // (line up to unit_count, media type) -> units
  const json drives = facts.is_object() ? facts.value("drives", json::array()) : json::array();
  for (const json& d : drives) {
    if (!d.is_object() || d.value("kind", "") != "disk") continue;
    const std::string vendor = d.value("vendor", ""), model = d.value("model", ""), via = d.value("transport", "");
    const json rot = d.value("rotational", json());
    const double gb = static_cast<double>(d.value("size_bytes", uint64_t{0})) / 1e9;
    ++count[{absl::StrCat("{vendor_name: ", vendor.empty() ? FillIn("vendor") : Q(vendor),
                          ", model_name: ", model.empty() ? FillIn("model") : Q(model),
                          ", interface: ", via.empty() ? FillIn("NVMe | SATA | SAS") : Q(via),
                          ", capacity_in_GB: ", absl::StrFormat("%.1f", gb)),
             rot.is_boolean() ? Q(rot.get<bool>() ? "HDD" : "SSD") : FillIn("SSD | HDD")}];
  }
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [k, n] : count) {
    out.push_back({absl::StrCat(k.first, ", unit_count: ", n, ", media_type: ", k.second, "}"), n});
  }
  return out;
}

// A client's sysctl, environment and drives from its host facts (<agent>_host_facts.json); a placeholder for each
// part that was not collected (no facts file: an agent before them, or a tree from an older rehearsal).
void AppendClientFacts(const json& facts, std::string* y) {
  const json sysctl = facts.is_object() ? facts.value("sysctl", json::object()) : json::object();
  const json env = facts.is_object() ? facts.value("environment", json::object()) : json::object();
  absl::StrAppend(y, "      sysctl:  # the agent's host at the end of its newest run (<agent>_host_facts.json)\n");
  if (sysctl.empty()) {
    absl::StrAppend(y, "        - {name: ", FillIn("sysctl name"), ", value: ", FillIn("value"), "}\n");
  }
  for (auto it = sysctl.begin(); it != sysctl.end(); ++it) {
    absl::StrAppend(y, "        - {name: ", Q(it.key()), ", value: ", it->dump(), "}\n");
  }
  absl::StrAppend(y, "      environment:  # the agent's, secrets masked as \"", kMasked, "\" (docs/results.md)\n");
  if (env.empty()) absl::StrAppend(y, "        - {name: ", FillIn("variable"), ", value: ", FillIn("value"), "}\n");
  for (auto it = env.begin(); it != env.end(); ++it) {
    absl::StrAppend(y, "        - {name: ", Q(it.key()), ", value: ", it->dump(), "}\n");
  }
  absl::StrAppend(y, "      drives:  # /sys/block's whole disks\n");
  const std::vector<std::pair<std::string, int64_t>> drives = DriveEntries(facts);
  if (drives.empty()) {
    absl::StrAppend(y, "        - {vendor_name: ", FillIn("vendor"), ", model_name: ", FillIn("model"), ", interface: ",
                    FillIn("NVMe | SATA | SAS"), ", capacity_in_GB: ", FillIn("GB"), ", unit_count: ",
                    FillIn("count"), ", media_type: ", FillIn("SSD | HDD"), "}\n");
  }
  for (const auto& [line, count] : drives) absl::StrAppend(y, "        - ", line, "\n");
}

// One client entry of system_under_test.clients[]: hosts with the same CPU, core count, memory and kernel share one
// (its quantity the count).
void AppendClient(const json& a, int64_t quantity, std::string* y) {
  const double gb = a.value("memory_bytes", 0.0) / 1e9;
  const auto [os_name, os_version] = OsOf(a.value("kernel", ""));
  absl::StrAppend(y, "    - friendly_description: ", FillIn("what these clients are"), "\n",
                  "      quantity: ", quantity, "\n",
                  "      chassis:\n",
                  "        model_name: ", FillIn("the chassis model"), "\n",
                  "        cpu_model: ", Q(a.value("cpu_model", "")), "\n",
                  "        cpu_qty: ", FillIn("sockets per client"), "\n",
                  "        cpu_cores: ", a.value("cpu_count", 0), "  # CPUs online, as the agent saw them\n",
                  "        memory_capacity: ", Q(absl::StrFormat("%.4g GB", gb)), "  # ",
                  a.value("memory_source", "/proc/meminfo"), "\n",
                  "      networking:\n");
  const json nics = a.value("nics", json::array());
  if (nics.empty()) absl::StrAppend(y, "        - ", FillIn("no NIC was readable on this host"), "\n");
  for (const json& n : nics) {
    const int64_t mbps = n.value("speed_mbps", json(-1)).is_number() ? n["speed_mbps"].get<int64_t>() : -1;
    absl::StrAppend(y, "        - {name: ", Q(n.value("name", "")), ", type: ", FillIn("ethernet | infiniband"),
                    ", speed: ", mbps > 0 ? Q(absl::StrCat(mbps / 1000.0, " Gb/s")) : FillIn("not reported"),
                    ", state: ", Q(n.value("state", "")), ", mtu: ", n.value("mtu", 0),
                    ", unit_count: 1, traffic: ", FillIn("data | management"), "}\n");
  }
  AppendClientFacts(a.value("run_facts", json()), y);
  const json os = a.value("run_facts", json::object()).value("os_release", json::object());
  const std::string distribution = os.is_object() ? os.value("PRETTY_NAME", os.value("NAME", "")) : "";
  absl::StrAppend(y, "      operating_system: {name: ", Q(os_name), ", version: ", Q(os_version), ", distribution: ",
                  distribution.empty() ? FillIn("distribution and release") : Q(distribution), "}\n",
                  "      data_file_system: ", Q(a.value("data_root_fs", "")), "\n");
}

// The subdirectories of `dir`, sorted by name.
std::vector<std::string> SubdirNames(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Paths ("solution.availability") of every scalar still starting with "FILL IN".
void UnfilledFields(const YAML::Node& n, const std::string& path, std::vector<std::string>* out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      UnfilledFields(kv.second, path.empty() ? kv.first.as<std::string>() : path + "." + kv.first.as<std::string>(),
                     out);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) UnfilledFields(n[i], absl::StrCat(path, "[", i, "]"), out);
  } else if (n.IsScalar() && absl::StartsWith(n.Scalar(), kFillIn)) {
    out->push_back(path);
  }
}

// Copies one run folder (its files as the rehearsal wrote them) to `to`.
absl::Status CopyRun(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  if (ec) return absl::InternalError(absl::StrCat(from.string(), " -> ", to.string(), ": ", ec.message()));
  return absl::OkStatus();
}

// The division folder of a workload: its report entry's class in lower case; empty when it has none or INVALID.
std::string DivisionOf(const json& report, const Workload& w) {
  for (const json& e : report.value("workloads", json::array())) {
    if (e.value("model", "") != w.model || e.value("benchmark_type", "") != w.type) continue;
    const json d = e.value("division", json(nullptr));
    const std::string div = d.is_string() ? absl::AsciiStrToLower(d.get<std::string>()) : "";
    return std::find(std::begin(kDivisions), std::end(kDivisions), div) != std::end(kDivisions) ? div : "";
  }
  return "";
}

}  // namespace

std::vector<std::string> UnfilledFieldsOf(const fs::path& yaml, std::string* error) {
  std::vector<std::string> out;
  try {
    UnfilledFields(YAML::LoadFile(yaml.string()), "", &out);
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return out;
}

std::string DefaultSystemName(const Tree& t) {
  std::set<std::string> hosts;
  for (const Run& r : t.runs) {
    for (const std::string& h : HostsOf(r.summary)) hosts.insert(h);
  }
  std::string name = hosts.empty() ? "system" : *hosts.begin();
  for (char& c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return hosts.size() > 1 ? absl::StrCat(name, "-and-", hosts.size() - 1, "-more") : name;
}

std::string SystemDescriptionV3(const Tree& t, const std::string& system) {
  std::string y;
  absl::StrAppend(&y, "# MLPerf Storage v3.0 system description (Rules.md 2.1.7, 2.4: the v3.0 schema) of ", system,
                  ", pre-filled by\n# dlio-coordinator mlperf report from the host facts the agents reported. Every ",
                  "value starting with\n# \"", kFillIn, "\" is the submitter's: `mlperf check` refuses the tree while ",
                  "one is left, and wants\n# ", system, ".pdf beside this file. `mlperf report` never overwrites it ",
                  "once it exists.\n");
  std::map<std::tuple<std::string, int64_t, uint64_t, std::string>, std::pair<json, int64_t>> clients;
  const std::map<std::string, json> run_facts = RunFactsByHost(t);
  for (auto [name, a] : HostFacts(t)) {
    if (auto f = run_facts.find(name); f != run_facts.end()) a["run_facts"] = f->second;
    auto& c = clients[{a.value("cpu_model", ""), a.value("cpu_count", int64_t{0}), a.value("memory_bytes", uint64_t{0}),
                       a.value("kernel", "")}];
    c.first = a;
    ++c.second;
  }
  absl::StrAppend(&y, "system_under_test:\n  clients:  # the hosts the benchmark ran on\n");
  if (clients.empty()) absl::StrAppend(&y, "    - ", FillIn("no host facts in the runs' summary.json"), "\n");
  for (const auto& [key, c] : clients) AppendClient(c.first, c.second, &y);
  absl::StrAppend(
      &y, "solution:\n",
      "  submission_name: ", Q(system), "\n",
      "  friendly_description: ", FillIn("the storage product and its configuration"), "\n",
      "  architecture:\n",
      "    storage_location: ", FillIn("remote | local | hyper-converged"), "\n",
      "    benchmark_API: ", FillIn("POSIX | S3"), "\n",
      "    product_API: ", FillIn("NFS | Lustre | S3 | block | ..."), "\n",
      "    client_footprint: ", FillIn("in-box | proprietary client"), "\n",
      "    client_installation: ", FillIn("how the client software is installed"), "\n",
      "  capabilities:  # Rules.md 4.7.x\n",
      "    multi_host: ", FillIn("true | false"), "\n",
      "    simultaneous_write: ", FillIn("true | false"), "\n",
      "    simultaneous_read: ", FillIn("true | false"), "\n",
      "    remap_time_in_seconds: ", FillIn("time from a checkpoint written to readable by another host (0 if none)"),
      "\n",
      "  usable_capacity_tib: ", FillIn("TiB"), "\n",
      "  availability: ", FillIn("available | preview | RDI"), "\n",
      "deployment: ", FillIn("cloud | onprem"), "\n",
      "product_nodes:\n",
      "  - {quantity: ", FillIn("count"), ", rack_units: ", FillIn("RU"), ", chassis: ",
      FillIn("model, CPU, memory, power (min_psus_active, psus_configured)"), ", networking: ",
      FillIn("NICs"), ", drives: ", FillIn("drives"), ", operating_system: ", FillIn("OS"), "}\n",
      "product_switches:\n",
      "  - {quantity: ", FillIn("count"), ", model_name: ", FillIn("switch model"), ", ports: ", FillIn("ports"),
      "}\n",
      "benchmark:  # ours: what produced the rehearsal (official submissions come from mlpstorage, Rules.md 1.1)\n",
      "  tool: \"dlio-cpp\"\n",
      "  version: ", Q(ToolVersion()), "\n",
      "  git_commit: ", Q(ToolCommit()), "\n");
  return y;
}

absl::StatusOr<V3TreeWritten> WriteV3Tree(const Tree& t, const json& report, const V3TreeOptions& o) {
  if (!PlainName(o.org)) return absl::InvalidArgumentError(absl::StrCat("--org: '", o.org, "' is no folder name"));
  if (!PlainName(o.system)) {
    return absl::InvalidArgumentError(absl::StrCat("--system: '", o.system, "' is no folder name"));
  }
  V3TreeWritten done;
  std::set<std::string> divisions;
  for (const Workload& w : Group(t)) {
    if (w.sets.empty()) {
      done.skipped.push_back(absl::StrCat(w.type, "/", w.model, ": no run, only data generation"));
      continue;
    }
    const std::string div = DivisionOf(report, w);
    if (div.empty()) {
      done.skipped.push_back(absl::StrCat(w.type, "/", w.model, ": its set is not CLOSED, OPEN or WHATIF"));
      continue;
    }
    const fs::path rel = fs::path(div) / o.org / "results" / o.system / w.type / w.model;
    std::error_code ec;
    fs::remove_all(o.out / rel, ec);
    for (const Run* r : w.sets.back().runs) {
      if (absl::Status s = CopyRun(t.root / r->dir, o.out / rel / CommandOf(*r) / r->datetime); !s.ok()) return s;
    }
    const Run* gen = nullptr;
    for (const Run* g : w.datagen) {
      if (gen == nullptr || g->datetime > gen->datetime) gen = g;
    }
    if (gen != nullptr) {
      if (absl::Status s = CopyRun(t.root / gen->dir, o.out / rel / "datagen" / gen->datetime); !s.ok()) return s;
    }
    done.workloads.push_back(rel.string());
    divisions.insert(div);
  }
  for (const std::string& div : divisions) {
    const fs::path sd = o.out / div / o.org / "systems" / (o.system + ".yaml");
    // The code images the runs point at, into <org>/ as upstream's pool (mlperf/code_image.h).
    if (absl::Status s = CopyPointedImages(t.root, o.out / div / o.org / "results", o.out / o.org); !s.ok()) return s;
    std::error_code ec;
    if (fs::exists(sd, ec)) {
      done.systems.push_back(absl::StrCat(sd.string(), " (kept: the submitter's edits)"));
      continue;
    }
    fs::create_directories(sd.parent_path(), ec);
    if (absl::Status s = WriteFileAtomic(sd.string(), SystemDescriptionV3(t, o.system)); !s.ok()) return s;
    done.systems.push_back(sd.string());
  }
  absl::StatusOr<std::vector<std::string>> removed = PruneUnpointedImages(o.out / o.org, o.out);
  if (!removed.ok()) return removed.status();
  done.removed_images = *std::move(removed);
  return done;
}

bool IsV3Tree(const fs::path& root) {
  std::error_code ec;
  for (const char* d : kDivisions) {
    if (fs::is_directory(root / d, ec)) return true;
  }
  return false;
}

namespace {

// Rules.md 2.1.17 and 2.1.18 over one training workload's run/ folder: six timestamp folders, one set's warm-up
// then runs 1..5 in name order.
void CheckTimestampFolders(const Tree& t, const fs::path& run_dir, std::vector<Finding>* out) {
  const std::vector<std::string> names = SubdirNames(t.root / run_dir);
  if (names.size() != static_cast<size_t>(kV3TimestampFolders)) {
    out->push_back({run_dir.string(), "Rules.md 2.1.17",
                    absl::StrCat(names.size(), " timestamp folder(s) (", absl::StrJoin(names, ", "), "), ",
                                 kV3TimestampFolders, " required: the warm-up and the 5 timed runs")});
  }
  std::map<std::string, const Run*> by_name;
  for (const Run& r : t.runs) {
    if (r.dir.parent_path() == run_dir) by_name[r.dir.filename().string()] = &r;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const auto it = by_name.find(names[i]);
    const Run* r = it == by_name.end() ? nullptr : it->second;
    const std::string want = i == 0 ? "the warm-up" : absl::StrCat("run ", i);
    const std::string is = r == nullptr                ? "no run (no *_metadata.json)"
                           : r->role == "warmup"      ? "the warm-up"
                                                      : absl::StrCat(r->role, " ", r->index);
    if (is != want || (r != nullptr && by_name.begin()->second->set != r->set)) {
      out->push_back({(run_dir / names[i]).string(), "Rules.md 2.1.18",
                      absl::StrCat("is ", is, r != nullptr ? absl::StrCat(" of set ", r->set) : "", " where ", want,
                                   " of one set belongs: the six folders are one set's consecutive runs")});
    }
  }
}

// Rules.md 2.1.7: systems/<system>.yaml (filled in) and its PDF for every <system> of results/.
void CheckSystems(const Tree& t, const std::set<std::pair<std::string, std::string>>& systems,
                  std::vector<Finding>* out) {
  for (const auto& [div_org, system] : systems) {
    const fs::path yaml = fs::path(div_org) / "systems" / (system + ".yaml");
    const fs::path pdf = fs::path(div_org) / "systems" / (system + ".pdf");
    std::error_code ec;
    if (!fs::exists(t.root / yaml, ec)) {
      out->push_back({yaml.string(), "Rules.md 2.1.7", "missing: run `dlio-coordinator mlperf report`"});
      continue;
    }
    std::string error;
    for (const std::string& u : UnfilledFieldsOf(t.root / yaml, &error)) {
      out->push_back({yaml.string(), "Rules.md 2.1.7", absl::StrCat(u, " is not filled in")});
    }
    if (!error.empty()) out->push_back({yaml.string(), "Rules.md 2.4", absl::StrCat("not valid YAML: ", error)});
    if (!fs::exists(t.root / pdf, ec)) {
      out->push_back({pdf.string(), "Rules.md 2.1.7", "missing: the system description's PDF (the submitter's)"});
    }
  }
}

}  // namespace

std::vector<Finding> CheckV3Tree(const Tree& t, const std::vector<MlperfReference>* refs) {
  std::vector<Finding> out;
  std::set<std::pair<std::string, std::string>> systems;  // (<division>/<org>, <system>)
  std::set<fs::path> run_dirs;
  for (const Run& r : t.runs) {
    const std::vector<fs::path> p(r.dir.begin(), r.dir.end());
    const bool placed = p.size() == 8 && p[2] == "results" && p[4] == r.type && p[5] == r.model &&
                        p[6] == CommandOf(r) && p[7] == r.datetime &&
                        std::find(std::begin(kDivisions), std::end(kDivisions), p[0].string()) != std::end(kDivisions);
    if (!placed) {
      out.push_back({r.dir.string(), "Rules.md 2.1.x",
                     absl::StrCat("its metadata places it at <closed|open|whatif>/<org>/results/<system>/", r.type,
                                  "/", r.model, "/", CommandOf(r), "/", r.datetime)});
      continue;
    }
    systems.insert({(p[0] / p[1]).string(), p[3].string()});
    if (r.type == kMlperfTraining && r.command != "datagen") run_dirs.insert(r.dir.parent_path());
    if (r.command == "datagen") continue;
    const Classified c = ClassifyOne(r, refs);
    if (!c.cls.empty() && absl::AsciiStrToLower(c.cls) != p[0].string()) {
      out.push_back({r.dir.string(), "Rules.md 2.1.x",
                     absl::StrCat("a ", c.cls, " run filed under ", p[0].string(), "/")});
    }
  }
  for (const fs::path& d : run_dirs) CheckTimestampFolders(t, d, &out);
  CheckSystems(t, systems, &out);
  return out;
}

}  // namespace dlio::submission
