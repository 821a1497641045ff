// WorkloadSpec: the normalised job, loaded from DLIO's workload YAML.
//
// Contract:
//  - LoadWorkload() accepts DLIO's YAML (optionally wrapped in a top-level `workload:` key, as Hydra configs are)
//    plus overrides in DLIO's form `++workload.dataset.num_files_train=8` or the short form
//    `dataset.num_files_train=8`, and applies DLIO's defaults (../shared/reference/dlio.md §1) for absent keys.
//  - Every error is one line that names the key (dotted path) or the file and what is allowed, e.g.
//      "dataset.num_files_train: must be an integer >= 1, got -1"
//      "dataset.num_file_train: unknown key (did you mean dataset.num_files_train?)"
//      "evaluation.eval_time: DLIO key not supported yet by this version"
//  - ToYaml() gives the normalised YAML; LoadWorkload(ToYaml(s)) == s. The coordinator ships this text to agents,
//    so both sides derive the same plan from the same values.
// Thread-safety: plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlio {

enum class ShuffleMode { kOff, kSeed, kRandom };

struct WorkloadSpec {
  // model
  std::string model_name = "default";
  // framework (label only in this version)
  std::string framework = "pytorch";

  // workflow
  bool generate_data = false;
  bool train = true;

  // dataset
  std::string data_folder = "./data/";
  std::string format = "tfrecord";
  int64_t num_files_train = 8;
  int64_t num_samples_per_file = 1;
  double record_length_bytes = 65536;
  double record_length_bytes_stdev = 0;
  int64_t num_subfolders_train = 0;
  std::string file_prefix = "img";
  std::vector<int64_t> hdf5_chunk_dims;     // dataset.hdf5.chunk_dims; empty = contiguous
  std::string compression = "none";          // dataset.compression: none | gzip (hdf5)
  int compression_level = 4;                 // dataset.compression_level

  // reader (alias data_reader)
  std::string data_loader = "pytorch";
  int64_t batch_size = 1;
  int64_t read_threads = 1;
  int64_t prefetch_size = 2;
  ShuffleMode file_shuffle = ShuffleMode::kOff;
  ShuffleMode sample_shuffle = ShuffleMode::kOff;
  int64_t transfer_size = 262144;            // TFRecord read size per call (TF's default 256 KiB)

  // train
  int64_t epochs = 1;
  double computation_time = 0;               // seconds per step (a number in this version)
  int64_t seed = 123;
  bool seed_change_epoch = true;
  int64_t total_training_steps = -1;

  // output
  std::string output_folder;                 // empty = not set in the job
  int64_t exclude_start_steps = 1;           // output.metric.exclude_start_steps
  int64_t exclude_end_steps = 0;             // output.metric.exclude_end_steps

  // metric
  double au_threshold = 0.90;                // metric.au

  // Derived helpers.
  int64_t TotalSamplesTrain() const { return num_files_train * num_samples_per_file; }
  // Side of the square uint8 sample DLIO generates: floor(sqrt(record_length_bytes)).
  int64_t SampleDim() const;
};

// Parses YAML text plus overrides. `source` names the file in error messages.
absl::StatusOr<WorkloadSpec> LoadWorkload(const std::string& yaml_text, const std::vector<std::string>& overrides,
                                          const std::string& source = "workload");
// Reads the file at `path` (an error naming the path if it cannot be read), then LoadWorkload.
absl::StatusOr<WorkloadSpec> LoadWorkloadFile(const std::string& path, const std::vector<std::string>& overrides);
// The normalised YAML (DLIO key names, every key this version knows).
std::string ToYaml(const WorkloadSpec& spec);

const char* ShuffleModeName(ShuffleMode m);

}  // namespace dlio
