// The rows of the key table (key_table.h) for Parquet (dataset.format: parquet, job/parquet_spec.h): the dataset
// section's dataset.parquet.*, storage.storage_options.columns and dlio_ext.parquet_decode; and the parquet checks
// across keys (CheckParquet).
#include <cmath>
#include <set>

#include "absl/strings/str_join.h"
#include "job/key_table.h"
#include "job/parquet_spec.h"

namespace dlio {

const std::vector<std::string>& ParquetReadModes() {
  static const std::vector<std::string> modes = {"row_group", "iterable"};
  return modes;
}

const std::vector<std::string>& ParquetColumnTypes() {
  static const std::vector<std::string> types = {"uint8",  "int8",  "uint16",  "int16",   "uint32", "int32",
                                                 "uint64", "int64", "float16", "float32", "float64"};
  return types;
}

std::vector<ParquetColumn> ParquetFileColumns(const WorkloadSpec& spec) {
  if (!spec.parquet.columns.empty()) return spec.parquet.columns;
  ParquetColumn c;
  c.name = "data";
  c.dtype = spec.record_element_type;
  const size_t item = std::max<size_t>(1, ElementBytes(c.dtype));
  c.size = std::max<int64_t>(1, static_cast<int64_t>(std::llround(spec.record_length_bytes)) /
                                    static_cast<int64_t>(item));
  return {c};
}

absl::Status CheckParquet(const WorkloadSpec& s) {
  if (s.format != "parquet") return absl::OkStatus();
  if (s.parquet.columns.empty()) {
    const int64_t bytes = static_cast<int64_t>(std::llround(s.record_length_bytes));
    const int64_t item = static_cast<int64_t>(ElementBytes(s.record_element_type));
    if (item > 0 && (bytes % item != 0 || bytes < item)) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.record_length_bytes: {} is not a multiple of {} ({} bytes, dataset.record_element_type), the "
          "size of the one parquet column 'data' a row then has; give a multiple, or dataset.parquet.columns",
          bytes, s.record_element_type, item));
    }
  }
  if (s.parquet.decode && s.parquet.read_mode == "iterable") {
    return absl::InvalidArgumentError(
        "dlio_ext.parquet_decode: true needs dataset.parquet.read_mode: row_group (iterable reads row groups as raw "
        "byte ranges, as the fork's iterable readers do)");
  }
  const std::vector<ParquetColumn> cols = ParquetFileColumns(s);
  std::set<std::string> names;
  for (const ParquetColumn& c : cols) names.insert(c.name);
  for (const std::string& n : s.parquet.read_columns) {
    if (names.count(n) == 0) {
      std::vector<std::string> have(names.begin(), names.end());
      return absl::InvalidArgumentError(fmt::format(
          "storage.storage_options.columns: '{}' is not a column of the parquet files (columns: {})", n,
          absl::StrJoin(have, ", ")));
    }
  }
  bool any = !s.parquet.read_columns.empty();
  for (const ParquetColumn& c : cols) any |= c.read;
  if (!any) {
    return absl::InvalidArgumentError(
        "dataset.parquet.columns: every column has read: false; a reader must select at least one (set read: true "
        "on one, or name them in storage.storage_options.columns)");
  }
  return absl::OkStatus();
}

}  // namespace dlio

namespace dlio::workload_internal {
namespace {

// One entry of dataset.parquet.columns: {name, dtype, size, read}.
absl::Status ParseColumn(const YAML::Node& n, const std::string& p, ParquetColumn* out) {
  if (!n.IsMap()) return MustBe(p, "a map {name, dtype, size, read}", n);
  ParquetColumn c;
  bool named = false;
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    const std::string at = p + "." + key;
    if (key == "name") {
      if (!kv.second.IsScalar() || kv.second.Scalar().empty()) return MustBe(at, "a non-empty column name", kv.second);
      if (absl::Status t = CheckKeyText(kv.second.Scalar(), at, kMaxNameBytes); !t.ok()) return t;
      c.name = kv.second.Scalar();
      named = true;
    } else if (key == "dtype") {
      if (absl::Status st = ParseChoice(kv.second, at, ParquetColumnTypes(), {"list", "string", "binary", "bool"},
                                        "column type", &c.dtype);
          !st.ok()) {
        return st;
      }
    } else if (key == "size") {
      if (!ParseInt(kv.second, &c.size) || c.size < 1 || c.size > kMaxRecordBytes) {
        return MustBe(at, fmt::format("an integer in [1, {}] (values of the column per row)", kMaxRecordBytes),
                      kv.second);
      }
    } else if (key == "read") {
      if (!ParseBool(kv.second, &c.read)) return MustBe(at, "true or false", kv.second);
    } else {
      return absl::InvalidArgumentError(
          fmt::format("{}: unknown key of a parquet column (allowed: name, dtype, size, read)", at));
    }
  }
  if (!named) return absl::InvalidArgumentError(fmt::format("{}.name: missing (every parquet column has a name)", p));
  *out = c;
  return absl::OkStatus();
}

absl::Status ParseColumns(const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
  std::vector<ParquetColumn> cols;
  if (n.IsNull()) {
    s.parquet.columns.clear();
    return absl::OkStatus();
  }
  if (!n.IsSequence()) return MustBe(p, "a list of columns {name, dtype, size, read} or []", n);
  std::set<std::string> seen;
  for (size_t i = 0; i < n.size(); ++i) {
    ParquetColumn c;
    if (absl::Status st = ParseColumn(n[i], fmt::format("{}[{}]", p, i), &c); !st.ok()) return st;
    if (!seen.insert(c.name).second) {
      return absl::InvalidArgumentError(fmt::format("{}[{}].name: '{}' is named twice (column names are unique)", p,
                                                    i, c.name));
    }
    cols.push_back(c);
  }
  s.parquet.columns = std::move(cols);
  return absl::OkStatus();
}

std::string ColumnsText(const std::vector<ParquetColumn>& cols) {
  std::vector<std::string> v;
  for (const ParquetColumn& c : cols) {
    v.push_back(fmt::format("{{name: {}, dtype: {}, size: {}, read: {}}}", Quote(c.name), c.dtype, c.size,
                            c.read ? "true" : "false"));
  }
  return "[" + absl::StrJoin(v, ", ") + "]";
}

std::string NamesText(const std::vector<std::string>& names) {
  std::vector<std::string> v;
  for (const std::string& n : names) v.push_back(Quote(n));
  return "[" + absl::StrJoin(v, ", ") + "]";
}

// A positive row count stored in spec.parquet.*field (`zero` allows 0).
KeyInfo RowsKey(std::string path, int64_t ParquetSpec::*field, bool zero, std::string note) {
  const int64_t min = zero ? 0 : 1;
  const int64_t max = kMaxSamples;
  KeyInfo k = Custom(
      std::move(path), KeyStatus::kImplemented, std::move(note),
      [field, min, max](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        int64_t v;
        if (!ParseInt(n, &v) || v < min || v > max) {
          return MustBe(p, fmt::format("an integer in [{}, {}] (rows)", min, max), n);
        }
        s.parquet.*field = v;
        return absl::OkStatus();
      },
      [field](const WorkloadSpec& s) { return std::to_string(s.parquet.*field); });
  k.range = fmt::format("integer in [{}, {}]", min, max);
  return k;
}

}  // namespace

