#include "mlperf/rules.h"


#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dlio {

const char* MlperfVersionName(MlperfVersion v) { return v == MlperfVersion::kV3_0 ? "v3.0" : "v2.0"; }

absl::StatusOr<MlperfVersion> ParseMlperfVersion(std::string_view text) {
  if (text == "v3.0" || text == "3.0") return MlperfVersion::kV3_0;
  if (text == "v2.0" || text == "2.0") return MlperfVersion::kV2_0;
  return absl::InvalidArgumentError(absl::StrCat("--mlperf-version: '", std::string(text),
                                                 "' is not a round this version knows (v3.0, the default, or v2.0)"));
}

const std::vector<MlperfWorkload>& MlperfWorkloads(MlperfVersion version) {
  // Values of MLPerf Storage v2.0's configs/dlio/workload/{unet3d,resnet50,cosmoflow}_{a100,h100}.yaml
  // (../shared/reference/dlio.md §3) and Table 1's minimum AU.
  static const std::vector<MlperfWorkload> v2 = {
      {"unet3d", 0.90, 7, 146600628, 1, /*odirect_closed=*/true, /*needs_checkpoint=*/true, {"a100", "h100"}, {}},
      {"resnet50", 0.90, 400, 114660.07, 1251, false, false, {"a100", "h100"}, {}},
      {"cosmoflow", 0.70, 1, 2828486, 1, false, false, {"a100", "h100"}, {}},
  };
  // v3.0 (mlcommons/storage configs/dlio/workload/, mlpstorage_py/rules/editions.yaml; reference doc §3.1): CLOSED
  // and OPEN train unet3d and retinanet on b200 and mi355 only; the rest is whatif. Batch and record of the b200
  // files (dlrm_h100's and flux_b200's for those two); unet3d's v3.0 template runs without its checkpoint.
  static const std::vector<MlperfWorkload> v3 = {
      {"unet3d", 0.90, 7, 146600628, 1, true, false, {"b200", "mi355"}, {"a100", "h100"}},
      {"retinanet", 0.85, 24, 322957, 1, false, false, {"b200", "mi355"}, {"a100", "h100"}},
      {"resnet50", 0.90, 400, 114660.07, 1251, false, false, {}, {"a100", "h100"}},
      {"cosmoflow", 0.70, 1, 2828486, 1, false, false, {}, {"a100", "h100"}},
      {"dlrm", 0.70, 8192, 512, 1, false, false, {}, {"b200", "mi355", "a100", "h100"}},
      {"flux", 0.90, 48, 2164832, 288, false, false, {}, {"b200", "mi355", "a100", "h100"}},
  };
  return version == MlperfVersion::kV3_0 ? v3 : v2;
}

const MlperfWorkload* FindMlperfWorkload(std::string_view name, MlperfVersion version) {
  const std::string n = absl::AsciiStrToLower(std::string(name));
  for (const MlperfWorkload& w : MlperfWorkloads(version)) {
    if (absl::StartsWith(n, w.name)) return &w;
  }
  return nullptr;
}

std::vector<std::string> MlperfAccelerators(MlperfVersion version) {
  if (version == MlperfVersion::kV3_0) return {"b200", "mi355", "a100", "h100"};
  return {"a100", "h100"};
}

int64_t MlperfAcceleratorMemoryGb(std::string_view accelerator) {
  // Rules.md 4.3.4 (v3.0), mlpstorage's ACCELERATOR_MEMORY_GB.
  if (accelerator == "h100" || accelerator == "a100") return 80;
  if (accelerator == "b200") return 180;
  if (accelerator == "mi355") return 288;
  return 0;
}

const std::vector<MlperfCheckpointWorkload>& MlperfCheckpointWorkloads() {
  // Table 2 of Submission_guidelines.md v2.0: TP x PP x DP and the CLOSED process count.
  static const std::vector<MlperfCheckpointWorkload> w = {
      {"llama3-8b", "llama3_8b", 8, 1 * 1},
      {"llama3-70b", "llama3_70b", 64, 8 * 1},
      {"llama3-405b", "llama3_405b", 512, 8 * 32},
      {"llama3-1t", "llama3_1t", 1024, 8 * 64},
  };
  return w;
}

