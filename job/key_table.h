// The key table: every DLIO key (../shared/reference/dlio.md §1) with the policy of this version, its parser, its
// writer and its note. Internal to dlio::job: the loader (workload_spec.cc) validates and applies a job through it,
// ToYaml() (to_yaml.cc) writes the keys it keeps, KeyReferenceMarkdown() (key_docs.cc) documents it as
// docs/workload-keys.md, and the unknown-key suggestions (key_suggest.cc) search it.
//
// Contract:
//  - Keys() is the table, built once, in the order ToYaml() and the docs list the keys: model, framework, workflow
//    (keys_model.cc), storage (keys_storage.cc), dataset (keys_dataset.cc), reader (keys_reader.cc), train and
//    evaluation (keys_train.cc), checkpoint (keys_checkpoint.cc), output, profiling, metric (keys_model.cc),
//    dlio_ext (keys_dlio_ext.cc). Each Add*Keys() appends its section's rows; the stored keys of a section stay
//    together (ToYaml opens each section once).
//  - A row's `apply` parses, validates and stores one value, returning a one-line error that names the key as
//    written; `get` gives the stored value as YAML text (set for every key WorkloadSpec keeps).
// Thread-safety: Keys() is built on first use (a function-local static) and immutable after; safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "job/workload_spec.h"
#include "job/yaml_scalar.h"
#include "yaml-cpp/yaml.h"

namespace dlio::workload_internal {

// The policy column (KeyPolicy in workload_spec.h).
using KeyStatus = KeyPolicy;
// A feature whose keys are inert while it is off, so DLIO files that set them (with the feature off) still load.
enum class Gate { kNone, kCheckpoint };

using ApplyFn = std::function<absl::Status(const YAML::Node&, const std::string& path, WorkloadSpec&)>;
using GetFn = std::function<std::string(const WorkloadSpec&)>;  // the stored value as YAML text
// kImplementedDiffers keys: the warning for the value set (`node`, after the whole job is applied to `spec`),
// without the "key: " prefix; "" where this value behaves as in DLIO.
using DiffersFn = std::function<std::string(const YAML::Node& node, const WorkloadSpec& spec)>;

struct KeyInfo {
  std::string path;                 // canonical dotted path
  KeyStatus status = KeyStatus::kLabel;
  Gate gate = Gate::kNone;
  std::string dlio_default;         // YAML text of DLIO's default ("~" for None)
  std::string note;
  ApplyFn apply;                    // parse, validate and store (implemented keys; labels that are kept/validated)
  GetFn get;                        // set for every key WorkloadSpec keeps; ToYaml writes exactly these
  std::vector<std::string> also_default;  // other spellings DLIO treats as its default ("." for "./")
  std::string hint;                 // appended to the "not supported yet" error
  DiffersFn differs;                // kImplementedDiffers: how DLIO differs for the value set
  YAML::Node default_node;
  std::string range;                // numeric keys: the values allowed (docs/workload-keys.md "range" column)
};

struct KeyTable {
  std::vector<KeyInfo> keys;
  std::map<std::string, size_t> index;  // canonical path -> keys[i]
  std::set<std::string> sections;       // every proper prefix of a path
  std::vector<std::string> names;       // paths and sections, for "did you mean"
};

// The table (built on first use).
const KeyTable& Keys();

// The row constructors (key_table.cc). Each makes an implemented key unless it says otherwise.
// An integer in [min, max] stored in `field`.
template <typename T>
KeyInfo IntKey(std::string path, T WorkloadSpec::*field, int64_t min, int64_t max, std::string note) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kImplemented;
  k.note = std::move(note);
  k.range = fmt::format("integer in [{}, {}]", min, max);
  k.apply = [field, min, max](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
    int64_t v;
    if (!ParseInt(n, &v) || v < min || v > max) return MustBe(p, fmt::format("an integer in [{}, {}]", min, max), n);
    s.*field = static_cast<T>(v);
    return absl::OkStatus();
  };
  k.get = [field](const WorkloadSpec& s) { return fmt::format("{}", s.*field); };
  return k;
}
// min_exclusive: value must be > min (else >= min); max < 0 means no upper bound.
KeyInfo NumberKey(std::string path, double WorkloadSpec::*field, double min, bool min_exclusive, double max,
                  std::string note);
KeyInfo BoolKey(std::string path, bool WorkloadSpec::*field, std::string note);
// nullable: YAML null stores "" (DLIO's None).
KeyInfo StringKey(std::string path, std::string WorkloadSpec::*field, bool nullable, std::string note);
KeyInfo ShuffleKey(std::string path, ShuffleMode WorkloadSpec::*field, std::string note);
// A duration in one of DLIO's distribution forms (job/distribution.h). Keeps a stdev set by the sibling key.
KeyInfo DistributionKey(std::string path, Distribution WorkloadSpec::*field, std::string note);
// DLIO's `<name>_stdev` sibling of a distribution key.
KeyInfo StdevKey(std::string path, Distribution WorkloadSpec::*field, std::string note);
// Any policy, with its own parser and writer.
KeyInfo Custom(std::string path, KeyStatus status, std::string note, ApplyFn apply, GetFn get);
// Accepted, changes nothing (no parser, not kept).
KeyInfo Label(std::string path, std::string dlio_default, std::string note);
// Not supported yet: only DLIO's default (or an `also_default` spelling) is accepted, any value while `gate` is off.
KeyInfo NotYet(std::string path, std::string dlio_default, Gate gate, std::string note, std::string hint = "",
               std::vector<std::string> also_default = {});
// model.model_size and checkpoint.model_size: DLIO's other spelling of model.model_size_bytes (applied after the
// other keys by the loader, when model_size_bytes is not given).
KeyInfo ModelSizeAliasKey(const char* path);

// The sections of the table, in table order (each appends its rows to `v`).
void AddModelKeys(std::vector<KeyInfo>& v);       // model, framework, workflow
void AddStorageKeys(std::vector<KeyInfo>& v);     // storage
void AddDatasetKeys(std::vector<KeyInfo>& v);     // dataset
void AddReaderKeys(std::vector<KeyInfo>& v);      // reader (alias data_reader)
void AddTrainKeys(std::vector<KeyInfo>& v);       // train, evaluation
void AddCheckpointKeys(std::vector<KeyInfo>& v);  // checkpoint
void AddOutputKeys(std::vector<KeyInfo>& v);      // output, profiling, metric
void AddDlioExtKeys(std::vector<KeyInfo>& v);     // dlio_ext: our own keys
// The parquet rows of three sections (keys_parquet.cc), called by the sections' own Add*Keys().
void AddParquetDatasetKeys(std::vector<KeyInfo>& v);  // dataset.parquet.*
void AddParquetStorageKeys(std::vector<KeyInfo>& v);  // storage.storage_options.columns
void AddParquetExtKeys(std::vector<KeyInfo>& v);      // dlio_ext.parquet_decode

// "SHOWN: unknown key (did you mean KEY?)[ CONTEXT]" (InvalidArgument): `shown` is the path as written
// (data_reader.x), `canon` the table's spelling (reader.x); the nearest known key from Keys() (key_suggest.cc).
absl::Status UnknownKey(const std::string& shown, const std::string& canon, const std::string& context = "");

}  // namespace dlio::workload_internal
