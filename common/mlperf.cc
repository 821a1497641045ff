#include "common/mlperf.h"

#include <openssl/evp.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/build_info.h"

namespace dlio {

const std::vector<MlperfWorkload>& MlperfWorkloads() {
  // Values of MLPerf Storage v2.0's configs/dlio/workload/{unet3d,resnet50,cosmoflow}_{a100,h100}.yaml
  // (../shared/reference/dlio.md §3) and Table 1's minimum AU.
  static const std::vector<MlperfWorkload> w = {
      {"unet3d", 0.90, 7, 146600628, 1, /*odirect_closed=*/true, /*needs_checkpoint=*/true},
      {"resnet50", 0.90, 400, 114660.07, 1251, false, false},
      {"cosmoflow", 0.70, 1, 2828486, 1, false, false},
  };
  return w;
}

const MlperfWorkload* FindMlperfWorkload(std::string_view name) {
  const std::string n = absl::AsciiStrToLower(std::string(name));
  for (const MlperfWorkload& w : MlperfWorkloads()) {
    if (absl::StartsWith(n, w.name)) return &w;
  }
  return nullptr;
}

namespace {
int64_t CeilDiv(double a, double b) { return static_cast<int64_t>(std::ceil(a / b - 1e-9)); }
}  // namespace

DatasizeResult ComputeDatasize(const DatasizeInput& in, const MlperfWorkload& w) {
  DatasizeResult r;
  r.total_accelerators = in.accelerators_per_host * in.hosts;
  const double mem_bytes = in.host_memory_gib * 1024.0 * 1024.0 * 1024.0 * static_cast<double>(in.hosts);
  const double file_bytes = static_cast<double>(w.num_samples_per_file) * w.record_length_bytes;
  r.files_for_memory = CeilDiv(kMlperfMemoryMultiple * mem_bytes, file_bytes);
  r.files_for_steps = CeilDiv(static_cast<double>(kMlperfMinSteps * w.batch_size * r.total_accelerators),
                              static_cast<double>(w.num_samples_per_file));
  r.num_files_train = std::max(r.files_for_memory, r.files_for_steps);
  r.binding = r.files_for_memory >= r.files_for_steps ? "memory" : "steps";
  r.dataset_bytes = static_cast<double>(r.num_files_train) * file_bytes;
  if (r.total_accelerators > 0) {
    r.steps_per_epoch = r.num_files_train * w.num_samples_per_file / (w.batch_size * r.total_accelerators);
  }
  r.override_line = absl::StrCat("++workload.dataset.num_files_train=", r.num_files_train);
  if (r.num_files_train > kMlperfFilesPerSubfolder) {
    r.num_subfolders_train = CeilDiv(static_cast<double>(r.num_files_train), kMlperfFilesPerSubfolder);
    absl::StrAppend(&r.override_line, " ++workload.dataset.num_subfolders_train=", r.num_subfolders_train);
  }
  return r;
}

const char* MlperfClassName(MlperfClass c) {
  switch (c) {
    case MlperfClass::kClosed: return "CLOSED";
    case MlperfClass::kOpen: return "OPEN";
    case MlperfClass::kInvalid: return "INVALID";
  }
  return "INVALID";
}

bool SplitOverride(const std::string& ov, std::string* key, std::string* value) {
  const size_t eq = ov.find('=');
  if (eq == std::string::npos) return false;
  std::string k = ov.substr(0, eq);
  while (!k.empty() && (k[0] == '+' || k[0] == '~')) k.erase(0, 1);
  if (absl::StartsWith(k, "workload.")) k.erase(0, 9);
  if (absl::StartsWith(k, "data_reader.")) k = "reader." + k.substr(12);
  *key = std::string(absl::StripAsciiWhitespace(k));
  *value = std::string(absl::StripAsciiWhitespace(ov.substr(eq + 1)));
  return true;
}

Classification ClassifyOverrides(const MlperfWorkload& w, const std::vector<std::string>& overrides,
                                 int64_t num_files_train, int64_t required_files, bool workflow_checkpoint) {
  static const std::map<std::string, std::string> kClosed = {
      {"dataset.num_files_train", "dataset size is the submitter's (>= datasize's count)"},
      {"dataset.num_subfolders_train", "directory layout of the dataset"},
      {"dataset.data_folder", "where the dataset lives"},
      {"reader.read_threads", "loader parallelism is tunable"},
      {"reader.computation_threads", "loader parallelism is tunable"},
      {"reader.transfer_size", "I/O size is tunable"},
      {"reader.prefetch_size", "prefetch depth is tunable"},
      {"checkpoint.checkpoint_folder", "where checkpoints live"},
      {"storage.storage_type", "the storage under test"},
      {"storage.storage_root", "the storage under test"},
      {"train.seed", "changed per run by the 5-run mode, as the rules require"},
      {"workflow.generate_data", "phase switch of the driver (data is generated once, apart from the runs)"},
      {"workflow.train", "phase switch of the driver"},
      {"output.folder", "where results go"},
      {"hydra.run.dir", "where results go"},
  };
  static const std::map<std::string, std::string> kOpen = {
      {"framework", "OPEN allows another framework"},
      {"dataset.format", "OPEN allows another file format"},
      {"dataset.num_samples_per_file", "OPEN allows another file layout"},
      {"reader.data_loader", "OPEN allows another data loader"},
  };
  Classification c;
  auto worst = [&](MlperfClass k) { c.overall = std::max(c.overall, k); };
  for (const std::string& ov : overrides) {
    OverrideVerdict v;
    if (!SplitOverride(ov, &v.key, &v.value)) {
      v.key = ov;
      v.cls = MlperfClass::kInvalid;
      v.reason = "not an override of the form KEY=VALUE";
    } else if (absl::StartsWith(v.key, "hydra.")) {
      v.cls = MlperfClass::kClosed;
      v.reason = "Hydra's own setting, not part of the workload";
    } else if (auto it = kClosed.find(v.key); it != kClosed.end()) {
      v.cls = MlperfClass::kClosed;
      v.reason = it->second;
    } else if (v.key == "reader.odirect" || (v.key == "dlio_ext.io_engine" && v.value == "odirect")) {
      v.cls = w.odirect_closed ? MlperfClass::kClosed : MlperfClass::kInvalid;
      v.reason = w.odirect_closed ? "O_DIRECT reads are allowed in CLOSED for unet3d"
                                  : absl::StrCat("reader.odirect may be changed for unet3d only, not ", w.name);
    } else if (v.key == "dlio_ext.io_engine" && v.value == "posix") {
      v.cls = MlperfClass::kClosed;
      v.reason = "posix is the default engine (no change)";
    } else if (auto it2 = kOpen.find(v.key); it2 != kOpen.end()) {
      v.cls = MlperfClass::kOpen;
      v.reason = it2->second;
    } else if (absl::StartsWith(v.key, "dlio_ext.")) {
      v.cls = MlperfClass::kInvalid;
      v.reason = "this tool's own key: changes what is measured, not allowed by the MLPerf rules";
    } else {
      v.cls = MlperfClass::kInvalid;
      v.reason = "not in the CLOSED or OPEN list of changeable parameters";
    }
    worst(v.cls);
    c.keys.push_back(std::move(v));
  }
  if (required_files > 0 && num_files_train < required_files) {
    c.problems.push_back(absl::StrCat("dataset.num_files_train ", num_files_train, " is below the ", required_files,
                                      " files datasize requires for these hosts"));
    worst(MlperfClass::kInvalid);
  }
  if (w.needs_checkpoint && !workflow_checkpoint) {
    c.problems.push_back("unet3d training must run with workflow.checkpoint=True");
    worst(MlperfClass::kInvalid);
  }
  return c;
}

extern const char* const kMlperfReference_unet3d_a100;
extern const char* const kMlperfReference_unet3d_h100;
extern const char* const kMlperfReference_resnet50_a100;
extern const char* const kMlperfReference_resnet50_h100;
extern const char* const kMlperfReference_cosmoflow_a100;
extern const char* const kMlperfReference_cosmoflow_h100;

const std::vector<MlperfReference>& MlperfReferences() {
  static const std::vector<MlperfReference> refs = [] {
    const std::pair<const char*, const char*> texts[] = {
        {"unet3d_a100", kMlperfReference_unet3d_a100},       {"unet3d_h100", kMlperfReference_unet3d_h100},
        {"resnet50_a100", kMlperfReference_resnet50_a100},   {"resnet50_h100", kMlperfReference_resnet50_h100},
        {"cosmoflow_a100", kMlperfReference_cosmoflow_a100}, {"cosmoflow_h100", kMlperfReference_cosmoflow_h100}};
    std::vector<MlperfReference> v;
    for (const auto& [name, text] : texts) {
      const std::string n = name;
      const size_t us = n.find('_');
      v.push_back({n.substr(0, us), n.substr(us + 1), absl::StrCat("configs/workloads/", n, ".yaml"), text});
    }
    return v;
  }();
  return refs;
}

namespace {

// "key=value" for every key whose value in `effective` differs from `reference`'s (or is missing from one).
std::vector<std::string> Differences(const std::map<std::string, std::string>& effective,
                                     const std::map<std::string, std::string>& reference) {
  std::vector<std::string> out;
  for (const auto& [key, value] : effective) {
    auto it = reference.find(key);
    if (it == reference.end() || it->second != value) out.push_back(absl::StrCat(key, "=", value));
  }
  for (const auto& [key, value] : reference) {
    if (!effective.count(key)) out.push_back(absl::StrCat(key, "="));
  }
  return out;
}

}  // namespace

absl::StatusOr<WorkloadClassification> ClassifyWorkload(const MlperfWorkload& w, const WorkloadSpec& effective,
                                                        std::string_view accelerator, std::string_view job_path,
                                                        int64_t required_files) {
  std::string acc = absl::AsciiStrToLower(std::string(accelerator));
  if (acc.empty()) {
    const std::string base = absl::AsciiStrToLower(std::string(job_path.substr(job_path.rfind('/') + 1)));
    for (const char* a : {"a100", "h100"}) {
      if (absl::StrContains(base, a)) acc = a;
    }
  }
  const std::map<std::string, std::string> eff = FlattenWorkload(effective);
  WorkloadClassification best;
  std::vector<std::string> best_diff;
  for (const MlperfReference& ref : MlperfReferences()) {
    if (ref.workload != w.name || (!acc.empty() && ref.accelerator != acc)) continue;
    absl::StatusOr<WorkloadSpec> spec = LoadWorkload(ref.yaml, {}, ref.file);
    if (!spec.ok()) return spec.status();
    std::vector<std::string> diff = Differences(eff, FlattenWorkload(*spec));
    if (best.reference == nullptr || diff.size() < best_diff.size()) {
      best.reference = &ref;
      best_diff = std::move(diff);
    }
  }
  if (best.reference == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--accelerator-type: '", std::string(accelerator), "' has no ", w.name,
                                                   " reference (a100, h100)"));
  }
  best.classification =
      ClassifyOverrides(w, best_diff, effective.num_files_train, required_files, effective.checkpoint);
  return best;
}

