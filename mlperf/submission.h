// The MLPerf Storage results tree and the two verbs that turn it into a submission (docs/mlperf.md): the run
// folders the MLPerf drivers write (mlperf/verbs.h), `mlperf report` (results.csv, one score per workload
// in mlperf_storage_report.json, a pre-filled system description) and `mlperf check` (every rule a reviewer applies,
// each failure naming the file and the rule).
//
// Layout, as mlpstorage's reportgen and submission checker walk it:
//   <root>/training/<model>/datagen/<YYYYMMDD_HHMMSS>/   one data generation
//   <root>/training/<model>/run/<YYYYMMDD_HHMMSS>/       one folder per run: the warm-up, then the timed runs
//   <root>/checkpointing/<model>/<YYYYMMDD_HHMMSS>/      one folder per write job and per read job (mlpstorage's
//                                                        checkpointing layout has no <command> level)
//   <root>/<type>/<model>/mlperf_result_<set>.json       the driver's verdict of one set of runs (<set> = the
//                                                        datetime of its first folder)
// A run folder holds the job's DLIO result files (summary.json, <rank>_output.json, <rank>_per_epoch_stats.json,
// job.yaml), dlio_config/config.yaml (the normalised job under `workload:`, as Hydra writes it),
// dlio_config/overrides.yaml (the overrides as ++workload.KEY=VALUE) and <model>_<datetime>_metadata.json (the
// fields mlpstorage reads, plus ours under "dlio_cpp": set, role, run index, seed, job id, classification).
// `mlperf report` writes results.csv, mlperf_storage_report.json and system_description.yaml at the root.
//
// Thread-safety: one call at a time per tree; nothing here talks to a coordinator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "mlperf/rules.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {

inline constexpr const char* kMlperfTraining = "training";
inline constexpr const char* kMlperfCheckpointing = "checkpointing";

// A free run-folder name under `parent`: the current local time as YYYYMMDD_HHMMSS, moved on by whole seconds while
// that folder exists or the name is not later than the last one this process handed out (runs shorter than a
// second keep distinct, ordered names).
std::string NextRunStamp(const std::filesystem::path& parent);

// What the drivers know about a run folder beyond the job's own files.
struct RunFolderMeta {
  std::string benchmark_type;          // kMlperfTraining or kMlperfCheckpointing
  std::string model;                   // "unet3d", "llama3-8b"
  std::string command;                 // "run" or "datagen"
  std::string datetime;                // the folder's name
  std::string set;                     // datetime of the set's first folder (one --mlperf invocation)
  std::string role;                    // "warmup", "run", "write", "read", "datagen"
  int index = 0;                       // 1-based timed run (0: warm-up, datagen)
  int64_t seed = 0;
  std::string job_id;
  std::string accelerator;             // "a100"/"h100" of the reference, empty for checkpointing
  std::vector<std::string> overrides;  // as given, any accepted form
  nlohmann::json classification;       // ClassifyRun() of the run, null when not an MLPerf workload
  std::string references;              // "shipped" or the --mlperf-references folder
  MlperfVersion version = kDefaultMlperfVersion;  // the round it was classified by (metadata "mlperf_version")
};
// Writes dlio_config/config.yaml, dlio_config/overrides.yaml and <model>_<datetime>_metadata.json into `dir`
// (created), each under a temporary name then renamed. `summary` (the job's, may be null) supplies the hosts.
absl::Status WriteRunFolderFiles(const std::filesystem::path& dir, const WorkloadSpec& spec, const RunFolderMeta& m,
                                 const nlohmann::json& summary);

// A run's figures from its summary.json; nullopt where not measured (or absent).
struct MlperfFigures {
  std::optional<double> au_percent;          // metric.train_au_mean_percentage
  std::optional<double> samples_per_second;  // metric.train_throughput_mean_samples_per_second
  std::optional<double> io_mib_per_second;   // metric.train_io_mean_MB_per_second (MiB/s, as DLIO)
  std::optional<double> write_gib_per_second, write_duration_s;  // MLPerf's: min over ranks / max over ranks,
  std::optional<double> read_gib_per_second, read_duration_s;    // averaged over the run's checkpoints
  int writes = 0, reads = 0;                 // checkpoints saved and loaded (dlio_ext.checkpoints)
};
MlperfFigures FiguresOfSummary(const nlohmann::json& summary);