const MlperfCheckpointWorkload* FindMlperfCheckpointWorkload(std::string_view name) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  std::replace(n.begin(), n.end(), '-', '_');
  if (absl::StartsWith(n, "llama3")) n = "llama" + n.substr(6);
  for (const MlperfCheckpointWorkload& w : MlperfCheckpointWorkloads()) {
    const std::string want = "llama" + w.reference_stem.substr(6);  // "llama_8b"
    if (n == want || absl::StartsWith(n, want + "_")) return &w;
  }
  return nullptr;
}

std::vector<std::string> CheckpointWriteOverrides() { return {"checkpoint.num_checkpoints_read=0"}; }
std::vector<std::string> CheckpointReadOverrides() {
  return {"checkpoint.num_checkpoints_write=0", "dlio_ext.checkpoint_evict_cache=true"};
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
    case MlperfClass::kWhatif: return "WHATIF";
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

namespace {

using KeyReasons = std::map<std::string, std::string>;

// Keys every MLPerf workload may change because they change nothing that is measured.
const KeyReasons& NeutralKeys() {
  static const KeyReasons k = {
      {"storage.storage_type", "the storage under test"},
      {"storage.storage_root", "the storage under test"},
      {"train.seed", "changed per run by the 5-run mode, as the rules require"},
      {"output.folder", "where results go"},
      {"hydra.run.dir", "where results go"},
  };
  return k;
}

// The verdict of one override: `special` first (true when it judged the key), then the neutral keys, `closed`,
// `open`, and INVALID for anything else.
OverrideVerdict JudgeOverride(const std::string& ov, const KeyReasons& closed, const KeyReasons& open,
                              const std::function<bool(OverrideVerdict*)>& special) {
  OverrideVerdict v;
  if (!SplitOverride(ov, &v.key, &v.value)) {
    v.key = ov;
    v.cls = MlperfClass::kInvalid;
    v.reason = "not an override of the form KEY=VALUE";
  } else if (special(&v)) {
  } else if (v.key == "dlio_ext.evict_cache") {
    const bool every = v.value == "every_epoch";
    v.cls = every ? MlperfClass::kClosed : MlperfClass::kInvalid;
    v.reason = every ? "the page cache dropped before every training epoch, as v3.0 requires (--mlperf sets it)"
                     : "dlio_ext.evict_cache: only every_epoch (the per-epoch cache drop v3.0 requires) is allowed";
  } else if (absl::StartsWith(v.key, "hydra.")) {
    v.cls = MlperfClass::kClosed;
    v.reason = "Hydra's own setting, not part of the workload";
  } else if (auto n = NeutralKeys().find(v.key); n != NeutralKeys().end()) {
    v.cls = MlperfClass::kClosed;
    v.reason = n->second;
  } else if (auto it = closed.find(v.key); it != closed.end()) {
    v.cls = MlperfClass::kClosed;
    v.reason = it->second;
  } else if (auto it2 = open.find(v.key); it2 != open.end()) {
    v.cls = MlperfClass::kOpen;
    v.reason = it2->second;
  } else if (absl::StartsWith(v.key, "dlio_ext.")) {
    v.cls = MlperfClass::kInvalid;
    v.reason = "this tool's own key: changes what is measured, not allowed by the MLPerf rules";
  } else {
    v.cls = MlperfClass::kInvalid;
    v.reason = "not in the CLOSED or OPEN list of changeable parameters";
  }
  return v;
}

}  // namespace

Classification ClassifyOverrides(const MlperfWorkload& w, const std::vector<std::string>& overrides,
                                 int64_t num_files_train, int64_t required_files, bool workflow_checkpoint) {
  static const KeyReasons kClosed = {
      {"dataset.num_files_train", "dataset size is the submitter's (>= datasize's count)"},
      {"dataset.num_subfolders_train", "directory layout of the dataset"},
      {"dataset.data_folder", "where the dataset lives"},
      {"reader.read_threads", "loader parallelism is tunable"},
      {"reader.computation_threads", "loader parallelism is tunable"},
      {"reader.transfer_size", "I/O size is tunable"},
      {"reader.prefetch_size", "prefetch depth is tunable"},
      {"checkpoint.checkpoint_folder", "where checkpoints live"},
      {"workflow.generate_data", "phase switch of the driver (data is generated once, apart from the runs)"},
      {"workflow.train", "phase switch of the driver"},
  };
  static const KeyReasons kOpen = {
      {"framework", "OPEN allows another framework"},
      {"dataset.format", "OPEN allows another file format"},
      {"dataset.num_samples_per_file", "OPEN allows another file layout"},
      {"reader.data_loader", "OPEN allows another data loader"},
  };
  auto odirect = [&w](OverrideVerdict* v) {
    if (v->key == "reader.odirect" || (v->key == "dlio_ext.io_engine" && v->value == "odirect")) {
      v->cls = w.odirect_closed ? MlperfClass::kClosed : MlperfClass::kInvalid;
      v->reason = w.odirect_closed ? "O_DIRECT reads are allowed in CLOSED for unet3d"
                                   : absl::StrCat("reader.odirect may be changed for unet3d only, not ", w.name);
      return true;
    }
    if (v->key == "dlio_ext.io_engine" && v->value == "posix") {
      v->cls = MlperfClass::kClosed;
      v->reason = "posix is the default engine (no change)";
      return true;
    }
    return false;
  };
  Classification c;
  auto worst = [&](MlperfClass k) { c.overall = std::max(c.overall, k); };
  for (const std::string& ov : overrides) {
    c.keys.push_back(JudgeOverride(ov, kClosed, kOpen, odirect));
    worst(c.keys.back().cls);
  }
  if (required_files > 0 && num_files_train < required_files) {
    c.problems.push_back(absl::StrCat("dataset.num_files_train ", num_files_train, " is below the ", required_files,
                                      " files datasize requires for these hosts"));
    worst(MlperfClass::kInvalid);
    c.checks = MlperfClass::kInvalid;
  }
  if (w.needs_checkpoint && !workflow_checkpoint) {
    c.problems.push_back("unet3d training must run with workflow.checkpoint=True");
    worst(MlperfClass::kInvalid);
    c.checks = MlperfClass::kInvalid;
  }
  return c;
}

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// --allow-invalid-params (v3.0, OPEN and WHATIF only): a key outside the lists is accepted at `floor` (OPEN, or
// WHATIF for a whatif workload or accelerator), its reason saying so; the overall class is recomputed from the keys
// and the job-level checks, which the flag does not touch.
void AllowInvalidParams(MlperfClass floor, Classification* c) {
  c->overall = c->checks;
  for (OverrideVerdict& v : c->keys) {
    if (v.cls == MlperfClass::kInvalid) {
      v.cls = floor;
      v.reason = absl::StrCat("allowed by --allow-invalid-params (OPEN and WHATIF only), else INVALID: ", v.reason);
    }
    c->overall = std::max(c->overall, v.cls);
  }
}

}  // namespace