RunsVerdict JudgeRuns(const std::vector<RunFigures>& runs, double au_threshold) {
  RunsVerdict v;
  if (runs.empty()) return v;
  double au = 0, tp = 0;
  bool au_all = true, tp_all = true;
  for (const RunFigures& r : runs) {
    if (r.au_percent) {
      au += *r.au_percent;
      if (*r.au_percent < au_threshold * 100.0) ++v.au_failed_runs;
    } else {
      au_all = false;
    }
    if (r.samples_per_second) {
      tp += *r.samples_per_second;
    } else {
      tp_all = false;
    }
  }
  const auto n = static_cast<double>(runs.size());
  if (au_all) v.au_mean = au / n;
  if (tp_all && tp > 0) {
    v.throughput_mean = tp / n;
    double dev = 0;
    for (const RunFigures& r : runs) dev = std::max(dev, std::fabs(*r.samples_per_second - tp / n) / (tp / n));
    v.max_deviation = dev;
    v.replicates = dev <= kReplicationTolerance;
  }
  v.au_pass = au_all && v.au_failed_runs == 0;
  return v;
}

std::string ToolVersion() { return DLIO_VERSION; }
std::string ToolCommit() { return DLIO_GIT_COMMIT; }

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr) != 1) return "";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) absl::StrAppend(&hex, absl::StrFormat("%02x", md[i]));
  return hex;
}

