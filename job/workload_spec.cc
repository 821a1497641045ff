#include "job/workload_spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/bandwidth_limiter.h"
#include "job/format_traits.h"
#include "base/nearest.h"
#include "base/sleep.h"
#include "base/text.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace dlio {

int64_t WorkloadSpec::SampleDim() const {
  if (!(record_length_bytes >= 1)) return 0;
  auto d = static_cast<int64_t>(std::floor(std::sqrt(record_length_bytes)));
  // sqrt of a double can land one off an exact square; settle on the largest d with d*d <= L.
  while (static_cast<double>((d + 1) * (d + 1)) <= record_length_bytes) ++d;
  while (d > 0 && static_cast<double>(d * d) > record_length_bytes) --d;
  return d;
}

int64_t WorkloadSpec::SampleDimForFile(int64_t file) const {
  if (record_length_bytes_stdev <= 0) return SampleDim();
  // splitmix64 of the file index -> two uniforms -> one Box-Muller normal. Fixed seed (10, DLIO's dimension seed).
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  const uint64_t a = mix(10u * 0x100000001b3ull + static_cast<uint64_t>(file) * 2);
  const uint64_t b = mix(10u * 0x100000001b3ull + static_cast<uint64_t>(file) * 2 + 1);
  const double u1 = (static_cast<double>(a >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;           // [0, 1)
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  // Made positive as DLIO does, and capped at the largest sample the keys allow (a 6-sigma draw of a wide spread
  // must not ask for more).
  const double size = std::clamp(std::abs(record_length_bytes + record_length_bytes_stdev * z), 1.0,
                                 static_cast<double>(kMaxRecordBytes));
  auto d = static_cast<int64_t>(std::floor(std::sqrt(size)));
  while (static_cast<double>((d + 1) * (d + 1)) <= size) ++d;
  while (d > 1 && static_cast<double>(d * d) > size) --d;
  return std::max<int64_t>(1, d);
}

namespace {
std::string S3PrefixOf(std::string p) {
  if (p.rfind("s3://", 0) == 0) {
    const size_t slash = p.find('/', 5);
    p = slash == std::string::npos ? "" : p.substr(slash + 1);
  }
  while (p.rfind("./", 0) == 0) p.erase(0, 2);
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (p == ".") p.clear();
  return p;
}
}  // namespace

std::string WorkloadSpec::S3DataPrefix() const { return S3PrefixOf(data_folder); }
std::string WorkloadSpec::S3CheckpointPrefix() const { return S3PrefixOf(checkpoint_folder); }

std::vector<int64_t> WorkloadSpec::SampleShape() const {
  if (!record_dims.empty()) return record_dims;
  const int64_t d = SampleDim();
  return {d, d};
}

namespace {

// Shape of one sample inside each hdf5 records_k dataset: DLIO's generator divides the first sample axis by
// num_dset_per_record and drops a leading axis of 1 (readers/format.h Hdf5RecordDims, which formats use; repeated
// here because dlio::common does not depend on dlio::formats).
std::vector<int64_t> Hdf5RecordDimsOf(const WorkloadSpec& s, std::vector<int64_t> d) {
  if (d.empty()) return d;
  if (s.hdf5_num_dset_per_record > 1) d[0] /= s.hdf5_num_dset_per_record;
  if (d[0] == 1) d.erase(d.begin());
  return d;
}

}  // namespace

size_t ElementBytes(const std::string& t) {
  static const std::map<std::string, size_t> sizes = {
      {"uint8", 1}, {"int8", 1},   {"uint16", 2}, {"int16", 2},   {"uint32", 4},  {"int32", 4},
      {"uint64", 8}, {"int64", 8}, {"float16", 2}, {"float32", 4}, {"float64", 8}};
  auto it = sizes.find(t);
  return it == sizes.end() ? 0 : it->second;
}

absl::Status CheckFormatReadsObjects(const std::string& format) {
  if (const FormatTraits* t = FindFormatTraits(format); t != nullptr && !t->reads_objects) {
    return absl::InvalidArgumentError(fmt::format(
        "dataset.format: {} maps a local file and cannot read objects (storage.storage_type: s3; use "
        "indexed_binary: one ranged GET per sample)", format));
  }
  return absl::OkStatus();
}

std::vector<int64_t> WorkloadSpec::Hdf5ChunkDims() const {
  if (!hdf5_chunk_dims.empty() || !enable_chunking) return hdf5_chunk_dims;
  const std::vector<int64_t> rec = Hdf5RecordDimsOf(*this, SampleShape());
  std::vector<int64_t> chunks = {1};
  const size_t item = std::max<size_t>(1, ElementBytes(record_element_type));
  const double elems = static_cast<double>(chunk_size) / static_cast<double>(item);
  for (int64_t extent : rec) {
    int64_t c = extent;
    if (chunk_size > 0 && !rec.empty()) {
      c = static_cast<int64_t>(std::ceil(std::pow(elems, 1.0 / static_cast<double>(rec.size())) - 1e-9));
      c = std::min(extent, std::max<int64_t>(1, c));
    }
    chunks.push_back(c);
  }
  return chunks;
}

bool operator==(const WorkloadSpec& a, const WorkloadSpec& b) {
  // Keep in step with the fields of WorkloadSpec.
  auto tie = [](const WorkloadSpec& s) {
    return std::tie(s.model_name, s.model_type, s.model_size_bytes, s.model_datatype, s.optimizer_datatype,
                    s.num_layers, s.parallelism_tensor, s.parallelism_pipeline, s.zero_stage, s.vocab_size,
                    s.hidden_size, s.ffn_hidden_size, s.num_attention_heads, s.num_kv_heads, s.framework, s.generate_data, s.train, s.data_folder, s.format, s.num_files_train,
                    s.num_samples_per_file, s.record_length_bytes, s.record_length_bytes_stdev, s.num_subfolders_train,
                    s.file_prefix, s.record_dims, s.record_element_type, s.hdf5_chunk_dims, s.hdf5_num_dset_per_record,
                    s.hdf5_max_shape, s.compression, s.compression_level, s.enable_chunking, s.chunk_size,
                    s.data_loader, s.batch_size,
                    s.read_threads, s.prefetch_size, s.file_shuffle, s.sample_shuffle, s.transfer_size,
                    s.preprocess_time, s.epochs, s.computation_time, s.evaluation, s.num_files_eval,
                    s.num_subfolders_eval, s.batch_size_eval, s.eval_time, s.eval_after_epoch, s.epochs_between_evals,
                    s.seed, s.seed_change_epoch, s.total_training_steps, s.output_folder,
                    s.exclude_start_steps, s.exclude_end_steps, s.au_threshold, s.odirect, s.io_engine,
                    s.read_bandwidth_limit, s.trace, s.trace_events_per_thread, s.evict_cache, s.read_type);
  };
  // storage (the secret is left out on purpose: see the header)
  auto tie_storage = [](const WorkloadSpec& s) {
    return std::tie(s.storage_type, s.storage_root, s.s3_endpoint_url, s.s3_region, s.s3_access_key_id,
                    s.s3_force_path_style, s.s3_max_attempts);
  };
  auto tie_ckpt = [](const WorkloadSpec& s) {
    return std::tie(s.checkpoint, s.checkpoint_folder, s.checkpoint_after_epoch, s.epochs_between_checkpoints,
                    s.steps_between_checkpoints, s.checkpoint_fsync, s.time_between_checkpoints,
                    s.num_checkpoints_write, s.num_checkpoints_read, s.recovery_rank_shift, s.checkpoint_rank_sync,
                    s.checkpoint_evict_cache, s.checkpoint_bandwidth_limit);
  };
  return tie(a) == tie(b) && tie_ckpt(a) == tie_ckpt(b) && tie_storage(a) == tie_storage(b);
}

const char* ShuffleModeName(ShuffleMode m) {
  switch (m) {
    case ShuffleMode::kOff:
      return "off";
    case ShuffleMode::kSeed:
      return "seed";
    case ShuffleMode::kRandom:
      return "random";
  }
  return "off";
}

namespace {

// ---------------------------------------------------------------------------------------------------------------
// YAML values

// yaml-cpp tags a quoted scalar "!" and a plain one "?". A quoted "8" is a string, as it is for DLIO (OmegaConf).
bool IsPlainScalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

bool ParseInt(const YAML::Node& n, int64_t* out) {
  if (!IsPlainScalar(n)) return false;
  std::string_view t = n.Scalar();
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty()) return false;
  const char* end = t.data() + t.size();
  auto [p, ec] = std::from_chars(t.data(), end, *out);
  return ec == std::errc() && p == end;
}

bool ParseNumber(const YAML::Node& n, double* out) {
  if (!IsPlainScalar(n)) return false;
  const std::string& t = n.Scalar();
  if (t.empty()) return false;
  const char c = t[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return false;
  if (absl::StrContains(t, "x") || absl::StrContains(t, "X")) return false;  // no hex floats
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// YAML 1.2 booleans, as OmegaConf reads them (yes/no/on/off stay strings there).
bool ParseBool(const YAML::Node& n, bool* out) {
  if (!IsPlainScalar(n)) return false;
  const std::string t = absl::AsciiStrToLower(n.Scalar());
  if (t == "true") {
    *out = true;
    return true;
  }
  if (t == "false") {
    *out = false;
    return true;
  }
  return false;
}

// A value as an error message shows it: numbers and booleans bare, strings in single quotes.
std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsScalar()) {
    double d;
    bool b;
    if (ParseNumber(n, &d) || ParseBool(n, &b)) return n.Scalar();
    return fmt::format("'{}'", EscapeText(n.Scalar(), 128));
  }
  if (n.IsSequence()) {
    std::vector<std::string> items;
    for (const YAML::Node& e : n) {
      if (!e.IsScalar() || items.size() >= 8) return "a list";
      items.push_back(Describe(e));
    }
    return fmt::format("[{}]", absl::StrJoin(items, ", "));
  }
  return "a mapping";
}

std::string Quote(const std::string& s) {
  // A JSON string is a valid YAML double-quoted scalar.
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FormatDouble(double v) { return fmt::format("{}", v); }

absl::Status MustBe(const std::string& path, const std::string& what, const YAML::Node& n) {
  return absl::InvalidArgumentError(fmt::format("{}: must be {}, got {}", path, what, Describe(n)));
}

absl::Status NotSupportedYet(const std::string& path, const std::string& hint = "") {
  return absl::UnimplementedError(hint.empty()
                                      ? fmt::format("{}: DLIO key not supported yet by this version", path)
                                      : fmt::format("{}: DLIO key not supported yet by this version ({})", path, hint));
}

absl::Status ValueNotSupportedYet(const std::string& path, const std::string& value, const char* kind,
                                  const std::vector<std::string>& supported) {
  return absl::UnimplementedError(fmt::format("{}: '{}' is a DLIO {} not supported yet (supported: {})", path, value,
                                              kind, absl::StrJoin(supported, ", ")));
}

// Enum-like value: `supported` are implemented, `dlio_only` are DLIO values not implemented yet.
absl::Status ParseChoice(const YAML::Node& n, const std::string& path, const std::vector<std::string>& supported,
                         const std::vector<std::string>& dlio_only, const char* kind, std::string* out) {
  if (n.IsScalar()) {
    const std::string& v = n.Scalar();
    if (std::find(supported.begin(), supported.end(), v) != supported.end()) {
      *out = v;
      return absl::OkStatus();
    }
    if (std::find(dlio_only.begin(), dlio_only.end(), v) != dlio_only.end()) {
      return ValueNotSupportedYet(path, v, kind, supported);
    }
  }
  std::vector<std::string> all = supported;
  all.insert(all.end(), dlio_only.begin(), dlio_only.end());
  return MustBe(path, "one of " + absl::StrJoin(all, ", "), n);
}

// ---------------------------------------------------------------------------------------------------------------
// The key table: every DLIO key (../shared/reference/dlio.md §1), with the policy of this version.

// The policy column (KeyPolicy in the header).
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
                  std::string note) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kImplemented;
  k.note = std::move(note);
  k.range = max >= 0 ? fmt::format("number in {}{}, {}]", min_exclusive ? "(" : "[", FormatDouble(min), FormatDouble(max))
                     : fmt::format("number {} {}", min_exclusive ? ">" : ">=", FormatDouble(min));
  k.apply = [field, min, min_exclusive, max](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
    double v;
    const bool ok = ParseNumber(n, &v) && (min_exclusive ? v > min : v >= min) && (max < 0 || v <= max);
    if (!ok) {
      const std::string what = max >= 0 ? fmt::format("a number in {}{}, {}]", min_exclusive ? "(" : "[",
                                                      FormatDouble(min), FormatDouble(max))
                                        : fmt::format("a number {} {}", min_exclusive ? ">" : ">=", FormatDouble(min));
      return MustBe(p, what, n);
    }
    s.*field = v;
    return absl::OkStatus();
  };
  k.get = [field](const WorkloadSpec& s) { return FormatDouble(s.*field); };
  return k;
}

KeyInfo BoolKey(std::string path, bool WorkloadSpec::*field, std::string note) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kImplemented;
  k.note = std::move(note);
  k.apply = [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
    bool v;
    if (!ParseBool(n, &v)) return MustBe(p, "true or false", n);
    s.*field = v;
    return absl::OkStatus();
  };
  k.get = [field](const WorkloadSpec& s) { return std::string(s.*field ? "true" : "false"); };
  return k;
}

