// MLPerf Storage rules (v2.0, ../shared/reference/dlio.md §4.3, and v3.0, ../shared/reference/mlperf-v3-and-dlio-
// fork.md §3) as pure functions: the training workloads' baselines
// and AU thresholds, the checkpointing workloads (llama3 8B..1T: process counts, write/read counts), the `datasize`
// calculation, the CLOSED/OPEN/INVALID classification of a job's overrides, the 5-run verdict (AU threshold and
// replication), and the provenance recorded in results (tool version and commit, the normalised job's sha256, each
// host's kernel, CPU, memory, NICs and data-root file-system type).
//
// Contract: everything here is a pure function of its inputs except CollectHostProvenance() (reads uname(2),
// /proc/cpuinfo, /proc/meminfo, the cgroup memory limit, /sys/class/net and statfs(2) of the data root) and
// LoadMlperfReferences() (reads a folder). No network, no threads. The shipped reference workloads are compiled in
// (MlperfReferences()).
// Thread-safety: all functions may be called concurrently.
// Usage:
//   const MlperfWorkload* w = FindMlperfWorkload("unet3d");
//   DatasizeResult d = ComputeDatasize({/*accelerators_per_host=*/8, /*hosts=*/2, /*host_memory_gib=*/128}, *w);
//   Classification c = ClassifyOverrides(*w, {"dataset.num_files_train=4000", "reader.read_threads=8"});
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/host_facts.h"
#include "job/workload_spec.h"