std::string FsTypeName(int64_t f_type) {
  // Magic numbers from linux/magic.h and statfs(2).
  static const std::map<int64_t, const char*> kNames = {
      {0xEF53, "ext2/ext3/ext4"}, {0x58465342, "xfs"},      {0x9123683E, "btrfs"},   {0x01021994, "tmpfs"},
      {0x6969, "nfs"},            {0xFF534D42, "cifs"},     {0xFE534D42, "smb2"},    {0x0BD00BD0, "lustre"},
      {0x47504653, "gpfs"},       {0x794C7630, "overlayfs"}, {0x2FC12FC1, "zfs"},    {0x65735546, "fuse"},
      {0x00C36400, "ceph"},       {0x5346544E, "ntfs"},     {0x4D44, "vfat"},        {0x858458F6, "ramfs"},
      {0x19830326, "beegfs"},     {0xAAD7AAEA, "panfs"},    {0x73717368, "squashfs"}, {0xF2F52010, "f2fs"},
      {0x9FA0, "proc"},           {0x62656572, "sysfs"},    {0x01021997, "v9fs"},    {0x6A656A63, "fakeowner"},
  };
  if (auto it = kNames.find(f_type & 0xFFFFFFFF); it != kNames.end()) return it->second;
  return absl::StrFormat("0x%x", static_cast<uint64_t>(f_type) & 0xFFFFFFFFu);
}