void ApplyV3Classes(const MlperfWorkload& w, const MlperfV3Options& o, Classification* c) {
  MlperfClass floor = MlperfClass::kClosed;
  if (w.whatif_only()) {
    c->problems.push_back(absl::StrCat("WHATIF: ", w.name, " is a whatif workload in v3.0 (CLOSED and OPEN train unet3d "
                                       "and retinanet)"));
    floor = MlperfClass::kWhatif;
  } else if (!o.accelerator.empty() && !Contains(w.closed_accelerators, o.accelerator)) {
    c->problems.push_back(absl::StrCat("WHATIF: ", o.accelerator, " is a whatif accelerator in v3.0 (CLOSED and OPEN ",
                                       w.name, " emulate ", absl::StrJoin(w.closed_accelerators, ", "), ")"));
    floor = MlperfClass::kWhatif;
  }
  c->checks = std::max(c->checks, floor);
  c->overall = std::max(c->overall, floor);
  if (o.allow_invalid_params) AllowInvalidParams(std::max(floor, MlperfClass::kOpen), c);
}

namespace {

// Table 3 of §2.2.5 and the process-count rules of a checkpointing run.
Classification ClassifyCheckpointOverrides(const MlperfCheckpointWorkload& w, const std::vector<std::string>& diffs,
                                           int64_t world, int64_t hosts) {
  static const KeyReasons kClosed = {
      {"checkpoint.checkpoint_folder", "where checkpoints live (Table 3: changeable)"},
  };
  auto split = [](OverrideVerdict* v) {
    const bool count = v->key == "checkpoint.num_checkpoints_write" || v->key == "checkpoint.num_checkpoints_read";
    if (count) {
      const bool off = v->value == "0" || absl::StartsWith(v->value, "-");
      v->cls = off ? MlperfClass::kClosed : MlperfClass::kInvalid;
      v->reason = off ? "the write/read split the rules prescribe (write 10, clear the cache, read 10)"
                      : absl::StrCat("a run writes and reads ", kMlperfCheckpoints, " checkpoints (0 only to split "
                                     "the writes from the reads)");
      return true;
    }
    if (v->key == "dlio_ext.checkpoint_evict_cache") {
      v->cls = MlperfClass::kClosed;
      v->reason = "clears the page cache between the writes and the reads, as the rules require";
      return true;
    }
    return false;
  };
  Classification c;
  auto worst = [&](MlperfClass k) { c.overall = std::max(c.overall, k); };
  auto check = [&](MlperfClass k) {
    worst(k);
    c.checks = std::max(c.checks, k);
  };
  for (const std::string& d : diffs) {
    c.keys.push_back(JudgeOverride(d, kClosed, {}, split));
    worst(c.keys.back().cls);
  }
  if (world > 0) {
    if (world == w.closed_processes) {
    } else if (world % w.tp_pp == 0) {
      c.problems.push_back(absl::StrCat(world, " processes: OPEN (CLOSED runs exactly ", w.closed_processes,
                                        " for ", w.name, "; OPEN any multiple of TP x PP = ", w.tp_pp, ")"));
      check(MlperfClass::kOpen);
    } else {
      c.problems.push_back(absl::StrCat(world, " processes: INVALID (", w.name, " runs ", w.closed_processes,
                                        " in CLOSED, a multiple of TP x PP = ", w.tp_pp, " in OPEN)"));
      check(MlperfClass::kInvalid);
    }
    if (hosts > 0 && world % hosts != 0) {
      c.problems.push_back(absl::StrCat(world, " processes on ", hosts, " hosts: every host must run the same number"));
      check(MlperfClass::kInvalid);
    } else if (hosts > 0 && world / hosts < kMlperfCheckpointMinPerHost) {
      c.problems.push_back(absl::StrCat(world / hosts, " processes per host: at least ", kMlperfCheckpointMinPerHost,
                                        " (Table 3, --ppn)"));
      check(MlperfClass::kInvalid);
    }
  }
  return c;
}

}  // namespace

