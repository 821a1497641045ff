// The MLPerf Storage v3.0 submission tree (Rules.md 2.1.x; docs/mlperf.md "The v3.0 tree"): what `mlperf report`
// writes from a rehearsal's results tree (submission.h) and what `mlperf check` applies when it is given one.
//
//   <out>/<closed|open|whatif>/<org>/results/<system>/<training|checkpointing>/<model>/<datagen|run>/YYYYMMDD_HHMMSS/
//   <out>/<closed|open|whatif>/<org>/systems/<system>.yaml   (+ <system>.pdf, which the submitter supplies: 2.1.7)
//   <out>/results.csv, <out>/mlperf_storage_report.json      (ours: the scores, as for a v2.0 tree)
// Each run folder is a copy of the rehearsal's (configs under dlio_config/, overrides, the *_metadata.json, the DLIO
// result files, fs_separation.json, the job's logs as fetched); per workload the newest set (warm-up + 5 runs, six
// consecutive timestamp folders: 2.1.17, 2.1.18) and its newest data generation. The division folder is the set's
// class (INVALID sets are left out, named). systems/<system>.yaml follows the v3.0 schema (system_under_test.clients
// [], solution, deployment, product_nodes, product_switches), pre-filled from the host facts the agents reported
// (summary.json's provenance, and each run's <agent>_host_facts.json: sysctl, environment, drives, distribution);
// every value the submitter owns starts with kFillIn ("FILL IN"), and the file is kept once it exists.
//
// Thread-safety: one call at a time per tree; plain functions over the files.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mlperf/submission_tree.h"
#include "nlohmann/json.hpp"

namespace dlio::submission {

inline constexpr int kV3TimestampFolders = 6;  // Rules.md 2.1.17: the warm-up and the 5 timed runs

struct V3TreeOptions {
  std::filesystem::path out;  // the submission root (holds closed/, open/, whatif/)
  std::string org;            // <org>: a folder name
  std::string system;         // <system>: a folder name
};

// What WriteV3Tree wrote.
struct V3TreeWritten {
  std::vector<std::string> workloads;  // "closed/my-org/results/sut/training/unet3d" per workload placed
  std::vector<std::string> skipped;    // one line per workload left out, with the reason
  std::vector<std::string> systems;    // the systems/<system>.yaml paths, with "(kept)" when it existed
  std::vector<std::string> removed_images;  // <org>/code-* an earlier report left that no run points at any more
};
// Copies the newest set of every workload (and its newest data generation) of `t` into the v3.0 tree, replacing
// the workload's folder there, and writes systems/<system>.yaml unless it exists; the code images the runs point at
// go to <org>/, and an image there that no run of the tree points at any more is removed (CHECK-03). `report` is BuildReport's JSON
// (its divisions). InvalidArgument when org or system is no plain folder name; Internal on a file-system error.
absl::StatusOr<V3TreeWritten> WriteV3Tree(const Tree& t, const nlohmann::json& report, const V3TreeOptions& o);

// The system name `mlperf report` uses without --system: the first host the runs ran on ("-and-N-more" when several).
std::string DefaultSystemName(const Tree& t);

// systems/<system>.yaml in the v3.0 schema, pre-filled from the hosts of `t`'s runs (a client's sysctl, environment,
// drives and distribution from the newest <agent>_host_facts.json of its host; a placeholder where none was stored).
std::string SystemDescriptionV3(const Tree& t, const std::string& system);

// Paths ("solution.availability") of every scalar of the YAML file still starting with kFillIn; *error set when the
// file does not parse.
std::vector<std::string> UnfilledFieldsOf(const std::filesystem::path& yaml, std::string* error);

// A v3.0 tree: the root holds closed/, open/ or whatif/.
bool IsV3Tree(const std::filesystem::path& root);

// The v3.0 rules of the tree's shape (`mlperf check` of a v3.0 tree), each finding naming its rule id:
//  2.1.x   every run folder at <division>/<org>/results/<system>/<type>/<model>/<command>/<YYYYMMDD_HHMMSS>, its
//          division folder the run's class (lower case);
//  2.1.7   every <system> of results/ has systems/<system>.yaml (valid YAML, nothing left "FILL IN") and <system>.pdf;
//  2.1.17  a training workload's run/ holds exactly kV3TimestampFolders timestamp folders;
//  2.1.18  they are one set's warm-up and runs 1..5, consecutive (no other folder between them).
std::vector<Finding> CheckV3Tree(const Tree& t, const std::vector<MlperfReference>* refs);

}  // namespace dlio::submission