HostProvenance CollectHostProvenance(const std::string& data_root) {
  HostProvenance p;
  struct utsname u {};
  if (uname(&u) == 0) p.kernel = absl::StrCat(u.sysname, " ", u.release, " ", u.version, " ", u.machine);
  // "key   : value" -> {key, value}, both trimmed; false for a line without a colon.
  auto split = [](const std::string& line, std::string* key, std::string* value) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return false;
    *key = std::string(absl::StripAsciiWhitespace(line.substr(0, colon)));
    *value = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    return !key->empty();
  };
  p.cpu_model = "unknown";
  std::ifstream cpu("/proc/cpuinfo");
  std::string key, value;
  for (std::string line; std::getline(cpu, line);) {
    if (!split(line, &key, &value)) continue;
    if (key == "processor") {
      p.cpuinfo.clear();  // a new processor block: the last one is kept
      continue;
    }
    if (key == "model name" && p.cpu_model == "unknown") p.cpu_model = value;
    p.cpuinfo[key] = value;
  }
  std::ifstream mem("/proc/meminfo");
  for (std::string line; std::getline(mem, line);) {
    if (!split(line, &key, &value)) continue;
    p.meminfo[key] = value;
    if (key == "MemTotal") p.memory_bytes = std::strtoull(value.c_str(), nullptr, 10) * 1024;  // kB (KiB)
  }
  struct statfs sf {};
  if (!data_root.empty() && statfs(data_root.c_str(), &sf) == 0) {
    p.data_root_fs = FsTypeName(static_cast<int64_t>(sf.f_type));
  } else {
    p.data_root_fs = "unknown";
  }
  return p;
}

}  // namespace dlio
