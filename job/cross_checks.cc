#include "job/cross_checks.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/sleep.h"
#include "fmt/format.h"
#include "job/format_traits.h"
#include "job/parquet_spec.h"
#include "job/yaml_scalar.h"

namespace dlio {

absl::Status CheckFormatReadsObjects(const std::string& format) {
  if (const FormatTraits* t = FindFormatTraits(format); t != nullptr && !t->reads_objects) {
    return absl::InvalidArgumentError(fmt::format(
        "dataset.format: {} maps a local file and cannot read objects (storage.storage_type: s3; use "
        "indexed_binary: one ranged GET per sample)", format));
  }
  return absl::OkStatus();
}

}  // namespace dlio

namespace dlio::workload_internal {

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
  for (absl::string_view e : absl::StrSplit(s.s3_endpoint_url, ',', absl::SkipEmpty())) {
    if (!absl::StartsWith(e, "http://") && !absl::StartsWith(e, "https://")) {
      return absl::InvalidArgumentError(
          fmt::format("storage.storage_options.endpoint_url: '{}' must start with http:// or https://", std::string(e)));
    }
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

namespace {

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

// dataset.compression against the format's row: a compression it writes, a DLIO one not supported yet, or one it
// does not have.
absl::Status CheckCompression(const WorkloadSpec& s) {
  const FormatTraits& format = FormatTraitsOf(s.format);
  if (format.Compresses(s.compression)) return absl::OkStatus();
  if (format.dlio_compresses_more) {
    return absl::UnimplementedError(fmt::format(
        "dataset.compression: {} for {} files is a DLIO compression not supported yet ({}: {})", s.compression,
        s.format, s.format, absl::StrJoin(format.compressions, ", ")));
  }
  std::vector<std::string> each;
  for (const FormatTraits* f : CompressingFormats()) {
    each.push_back(fmt::format("{}: {}", f->name, absl::StrJoin(f->compressions, ", ")));
  }
  return absl::InvalidArgumentError(
      fmt::format("dataset.compression: {} is not available for {} files ({}; other formats: none)", s.compression,
                  s.format, absl::StrJoin(each, "; ")));
}

}  // namespace

absl::Status CheckWhole(const WorkloadSpec& s) {
  if (!s.generate_data && !s.train && !s.checkpoint) {
    return absl::InvalidArgumentError(
        "workflow: nothing to do (workflow.generate_data, workflow.train and workflow.checkpoint are all false)");
  }
  if (absl::Status st = CheckCompression(s); !st.ok()) return st;
  if (absl::Status st = CheckParquet(s); !st.ok()) return st;
  if (!s.record_dims.empty() && s.record_length_bytes_stdev > 0) {
    return absl::InvalidArgumentError(
        "dataset.record_dims: cannot be combined with dataset.record_length_bytes_stdev (DLIO refuses both; give "
        "record_length_bytes with its stdev instead)");
  }
  const FormatTraits& format = FormatTraitsOf(s.format);
  if (format.image && s.SampleShape().size() != 2) {
    return absl::InvalidArgumentError(fmt::format("dataset.record_dims: {} format needs 2 dimensions (height, width), "
                                                  "got {}",
                                                  s.format, DimsText(s.record_dims)));
  }
  if (s.parallelism_data == 0) {
    return absl::InvalidArgumentError("model.parallelism.data: must be -1 (DP = world / (TP x PP)) or >= 1, got 0");
  }
  if (s.checkpoint && s.checkpoint_mode == "subset" && s.parallelism_data < 1) {
    return absl::InvalidArgumentError(
        "checkpoint.mode: subset needs model.parallelism.data >= 1 (the data-parallel size of the whole job whose "
        "share this world writes)");
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
  if (s.io_engine != "posix" && !format.io_engines && format.no_engines_at_load) {
    return absl::InvalidArgumentError(
        fmt::format("dlio_ext.io_engine: {} is not available for {}{}", s.io_engine, s.format, format.no_engines));
  }
  if (absl::Status st = CheckSizes(s); !st.ok()) return st;
  // With a size spread every file has its own shape: the preflight (plan/preflight.h) checks each file's, the
  // chunks included; here the mean shape, without the chunks.
  if (absl::Status st = CheckSampleShape(s, s.SampleShape(), s.record_length_bytes_stdev == 0); !st.ok()) return st;
  return absl::OkStatus();
}

}  // namespace dlio::workload_internal