// nullable: YAML null stores "" (DLIO's None).
KeyInfo StringKey(std::string path, std::string WorkloadSpec::*field, bool nullable, std::string note) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kImplemented;
  k.note = std::move(note);
  k.apply = [field, nullable](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
    if (nullable && n.IsNull()) {
      s.*field = "";
      return absl::OkStatus();
    }
    if (!n.IsScalar() || (!nullable && n.Scalar().empty())) {
      return MustBe(p, nullable ? "a string" : "a non-empty string", n);
    }
    if (absl::Status t = CheckText(n.Scalar(), p, kMaxPathBytes); !t.ok()) return t;
    s.*field = n.Scalar();
    return absl::OkStatus();
  };
  k.get = [field](const WorkloadSpec& s) { return Quote(s.*field); };
  return k;
}

KeyInfo ShuffleKey(std::string path, ShuffleMode WorkloadSpec::*field, std::string note) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kImplemented;
  k.note = std::move(note);
  k.apply = [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
    bool b;
    if (ParseBool(n, &b) && !b) {  // `off` written by a YAML 1.1 tool comes back as false
      s.*field = ShuffleMode::kOff;
      return absl::OkStatus();
    }
    if (n.IsScalar()) {
      const std::string& v = n.Scalar();
      if (v == "off") s.*field = ShuffleMode::kOff;
      else if (v == "seed") s.*field = ShuffleMode::kSeed;
      else if (v == "random") s.*field = ShuffleMode::kRandom;
      else return MustBe(p, "one of off, seed, random", n);
      return absl::OkStatus();
    }
    return MustBe(p, "one of off, seed, random", n);
  };
  k.get = [field](const WorkloadSpec& s) { return Quote(ShuffleModeName(s.*field)); };
  return k;
}

KeyInfo Custom(std::string path, KeyStatus status, std::string note, ApplyFn apply, GetFn get);

// A duration in one of DLIO's distribution forms (job/distribution.h). Keeps a stdev set by the sibling key.
KeyInfo DistributionKey(std::string path, Distribution WorkloadSpec::*field, std::string note) {
  return Custom(
      std::move(path), KeyStatus::kImplemented, std::move(note),
      [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        absl::StatusOr<Distribution> d = Distribution::Parse(n, p);
        if (!d.ok()) return d.status();
        d->extra_stdev = (s.*field).extra_stdev;
        s.*field = *d;
        return absl::OkStatus();
      },
      [field](const WorkloadSpec& s) { return (s.*field).ToYaml(); });
}

// DLIO's `<name>_stdev` sibling of a distribution key.
KeyInfo StdevKey(std::string path, Distribution WorkloadSpec::*field, std::string note) {
  return Custom(
      std::move(path), KeyStatus::kImplemented, std::move(note),
      [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        double v;
        if (!ParseNumber(n, &v) || v < 0 || v > kMaxSleepSeconds) return MustBe(p, "a number in [0, 86400] (seconds)", n);
        (s.*field).extra_stdev = v;
        return absl::OkStatus();
      },
      [field](const WorkloadSpec& s) { return FormatDouble((s.*field).extra_stdev); });
}

KeyInfo Custom(std::string path, KeyStatus status, std::string note, ApplyFn apply, GetFn get) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = status;
  k.note = std::move(note);
  k.apply = std::move(apply);
  k.get = std::move(get);
  return k;
}

KeyInfo Label(std::string path, std::string dlio_default, std::string note) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kLabel;
  k.dlio_default = std::move(dlio_default);
  k.note = std::move(note);
  return k;
}

KeyInfo NotYet(std::string path, std::string dlio_default, Gate gate, std::string note, std::string hint = "",
               std::vector<std::string> also_default = {}) {
  KeyInfo k;
  k.path = std::move(path);
  k.status = KeyStatus::kNotSupported;
  k.gate = gate;
  k.dlio_default = std::move(dlio_default);
  k.note = std::move(note);
  k.hint = std::move(hint);
  k.also_default = std::move(also_default);
  return k;
}

const std::vector<std::string> kDlioOnlyFormats = {"hdf5_opt"};
const std::vector<std::string> kElementTypes = {"uint8",  "int8",  "uint16",  "int16",   "uint32", "int32",
                                                "uint64", "int64", "float16", "float32", "float64"};

// A YAML list of integers >= 1 (or [] / null = empty) into `out`; `what` describes the expected value.
absl::Status ParseDims(const YAML::Node& n, const std::string& p, const char* what, std::vector<int64_t>* out) {
  if (n.IsNull()) {
    out->clear();
    return absl::OkStatus();
  }
  if (!n.IsSequence()) return MustBe(p, what, n);
  std::vector<int64_t> dims;
  for (const YAML::Node& e : n) {
    int64_t d;
    if (!ParseInt(e, &d) || d < 1 || d > kMaxFiles) return MustBe(p, what, n);
    if (dims.size() >= kMaxDims) return MustBe(p, fmt::format("{} (at most {} entries)", what, kMaxDims), n);
    dims.push_back(d);
  }
  *out = std::move(dims);
  return absl::OkStatus();
}

std::string DimsText(const std::vector<int64_t>& v) { return fmt::format("[{}]", absl::StrJoin(v, ", ")); }

// storage.*: where the dataset and checkpoints live. local_fs (and parallel_fs) are POSIX paths under the agent's
// --data-root; s3 is a bucket (storage_root) reached through storage_options (docs/object-storage.md). Kept apart
// from the other sections: object storage bypasses the POSIX path confinement (agent/paths.h) altogether.
void AddStorageKeys(std::vector<KeyInfo>& v) {
  {
    KeyInfo k = Custom(
        "storage.storage_type", KeyStatus::kImplementedDiffers,
        "local_fs; parallel_fs is a POSIX path here too (warns: DLIO's StorageFactory rejects it); s3: the dataset "
        "and checkpoints are objects of the bucket storage_root (docs/object-storage.md; warns for formats other "
        "than npz and npy, which DLIO refuses over s3); aistore is not supported yet",
        [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          return ParseChoice(n, p, {"local_fs", "parallel_fs", "s3"}, {"aistore"}, "storage type", &s.storage_type);
        },
        [](const WorkloadSpec& s) { return Quote(s.storage_type); });
    k.differs = [](const YAML::Node& n, const WorkloadSpec& s) -> std::string {
      if (n.Scalar() == "parallel_fs") {
        return "parallel_fs reads and writes data_folder through POSIX here, as local_fs; DLIO's StorageFactory "
               "raises an error for parallel_fs";
      }
      const FormatTraits* f = FindFormatTraits(s.format);
      if (n.Scalar() == "s3" && f != nullptr && !f->dlio_s3) {
        return fmt::format("s3 with {} files works here ({}); DLIO allows only npz and npy over s3", s.format,
                           f->ranged_gets ? "ranged GETs" : "whole-object GETs");
      }
      return "";
    };
    v.push_back(k);
  }
  v.push_back(Custom(
      "storage.storage_root", KeyStatus::kImplemented,
      "s3: the bucket (at least 3 characters); local_fs: DLIO's ./ only (a path prefix is not supported yet: use "
      "dataset.data_folder)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (n.IsNull()) {
          s.storage_root = "./";
          return absl::OkStatus();
        }
        if (!n.IsScalar()) return MustBe(p, "a bucket name (s3) or ./", n);
        s.storage_root = n.Scalar();
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return Quote(s.storage_root); }));
  v.push_back(StringKey("storage.storage_options.endpoint_url", &WorkloadSpec::s3_endpoint_url, true,
                        "s3: http(s)://host[:port] of the S3 service; empty = the agent's AWS_ENDPOINT_URL"));
  v.push_back(StringKey("storage.storage_options.region", &WorkloadSpec::s3_region, true,
                        "s3: the SigV4 signing region; empty = the agent's AWS_REGION, else us-east-1"));
  v.push_back(StringKey("storage.storage_options.access_key_id", &WorkloadSpec::s3_access_key_id, true,
                        "s3: the access key id (named in credential errors); empty = the agent's credentials "
                        "(--s3-credentials FILE, else AWS_ACCESS_KEY_ID)"));
  {
    // The secret: stored for the run, never written back (no `get`), shown as *** by --explain.
    KeyInfo k = Custom(
        "storage.storage_options.secret_access_key", KeyStatus::kImplemented,
        "s3: the secret key, handled as a secret: never in logs, --explain, the job store, result files or "
        "metrics; better given to the agents (--s3-credentials FILE or AWS_SECRET_ACCESS_KEY)",
        [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          if (n.IsNull()) {
            s.s3_secret_access_key.clear();
            return absl::OkStatus();
          }
          if (!n.IsScalar()) return absl::InvalidArgumentError(fmt::format("{}: must be a string", p));
          s.s3_secret_access_key = n.Scalar();
          return absl::OkStatus();
        },
        nullptr);
    k.dlio_default = "~";
    v.push_back(k);
  }
  v.push_back(BoolKey("storage.storage_options.s3_force_path_style", &WorkloadSpec::s3_force_path_style,
                      "s3: path-style URLs (endpoint/bucket/key); false = virtual-hosted (bucket.endpoint/key) except "
                      "for IP and localhost endpoints, as boto3 does"));
  v.push_back(IntKey("storage.storage_options.s3_max_attempts", &WorkloadSpec::s3_max_attempts, 1, 100,
                     "s3: attempts per request in all (retries with backoff on 5xx, SlowDown and timeouts, each "
                     "counted in dlio_s3_retries_total)"));
}

// Checks of the storage keys against the rest of the job (after the keys are applied). May normalise storage_root
// from an s3:// data_folder.
absl::Status CheckStorage(WorkloadSpec& s) {
  const bool url = absl::StartsWith(s.data_folder, "s3://");
  if (!s.IsS3()) {
    if (url) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.data_folder: '{}' is an s3:// URL; set storage.storage_type: s3 to read objects", s.data_folder));
    }
    if (s.storage_root != "./" && s.storage_root != "." && !s.storage_root.empty()) {
      return absl::UnimplementedError(fmt::format(
          "storage.storage_root: '{}' for {} is DLIO's path prefix, not supported yet by this version (give the path "
          "in dataset.data_folder)",
          s.storage_root, s.storage_type));
    }
    return absl::OkStatus();
  }
  // s3: the bucket from storage_root or the data_folder URL (they must agree).
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"dataset.data_folder", &s.data_folder},
                                   {"checkpoint.checkpoint_folder", &s.checkpoint_folder}}) {
    if (!absl::StartsWith(*value, "s3://")) continue;
    const std::string rest = value->substr(5);
    const std::string bucket = rest.substr(0, rest.find('/'));
    if (s.storage_root == "./" || s.storage_root == "." || s.storage_root.empty()) s.storage_root = bucket;
    if (bucket != s.storage_root) {
      return absl::InvalidArgumentError(fmt::format("{}: '{}' names bucket '{}', storage.storage_root is '{}' (one "
                                                    "bucket per job)",
                                                    key, *value, bucket, s.storage_root));
    }
  }
  const std::string& b = s.storage_root;
  bool valid = b.size() >= 3 && b.size() <= 63;
  for (char c : b) valid &= absl::ascii_islower(static_cast<unsigned char>(c)) ||
                            absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  if (!valid) {
    return absl::InvalidArgumentError(fmt::format(
        "storage.storage_root: '{}' is not a bucket name (3 to 63 lower-case letters, digits, '-', '.', '_'; with "
        "storage_type s3, storage_root names the bucket)",
        b));
  }
  if (!s.s3_endpoint_url.empty() && !absl::StartsWith(s.s3_endpoint_url, "http://") &&
      !absl::StartsWith(s.s3_endpoint_url, "https://")) {
    return absl::InvalidArgumentError(fmt::format(
        "storage.storage_options.endpoint_url: '{}' must start with http:// or https://", s.s3_endpoint_url));
  }
  if (absl::Status f = CheckFormatReadsObjects(s.format); !f.ok()) return f;
  if (s.io_engine != "posix") {
    return absl::InvalidArgumentError(fmt::format(
        "dlio_ext.io_engine: {} reads local files; with storage.storage_type: s3 objects are read over HTTP (leave "
        "io_engine at posix)",
        s.io_engine));
  }
  if (s.evict_cache != "none" || s.checkpoint_evict_cache) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: there is no client page cache for s3 objects to evict (leave it off with storage.storage_type: s3)",
        s.checkpoint_evict_cache ? "dlio_ext.checkpoint_evict_cache" : "dlio_ext.evict_cache"));
  }
  return absl::OkStatus();
}

