// The MLPerf results tree as `mlperf report` and `mlperf check` read it back (its layout is submission.h's): every
// run folder with its metadata, its summary.json figures and its normalised job, grouped into workloads and sets of
// runs, and what both verbs ask of a run (its class against the references, its hosts, its shape). Internal to the
// mlperf room: submission.cc, packaging.cc (`mlperf report`) and checker.cc (`mlperf check`) share it; nothing
// outside mlperf/ includes it.
//
// Thread-safety: plain values and functions that only read files; one call at a time per tree.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "job/workload_spec.h"
#include "mlperf/rules.h"
#include "mlperf/submission.h"
#include "nlohmann/json.hpp"

namespace dlio::submission {

// A figure as JSON: the number, or null when it is not measured.
nlohmann::json Num(const std::optional<double>& v);
// The number at `key` of an object; nullopt when `j` is no object or the key is absent or not a number.
std::optional<double> OptNum(const nlohmann::json& j, const char* key);

// A JSON file: NotFound "missing" when it cannot be opened, InvalidArgument "not valid JSON: ..." when it does not
// parse.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::filesystem::path& p);
// A file's text; empty when it cannot be read.
std::string ReadText(const std::filesystem::path& p);

// The distinct node names a job ran on (summary.json dlio_ext.agents[].hostname), sorted.
std::vector<std::string> HostsOf(const nlohmann::json& summary);

// Per-host memory and the shape of a run, from its summary.json.
struct RunShape {
  int64_t world = 0, hosts = 0;
  double memory_gib_per_host = 0;  // the mean over hosts: their sum is what datasize uses
};
RunShape ShapeOf(const nlohmann::json& summary);

// datasize's count for the hosts a training run ran on; 0 when unknown.
int64_t RequiredFiles(const WorkloadSpec& spec, const nlohmann::json& summary,
                      MlperfVersion version = MlperfVersion::kV2_0);

// One line of `mlperf check`: the file (relative to the root), the rule, what is wrong.
struct Finding {
  std::string file;
  std::string rule;
  std::string message;
};

struct Run {
  std::filesystem::path dir;        // relative to the root
  std::filesystem::path meta_file;  // relative to the root
  nlohmann::json meta, summary;     // summary: null when missing or unreadable
  std::string type, model, command, datetime, set, role;
  int index = 0;
  MlperfVersion version = MlperfVersion::kV2_0;  // metadata "mlperf_version" (absent: a v2.0-era tree)
  std::string references;                        // metadata dlio_cpp.references: what it was classified against
  std::optional<WorkloadSpec> spec;  // dlio_config/config.yaml, when it loads
  MlperfFigures fig;
};

struct Tree {
  std::filesystem::path root;
  std::vector<Run> runs;
  std::vector<Finding> load_problems;
  // The round of the newest run (what the references of `mlperf report`/`check` are loaded for).
  MlperfVersion version() const;
};

// Every folder holding a *_metadata.json (reportgen's criterion), in path order; a metadata file that does not read
// as a JSON object is a load problem ("required files"), not a run. `<root>/submission` (the v3.0 tree `mlperf
// report` writes from the runs) is not walked: its folders are copies.
Tree LoadTree(const std::filesystem::path& root);
// LoadTree of opt.root; InvalidArgument naming the root when it is no directory or holds no run folder.
absl::StatusOr<Tree> OpenTree(const SubmissionOptions& opt);

// One workload's set of runs (one --mlperf invocation).
struct Set {
  std::string type, model, set;
  std::vector<const Run*> runs;  // in folder order
};

// (type, model) -> sets, oldest first; datagen folders apart.
struct Workload {
  std::string type, model;
  std::vector<Set> sets;
  std::vector<const Run*> datagen;
};

// The tree's runs by workload, in (type, model) order; the pointers point into `t`, which must outlive the result.
std::vector<Workload> Group(const Tree& t);

// The run of a set with this role and index; null when there is none.
const Run* FindRole(const Set& s, const std::string& role, int index);
// The highest run index of a set (0 when it only has a warm-up).
int MaxIndex(const Set& s);

// A run's class against the references (ClassifyRun of its normalised job and summary).
struct Classified {
  std::string cls;  // CLOSED, OPEN, INVALID; empty when not an MLPerf workload or not classifiable
  nlohmann::json detail;
  std::string error;
};
Classified ClassifyOne(const Run& r, const std::vector<MlperfReference>* refs);

// The worse of two classes: INVALID, then WHATIF, then OPEN, then CLOSED; anything else (empty) counts worst of all.
std::string Worst(const std::string& a, const std::string& b);

}  // namespace dlio::submission