namespace dlio {

// The round whose rules and references judge a run (`--mlperf-version`). v3.0, the current round, is the default of
// `mlperf classify` and `mlperf datasize`; v2.0 is kept for comparing old results. The 5-run mode, `mlperf report`
// and `mlperf check` still judge by v2.0 (the C++ default below) until they learn v3.0's run rules and tree.
enum class MlperfVersion { kV2_0 = 0, kV3_0 = 1 };
inline constexpr MlperfVersion kDefaultMlperfVersion = MlperfVersion::kV3_0;
const char* MlperfVersionName(MlperfVersion v);  // "v2.0", "v3.0"
// "v3.0" or "3.0", "v2.0" or "2.0"; else an error naming --mlperf-version and the values allowed.
absl::StatusOr<MlperfVersion> ParseMlperfVersion(std::string_view text);

// An MLPerf Storage training workload as its CLOSED configs define it (the accelerators' files share record and
// samples per file; batch and computation_time may differ, and batch is the first closed accelerator's).
struct MlperfWorkload {
  std::string name;               // "unet3d", "resnet50", "cosmoflow"; v3.0 also "retinanet", "dlrm", "flux"
  double au_threshold = 0.9;      // minimum AU as a fraction (Table 1 of the submission guidelines)
  int64_t batch_size = 1;
  double record_length_bytes = 0;
  int64_t num_samples_per_file = 1;
  bool odirect_closed = false;    // reader.odirect may be overridden in CLOSED (unet3d only)
  bool needs_checkpoint = false;  // v2.0: unet3d training must run with workflow.checkpoint=True
  // The accelerators CLOSED and OPEN runs may emulate (v2.0: a100, h100; v3.0: b200, mi355; none: whatif only),
  // and those only `whatif` may (v3.0: a100, h100).
  std::vector<std::string> closed_accelerators;
  std::vector<std::string> whatif_accelerators;
  bool whatif_only() const { return closed_accelerators.empty(); }
};

// The MLPerf training workloads of a round: v2.0 unet3d, resnet50, cosmoflow; v3.0 unet3d and retinanet (CLOSED and
// OPEN), resnet50, cosmoflow, dlrm and flux (whatif only).
const std::vector<MlperfWorkload>& MlperfWorkloads(MlperfVersion version = MlperfVersion::kV2_0);
// Matches a workload name or a model.name that starts with it ("unet3d", "unet3d_h100", "resnet50_a100"); null if
// none.
const MlperfWorkload* FindMlperfWorkload(std::string_view name, MlperfVersion version = MlperfVersion::kV2_0);
// The accelerator profiles of a round, CLOSED ones first ("b200, mi355, a100, h100" in v3.0), and their memory in
// GB (Rules.md 4.3.4, ACCELERATOR_MEMORY_GB: h100 80, a100 80, b200 180, mi355 288); 0 for an unknown name.
std::vector<std::string> MlperfAccelerators(MlperfVersion version);
int64_t MlperfAcceleratorMemoryGb(std::string_view accelerator);

// An MLPerf Storage v2.0 checkpointing workload (Submission_guidelines.md §2.2, Table 2): write 10 checkpoints, clear
// the cache, read 10, five times; per checkpoint the duration is the maximum over ranks and the throughput the
// minimum over ranks, and the result is the mean over the five runs.
struct MlperfCheckpointWorkload {
  std::string name;             // "llama3-8b": mlpstorage's model name, the results tree's <model> folder
  std::string reference_stem;   // "llama3_8b": the reference file configs/workloads/llama3_8b.yaml
  int64_t closed_processes = 8; // CLOSED runs exactly TP x PP x DP of Table 2 ranks (8, 64, 512, 1024)
  int64_t tp_pp = 1;            // OPEN may run any multiple of TP x PP
};
inline constexpr int64_t kMlperfCheckpointMinPerHost = 4;  // Table 3: --ppn "minimal 4" (CLOSED and OPEN)
inline constexpr int kMlperfCheckpoints = 10;              // checkpoints written, then read, per run
const std::vector<MlperfCheckpointWorkload>& MlperfCheckpointWorkloads();
// Matches "llama3-8b", "llama3_8b", and a model.name of the llama_8b family ("llama_8b", "llama_8b_zero3"): lower
// case, "llama3" read as "llama", '-' as '_', then the size must follow "llama_" and end the name or a '_' part.
const MlperfCheckpointWorkload* FindMlperfCheckpointWorkload(std::string_view name);

struct DatasizeInput {
  int64_t accelerators_per_host = 1;  // simulated accelerators (ranks) per host; every host runs the same number
  int64_t hosts = 1;
  double host_memory_gib = 0;         // RAM of one host in GiB (2^30 bytes)
};

// mlpstorage's calculate_training_data_size:
//   files_for_memory = ceil(5 x hosts x host_memory_bytes / (nspf x record_length))
//   files_for_steps  = ceil(500 x batch x accelerators_per_host x hosts / nspf)
//   num_files_train  = max of the two; above 10,000 files num_subfolders_train = ceil(files / 10,000) is suggested.
struct DatasizeResult {
  int64_t files_for_memory = 0;
  int64_t files_for_steps = 0;
  int64_t num_files_train = 0;
  int64_t num_subfolders_train = 0;   // 0 = not needed
  int64_t total_accelerators = 0;
  double dataset_bytes = 0;           // num_files_train x nspf x record_length
  int64_t steps_per_epoch = 0;        // floor(files x nspf / (batch x total_accelerators))
  std::string binding;                // "memory" or "steps": which requirement set the count
  std::string override_line;          // "++workload.dataset.num_files_train=N [++workload.dataset.num_subfolders_train=S]"
};
inline constexpr int64_t kMlperfMemoryMultiple = 5;
inline constexpr int64_t kMlperfMinSteps = 500;
inline constexpr int64_t kMlperfFilesPerSubfolder = 10000;
DatasizeResult ComputeDatasize(const DatasizeInput& in, const MlperfWorkload& w);

// v2.0 has CLOSED and OPEN; v3.0 adds WHATIF (the workloads and accelerators outside CLOSED/OPEN, and any key with
// --allow-invalid-params). Ordered: a classification is its worst key or check.
enum class MlperfClass { kClosed = 0, kOpen = 1, kWhatif = 2, kInvalid = 3 };
const char* MlperfClassName(MlperfClass c);  // "CLOSED", "OPEN", "WHATIF", "INVALID"

struct OverrideVerdict {
  std::string key;       // canonical dotted path ("reader.read_threads"); the override's own text for bad ones
  std::string value;
  MlperfClass cls = MlperfClass::kClosed;
  std::string reason;
};
struct Classification {
  MlperfClass overall = MlperfClass::kClosed;  // the worst of the keys and checks
  MlperfClass checks = MlperfClass::kClosed;   // the worst of the job-level checks alone (`problems`)
  std::vector<OverrideVerdict> keys;           // one per override, in order
  std::vector<std::string> problems;           // job-level INVALID reasons (too few files, no checkpoint for unet3d)
};

// The write/read split and the cache clearing of an MLPerf checkpointing run as overrides of its workload: the write
// job reads nothing, the read job writes nothing and evicts the files' pages before each load
// (dlio_ext.checkpoint_evict_cache), as §2.2.2 asks ("write, clear the cache, read").
std::vector<std::string> CheckpointWriteOverrides();
std::vector<std::string> CheckpointReadOverrides();

// Canonical dotted key and value of an override in any accepted form ("++workload.data_reader.read_threads=8" ->
// {"reader.read_threads", "8"}); false if it has no '='.
bool SplitOverride(const std::string& ov, std::string* key, std::string* value);

// Classifies each override against the workload's baseline (dlio.md §4.3 check_allowed_params):
//  CLOSED: dataset.num_files_train, dataset.num_subfolders_train, dataset.data_folder, reader.read_threads,
//    reader.computation_threads, reader.transfer_size, reader.prefetch_size, checkpoint.checkpoint_folder,
//    storage.storage_type, storage.storage_root, reader.odirect (unet3d only) and its equivalent
//    dlio_ext.io_engine=odirect; train.seed (the 5-run mode changes it per run, as the rules require);
//    workflow.generate_data / workflow.train (the driver's own phase switches); output.folder (where results go).
//  OPEN: also framework, dataset.format, dataset.num_samples_per_file, reader.data_loader.
//  INVALID: anything else (named with the reason), including our dlio_ext keys other than io_engine=odirect.
// `num_files_train` (the job's, after overrides) below `required_files` (> 0 when known) and unet3d without
// `workflow_checkpoint` are job-level INVALID problems.
Classification ClassifyOverrides(const MlperfWorkload& w, const std::vector<std::string>& overrides,
                                 int64_t num_files_train = 0, int64_t required_files = 0,
                                 bool workflow_checkpoint = true);

// How v3.0 classes a run beyond its keys.
struct MlperfV3Options {
  std::string accelerator;            // the emulated accelerator ("b200"); empty = not known
  bool allow_invalid_params = false;  // --allow-invalid-params: keys outside the lists are OPEN (WHATIF on a whatif
                                      // workload or accelerator) instead of INVALID, as mlpstorage's -aip allows
};
// v3.0's rules on top of the keys' verdicts (ClassifyOverrides, same CLOSED whitelist and OPEN additions): a
// whatif-only workload (resnet50, cosmoflow, dlrm, flux) or accelerator (a100, h100) makes the run WHATIF at best,
// named in `problems`; --allow-invalid-params turns INVALID keys into OPEN (or WHATIF) ones, saying so in their
// reason; v3.0's unet3d template runs with workflow.checkpoint false, so it is no longer required.
void ApplyV3Classes(const MlperfWorkload& w, const MlperfV3Options& o, Classification* c);

// The reference workload files runs are judged against: configs/workloads/<workload>_<accelerator>.yaml as this
// version ships them (embedded at build time), for the accelerators MLPerf Storage v2.0 lists (a100, h100), and
// configs/workloads/llama3_<size>.yaml for the checkpointing workloads (Table 2's parallelism; no accelerator).
// v3.0's are configs/workloads/mlperf-v3.0/*.yaml (unet3d_b200, retinanet_{b200,mi355,a100,h100}, dlrm_h100, the
// llama3 files with model.parallelism.data), with v2.0's cosmoflow and resnet50 files (unchanged in v3.0).
struct MlperfReference {
  std::string workload;     // "unet3d", "llama3-8b"
  std::string accelerator;  // "a100", "h100"; empty for checkpointing
  std::string file;         // "configs/workloads/unet3d_h100.yaml"
  std::string yaml;         // its text
};
const std::vector<MlperfReference>& MlperfReferences(MlperfVersion version = MlperfVersion::kV2_0);
// A reference set read from a folder instead (`--mlperf-references DIR`): the files named as the shipped ones
// (unet3d_h100.yaml, llama3_8b.yaml, ...); other names are ignored, a folder with none of them is an error. For
// scaled-down rehearsals of the whole workflow: everything judged against such a set says so, and a tree made with
// one passes `mlperf check` only when the check is given the same folder.
absl::StatusOr<std::vector<MlperfReference>> LoadMlperfReferences(const std::string& dir,
                                                                   MlperfVersion version = MlperfVersion::kV2_0);

// What ran, judged: the effective workload (the file as it is, plus its overrides) against the reference of its
// workload, key by key over the normalised keys (ToYaml), so an edited file is OPEN or INVALID exactly as the same
// change made by an override would be. `accelerator` picks the reference ("a100" or "h100"); empty: the job file's
// name if it names one (unet3d_h100.yaml), else the reference with the fewest differing keys.
struct WorkloadClassification {
  Classification classification;  // one OverrideVerdict per differing key ("key=value" of the effective workload)
  const MlperfReference* reference = nullptr;
};
// `refs`: the reference set (null: the shipped MlperfReferences()).
// `version` picks the shipped references and the accelerators (v3.0: ApplyV3Classes with `v3`).
absl::StatusOr<WorkloadClassification> ClassifyWorkload(const MlperfWorkload& w, const WorkloadSpec& effective,
                                                        std::string_view accelerator, std::string_view job_path,
                                                        int64_t required_files = 0,
                                                        const std::vector<MlperfReference>* refs = nullptr,
                                                        MlperfVersion version = MlperfVersion::kV2_0,
                                                        const MlperfV3Options& v3 = {});

// A checkpointing run judged against its reference, key by key (Table 3): CLOSED may change
// checkpoint.checkpoint_folder, storage.storage_root/storage_type and where results go, set one of
// checkpoint.num_checkpoints_write/read to 0 (the write/read split) and dlio_ext.checkpoint_evict_cache=true (the
// cache clearing); anything else is INVALID. Job-level, when `world` > 0: CLOSED runs exactly
// w.closed_processes ranks; another multiple of TP x PP is OPEN; anything else INVALID; and with `hosts` > 0 every
// host runs the same number of ranks, at least kMlperfCheckpointMinPerHost.
absl::StatusOr<WorkloadClassification> ClassifyCheckpointWorkload(const MlperfCheckpointWorkload& w,
                                                                  const WorkloadSpec& effective, int64_t world,
                                                                  int64_t hosts,
                                                                  const std::vector<MlperfReference>* refs = nullptr,
                                                                  MlperfVersion version = MlperfVersion::kV2_0,
                                                                  bool allow_invalid_params = false);

// The verdict over the timed runs of a result (after the warm-up).
// A run's figures; nullopt when the run's metric window left them unmeasured (results/results.h).
struct RunFigures {
  std::optional<double> au_percent;
  std::optional<double> samples_per_second;
};
// Figures not measured in any run leave the means (and the verdicts built on them) unmeasured: no replication check
// on a throughput some run could not measure, no AU verdict on an AU some run could not measure.
struct RunsVerdict {
  std::optional<double> au_mean;          // percent
  std::optional<double> throughput_mean;  // samples/s
  std::optional<double> max_deviation;    // max over runs of |throughput - mean| / mean (a fraction)
  bool replicates = false;                // max_deviation <= kReplicationTolerance
  bool au_pass = false;                   // every run's AU measured and >= threshold x 100
  int au_failed_runs = 0;                 // runs whose AU is measured and below the threshold
};
inline constexpr double kReplicationTolerance = 0.05;  // "the runs must replicate within 5 %"
inline constexpr int kMlperfRuns = 5;
RunsVerdict JudgeRuns(const std::vector<RunFigures>& runs, double au_threshold);

// The replication check of one figure over the runs (throughput of training runs; write and read GiB/s of
// checkpointing runs): the mean, max |x - mean| / mean, and whether that is within kReplicationTolerance. A figure
// some run did not measure (or a mean of 0) leaves all three unmeasured.
struct ReplicationVerdict {
  std::optional<double> mean;
  std::optional<double> max_deviation;
  bool replicates = false;
};
ReplicationVerdict JudgeReplication(const std::vector<std::optional<double>>& values);

}  // namespace dlio