std::vector<KeyInfo> BuildKeys() {
  std::vector<KeyInfo> v;
  const Gate ckpt = Gate::kCheckpoint;
  const std::string ckpt_note = "checkpoint sizing; inert without checkpoints";

  // model
  v.push_back(Custom(
      "model.name", KeyStatus::kLabel, "DLIO uses it in the Hydra run dir",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (!n.IsScalar()) return MustBe(p, "a string", n);
        if (absl::Status t = CheckText(n.Scalar(), p, kMaxPathBytes); !t.ok()) return t;
        s.model_name = n.Scalar();
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return Quote(s.model_name); }));
  const std::string sizing = "checkpoint sizing (applied with workflow.checkpoint)";
  v.push_back(StringKey("model.type", &WorkloadSpec::model_type, true,
                        "`transformer` switches checkpoint sizing to the transformer formula; " + sizing));
  v.push_back(IntKey("model.model_size_bytes", &WorkloadSpec::model_size_bytes, 0, kMaxModelBytes,
                     "size of the non-transformer model state (rank 0 only); " + sizing));
  // DLIO's shipped unet3d/megatron files write model_size (older ones under checkpoint:); DLIO reads only
  // model_size_bytes. Here either spelling is the model size (LoadWorkload applies it after the other keys).
  auto model_size_key = [](const char* path) {
    KeyInfo k = Custom(
        path, KeyStatus::kImplementedDiffers,
        "the non-transformer model size in bytes, as model_size_bytes (which wins if both are set); DLIO ignores "
        "this spelling, so its checkpoint stays model_size_bytes (default 10240 bytes)",
        [](const YAML::Node& n, const std::string& p, WorkloadSpec&) {
          int64_t v;
          if (!n.IsNull() && (!ParseInt(n, &v) || v < 0 || v > kMaxModelBytes)) {
            return MustBe(p, fmt::format("an integer in [0, {}] (bytes)", kMaxModelBytes), n);
          }
          return absl::OkStatus();
        },
        nullptr);
    k.dlio_default = "~";
    k.differs = [](const YAML::Node& n, const WorkloadSpec&) -> std::string {
      if (n.IsNull()) return "";
      return fmt::format("{} bytes is the model size here (checkpoint sizing of non-transformer models); DLIO reads "
                         "only model.model_size_bytes and ignores this key, so its checkpoint keeps "
                         "model_size_bytes (10240 bytes by default)",
                         n.Scalar());
    };
    return k;
  };
  v.push_back(model_size_key("model.model_size"));
  for (auto [path, field, def] :
       {std::make_tuple("model.model_datatype", &WorkloadSpec::model_datatype, "fp16"),
        std::make_tuple("model.optimizer_datatype", &WorkloadSpec::optimizer_datatype, "fp32")}) {
    v.push_back(Custom(
        path, KeyStatus::kImplemented,
        std::string("fp16, bf16, fp32, fp64, int8 or uint8 (default ") + def + "); " + sizing,
        [field = field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          return ParseChoice(n, p, {"fp16", "bf16", "fp32", "fp64", "int8", "uint8"}, {}, "datatype", &(s.*field));
        },
        [field = field](const WorkloadSpec& s) { return Quote(s.*field); }));
  }
  v.push_back(NotYet("model.optimization_groups", "[]", ckpt, ckpt_note));
  v.push_back(IntKey("model.num_layers", &WorkloadSpec::num_layers, -1, 16384, "transformer layers; " + sizing));
  v.push_back(NotYet("model.layer_parameters", "[]", ckpt, ckpt_note));
  v.push_back(IntKey("model.parallelism.tensor", &WorkloadSpec::parallelism_tensor, 1, 16384, "TP; " + sizing));
  v.push_back(IntKey("model.parallelism.pipeline", &WorkloadSpec::parallelism_pipeline, 1, 16384, "PP; " + sizing));
  v.push_back(NotYet("model.parallelism.data", "-1", ckpt, ckpt_note));
  v.push_back(IntKey("model.parallelism.zero_stage", &WorkloadSpec::zero_stage, 0, 3,
                     "ZeRO stage: which ranks write which shards; " + sizing));
  v.push_back(IntKey("model.transformer.vocab_size", &WorkloadSpec::vocab_size, 1, 1 << 22, sizing));
  v.push_back(IntKey("model.transformer.hidden_size", &WorkloadSpec::hidden_size, 1, 1 << 17, sizing));
  v.push_back(IntKey("model.transformer.ffn_hidden_size", &WorkloadSpec::ffn_hidden_size, 1, 1 << 19, sizing));
  v.push_back(IntKey("model.transformer.num_attention_heads", &WorkloadSpec::num_attention_heads, 1, 16384, sizing));
  v.push_back(IntKey("model.transformer.num_kv_heads", &WorkloadSpec::num_kv_heads, 1, 16384, sizing));

  // framework
  v.push_back(Custom(
      "framework", KeyStatus::kLabel,
      "tensorflow or pytorch (DLIO's code default is tensorflow, its default.yaml pytorch)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"pytorch", "tensorflow"}, {}, "framework", &s.framework);
      },
      [](const WorkloadSpec& s) { return Quote(s.framework); }));

  // workflow
  v.push_back(BoolKey("workflow.generate_data", &WorkloadSpec::generate_data, "write the dataset first"));
  v.push_back(BoolKey("workflow.train", &WorkloadSpec::train, "run the epoch loop"));
  v.push_back(BoolKey("workflow.evaluation", &WorkloadSpec::evaluation,
                      "evaluate after chosen epochs over valid/ (no step barrier); nothing is read with "
                      "workflow.train false or num_files_eval 0"));
  v.push_back(BoolKey("workflow.checkpoint", &WorkloadSpec::checkpoint,
                      "checkpoints inside training (epoch- or step-based), or checkpoint-only mode with "
                      "workflow.train false (num_checkpoints_write, then num_checkpoints_read)"));
  v.push_back(Label("workflow.profiling", "false",
                    "starts profiling.profiler in DLIO (iostat, darshan, tensorboard); no profiler runs here: the "
                    "agents' /metrics and result files carry the I/O figures"));
  v.push_back(Label("workflow.query", "~", "used by dlio_benchmark_query only"));
  v.push_back(Label("workflow.debug", "~", "appears in bert_v100.yaml; not parsed by DLIO"));

  AddStorageKeys(v);  // storage.*: object storage (s3), in their own function below

  // dataset
  v.push_back(StringKey("dataset.data_folder", &WorkloadSpec::data_folder, false,
                        "root of train/ (and valid/); resolved under the agent's --data-root"));
  v.push_back(Custom(
      "dataset.format", KeyStatus::kImplemented,
      "npz, hdf5, tfrecord, csv, npy, jpeg, png, indexed_binary, mmap_indexed_binary, synthetic (placeholder files, "
      "no reads); hdf5_opt has no generator in DLIO either. mmap_indexed_binary warns: our reads touch every page "
      "of a sample, DLIO's only slice a memmap view",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, FormatNames(), kDlioOnlyFormats, "format", &s.format);
      },
      [](const WorkloadSpec& s) { return Quote(s.format); }));
  v.push_back(IntKey("dataset.num_files_train", &WorkloadSpec::num_files_train, 1, kMaxFiles, "training files"));
  v.push_back(IntKey("dataset.num_files_eval", &WorkloadSpec::num_files_eval, 0, kMaxFiles,
                     "evaluation files under valid/ (generated with the training files)"));
  v.push_back(IntKey("dataset.num_samples_per_file", &WorkloadSpec::num_samples_per_file, 1, kMaxSamples, "samples per file"));
  v.push_back(NumberKey("dataset.record_length_bytes", &WorkloadSpec::record_length_bytes, 0, true, kMaxRecordBytes,
                        "mean sample size; floats accepted (resnet50: 114660.07); a sample is floor(sqrt(L))^2 "
                        "uint8 bytes; legacy alias `dataset.record_length`"));
  {
    KeyInfo k = NumberKey("dataset.record_length_bytes_stdev", &WorkloadSpec::record_length_bytes_stdev, 0, false, kMaxRecordBytes,
                          "size spread of the byte size, drawn once per file (warns: DLIO spreads both dimensions "
                          "and realises ~0.71x of it)");
    k.status = KeyStatus::kImplementedDiffers;
    k.differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
      if (s.record_length_bytes_stdev <= 0) return "";
      return fmt::format("{} bytes spreads the sample byte size here; DLIO spreads each of the two sample dimensions "
                         "by stdev/(2*sqrt(L)), which realises only about 0.71x of it in bytes",
                         FormatDouble(s.record_length_bytes_stdev));
    };
    v.push_back(k);
  }
  v.push_back(Label("dataset.record_length_bytes_resize", "0", "in-memory tensor size after decode; no I/O"));
  v.push_back(Custom(
      "dataset.record_dims", KeyStatus::kImplemented,
      "explicit sample shape; record_length_bytes becomes prod(record_dims) x element size (as DLIO derives it); "
      "cannot be combined with record_length_bytes_stdev; jpeg/png need 2 dimensions",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseDims(n, p, "a list of integers in [1, 2147483647] (the sample shape) or []", &s.record_dims);
      },
      [](const WorkloadSpec& s) { return DimsText(s.record_dims); }));
  v.push_back(Custom(
      "dataset.record_element_type", KeyStatus::kImplemented,
      "numpy dtype of the samples: uint8, int8, uint16, int16, uint32, int32, uint64, int64, float16, float32, "
      "float64; jpeg and png are forced to uint8 (as DLIO does, with a warning)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, kElementTypes, {}, "element type", &s.record_element_type);
      },
      [](const WorkloadSpec& s) { return Quote(s.record_element_type); }));
  v.push_back(Label("dataset.record_element_bytes", "4", "parsed, then overwritten from the dtype by DLIO"));
  v.push_back(IntKey("dataset.num_subfolders_train", &WorkloadSpec::num_subfolders_train, 0, kMaxFiles,
                     "files round-robin into zero-padded subfolders when > 1"));
  v.push_back(IntKey("dataset.num_subfolders_eval", &WorkloadSpec::num_subfolders_eval, 0, kMaxFiles,
                     "eval files round-robin into zero-padded subfolders when > 1"));
  {
    KeyInfo k = StringKey("dataset.file_prefix", &WorkloadSpec::file_prefix, false,
                          "file names `{prefix}_{i}_of_{N}.{format}`: a name, not a path (no `/`, not `.` or `..`)");
    k.apply = [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
      if (!n.IsScalar() || n.Scalar().empty()) return MustBe(p, "a non-empty file name prefix", n);
      const std::string& v = n.Scalar();
      if (absl::Status t = CheckText(v, p, kMaxNameBytes); !t.ok()) return t;
      if (absl::StrContains(v, "/") || v == "." || v == "..") {
        return MustBe(p, "a file name prefix without '/' (data files are named {prefix}_{i}_of_{N}.{format} inside "
                         "the data folder)", n);
      }
      s.file_prefix = v;
      return absl::OkStatus();
    };
    v.push_back(k);
  }
  v.push_back(Custom(
      "dataset.hdf5.chunk_dims", KeyStatus::kImplemented,
      "HDF5 chunk shape of each records_k dataset [samples, *sample axes]; [] = contiguous (or h5py's guess when a "
      "filter or max_shape needs chunks); ignored by other formats",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseDims(n, p, "a list of integers in [1, 2147483647] ([samples, *sample shape]) or []",
                         &s.hdf5_chunk_dims);
      },
      [](const WorkloadSpec& s) { return DimsText(s.hdf5_chunk_dims); }));
  v.push_back(IntKey("dataset.hdf5.num_dset_per_record", &WorkloadSpec::hdf5_num_dset_per_record, 1, 4096,
                     "splits each sample over datasets records_0..k-1 along its first axis, which k must divide"));
  v.push_back(Custom(
      "dataset.hdf5.max_shape", KeyStatus::kImplemented,
      "maximum shape of records_k after the samples axis (resizable datasets; chunked as h5py does); [] = fixed",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseDims(n, p, "a list of integers in [1, 2147483647] or []", &s.hdf5_max_shape);
      },
      [](const WorkloadSpec& s) { return DimsText(s.hdf5_max_shape); }));
  v.push_back(Custom(
      "dataset.compression", KeyStatus::kImplemented,
      "hdf5: none, gzip, szip (libhdf5's; not in DLIO's enum), lzf (Debian's hdf5-plugin-lzf); npz: none or zip "
      "(numpy.savez_compressed; warns: DLIO's enum compare never switches it on); csv: none or gzip (zlib; files "
      "named <name>.csv.gz as DLIO's generator names them, which DLIO's own reader does not list); DLIO's other csv "
      "compressions (bz2, zip, xz) are not supported yet",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"none", "gzip", "szip", "lzf", "zip"}, {"bz2", "xz"}, "compression",
                           &s.compression);
      },
      [](const WorkloadSpec& s) { return Quote(s.compression); }));
  v.push_back(IntKey("dataset.compression_level", &WorkloadSpec::compression_level, 0, 9, "gzip level"));
  KeyInfo chunking = BoolKey("dataset.enable_chunking", &WorkloadSpec::enable_chunking,
                             "HDF5 chunking from chunk_size when hdf5.chunk_dims is empty (warns: DLIO parses it "
                             "and ignores it)");
  chunking.status = KeyStatus::kImplementedDiffers;
  v.push_back(chunking);
  KeyInfo chunk_size = IntKey("dataset.chunk_size", &WorkloadSpec::chunk_size, 0, kMaxRecordBytes,
                              "bytes per HDF5 chunk with enable_chunking: (1, c, c) with c = ceil(sqrt(chunk_size)) "
                              "for 2-D uint8 samples, DLIO's meaning before hdf5.chunk_dims (warns: DLIO ignores it)");
  chunk_size.status = KeyStatus::kImplementedDiffers;
  v.push_back(chunk_size);
  v.push_back(Label("dataset.generation_buffer_size", "2147483648", "indexed_binary generation only"));
  v.push_back(NotYet("dataset.keep_files", "true", Gate::kNone, "false makes DLIO delete data_folder at the end"));

  // reader (alias data_reader)
  v.push_back(Custom(
      "reader.data_loader", KeyStatus::kLabel,
      "pytorch, tensorflow, dali; the access pattern follows dataset.format (tfrecord streams files, the others "
      "read samples by index); DLIO's native_dali, custom, none, synthetic, daos_pytorch are not supported yet",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"pytorch", "tensorflow", "dali"},
                           {"native_dali", "custom", "none", "synthetic", "daos_pytorch"}, "data loader",
                           &s.data_loader);
      },
      [](const WorkloadSpec& s) { return Quote(s.data_loader); }));
  v.push_back(NotYet("reader.data_loader_classname", "~", Gate::kNone, "custom loader plugin"));
  v.push_back(NotYet("reader.data_loader_sampler", "~", Gate::kNone, "custom loader sampler"));
  v.push_back(NotYet("reader.reader_classname", "~", Gate::kNone, "custom reader plugin"));
  v.push_back(IntKey("reader.batch_size", &WorkloadSpec::batch_size, 1, kMaxSamples, "samples per step per rank"));
  v.push_back(IntKey("reader.batch_size_eval", &WorkloadSpec::batch_size_eval, 1, kMaxSamples, "samples per eval step per rank"));
  v.push_back(IntKey("reader.read_threads", &WorkloadSpec::read_threads, 0, kMaxReadThreads, "loader threads per rank; 0 acts as 1"));
  v.push_back(Label("reader.computation_threads", "1", "TF parse-map parallelism; no I/O"));
  v.push_back(IntKey("reader.prefetch_size", &WorkloadSpec::prefetch_size, 0, 1 << 16, "batches queued ahead per rank"));
  {
    KeyInfo k = ShuffleKey("reader.file_shuffle", &WorkloadSpec::file_shuffle,
                           "off, seed, random: permutes the file list every epoch, whatever the loader (warns where "
                           "DLIO ignores it: every loader but tensorflow on non-TFRecord files)");
    k.status = KeyStatus::kImplementedDiffers;
    k.differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
      if (s.file_shuffle == ShuffleMode::kOff || (s.data_loader == "tensorflow" && s.format != "tfrecord")) return "";
      return fmt::format("{} permutes the file order every epoch here; DLIO uses file_shuffle only in its iterative "
                         "sampler (tensorflow loader, non-TFRecord files), so with {} on {} files its file order "
                         "never changes",
                         ShuffleModeName(s.file_shuffle), s.data_loader, s.format);
    };
    v.push_back(k);
  }
  {
    KeyInfo k = ShuffleKey("reader.sample_shuffle", &WorkloadSpec::sample_shuffle,
                           "off, seed, random: a real global sample permutation every epoch (index mode; warns: "
                           "DLIO's shuffle changes no I/O)");
    k.status = KeyStatus::kImplementedDiffers;
    k.differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
      if (s.sample_shuffle == ShuffleMode::kOff || s.format == "tfrecord") return "";
      return fmt::format("{} permutes every sample across the fleet every epoch here, so ranks read other samples "
                         "each epoch; DLIO's index sampler shuffles a list that does not change the read order (each "
                         "rank reads the same samples in the same order every epoch)",
                         ShuffleModeName(s.sample_shuffle));
    };
    v.push_back(k);
  }
  v.push_back(Label("reader.shuffle_size", "1024",
                    "TF shuffle buffer: reorders records after they are read; no effect on the I/O order"));
  v.push_back(Custom(
      "reader.read_type", KeyStatus::kImplemented,
      "on_demand: whole-file formats (npz, npy, csv, jpeg, png) re-read the file for every sample, as DLIO's index "
      "mode does; memory: a loader thread reads a file once and serves its following samples from memory (it keeps "
      "its most recent file, so memory stays bounded; DLIO keeps every opened file). No effect on hdf5, "
      "indexed_binary, mmap_indexed_binary, tfrecord (streamed once anyway) and synthetic",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"on_demand", "memory"}, {}, "read type", &s.read_type);
      },
      [](const WorkloadSpec& s) { return Quote(s.read_type); }));
  v.push_back(Label("reader.file_access", "multi", "parsed but unused by DLIO"));
  v.push_back(Custom(
      "reader.transfer_size", KeyStatus::kImplemented,
      "TFRecord read size per call; DLIO's default None means TF's 256 KiB",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (n.IsNull()) {
          s.transfer_size = 262144;
          return absl::OkStatus();
        }
        int64_t v;
        if (!ParseInt(n, &v) || v < 1 || v > (int64_t{1} << 30)) return MustBe(p, "an integer in [1, 1073741824]", n);
        s.transfer_size = v;
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return fmt::format("{}", s.transfer_size); }));
  v.push_back(BoolKey("reader.odirect", &WorkloadSpec::odirect,
                      "O_DIRECT reads (DLIO: npz/npy only; here npz, npy, csv, jpeg, png and tfrecord): the "
                      "same as dlio_ext.io_engine: odirect"));
  v.push_back(Label("reader.dont_use_mmap", "false", "passed to DALI readers"));
  v.push_back(DistributionKey("reader.preprocess_time", &WorkloadSpec::preprocess_time,
                              "seconds of emulated preprocessing per sample, in the loader thread (DLIO's forms)"));
  v.push_back(StdevKey("reader.preprocess_time_stdev", &WorkloadSpec::preprocess_time,
                       "with a constant preprocess_time: normal(preprocess_time, stdev)"));
  v.push_back(Label("reader.pin_memory", "true", "torch pin_memory"));
  v.push_back(Label("reader.multiprocessing_context", "fork", "torch worker start method"));
  v.push_back(Label("reader.transformed_record_dims", "[]", "shape of the in-memory tensor; no I/O"));
  v.push_back(Label("reader.transformed_record_element_type", "uint8", "dtype of the in-memory tensor; no I/O"));

  // train
  v.push_back(IntKey("train.epochs", &WorkloadSpec::epochs, 1, kMaxEpochs, "epochs"));
  v.push_back(DistributionKey("train.computation_time", &WorkloadSpec::computation_time,
                              "seconds of emulated compute per step: a number or one of DLIO's distributions"));
  v.push_back(StdevKey("train.computation_time_stdev", &WorkloadSpec::computation_time,
                       "with a constant computation_time: normal(computation_time, stdev)"));
  v.push_back(Custom(
      "train.total_training_steps", KeyStatus::kImplemented,
      "caps steps per epoch; <= 0 means no cap (-1); more than the available steps is an error",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        int64_t v;
        if (!ParseInt(n, &v) || v > kMaxSamples) return MustBe(p, "an integer <= 4294967296 (-1 = no cap)", n);
        s.total_training_steps = v > 0 ? v : -1;
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return fmt::format("{}", s.total_training_steps); }));
  v.push_back(IntKey("train.seed", &WorkloadSpec::seed, 0, 4294967295, "seed of the shuffles"));
  v.push_back(BoolKey("train.seed_change_epoch", &WorkloadSpec::seed_change_epoch, "shuffle seed = seed + epoch"));

  // evaluation
  v.push_back(DistributionKey("evaluation.eval_time", &WorkloadSpec::eval_time,
                              "seconds of emulated compute per eval step (DLIO's forms)"));
  v.push_back(StdevKey("evaluation.eval_time_stdev", &WorkloadSpec::eval_time,
                       "with a constant eval_time: normal(eval_time, stdev)"));
  v.push_back(IntKey("evaluation.eval_after_epoch", &WorkloadSpec::eval_after_epoch, 1, kMaxEpochs,
                     "first epoch followed by an evaluation"));
  v.push_back(IntKey("evaluation.epochs_between_evals", &WorkloadSpec::epochs_between_evals, 1, kMaxEpochs,
                     "epochs between evaluations"));

  // checkpoint
  const std::string off;  // the status column says it all
  v.push_back(StringKey("checkpoint.checkpoint_folder", &WorkloadSpec::checkpoint_folder, false,
                        "relative to the agent's --data-root; a path escaping it is refused"));
  v.push_back(IntKey("checkpoint.checkpoint_after_epoch", &WorkloadSpec::checkpoint_after_epoch, 1, kMaxEpochs,
                     "first epoch that ends with a checkpoint (when steps_between_checkpoints < 0)"));
  v.push_back(IntKey("checkpoint.epochs_between_checkpoints", &WorkloadSpec::epochs_between_checkpoints, 1, kMaxEpochs,
                     "epochs between end-of-epoch checkpoints"));
  v.push_back(IntKey("checkpoint.steps_between_checkpoints", &WorkloadSpec::steps_between_checkpoints, -1, kMaxSamples,
                     ">= 1: a checkpoint after every N steps of each epoch, in lockstep inside the training phase "
                     "(and no end-of-epoch checkpoint); 0: none; -1: epoch-based"));
  v.push_back(NotYet("checkpoint.type", "rank_zero", ckpt, "parsed but unused by DLIO"));
  v.push_back(NotYet("checkpoint.mode", "default", ckpt, off));
  KeyInfo fsync = BoolKey("checkpoint.fsync", &WorkloadSpec::checkpoint_fsync,
                          "fsync every checkpoint file before its rename, and its folder after (warns: DLIO assigns "
                          "it to a misspelled attribute, so DLIO never fsyncs)");
  fsync.status = KeyStatus::kImplementedDiffers;
  fsync.gate = ckpt;
  fsync.differs = [](const YAML::Node& n, const WorkloadSpec&) -> std::string {
    bool b = false;
    return ParseBool(n, &b) && b ? "true fsyncs every checkpoint file here; DLIO assigns it to a misspelled attribute "
                                   "(checkpoint_sync), so its checkpoints are never fsynced"
                                 : "";
  };
  v.push_back(fsync);
  v.push_back(NumberKey("checkpoint.time_between_checkpoints", &WorkloadSpec::time_between_checkpoints, -1, false, kMaxSleepSeconds,
                        "checkpoint-only mode: seconds slept before each save and each load (< 0: none)"));
  v.push_back(IntKey("checkpoint.num_checkpoints_write", &WorkloadSpec::num_checkpoints_write, -1, kMaxEpochs,
                     "checkpoint-only mode: saves global_epoch1_step1..N (< 0: none)"));
  v.push_back(IntKey("checkpoint.num_checkpoints_read", &WorkloadSpec::num_checkpoints_read, -1, kMaxEpochs,
                     "checkpoint-only mode: then loads global_epoch1_step1..M, which must exist (< 0: none)"));
  KeyInfo shift = BoolKey("checkpoint.recovery_rank_shift", &WorkloadSpec::recovery_rank_shift,
                          "loads: rank r reads the files of rank (r + ranks per agent) % world, so no rank reads "
                          "what its own node wrote (warns: DLIO assigns it to a misspelled attribute and never "
                          "shifts)");
  shift.status = KeyStatus::kImplementedDiffers;
  shift.gate = ckpt;
  shift.differs = [](const YAML::Node& n, const WorkloadSpec&) -> std::string {
    bool b = false;
    return ParseBool(n, &b) && b ? "true makes rank r read the checkpoint files of rank (r + ranks per agent) mod "
                                   "world here; DLIO assigns it to a misspelled attribute, so its ranks always read "
                                   "their own files"
                                 : "";
  };
  v.push_back(shift);
  v.push_back(BoolKey("checkpoint.rank_sync", &WorkloadSpec::checkpoint_rank_sync,
                      "a barrier over all ranks after each save or load, inside its timing"));
  v.push_back(NotYet("checkpoint.randomize_tensor", "true", ckpt, off));
  v.push_back(NotYet("checkpoint.checkpoint_mechanism_classname", "~", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.madv_mergeable_id", "12", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.high_ram_trigger", "30.0", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.low_ram_exit", "15", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.await_time", "200", ckpt, off));
  v.push_back(model_size_key("checkpoint.model_size"));

  // output
  v.push_back(StringKey("output.folder", &WorkloadSpec::output_folder, true,
                        "empty = not set (DLIO: the Hydra run dir); results go to the coordinator's results dir"));
  v.push_back(Label("output.log_file", "dlio.log", "log file name"));
  v.push_back(IntKey("output.metric.exclude_start_steps", &WorkloadSpec::exclude_start_steps, 0, kMaxSamples,
                     "steps left out at the start of the AU window"));
  v.push_back(IntKey("output.metric.exclude_end_steps", &WorkloadSpec::exclude_end_steps, 0, kMaxSamples,
                     "steps left out at the end of the AU window"));

  // profiling
  v.push_back(Label("profiling.profiler", "iostat", "iostat, darshan, tensorboard, none"));
  v.push_back(Label("profiling.iostat_devices", "[]", "devices for iostat"));

  // metric
  v.push_back(NumberKey("metric.au", &WorkloadSpec::au_threshold, 0, false, 1,
                        "AU pass threshold as a fraction (0.90 = 90 %)"));

  // dlio_ext: our own keys
  v.push_back(Custom(
      "dlio_ext.io_engine", KeyStatus::kImplemented,
      "how npz, npy, csv, jpeg, png and tfrecord files are read: posix (pread), odirect (O_DIRECT, 4 KiB-aligned, "
      "whole files rounded up as DLIO's O_DIRECT readers do), io_uring (several reads in flight), mmap (the file "
      "mapped, reads copied out of it: page faults do the I/O); hdf5 reads go "
      "through libhdf5 and indexed_binary with pread (posix only; docs/io.md)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"posix", "odirect", "io_uring", "mmap"}, {}, "I/O engine", &s.io_engine);
      },
      [](const WorkloadSpec& s) { return Quote(s.io_engine); }));
  // A per-agent byte-rate cap (base/bandwidth_limiter.h): a number of bytes/s or one with a unit.
  auto rate_key = [](const char* path, int64_t WorkloadSpec::*field, std::string note) {
    return Custom(
        path, KeyStatus::kImplemented,
        note + " (0 = none): a number of bytes/s or one with a unit (KB, MB, GB powers of 1000; KiB, MiB, GiB "
               "powers of 1024; optional /s), e.g. 200MiB/s. Shared by every rank of the agent (docs/mlperf.md); "
               "emulates a slower device",
        [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          if (!n.IsScalar()) return MustBe(p, "a rate in bytes per second (e.g. 200MiB/s)", n);
          absl::StatusOr<double> r = ParseByteRate(n.Scalar());
          if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ": ", r.status().message()));
          if (*r > kMaxBandwidth) {
            return MustBe(p, fmt::format("a rate of at most {} bytes/s (1 PB/s)", FormatDouble(kMaxBandwidth)), n);
          }
          s.*field = static_cast<int64_t>(*r);
          return absl::OkStatus();
        },
        [field](const WorkloadSpec& s) { return std::to_string(s.*field); });
  };
  v.push_back(rate_key("dlio_ext.read_bandwidth_limit", &WorkloadSpec::read_bandwidth_limit,
                       "per-agent cap on the bytes the agent's loader threads read per second"));

  v.push_back(BoolKey("dlio_ext.checkpoint_evict_cache", &WorkloadSpec::checkpoint_evict_cache,
                      "before each checkpoint load, flush and evict the files' pages from the page cache "
                      "(posix_fadvise DONTNEED), so loads read the storage, as MLPerf's rules require between "
                      "write and read"));
  v.push_back(rate_key("dlio_ext.checkpoint_bandwidth_limit", &WorkloadSpec::checkpoint_bandwidth_limit,
                       "per-agent cap on the bytes the agent's ranks write and read per second in checkpoint saves "
                       "and loads (makes small checkpoint rehearsals repeatable)"));
  v.push_back(BoolKey("dlio_ext.trace", &WorkloadSpec::trace,
                      "record open, read, wait, compute and barrier events per rank and loader thread into a Chrome "
                      "trace (trace.json in the results; `--trace FILE` sets it); off costs one branch per event"));
  v.push_back(IntKey("dlio_ext.trace_events_per_thread", &WorkloadSpec::trace_events_per_thread, 1, 1 << 20,
                     "trace events kept per thread and phase (32 bytes each, preallocated); the rest are counted as "
                     "dropped"));
  v.push_back(Custom(
      "dlio_ext.evict_cache", KeyStatus::kImplemented,
      "page-cache hygiene as MLPerf requires: before_training evicts every data file of this agent's ranks "
      "(posix_fadvise DONTNEED) after generation, before epoch 1; every_epoch before every training epoch; none",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"none", "before_training", "every_epoch"}, {}, "cache eviction", &s.evict_cache);
      },
      [](const WorkloadSpec& s) { return Quote(s.evict_cache); }));

  // Folders are taken below each agent's --data-root, which only the agent knows (base/confined_dir.h checks
  // every path there); a relative folder whose ".." climb above its start leaves any root, so it is refused here,
  // before anything runs.
  for (KeyInfo& k : v) {
    if (k.path != "dataset.data_folder" && k.path != "checkpoint.checkpoint_folder") continue;
    k.apply = [inner = k.apply](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
      if (absl::Status st = inner(n, p, s); !st.ok()) return st;
      const std::string& v = n.Scalar();
      int depth = 0;
      for (absl::string_view c : absl::StrSplit(v, '/')) {
        if (c == "..") --depth;
        else if (!c.empty() && c != ".") ++depth;
        if (depth < 0 && !v.empty() && v[0] != '/') {
          return absl::InvalidArgumentError(fmt::format(
              "{}: '{}' leaves the agent's data root (a relative folder is taken below --data-root, and '..' may not "
              "climb above it)",
              p, EscapeText(v)));
        }
      }
      return absl::OkStatus();
    };
  }
  // Ranges of the numeric keys whose parsing is their own (IntKey and NumberKey state theirs).
  const std::string seconds = "seconds in [0, 86400], or a distribution whose parameters are (its mean too)";
  const std::map<std::string, std::string> custom_ranges = {
      {"model.model_size", fmt::format("integer in [0, {}]", kMaxModelBytes)},
      {"checkpoint.model_size", fmt::format("integer in [0, {}]", kMaxModelBytes)},
      {"dataset.record_dims", "integers in [1, 2147483647], at most 32; product x element size <= 2^34 bytes"},
      {"dataset.hdf5.chunk_dims", "integers in [1, 2147483647], at most 32"},
      {"dataset.hdf5.max_shape", "integers in [1, 2147483647], at most 32"},
      {"reader.transfer_size", "integer in [1, 1073741824]"},
      {"reader.preprocess_time", seconds},
      {"reader.preprocess_time_stdev", "number in [0, 86400]"},
      {"train.computation_time", seconds},
      {"train.computation_time_stdev", "number in [0, 86400]"},
      {"train.total_training_steps", "integer <= 4294967296 (<= 0: no cap)"},
      {"evaluation.eval_time", seconds},
      {"evaluation.eval_time_stdev", "number in [0, 86400]"},
      {"dlio_ext.read_bandwidth_limit", "rate in [0, 1e15] bytes/s"},
  };
  for (KeyInfo& k : v) {
    if (auto it = custom_ranges.find(k.path); it != custom_ranges.end()) k.range = it->second;
    if (k.get && k.dlio_default.empty()) k.dlio_default = k.get(WorkloadSpec{});
    k.default_node = YAML::Load(k.dlio_default);
  }
  return v;
}

