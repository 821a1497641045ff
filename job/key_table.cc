#include "job/key_table.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "base/sleep.h"
#include "base/text.h"

namespace dlio::workload_internal {

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
    if (absl::Status t = CheckKeyText(n.Scalar(), p, kMaxPathBytes); !t.ok()) return t;
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

KeyInfo NotYet(std::string path, std::string dlio_default, Gate gate, std::string note, std::string hint,
               std::vector<std::string> also_default) {
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

namespace {

// Folders are taken below each agent's --data-root, which only the agent knows (base/confined_dir.h checks every
// path there); a relative folder whose ".." climb above its start leaves any root, so it is refused when the job is
// loaded, before anything runs.
void ConfineFolders(std::vector<KeyInfo>& v) {
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
}

// Data table: the ranges of the numeric keys whose parsing is their own (IntKey and NumberKey state theirs).
const std::map<std::string, std::string>& CustomRanges() {
  const std::string seconds = "seconds in [0, 86400], or a distribution whose parameters are (its mean too)";
  static const std::map<std::string, std::string> ranges = {
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
      {"dlio_ext.read_bandwidth_limit", "rate 0 (no cap) or in [1, 1e15] bytes/s"},
      {"dlio_ext.checkpoint_bandwidth_limit", "rate 0 (no cap) or in [1, 1e15] bytes/s"},
  };
  return ranges;
}

std::vector<KeyInfo> BuildKeys() {
  std::vector<KeyInfo> v;
  AddModelKeys(v);
  AddStorageKeys(v);
  AddDatasetKeys(v);
  AddReaderKeys(v);
  AddTrainKeys(v);
  AddCheckpointKeys(v);
  AddOutputKeys(v);
  AddDlioExtKeys(v);
  ConfineFolders(v);
  for (KeyInfo& k : v) {
    if (auto it = CustomRanges().find(k.path); it != CustomRanges().end()) k.range = it->second;
    if (k.get && k.dlio_default.empty()) k.dlio_default = k.get(WorkloadSpec{});
    k.default_node = YAML::Load(k.dlio_default);
  }
  return v;
}

}  // namespace

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

}  // namespace dlio::workload_internal