extern const char* const kMlperfReference_unet3d_a100;
extern const char* const kMlperfReference_unet3d_h100;
extern const char* const kMlperfReference_resnet50_a100;
extern const char* const kMlperfReference_resnet50_h100;
extern const char* const kMlperfReference_cosmoflow_a100;
extern const char* const kMlperfReference_cosmoflow_h100;
extern const char* const kMlperfReference_llama3_8b;
extern const char* const kMlperfReference_llama3_70b;
extern const char* const kMlperfReference_llama3_405b;
extern const char* const kMlperfReference_llama3_1t;
extern const char* const kMlperfReferenceV3_unet3d_b200;
extern const char* const kMlperfReferenceV3_unet3d_h100;
extern const char* const kMlperfReferenceV3_retinanet_b200;
extern const char* const kMlperfReferenceV3_retinanet_mi355;
extern const char* const kMlperfReferenceV3_retinanet_a100;
extern const char* const kMlperfReferenceV3_retinanet_h100;
extern const char* const kMlperfReferenceV3_dlrm_h100;
extern const char* const kMlperfReferenceV3_llama3_8b;
extern const char* const kMlperfReferenceV3_llama3_70b;
extern const char* const kMlperfReferenceV3_llama3_405b;
extern const char* const kMlperfReferenceV3_llama3_1t;

namespace {

// A reference named by its file stem ("unet3d_h100", "llama3_8b"); false for any other name.
bool ReferenceFromStem(const std::string& stem, std::string file, std::string text, MlperfReference* out,
                       MlperfVersion version) {
  for (const MlperfCheckpointWorkload& w : MlperfCheckpointWorkloads()) {
    if (stem == w.reference_stem) {
      *out = {w.name, "", std::move(file), std::move(text)};
      return true;
    }
  }
  const size_t us = stem.find('_');
  if (us == std::string::npos) return false;
  const std::string workload = stem.substr(0, us), acc = stem.substr(us + 1);
  const MlperfWorkload* w = FindMlperfWorkload(workload, version);
  if (w == nullptr || w->name != workload || !Contains(MlperfAccelerators(version), acc)) return false;
  *out = {workload, acc, std::move(file), std::move(text)};
  return true;
}

}  // namespace