struct KeyTable {
  std::vector<KeyInfo> keys;
  std::map<std::string, size_t> index;  // canonical path -> keys[i]
  std::set<std::string> sections;       // every proper prefix of a path
  std::vector<std::string> names;       // paths and sections, for "did you mean"
};

const KeyTable& Keys() {
  static const KeyTable* table = [] {
    auto* t = new KeyTable;
    t->keys = BuildKeys();
    for (size_t i = 0; i < t->keys.size(); ++i) {
      const std::string& p = t->keys[i].path;
      t->index[p] = i;
      for (size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1)) {
        t->sections.insert(p.substr(0, dot));
      }
      t->names.push_back(p);
    }
    t->names.insert(t->names.end(), t->sections.begin(), t->sections.end());
    return t;
  }();
  return *table;
}

// ---------------------------------------------------------------------------------------------------------------
// Unknown keys

std::string LastComponent(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// The known key a typo most likely meant: a key the path is a suffix of (a missing section), else the closest by
// edit distance, else a key with the same last name in another section; "" when nothing is close.
std::string Suggest(const std::string& canon) {
  const KeyTable& t = Keys();
  for (const std::string& n : t.names) {
    if (absl::EndsWith(n, "." + canon)) return n;
  }
  if (std::string near = NearestName(canon, t.names); !near.empty()) return near;
  const std::string leaf = LastComponent(canon);
  for (const KeyInfo& k : t.keys) {
    if (LastComponent(k.path) == leaf) return k.path;
  }
  return "";
}

// `shown` is the path as written (data_reader.x), `canon` the table's spelling (reader.x).
absl::Status UnknownKey(const std::string& shown, const std::string& canon, const std::string& context = "") {
  std::string s = Suggest(canon);
  if (absl::StartsWith(shown, "data_reader") && absl::StartsWith(s, "reader")) s = "data_" + s;
  std::string msg = s.empty() ? fmt::format("{}: unknown key", shown)
                              : fmt::format("{}: unknown key (did you mean {}?)", shown, s);
  if (!context.empty()) msg += " " + context;
  return absl::InvalidArgumentError(msg);
}

// ---------------------------------------------------------------------------------------------------------------
// Walking the document

struct Leaf {
  std::string path;   // canonical
  std::string shown;  // as written, for messages
  YAML::Node node;
};

class LeafSet {
 public:
  // Adds or replaces (an override) the value of a key.
  void Set(const std::string& path, const std::string& shown, const YAML::Node& node) {
    auto it = pos_.find(path);
    if (it != pos_.end()) {
      leaves_[it->second] = Leaf{path, shown, node};
      return;
    }
    pos_[path] = leaves_.size();
    leaves_.push_back(Leaf{path, shown, node});
  }
  const Leaf* Find(const std::string& path) const {
    auto it = pos_.find(path);
    return it == pos_.end() ? nullptr : &leaves_[it->second];
  }
  const std::vector<Leaf>& leaves() const { return leaves_; }

 private:
  std::vector<Leaf> leaves_;
  std::map<std::string, size_t> pos_;
};

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The canonical name of `name` inside section `canon_prefix` (aliases: data_reader, dataset.record_length).
std::string CanonicalName(const std::string& canon_prefix, const std::string& name) {
  if (canon_prefix.empty() && name == "data_reader") return "reader";
  if (canon_prefix == "dataset" && name == "record_length") return "record_length_bytes";
  return name;
}

std::string CanonicalPath(const std::string& path) {
  std::string canon;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    canon = Join(canon, CanonicalName(canon, std::string(part)));
  }
  return canon;
}