// The class of what a run ran (its normalised job) against the reference set, with the hosts it ran on taken from
// its summary.json: training workloads through ClassifyWorkload (datasize for those hosts), checkpointing ones
// through ClassifyCheckpointWorkload (process counts). JSON: {class, reference, differences[], problems[]}; null
// when the job is no MLPerf workload; an error when its reference is missing.
// `version`: the round whose references and classes apply (v3.0: CLOSED, OPEN, WHATIF).
absl::StatusOr<nlohmann::json> ClassifyRun(const WorkloadSpec& spec, const nlohmann::json& summary,
                                           const std::string& accelerator,
                                           const std::vector<MlperfReference>* refs,
                                           MlperfVersion version = MlperfVersion::kV2_0);

// A classification as JSON: {class, reference (its file), differences[{key, value, class, reason}], problems[]}.
nlohmann::json ClassificationJson(const WorkloadClassification& wc);

// Benchmark type of a job: checkpointing when its model is an MLPerf checkpointing workload, else training.
std::string BenchmarkTypeOf(const WorkloadSpec& spec);
// The tree's <model> name: the MLPerf workload's ("unet3d", "llama3-8b"), else the job's model.name.
std::string MlperfModelName(const WorkloadSpec& spec);
// A training workload of either round (v3.0 first: retinanet is v3.0's only); null when neither knows it.
const MlperfWorkload* FindAnyMlperfWorkload(std::string_view name, MlperfVersion version);

// The reference set runs are judged against: the shipped one, or the folder of --mlperf-references.
struct MlperfReferenceSet {
  std::vector<MlperfReference> custom;
  bool use_custom = false;
  std::string label = "shipped";  // or the folder
  const std::vector<MlperfReference>* get() const { return use_custom ? &custom : nullptr; }
  // Empty dir: the shipped set (of `version`, which names the files a folder may hold).
  static absl::StatusOr<MlperfReferenceSet> Load(const std::string& dir,
                                                 MlperfVersion version = MlperfVersion::kV2_0);
};

// The score of one set of runs of the tree at `root` (what mlperf_storage_report.json holds per workload): runs,
// division, the mean of the timed runs, the replication check, and for training the AU verdict, for checkpointing
// the write and read figures per host and per rank.
absl::StatusOr<nlohmann::json> ScoreMlperfSet(const std::string& root, const std::string& type,
                                              const std::string& model, const std::string& set,
                                              const std::vector<MlperfReference>* refs);

struct SubmissionOptions {
  std::string root;                       // the results tree
  std::string references_dir;             // --mlperf-references; empty = the shipped set
  bool json = false;
  // `mlperf report` only. --mlperf-version: v3.0 also writes the v3.0 submission tree (mlperf/submission_v3.h)
  // into submission_dir (empty: <root>/submission) for `org` and `system`; v2.0 writes the v2.0 files only.
  std::string mlperf_version = "v3.0";
  std::string submission_dir;
  std::string org = "my-org";
  std::string system;                     // empty: the hosts' name ("<first host>" or "<first host>-and-N-more")
};
// `mlperf report ROOT`: walks the run folders, prints one line per workload and writes results.csv (one row per
// run), mlperf_storage_report.json (per workload: the 5-run mean, the replication check, the division, per-host and
// per-rank checkpoint figures) and, unless it exists (the submitter edits it), system_description.yaml. Exit 0, 2
// when ROOT holds no run folder.
int MlperfReport(const SubmissionOptions& opt, std::ostream& out, std::ostream& err);
// `mlperf check ROOT`: every rule, one line per failure "<file>: <rule>: <what>"; exit 0 accepted, 5 refused, 2 when
// ROOT holds no run folder.
int MlperfCheck(const SubmissionOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace dlio