// Data table: the dataset section's parquet rows.
void AddParquetDatasetKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "dataset.parquet.columns", KeyStatus::kImplemented,
      "parquet: the columns of a row, each {name, dtype (uint8 .. float64), size (values per row, default 1), read "
      "(default true: readers select it)}, written as pyarrow writes the fork's list columns; [] = one column "
      "'data' of record_length_bytes in record_element_type",
      ParseColumns, [](const WorkloadSpec& s) { return ColumnsText(s.parquet.columns); }));
  v.push_back(RowsKey("dataset.parquet.row_group_size", &ParquetSpec::row_group_size, false,
                      "parquet: rows per row group (pyarrow's default 1048576: most files are one group)"));
  v.push_back(RowsKey("dataset.parquet.generation_batch_size", &ParquetSpec::generation_batch_size, true,
                      "parquet: rows generated per write batch; a row group never spans two batches (as one "
                      "pyarrow write_table per batch); 0 = a file's rows in one batch"));
  v.push_back(Custom(
      "dataset.parquet.read_mode", KeyStatus::kImplemented,
      "parquet: row_group (a sample's row group is read, its selected column chunks one range each, the first "
      "time a sample of it is asked in an epoch) or iterable (a file's row groups are read whole, one range each "
      "over the selected columns, when its first sample is asked)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, ParquetReadModes(), {}, "parquet read mode", &s.parquet.read_mode);
      },
      [](const WorkloadSpec& s) { return Quote(s.parquet.read_mode); }));
  v.push_back(NotYet("dataset.parquet.partition_by", "~", Gate::kNone,
                     "parquet: hive-style partition folders (pyarrow write_to_dataset)",
                     "write one file per data file name instead", {""}));
  v.push_back(Label("dataset.parquet.use_s3dlio_gen", "false", "the fork's s3dlio generator choice; no effect here"));
}

// Data table: storage.storage_options.columns.
void AddParquetStorageKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "storage.storage_options.columns", KeyStatus::kImplemented,
      "parquet: the columns readers select (the fork's iterable readers); null = the columns with read: true",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        std::vector<std::string> names;
        if (!n.IsNull()) {
          if (!n.IsSequence() || n.size() == 0) return MustBe(p, "a non-empty list of column names or null", n);
          for (const YAML::Node& e : n) {
            if (!e.IsScalar() || e.Scalar().empty()) return MustBe(p, "a list of column names", n);
            if (absl::Status t = CheckKeyText(e.Scalar(), p, kMaxNameBytes); !t.ok()) return t;
            names.push_back(e.Scalar());
          }
        }
        s.parquet.read_columns = std::move(names);
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return s.parquet.read_columns.empty() ? "~" : NamesText(s.parquet.read_columns); }));
}

// Data table: dlio_ext.parquet_decode.
void AddParquetExtKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "dlio_ext.parquet_decode", KeyStatus::kImplemented,
      "parquet: decompress every page read (snappy, zstd, lz4, gzip) as a real loader's decode does; its time is "
      "the loader threads' (in the data wait of a step, as a real loader's); false = read the pages only (the "
      "fork's iterable readers)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (!ParseBool(n, &s.parquet.decode)) return MustBe(p, "true or false", n);
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return std::string(s.parquet.decode ? "true" : "false"); }));
}

}  // namespace dlio::workload_internal