// Collects the leaves under `node` (a mapping at section `canon_prefix`). In document mode a repeated key is an
// error; in override mode values replace earlier ones.
absl::Status Walk(const YAML::Node& node, const std::string& canon_prefix, const std::string& shown_prefix,
                  bool override_mode, LeafSet* out) {
  const KeyTable& t = Keys();
  std::map<std::string, std::string> here;  // canonical name -> as written, in this mapping
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies (cheap handles): `it->` yields a temporary, so a reference to its members would dangle (found by
    // fuzz/fuzz_workload.cc under ASan).
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: keys must be names, got {}", shown_prefix.empty() ? "workload" : shown_prefix,
                      Describe(key)));
    }
    const std::string name = key.Scalar();
    const std::string shown = Join(shown_prefix, name);
    const std::string canon = Join(canon_prefix, CanonicalName(canon_prefix, name));
    const std::string cname = CanonicalName(canon_prefix, name);
    if (auto h = here.find(cname); h != here.end() && !override_mode) {
      if (h->second == name) return absl::InvalidArgumentError(fmt::format("{}: given twice", shown));
      return absl::InvalidArgumentError(fmt::format("{}: given twice (also as {}; DLIO reads only one of them)", shown,
                                                    Join(shown_prefix, h->second)));
    }
    here[cname] = name;
    if (t.index.count(canon)) {
      out->Set(canon, shown, value);
    } else if (t.sections.count(canon)) {
      if (value.IsNull()) continue;  // an empty section
      if (!value.IsMap()) return MustBe(shown, "a mapping of keys", value);
      if (absl::Status s = Walk(value, canon, shown, override_mode, out); !s.ok()) return s;
    } else {
      return UnknownKey(shown, canon);
    }
  }
  return absl::OkStatus();
}