namespace {

// v3.0: its own files (configs/workloads/mlperf-v3.0/), and v2.0's cosmoflow and resnet50 (unchanged, whatif).
const std::vector<MlperfReference>& V3References() {
  static const std::vector<MlperfReference> v3 = [] {
    const std::pair<const char*, const char*> texts[] = {
        {"unet3d_b200", kMlperfReferenceV3_unet3d_b200},       {"unet3d_h100", kMlperfReferenceV3_unet3d_h100},
        {"retinanet_b200", kMlperfReferenceV3_retinanet_b200}, {"retinanet_mi355", kMlperfReferenceV3_retinanet_mi355},
        {"retinanet_a100", kMlperfReferenceV3_retinanet_a100}, {"retinanet_h100", kMlperfReferenceV3_retinanet_h100},
        {"dlrm_h100", kMlperfReferenceV3_dlrm_h100},           {"llama3_8b", kMlperfReferenceV3_llama3_8b},
        {"llama3_70b", kMlperfReferenceV3_llama3_70b},         {"llama3_405b", kMlperfReferenceV3_llama3_405b},
        {"llama3_1t", kMlperfReferenceV3_llama3_1t}};
    std::vector<MlperfReference> v;
    for (const auto& [name, text] : texts) {
      MlperfReference r;
      const std::string file = absl::StrCat("configs/workloads/mlperf-v3.0/", name, ".yaml");
      if (ReferenceFromStem(name, file, text, &r, MlperfVersion::kV3_0)) v.push_back(r);
    }
    for (const MlperfReference& r : MlperfReferences(MlperfVersion::kV2_0)) {
      if (r.workload == "cosmoflow" || r.workload == "resnet50") v.push_back(r);
    }
    return v;
  }();
  return v3;
}

}  // namespace

const std::vector<MlperfReference>& MlperfReferences(MlperfVersion version) {
  if (version == MlperfVersion::kV3_0) return V3References();
  static const std::vector<MlperfReference> refs = [] {
    const std::pair<const char*, const char*> texts[] = {
        {"unet3d_a100", kMlperfReference_unet3d_a100},       {"unet3d_h100", kMlperfReference_unet3d_h100},
        {"resnet50_a100", kMlperfReference_resnet50_a100},   {"resnet50_h100", kMlperfReference_resnet50_h100},
        {"cosmoflow_a100", kMlperfReference_cosmoflow_a100}, {"cosmoflow_h100", kMlperfReference_cosmoflow_h100},
        {"llama3_8b", kMlperfReference_llama3_8b},           {"llama3_70b", kMlperfReference_llama3_70b},
        {"llama3_405b", kMlperfReference_llama3_405b},       {"llama3_1t", kMlperfReference_llama3_1t}};
    std::vector<MlperfReference> v;
    for (const auto& [name, text] : texts) {
      MlperfReference r;
      if (ReferenceFromStem(name, absl::StrCat("configs/workloads/", name, ".yaml"), text, &r, MlperfVersion::kV2_0)) {
        v.push_back(r);
      }
    }
    return v;
  }();
  return refs;
}

absl::StatusOr<std::vector<MlperfReference>> LoadMlperfReferences(const std::string& dir, MlperfVersion version) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<MlperfReference> v;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".yaml") continue;
    std::ifstream in(it->path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    MlperfReference r;
    if (ReferenceFromStem(it->path().stem().string(), it->path().string(), text, &r, version)) {
      v.push_back(std::move(r));
    }
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--mlperf-references: '", dir, "': ", ec.message()));
  if (v.empty()) {
    // Examples of the round asked for: v3.0's files are b200/mi355 (configs/workloads/mlperf-v3.0/).
    return absl::InvalidArgumentError(absl::StrCat(
        "--mlperf-references: '", dir, "' holds no reference file (named as the shipped ", MlperfVersionName(version),
        " ones: ", version == MlperfVersion::kV3_0 ? "unet3d_b200.yaml, retinanet_b200.yaml" : "unet3d_h100.yaml",
        ", llama3_8b.yaml, ...)"));
  }
  std::sort(v.begin(), v.end(), [](const MlperfReference& a, const MlperfReference& b) { return a.file < b.file; });
  return v;
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
                                                        int64_t required_files,
                                                        const std::vector<MlperfReference>* refs,
                                                        MlperfVersion version, const MlperfV3Options& v3) {
  std::string acc = absl::AsciiStrToLower(std::string(accelerator));
  if (acc.empty()) {
    const std::string base = absl::AsciiStrToLower(std::string(job_path.substr(job_path.rfind('/') + 1)));
    for (const std::string& a : MlperfAccelerators(version)) {
      if (absl::StrContains(base, a)) acc = a;
    }
  }
  const std::map<std::string, std::string> eff = FlattenWorkload(effective);
  WorkloadClassification best;
  std::vector<std::string> best_diff;
  for (const MlperfReference& ref : refs != nullptr ? *refs : MlperfReferences(version)) {
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
    std::vector<std::string> have;
    for (const MlperfReference& ref : refs != nullptr ? *refs : MlperfReferences(version)) {
      if (ref.workload == w.name) have.push_back(ref.accelerator);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--accelerator-type: '", acc, "' has no ", w.name, " reference ", MlperfVersionName(version), " (",
        refs != nullptr ? "in --mlperf-references: " : "", have.empty() ? "none" : absl::StrJoin(have, ", "), ")"));
  }
  best.classification =
      ClassifyOverrides(w, best_diff, effective.num_files_train, required_files, effective.checkpoint);
  if (version == MlperfVersion::kV3_0) {
    MlperfV3Options o = v3;
    o.accelerator = best.reference->accelerator;
    ApplyV3Classes(w, o, &best.classification);
  }
  return best;
}