// A value equal to DLIO's default (numbers compared as numbers, booleans as booleans).
bool SameValue(const YAML::Node& user, const YAML::Node& def) {
  if (def.IsNull()) {
    return user.IsNull() || ((user.IsMap() || user.IsSequence()) && user.size() == 0);
  }
  if (def.IsScalar()) {
    if (!user.IsScalar()) return false;
    double a, b;
    if (ParseNumber(user, &a) && ParseNumber(def, &b)) return a == b;
    bool x, y;
    if (ParseBool(user, &x) && ParseBool(def, &y)) return x == y;
    return user.Scalar() == def.Scalar();
  }
  if (def.IsSequence()) {
    if (!user.IsSequence() || user.size() != def.size()) return false;
    for (size_t i = 0; i < def.size(); ++i) {
      if (!SameValue(user[i], def[i])) return false;
    }
    return true;
  }
  return false;
}

bool IsDlioDefault(const YAML::Node& user, const KeyInfo& k) {
  if (SameValue(user, k.default_node)) return true;
  for (const std::string& alt : k.also_default) {
    if (user.IsScalar() && user.Scalar() == alt) return true;
  }
  return false;
}

// The features whose keys are inert while off.
struct Gates {
  bool checkpoint = false;
  bool Active(Gate g) const {
    switch (g) {
      case Gate::kNone:
        return true;
      case Gate::kCheckpoint:
        return checkpoint;
    }
    return true;
  }
};

absl::Status ReadGates(const LeafSet& leaves, Gates* g) {
  auto read_bool = [&](const char* path, bool* out) -> absl::Status {
    const Leaf* l = leaves.Find(path);
    if (l == nullptr) return absl::OkStatus();
    if (!ParseBool(l->node, out)) return MustBe(l->shown, "true or false", l->node);
    return absl::OkStatus();
  };
  return read_bool("workflow.checkpoint", &g->checkpoint);
}

absl::Status ApplyLeaf(const Leaf& leaf, const Gates& gates, WorkloadSpec* spec) {
  const KeyInfo& k = Keys().keys[Keys().index.at(leaf.path)];
  switch (k.status) {
    case KeyStatus::kImplemented:
    case KeyStatus::kImplementedDiffers:
    case KeyStatus::kLabel:
      if (k.apply) return k.apply(leaf.node, leaf.shown, *spec);
      return absl::OkStatus();
    case KeyStatus::kNotSupported:
      if (!gates.Active(k.gate) || IsDlioDefault(leaf.node, k)) return absl::OkStatus();
      return NotSupportedYet(leaf.shown, k.hint);
  }
  return absl::OkStatus();
}

// The sizes several keys make together: samples per split (sample ids are 32-bit in the epoch plan), the bytes of a
// sample, a file and a split (so every product fits 64-bit arithmetic), the step count of a capped epoch.
absl::Status CheckSizes(const WorkloadSpec& s) {
  struct Split {
    const char* files_key;
    int64_t files;
  };
  for (const Split& sp : {Split{"dataset.num_files_train", s.num_files_train},
                          Split{"dataset.num_files_eval", s.num_files_eval}}) {
    if (sp.files > 0 && s.num_samples_per_file > kMaxSamples / sp.files) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.num_samples_per_file: {} samples per file x {} files ({}) is more than {} samples, the most this "
          "version plans",
          s.num_samples_per_file, sp.files, sp.files_key, kMaxSamples));
    }
  }
  // record_dims: their product times the element size is the record length (checked as a double: no wrap-around).
  double sample = s.record_length_bytes;
  if (!s.record_dims.empty()) {
    sample = static_cast<double>(std::max<size_t>(1, ElementBytes(s.record_element_type)));
    for (int64_t d : s.record_dims) sample *= static_cast<double>(d);
    if (sample > static_cast<double>(kMaxRecordBytes)) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.record_dims: {} {} elements make {} bytes per sample, more than {} (16 GiB)", DimsText(s.record_dims),
          s.record_element_type, FormatDouble(sample), kMaxRecordBytes));
    }
  }
  const double file = sample * static_cast<double>(s.num_samples_per_file);
  if (file > static_cast<double>(kMaxFileBytes)) {
    return absl::InvalidArgumentError(fmt::format(
        "dataset.num_samples_per_file: {} samples of {} bytes make {} bytes per file, more than {} (1 TiB)",
        s.num_samples_per_file, FormatDouble(sample), FormatDouble(file), kMaxFileBytes));
  }
  const double files = static_cast<double>(std::max(s.num_files_train, s.num_files_eval));
  if (file * files > static_cast<double>(kMaxDatasetBytes)) {
    return absl::InvalidArgumentError(fmt::format(
        "dataset.num_files_train: {} files of {} bytes make {} bytes, more than {} (1 EiB)", FormatDouble(files),
        FormatDouble(file), FormatDouble(file * files), kMaxDatasetBytes));
  }
  return absl::OkStatus();
}

// Checks that involve several keys.
absl::Status CheckWhole(const WorkloadSpec& s) {
  if (!s.generate_data && !s.train && !s.checkpoint) {
    return absl::InvalidArgumentError(
        "workflow: nothing to do (workflow.generate_data, workflow.train and workflow.checkpoint are all false)");
  }
  if (s.compression != "none") {
    const bool hdf5 = s.format == "hdf5" && (s.compression == "gzip" || s.compression == "szip" || s.compression == "lzf");
    const bool npz = s.format == "npz" && s.compression == "zip";
    const bool csv = s.format == "csv" && s.compression == "gzip";
    if (s.format == "csv" && !csv) {
      return absl::UnimplementedError(fmt::format(
          "dataset.compression: {} for csv files is a DLIO compression not supported yet (csv: none, gzip)",
          s.compression));
    }
    if (!hdf5 && !npz && !csv) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.compression: {} is not available for {} files (hdf5: none, gzip, szip, lzf; npz: none, zip; "
          "csv: none, gzip; other formats: none)",
          s.compression, s.format));
    }
  }
  if (!s.record_dims.empty() && s.record_length_bytes_stdev > 0) {
    return absl::InvalidArgumentError(
        "dataset.record_dims: cannot be combined with dataset.record_length_bytes_stdev (DLIO refuses both; give "
        "record_length_bytes with its stdev instead)");
  }
  if ((s.format == "jpeg" || s.format == "png") && s.SampleShape().size() != 2) {
    return absl::InvalidArgumentError(fmt::format("dataset.record_dims: {} format needs 2 dimensions (height, width), "
                                                  "got {}",
                                                  s.format, DimsText(s.record_dims)));
  }
  if (s.model_type == "transformer") {
    // The K/V width h / heads x kv_heads must be whole (DLIO computes it in floats; llama_1t has h / heads 134.75).
    if (s.hidden_size * s.num_kv_heads % s.num_attention_heads != 0) {
      return absl::InvalidArgumentError(fmt::format(
          "model.transformer.hidden_size: {} x num_kv_heads ({}) is not divisible by "
          "model.transformer.num_attention_heads ({})",
          s.hidden_size, s.num_kv_heads, s.num_attention_heads));
    }
    if (s.zero_stage == 3 && s.parallelism_pipeline > 1) {
      return absl::InvalidArgumentError(
          "model.parallelism.zero_stage: ZeRO-3 cannot be combined with model.parallelism.pipeline > 1");
    }
  }
  for (const auto& [key, d] : {std::make_pair("train.computation_time", &s.computation_time),
                                std::make_pair("evaluation.eval_time", &s.eval_time),
                                std::make_pair("reader.preprocess_time", &s.preprocess_time)}) {
    if (!(d->Mean() <= kMaxSleepSeconds)) {
      return absl::InvalidArgumentError(fmt::format("{}: the mean {} s is more than {} s (a day), the most a step or "
                                                    "sample may take",
                                                    key, FormatDouble(d->Mean()), kMaxSleepSeconds));
    }
  }
  if (s.io_engine != "posix" && s.format == "hdf5") {
    return absl::InvalidArgumentError(fmt::format(
        "dlio_ext.io_engine: {} is not available for hdf5 (libhdf5 does its own reads; use posix)", s.io_engine));
  }
  if (absl::Status st = CheckSizes(s); !st.ok()) return st;
  // With a size spread every file has its own shape: the preflight (plan/preflight.h) checks each file's, the
  // chunks included; here the mean shape, without the chunks.
  if (absl::Status st = CheckSampleShape(s, s.SampleShape(), s.record_length_bytes_stdev == 0); !st.ok()) return st;
  return absl::OkStatus();
}

// Counts documents without building them (a YAML::EventHandler that ignores every event).
class NoEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// One YAML document (a second one would be ignored silently by a plain Load: refused instead). Not YAML::LoadAll:
// yaml-cpp 0.7's loop never ends on some malformed input (found by fuzz/fuzz_workload.cc); the parser is asked for
// at most two documents instead.
absl::StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& source) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    NoEvents none;
    int docs = 0;
    while (docs < 2 && parser.HandleNextDocument(none)) ++docs;
    if (docs > 1) {
      return absl::InvalidArgumentError(
          fmt::format("{}: holds more than one YAML document (separated by ---); a workload is one document", source));
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(fmt::format("{}: YAML syntax error: {}", source, e.msg));
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: YAML syntax error: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

// Splits an override into its canonical key path and value; `hydra.*` gives an empty path (ignored).
absl::Status ParseOverride(const std::string& ov, std::string* path, YAML::Node* value) {
  const size_t eq = ov.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        fmt::format("override '{}': expected KEY=VALUE (e.g. ++workload.dataset.num_files_train=8)", ov));
  }
  std::string key = ov.substr(0, eq);
  if (absl::StartsWith(key, "~")) {
    return absl::InvalidArgumentError(fmt::format("override '{}': deleting keys (~) is not supported", ov));
  }
  if (absl::StartsWith(key, "++")) key = key.substr(2);
  else if (absl::StartsWith(key, "+")) key = key.substr(1);
  if (absl::StartsWith(key, "workload.")) key = key.substr(9);
  if (key == "hydra" || absl::StartsWith(key, "hydra.")) {
    path->clear();
    return absl::OkStatus();
  }
  if (key.empty() || absl::StrContains(key, "..") || absl::EndsWith(key, ".") || absl::StartsWith(key, ".")) {
    return absl::InvalidArgumentError(fmt::format("override '{}': '{}' is not a key path", ov, key));
  }
  absl::StatusOr<YAML::Node> v = ParseYaml(ov.substr(eq + 1), fmt::format("override '{}'", ov));
  if (!v.ok()) return v.status();
  *path = key;
  *value = *v;
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSampleShape(const WorkloadSpec& s, const std::vector<int64_t>& sample, bool check_chunks) {
  // libjpeg's JPEG_MAX_DIMENSION (readers/format.cc refuses larger images too).
  constexpr int64_t kMaxImageSide = 65500;
  if (s.format == "jpeg" || s.format == "png") {
    for (int64_t d : sample) {
      if (d > kMaxImageSide) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: {} images are at most {} pixels a side, a sample of shape {} is not",
            s.record_dims.empty() ? "dataset.record_length_bytes" : "dataset.record_dims", s.format, kMaxImageSide,
            DimsText(sample)));
      }
    }
  }
  if (s.format == "hdf5") {
    if (s.hdf5_num_dset_per_record > 1 && sample[0] % s.hdf5_num_dset_per_record != 0) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.hdf5.num_dset_per_record: {} does not divide the first sample dimension {} (sample shape {})",
          s.hdf5_num_dset_per_record, sample[0], DimsText(sample)));
    }
    const std::vector<int64_t> rec = Hdf5RecordDimsOf(s, sample);
    std::vector<int64_t> shape = {s.num_samples_per_file};
    shape.insert(shape.end(), rec.begin(), rec.end());
    std::vector<int64_t> max_shape = shape;
    if (!s.hdf5_max_shape.empty()) {
      if (s.hdf5_max_shape.size() != rec.size()) {
        return absl::InvalidArgumentError(fmt::format(
            "dataset.hdf5.max_shape: {} must have {} entries (the dataset shape {} after its samples axis)",
            DimsText(s.hdf5_max_shape), rec.size(), DimsText(shape)));
      }
      for (size_t i = 0; i < rec.size(); ++i) {
        if (s.hdf5_max_shape[i] < rec[i]) {
          return absl::InvalidArgumentError(fmt::format(
              "dataset.hdf5.max_shape: {} is smaller than the dataset shape {} after its samples axis",
              DimsText(s.hdf5_max_shape), DimsText(shape)));
        }
        max_shape[i + 1] = s.hdf5_max_shape[i];
      }
    }
    if (!s.hdf5_chunk_dims.empty() && check_chunks) {
      if (s.hdf5_chunk_dims.size() != shape.size()) {
        return absl::InvalidArgumentError(fmt::format(
            "dataset.hdf5.chunk_dims: {} must have {} entries, the rank of each records dataset {} (samples, then "
            "the sample shape)",
            DimsText(s.hdf5_chunk_dims), shape.size(), DimsText(shape)));
      }
      for (size_t i = 0; i < shape.size(); ++i) {
        if (s.hdf5_chunk_dims[i] > max_shape[i]) {
          return absl::InvalidArgumentError(fmt::format(
              "dataset.hdf5.chunk_dims: {} exceeds the dataset's maximum shape {} (num_samples_per_file, then the "
              "sample shape)",
              DimsText(s.hdf5_chunk_dims), DimsText(max_shape)));
        }
      }
    }
  }
  return absl::OkStatus();
}

const char* KeyPolicyName(KeyPolicy p) {
  switch (p) {
    case KeyPolicy::kImplemented:
      return "implemented";
    case KeyPolicy::kImplementedDiffers:
      return "implemented; DLIO differs";
    case KeyPolicy::kLabel:
      return "label";
    case KeyPolicy::kNotSupported:
      return "not supported yet";
  }
  return "implemented";
}

absl::StatusOr<WorkloadSpec> LoadWorkload(const std::string& yaml_text, const std::vector<std::string>& overrides,
                                          const std::string& source, std::vector<std::string>* warnings) {
  LoadDiagnostics diag;
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(yaml_text, overrides, source, LoadOptions{}, &diag);
  if (spec.ok() && warnings != nullptr) {
    for (const WorkloadWarning& w : diag.warnings) warnings->push_back(w.text);
  }
  return spec;
}

namespace {
std::string FlowText(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "~";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}
}  // namespace