absl::StatusOr<WorkloadClassification> ClassifyCheckpointWorkload(const MlperfCheckpointWorkload& w,
                                                                  const WorkloadSpec& effective, int64_t world,
                                                                  int64_t hosts,
                                                                  const std::vector<MlperfReference>* refs,
                                                                  MlperfVersion version, bool allow_invalid_params) {
  for (const MlperfReference& ref : refs != nullptr ? *refs : MlperfReferences(version)) {
    if (ref.workload != w.name) continue;
    absl::StatusOr<WorkloadSpec> spec = LoadWorkload(ref.yaml, {}, ref.file);
    if (!spec.ok()) return spec.status();
    WorkloadClassification c;
    c.reference = &ref;
    // model.parallelism.data is read only in subset mode (v3.0's files carry it): in default mode it is no difference.
    WorkloadSpec judged = effective;
    if (judged.checkpoint_mode == "default" && spec->checkpoint_mode == "default") {
      judged.parallelism_data = spec->parallelism_data;
    }
    c.classification =
        ClassifyCheckpointOverrides(w, Differences(FlattenWorkload(judged), FlattenWorkload(*spec)), world, hosts);
    if (version == MlperfVersion::kV3_0 && allow_invalid_params) {
      AllowInvalidParams(MlperfClass::kOpen, &c.classification);
    }
    return c;
  }
  return absl::InvalidArgumentError(absl::StrCat("no ", w.name, " reference (", w.reference_stem, ".yaml",
                                                 refs != nullptr ? " in --mlperf-references" : "", ")"));
}

ReplicationVerdict JudgeReplication(const std::vector<std::optional<double>>& values) {
  ReplicationVerdict v;
  double sum = 0;
  for (const std::optional<double>& x : values) {
    if (!x) return v;
    sum += *x;
  }
  if (values.empty() || !(sum > 0)) return v;
  const double mean = sum / static_cast<double>(values.size());
  double dev = 0;
  for (const std::optional<double>& x : values) dev = std::max(dev, std::fabs(*x - mean) / mean);
  v.mean = mean;
  v.max_deviation = dev;
  v.replicates = dev <= kReplicationTolerance;
  return v;
}

RunsVerdict JudgeRuns(const std::vector<RunFigures>& runs, double au_threshold) {
  RunsVerdict v;
  if (runs.empty()) return v;
  double au = 0;
  bool au_all = true;
  std::vector<std::optional<double>> tp;
  for (const RunFigures& r : runs) {
    if (r.au_percent) {
      au += *r.au_percent;
      if (*r.au_percent < au_threshold * 100.0) ++v.au_failed_runs;
    } else {
      au_all = false;
    }
    tp.push_back(r.samples_per_second);
  }
  if (au_all) v.au_mean = au / static_cast<double>(runs.size());
  const ReplicationVerdict rep = JudgeReplication(tp);
  v.throughput_mean = rep.mean;
  v.max_deviation = rep.max_deviation;
  v.replicates = rep.replicates;
  v.au_pass = au_all && v.au_failed_runs == 0;
  return v;
}

}  // namespace dlio