namespace {

// The text of a job (file and overrides) before it is parsed: sizes and encoding.
absl::Status CheckJobText(const std::string& yaml_text, const std::vector<std::string>& overrides,
                          const std::string& source) {
  if (yaml_text.size() > kMaxWorkloadBytes) {
    return absl::InvalidArgumentError(fmt::format("{}: {} bytes; a job file may have at most {} bytes", source,
                                                  yaml_text.size(), kMaxWorkloadBytes));
  }
  if (!IsValidUtf8(yaml_text)) {
    return absl::InvalidArgumentError(fmt::format("{}: not valid UTF-8 text; a job file must be UTF-8", source));
  }
  if (overrides.size() > kMaxOverrides) {
    return absl::InvalidArgumentError(
        fmt::format("overrides: {} given, at most {} are allowed", overrides.size(), kMaxOverrides));
  }
  for (const std::string& ov : overrides) {
    if (absl::Status s = CheckText(ov, "override", kMaxOverrideBytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkloadSpec> LoadWorkloadUnchecked(const std::string& yaml_text,
                                                   const std::vector<std::string>& overrides,
                                                   const std::string& source, const LoadOptions& options,
                                                   LoadDiagnostics* diag_out);

}  // namespace

absl::StatusOr<WorkloadSpec> LoadWorkload(const std::string& yaml_text, const std::vector<std::string>& overrides,
                                          const std::string& source, const LoadOptions& options,
                                          LoadDiagnostics* diag_out) {
  absl::Status text = CheckJobText(yaml_text, overrides, source);
  absl::StatusOr<WorkloadSpec> spec =
      text.ok() ? LoadWorkloadUnchecked(yaml_text, overrides, source, options, diag_out) : text;
  if (spec.ok()) return spec;
  // One line whatever a value or key held (newlines, control characters): errors are printed and logged as is.
  return absl::Status(spec.status().code(), EscapeText(spec.status().message(), 2048));
}

namespace {

namespace {

// Hydra form: the workload under `workload:`, possibly beside Hydra's own `hydra:` and `defaults:`; *root becomes
// the workload itself.
absl::Status UnwrapHydra(YAML::Node* root_ptr) {
  YAML::Node& root = *root_ptr;
  if (!root.IsMap()) return absl::OkStatus();
  bool wrapped = false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == "workload") wrapped = true;
  }
  if (wrapped) {
    YAML::Node inner;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (k == "workload") {
        inner = it->second;
      } else if (k != "hydra" && k != "defaults") {
        return absl::InvalidArgumentError(fmt::format(
            "{}: unexpected top-level key beside workload: (only hydra and defaults may sit beside it)", k));
      }
    }
    if (!inner.IsNull() && !inner.IsMap()) return MustBe("workload", "a mapping of DLIO keys", inner);
    root = inner;
  }
  return absl::OkStatus();
}

// The command line's overrides (DLIO's ++workload.a.b=v or a.b=v) over the file's keys.
absl::Status ApplyOverrides(const std::vector<std::string>& overrides, LeafSet* leaves_ptr) {
  LeafSet& leaves = *leaves_ptr;
  for (const std::string& ov : overrides) {
    std::string key;
    YAML::Node value;
    if (absl::Status s = ParseOverride(ov, &key, &value); !s.ok()) return s;
    if (key.empty()) continue;  // hydra.*
    const std::string canon = CanonicalPath(key);
    const std::string context = fmt::format("in override '{}'", ov);
    if (Keys().index.count(canon)) {
      leaves.Set(canon, key, value);
    } else if (Keys().sections.count(canon)) {
      if (!value.IsMap()) return MustBe(key, "a mapping of keys", value);
      if (absl::Status s = Walk(value, canon, key, true, &leaves); !s.ok()) {
        return absl::Status(s.code(), std::string(s.message()) + " " + context);
      }
    } else {
      return UnknownKey(key, canon, context);
    }
  }

  return absl::OkStatus();
}

// Notes on values this version implements where DLIO ignores them (one warning each).
void AddValueNotes(const WorkloadSpec& spec, std::vector<WorkloadWarning>* notes_ptr) {
  std::vector<WorkloadWarning>& notes = *notes_ptr;
  if (spec.enable_chunking && spec.format == "hdf5") {
    notes.push_back({"dataset.enable_chunking",
        spec.hdf5_chunk_dims.empty()
            ? fmt::format("dataset.enable_chunking: chunks every records dataset by {} here (from dataset.chunk_size "
                          "{}); DLIO parses enable_chunking and chunk_size but ignores them (only "
                          "dataset.hdf5.chunk_dims chunks there)",
                          DimsText(spec.Hdf5ChunkDims()), spec.chunk_size)
            : "dataset.enable_chunking: dataset.hdf5.chunk_dims decides the chunks; DLIO ignores enable_chunking and "
              "chunk_size too"});
  }
  if (spec.format == "npz" && spec.compression == "zip") {
    notes.push_back({"dataset.compression",
                     "dataset.compression: zip deflates the npz members here (numpy.savez_compressed); DLIO compares "
                     "the YAML string with its enum, so its npz files are never compressed"});
  }
  if (spec.format == "mmap_indexed_binary") {
    notes.push_back({"dataset.format",
                     "dataset.format: mmap_indexed_binary reads touch every 4 KiB page of each sample here; DLIO's "
                     "reader only slices a memmap view and reads almost nothing, so its bytes read are not "
                     "comparable"});
  }
}

// The "DLIO differs" lines of the keys the job sets (their features on), then the value notes; one per key, into
// diag.warnings (or, with --strict, the first of them as the error).
absl::Status CollectWarnings(const LeafSet& leaves, const Gates& gates, const WorkloadSpec& spec,
                             const std::vector<WorkloadWarning>& notes, const LoadOptions& options,
                             LoadDiagnostics& diag) {
  std::vector<WorkloadWarning> all;
  for (const Leaf& leaf : leaves.leaves()) {
    const KeyInfo& k = Keys().keys[Keys().index.at(leaf.path)];
    if (!k.differs || !gates.Active(k.gate)) continue;
    const std::string text = k.differs(leaf.node, spec);
    if (!text.empty()) all.push_back({leaf.path, fmt::format("{}: {}", leaf.shown, text), true});
  }
  all.insert(all.end(), notes.begin(), notes.end());
  std::set<std::string> seen;
  for (WorkloadWarning& w : all) {
    if (!seen.insert(w.key).second) continue;
    if (options.strict && w.dlio_differs) {
      return absl::FailedPreconditionError(
          fmt::format("{} (--strict: DLIO behaves differently with this key)", w.text));
    }
    diag.warnings.push_back(std::move(w));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The keys that stand for others: model.model_size (or checkpoint.model_size) and reader.odirect.
absl::Status ApplyAliases(const LeafSet& leaves, WorkloadSpec* spec_ptr) {
  WorkloadSpec& spec = *spec_ptr;
  // model.model_size (or checkpoint.model_size) is the model size unless model_size_bytes is given.
  if (leaves.Find("model.model_size_bytes") == nullptr) {
    for (const char* alias : {"checkpoint.model_size", "model.model_size"}) {
      if (const Leaf* l = leaves.Find(alias)) ParseInt(l->node, &spec.model_size_bytes);
    }
  }
  // reader.odirect (DLIO's key) is dlio_ext.io_engine: odirect; both given and different is a contradiction.
  if (spec.odirect) {
    const Leaf* engine = leaves.Find("dlio_ext.io_engine");
    if (engine != nullptr && spec.io_engine != "odirect") {
      return absl::InvalidArgumentError(fmt::format("{}: true contradicts {}: {} (give one of them)",
                                                    leaves.Find("reader.odirect")->shown, engine->shown,
                                                    spec.io_engine));
    }
    spec.io_engine = "odirect";
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkloadSpec> LoadWorkloadUnchecked(const std::string& yaml_text,
                                                   const std::vector<std::string>& overrides,
                                                   const std::string& source, const LoadOptions& options,
                                                   LoadDiagnostics* diag_out) {
  LoadDiagnostics local_diag;
  LoadDiagnostics& diag = diag_out != nullptr ? *diag_out : local_diag;
  // plan_only: a "not supported yet" error is noted and the load goes on (the key keeps its default).
  auto tolerate = [&](const absl::Status& s) {
    if (!options.plan_only || s.code() != absl::StatusCode::kUnimplemented) return false;
    diag.not_supported.emplace_back(s.message());
    return true;
  };
  absl::StatusOr<YAML::Node> doc = ParseYaml(yaml_text, source);
  if (!doc.ok()) return doc.status();
  YAML::Node root = *doc;
  if (!root.IsNull() && !root.IsMap()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a workload must be a YAML mapping of DLIO keys, got {}", source, Describe(root)));
  }
  if (absl::Status s = UnwrapHydra(&root); !s.ok()) return s;

  LeafSet leaves;
  if (root.IsMap()) {
    if (absl::Status s = Walk(root, "", "", false, &leaves); !s.ok()) return s;
  }
  if (leaves.leaves().empty() && overrides.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: the workload is empty (no DLIO key is set); a job file sets at least its dataset, e.g. dataset: "
        "{{format: npz, num_files_train: 8}} (docs/workload-keys.md)",
        source));
  }

  if (absl::Status s = ApplyOverrides(overrides, &leaves); !s.ok()) return s;

  Gates gates;
  if (absl::Status s = ReadGates(leaves, &gates); !s.ok()) return s;
  WorkloadSpec spec;
  // workflow.* first, so a job that needs an unsupported feature says so before anything about its details.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Leaf& leaf : leaves.leaves()) {
      if (absl::StartsWith(leaf.path, "workflow.") != (pass == 0)) continue;
      if (absl::Status s = ApplyLeaf(leaf, gates, &spec); !s.ok() && !tolerate(s)) return s;
    }
  }
  for (const Leaf& leaf : leaves.leaves()) {
    const KeyInfo& k = Keys().keys[Keys().index.at(leaf.path)];
    // A secret's value is never shown (--explain lists the keys a job sets).
    const bool secret = leaf.path == "storage.storage_options.secret_access_key" && !leaf.node.IsNull();
    diag.keys.push_back(KeyUse{leaf.path, secret ? "'***'" : FlowText(leaf.node), k.status, k.note});
  }
  if (absl::Status s = ApplyAliases(leaves, &spec); !s.ok()) return s;
  // DLIO's derivations: images are uint8 (DLIO resets the type with a warning), and with record_dims the record
  // length is their byte size (derive_configurations on main).
  std::vector<WorkloadWarning> notes;
  if ((spec.format == "jpeg" || spec.format == "png") && spec.record_element_type != "uint8") {
    notes.push_back({"dataset.record_element_type",
                     fmt::format("dataset.record_element_type: {} images are uint8; {} is replaced by uint8 (DLIO "
                                 "does the same)",
                                 spec.format, spec.record_element_type),
                     false});
    spec.record_element_type = "uint8";
  }
  if (absl::Status s = CheckWhole(spec); !s.ok() && !tolerate(s)) return s;
  if (absl::Status s = CheckStorage(spec); !s.ok() && !tolerate(s)) return s;
  if (!spec.record_dims.empty()) {
    double bytes = static_cast<double>(ElementBytes(spec.record_element_type));
    for (int64_t d : spec.record_dims) bytes *= static_cast<double>(d);
    spec.record_length_bytes = bytes;
  }
  AddValueNotes(spec, &notes);
  if (absl::Status s = CollectWarnings(leaves, gates, spec, notes, options, diag); !s.ok()) return s;
  return spec;
}

}  // namespace

absl::StatusOr<std::string> ReadWorkloadFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("{}: cannot read the job file ({})", EscapeText(path), std::strerror(errno)));
  }
  auto fail = [&](const std::string& why) {
    ::close(fd);
    return absl::InvalidArgumentError(fmt::format("{}: {}", EscapeText(path), why));
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(fmt::format("cannot read the job file ({})", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return fail(fmt::format("is {}; a job file must be a regular file", kind));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxWorkloadBytes) {
    return fail(fmt::format("{} bytes; a job file may have at most {} bytes", st.st_size, kMaxWorkloadBytes));
  }
  std::string text;
  char buf[65536];
  for (;;) {  // at most kMaxWorkloadBytes + 1: a file that grew after fstat is still refused
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(fmt::format("cannot read the job file ({})", std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxWorkloadBytes) {
      return fail(fmt::format("more than {} bytes; a job file may have at most {} bytes", kMaxWorkloadBytes,
                              kMaxWorkloadBytes));
    }
  }
  ::close(fd);
  if (!IsValidUtf8(text)) return absl::InvalidArgumentError(fmt::format("{}: not valid UTF-8 text; a job file must be UTF-8", EscapeText(path)));
  return text;
}

absl::Status CheckAgentThreads(const WorkloadSpec& spec, int64_t local_ranks) {
  const int64_t per_rank = std::max<int64_t>(1, spec.read_threads);
  if (local_ranks > 0 && per_rank > kMaxLoaderThreadsPerAgent / local_ranks) {
    return absl::InvalidArgumentError(fmt::format(
        "reader.read_threads: {} loader threads x {} ranks on one agent is {} threads, more than the {} an agent "
        "runs; lower reader.read_threads or the accelerators per agent",
        per_rank, local_ranks, per_rank * local_ranks, kMaxLoaderThreadsPerAgent));
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkloadSpec> LoadWorkloadFile(const std::string& path, const std::vector<std::string>& overrides,
                                              std::vector<std::string>* warnings) {
  absl::StatusOr<std::string> text = ReadWorkloadFile(path);
  if (!text.ok()) return text.status();
  return LoadWorkload(*text, overrides, path, warnings);
}

std::string ToYaml(const WorkloadSpec& spec) {
  std::string out =
      "# Normalised workload: DLIO keys, every key this version applies (see docs/workload-keys.md).\n";
  // The key table keeps the stored keys of a section together, so no section is opened twice (the round-trip
  // test would catch a repeated key).
  std::vector<std::string> open;  // the sections of the previous key
  for (const KeyInfo& k : Keys().keys) {
    if (!k.get) continue;
    std::vector<std::string> parts = absl::StrSplit(k.path, '.');
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) ++common;
    for (size_t i = common; i < sections.size(); ++i) out += std::string(2 * i, ' ') + sections[i] + ":\n";
    out += std::string(2 * sections.size(), ' ') + parts.back() + ": " + k.get(spec) + "\n";
    open = sections;
  }
  return out;
}

std::string KeyReferenceMarkdown() {
  std::string md;
  md += "# Workload keys\n\n";
  md += "<!-- Generated by KeyReferenceMarkdown() in job/workload_spec.cc from the key table the loader uses.\n";
  md += "     Do not edit; regenerate with: DLIO_UPDATE_DOCS=1 build/bin/common_test --gtest_filter='WorkloadKeysDoc.*'"
        " -->\n\n";
  md += "Every key of DLIO's workload YAML (argonne-lcf/dlio_benchmark `utils/config.py`, see "
        "`../shared/reference/dlio.md` §1) and what this version does with it. The YAML may sit under a top-level "
        "`workload:` key (Hydra form). Overrides: `++workload.dataset.num_files_train=8`, `+workload.x=y`, "
        "`workload.x=y` or `dataset.num_files_train=8`; the value is read as YAML "
        "(`++workload.dataset.hdf5.chunk_dims=[1,32,32]`); `hydra.*` overrides are ignored.\n\n";
  md += "Policy (one per key, the `policy` column; `KeyPolicy` in job/workload_spec.h):\n\n";
  md += "- **implemented**: validated and applied as DLIO documents it; written to the normalised `job.yaml`.\n";
  md += "- **implemented; DLIO differs**: implemented with its evident meaning although DLIO ignores or breaks it. "
        "Setting it (to a value where the two part) prints one `warning:` line saying how DLIO differs, once per key, "
        "at `submit`/`run` and in the coordinator's log; `--strict` makes that line an error (exit 2). A few values "
        "of implemented keys warn the same way (noted). Checkpoint keys warn only with `workflow.checkpoint` on.\n";
  md += "- **label**: accepted; it changes neither I/O nor timing here (framework, loader names, DALI and torch "
        "options, profiler names). `--explain` lists it with its note. \"kept\" labels are validated and written to "
        "`job.yaml`.\n";
  md += "- **not supported yet**: DLIO changes I/O or timing with it and this version does not implement it. DLIO's "
        "default value is accepted; so is any value while the feature it belongs to is off (noted). Anything else "
        "is the error `KEY: DLIO key not supported yet by this version` (exit 2); a DLIO value not implemented "
        "(`storage.storage_type: aistore`) gives `KEY: 'VALUE' is a DLIO ... not supported yet`. `--explain` still "
        "shows the plan of such a job "
        "and "
        "lists what a run would stop at.\n\n";
  md += "Aliases: `data_reader.*` is `reader.*` (use one of them); `dataset.record_length` is "
        "`dataset.record_length_bytes`. A key DLIO does not know is an error naming the nearest known key, e.g. "
        "`dataset.num_file_train: unknown key (did you mean dataset.num_files_train?)`.\n\n";
  md += "Keys under `dlio_ext` are this project's own (DLIO does not know them); DLIO's keys never change "
        "meaning.\n\n";
  md += "Ranges: every numeric key has one (the `range` column), checked when the job is loaded, before anything "
        "runs; a value outside it is `KEY: must be ... in [MIN, MAX], got VALUE` (exit 2). Together the keys also "
        "keep a split at most 2^32 samples and 2^60 bytes, a file at most 2^40 bytes, and one agent at most 4096 "
        "loader threads (read_threads x accelerators per agent). Text values must be UTF-8 without control "
        "characters; `dataset.file_prefix` is a name, not a path. The job file itself must be a regular file of at "
        "most 1 MiB of UTF-8 holding one YAML document that sets at least one key.\n\n";
  md += "| key | default | range | policy | notes |\n|---|---|---|---|---|\n";
  for (const KeyInfo& k : Keys().keys) {
    std::string status;
    switch (k.status) {
      case KeyStatus::kImplemented:
        status = "implemented";
        break;
      case KeyStatus::kImplementedDiffers:
        status = "implemented; DLIO differs (warns)";
        if (k.gate == Gate::kCheckpoint) status += " (with workflow.checkpoint)";
        break;
      case KeyStatus::kLabel:
        status = k.get ? "label (kept)" : "label";
        break;
      case KeyStatus::kNotSupported:
        status = "not supported yet";
        if (k.gate == Gate::kCheckpoint) status += " (any value while workflow.checkpoint is false)";
        break;
    }
    std::string note = k.note;
    absl::StrReplaceAll({{"|", "\\|"}}, &note);
    md += fmt::format("| `{}` | `{}` | {} | {} | {} |\n", k.path, k.dlio_default, k.range.empty() ? "-" : k.range,
                      status, note);
  }
  return md;
}

namespace {

void FlattenNode(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>* out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      FlattenNode(kv.second, prefix.empty() ? key : absl::StrCat(prefix, ".", key), out);
    }
  } else if (n.IsSequence()) {
    YAML::Emitter e;
    e << YAML::Flow << n;
    (*out)[prefix] = e.c_str();
  } else {
    (*out)[prefix] = n.IsScalar() ? n.Scalar() : "";
  }
}

}  // namespace

std::map<std::string, std::string> FlattenWorkload(const WorkloadSpec& spec) {
  std::map<std::string, std::string> flat;
  FlattenNode(YAML::Load(ToYaml(spec)), "", &flat);
  return flat;
}

}  // namespace dlio
