#include "job/workload_spec.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/yaml_scalar.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

std::string TestData() {
  const char* env = std::getenv("DLIO_TESTDATA");
  return env != nullptr ? env : "/work/main/../shared/testdata";
}

// The error message of a load that must fail.
std::string Error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, overrides, "job.yaml");
  if (s.ok()) return "<loaded>";
  return std::string(s.status().message());
}

WorkloadSpec Load(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, overrides, "job.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : WorkloadSpec{};
}

TEST(WorkloadSpec, UnsetKeysGetDlioDefaults) {
  EXPECT_EQ(Load("train:\n  epochs: 1\n"), WorkloadSpec{});
  const WorkloadSpec d = Load("train:\n  epochs: 1\n");
  EXPECT_EQ(d.format, "tfrecord");
  EXPECT_EQ(d.num_files_train, 8);
  EXPECT_EQ(d.record_length_bytes, 65536);
  EXPECT_EQ(d.exclude_start_steps, 1);
  EXPECT_DOUBLE_EQ(d.au_threshold, 0.90);
}

TEST(WorkloadSpec, ParsesEveryImplementedKey) {
  const WorkloadSpec s = Load(R"(
model:
  name: unet3d
framework: tensorflow
workflow:
  generate_data: true
  train: false
dataset:
  data_folder: /data/unet3d/
  format: hdf5
  num_files_train: 168
  num_samples_per_file: 3
  record_length_bytes: 114660.07
  record_length_bytes_stdev: 68341.5
  num_subfolders_train: 4
  file_prefix: sample
  hdf5:
    chunk_dims: [1, 32, 32]
  compression: gzip
  compression_level: 6
reader:
  data_loader: tensorflow
  batch_size: 7
  read_threads: 4
  prefetch_size: 0
  file_shuffle: seed
  sample_shuffle: random
  transfer_size: 1048576
train:
  epochs: 5
  computation_time: 0.636
  seed: 42
  seed_change_epoch: false
  total_training_steps: 100
output:
  folder: out/unet3d
  metric:
    exclude_start_steps: 2
    exclude_end_steps: 1
metric:
  au: 0.7
)");
  EXPECT_EQ(s.model_name, "unet3d");
  EXPECT_EQ(s.framework, "tensorflow");
  EXPECT_TRUE(s.generate_data);
  EXPECT_FALSE(s.train);
  EXPECT_EQ(s.data_folder, "/data/unet3d/");
  EXPECT_EQ(s.format, "hdf5");
  EXPECT_EQ(s.num_files_train, 168);
  EXPECT_EQ(s.num_samples_per_file, 3);
  EXPECT_DOUBLE_EQ(s.record_length_bytes, 114660.07);
  EXPECT_DOUBLE_EQ(s.record_length_bytes_stdev, 68341.5);
  EXPECT_EQ(s.num_subfolders_train, 4);
  EXPECT_EQ(s.file_prefix, "sample");
  EXPECT_EQ(s.hdf5_chunk_dims, (std::vector<int64_t>{1, 32, 32}));
  EXPECT_EQ(s.compression, "gzip");
  EXPECT_EQ(s.compression_level, 6);
  EXPECT_EQ(s.data_loader, "tensorflow");
  EXPECT_EQ(s.batch_size, 7);
  EXPECT_EQ(s.read_threads, 4);
  EXPECT_EQ(s.prefetch_size, 0);
  EXPECT_EQ(s.file_shuffle, ShuffleMode::kSeed);
  EXPECT_EQ(s.sample_shuffle, ShuffleMode::kRandom);
  EXPECT_EQ(s.transfer_size, 1048576);
  EXPECT_EQ(s.epochs, 5);
  EXPECT_DOUBLE_EQ(s.computation_time.Mean(), 0.636);
  EXPECT_EQ(s.seed, 42);
  EXPECT_FALSE(s.seed_change_epoch);
  EXPECT_EQ(s.total_training_steps, 100);
  EXPECT_EQ(s.output_folder, "out/unet3d");
  EXPECT_EQ(s.exclude_start_steps, 2);
  EXPECT_EQ(s.exclude_end_steps, 1);
  EXPECT_DOUBLE_EQ(s.au_threshold, 0.7);
  EXPECT_EQ(s.SampleDim(), 338);
}

TEST(WorkloadSpec, AcceptsTheHydraWorkloadWrapper) {
  const WorkloadSpec s = Load(R"(
defaults:
  - _self_
hydra:
  run:
    dir: /tmp/x
workload:
  dataset:
    format: npz
    num_files_train: 3
)");
  EXPECT_EQ(s.format, "npz");
  EXPECT_EQ(s.num_files_train, 3);
  EXPECT_THAT(Error("workload:\n  dataset:\n    format: npz\ndataset:\n  format: hdf5\n"),
              HasSubstr("dataset: unexpected top-level key beside workload:"));
}

// Issue 26 item 7: an error about one key of the file names the file and the key's line, as a YAML syntax error
// does, and stays one line; an override's error names the override instead (it has no line).
TEST(WorkloadSpec, KeyAndTypeErrorsNameTheFileAndTheLine) {
  EXPECT_EQ(Error("dataset:\n  format: npz\n  num_files_train: -1\n"),
            "job.yaml:3: dataset.num_files_train: must be an integer in [1, 2147483647], got -1");
  EXPECT_EQ(Error("model:\n  name: x\ntrain:\n  epochs: 2\n  computation_time: fast\n"),
            "job.yaml:5: train.computation_time: must be a number of seconds in [0, 86400], got 'fast'");
  EXPECT_EQ(Error("dataset:\n  format: npz\n  num_file_train: 4\n"),
            "job.yaml:3: dataset.num_file_train: unknown key (did you mean dataset.num_files_train?)");
  EXPECT_EQ(Error("dataset:\n  format: npz\n\n  format: hdf5\n"), "job.yaml:4: dataset.format: given twice");
  EXPECT_EQ(Error("model:\n  name: x\ndataset: 5\n"), "job.yaml:3: dataset: must be a mapping of keys, got 5");
  EXPECT_EQ(Error("workflow:\n  checkpoint: maybe\n"),
            "job.yaml:2: workflow.checkpoint: must be true or false, got 'maybe'");
  EXPECT_EQ(Error("workflow:\n  checkpoint: true\ncheckpoint:\n  checkpoint_mechanism_classname: x\n"),
            "job.yaml:4: checkpoint.checkpoint_mechanism_classname: DLIO key not supported yet by this version");
  EXPECT_EQ(Error("dlio_ext:\n  io_engine: posix\nreader:\n  odirect: true\n"),
            "job.yaml:4: reader.odirect: true contradicts dlio_ext.io_engine: posix (give one of them)");
  // Hydra's wrapper and flow mappings keep the lines of the file.
  EXPECT_EQ(Error("# a comment\nworkload:\n  train:\n    epochs: 0\n"),
            "job.yaml:4: train.epochs: must be an integer in [1, 100000], got 0");
  EXPECT_EQ(Error("dataset: {format: npz,\n  num_files_train: 0}\n"),
            "job.yaml:2: dataset.num_files_train: must be an integer in [1, 2147483647], got 0");
  // An override (also one over a key of the file) has no line: its error names it as before.
  EXPECT_EQ(Error("train:\n  epochs: 2\n", {"train.epochs=0"}), "train.epochs: must be an integer in [1, 100000], got 0");
  // The source is whatever names the text (a path as given on the command line).
  absl::StatusOr<WorkloadSpec> other = LoadWorkload("train:\n  epochs: x\n", {}, "configs/a b.yaml");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "configs/a b.yaml:2: train.epochs: must be an integer in [1, 100000], got 'x'");
}

// --strict lists every key where DLIO behaves differently at once, one line per key (in the file's order), not only
// the first; each line is what the warning would have said, with the --strict note.
TEST(WorkloadSpec, StrictListsEveryDivergentKeyAtOnce) {
  const std::string yaml =
      "model:\n  model_size: 4096\ndataset:\n  format: npz\n  compression: zip\n"
      "reader:\n  file_shuffle: seed\n  sample_shuffle: seed\n";
  LoadDiagnostics diag;
  ASSERT_TRUE(LoadWorkload(yaml, {}, "job.yaml", LoadOptions{}, &diag).ok());
  ASSERT_EQ(diag.warnings.size(), 4u);
  LoadOptions strict;
  strict.strict = true;
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, {}, "job.yaml", strict, nullptr);
  ASSERT_FALSE(s.ok());
  const std::vector<std::string> lines = absl::StrSplit(s.status().message(), '\n');
  ASSERT_EQ(lines.size(), 4u) << s.status();
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i], diag.warnings[i].text + " (--strict: DLIO behaves differently with this key)");
  }
  EXPECT_TRUE(absl::StartsWith(lines[0], "model.model_size: "));
  EXPECT_TRUE(absl::StartsWith(lines[3], "dataset.compression: ")) << "value notes come after the keys";
}

TEST(WorkloadSpec, AcceptsDliosAliases) {
  EXPECT_EQ(Load("data_reader:\n  batch_size: 5\n").batch_size, 5);
  EXPECT_EQ(Load("dataset:\n  record_length: 4096\n").record_length_bytes, 4096);
  EXPECT_EQ(Error("dataset:\n  record_length: 4096\n  record_length_bytes: 2048\n"),
            "job.yaml:3: dataset.record_length_bytes: given twice (also as dataset.record_length; DLIO reads only one of them)");
  EXPECT_THAT(Error("reader:\n  batch_size: 2\ndata_reader:\n  read_threads: 2\n"), HasSubstr("given twice"));
  EXPECT_EQ(Error("data_reader:\n  batch_size: 0\n"), "job.yaml:2: data_reader.batch_size: must be an integer in [1, 4294967296], got 0");
  EXPECT_EQ(Error("data_reader:\n  batch_sise: 2\n"),
            "job.yaml:2: data_reader.batch_sise: unknown key (did you mean data_reader.batch_size?)");
}

TEST(WorkloadSpec, OverridesInEveryForm) {
  const std::string yaml = "dataset:\n  format: hdf5\n  num_files_train: 4\n";
  EXPECT_EQ(Load(yaml, {"++workload.dataset.num_files_train=8"}).num_files_train, 8);
  EXPECT_EQ(Load(yaml, {"+workload.dataset.num_files_train=9"}).num_files_train, 9);
  EXPECT_EQ(Load(yaml, {"workload.dataset.num_files_train=10"}).num_files_train, 10);
  EXPECT_EQ(Load(yaml, {"dataset.num_files_train=11"}).num_files_train, 11);
  EXPECT_EQ(Load(yaml, {"dataset.hdf5.chunk_dims=[1,2,2]"}).hdf5_chunk_dims, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(Load(yaml, {"++workload.reader.file_shuffle=seed", "++hydra.run.dir=/tmp/run"}).file_shuffle,
            ShuffleMode::kSeed);
  EXPECT_EQ(Load(yaml, {"data_reader.batch_size=3"}).batch_size, 3);
  EXPECT_EQ(Load(yaml, {"reader={batch_size: 6, read_threads: 2}"}).read_threads, 2);
  // The last override of a key wins, as in Hydra.
  EXPECT_EQ(Load(yaml, {"train.epochs=2", "train.epochs=3"}).epochs, 3);
  EXPECT_EQ(Error(yaml, {"++workload.dataset.num_file_train=8"}),
            "dataset.num_file_train: unknown key (did you mean dataset.num_files_train?) in override "
            "'++workload.dataset.num_file_train=8'");
  EXPECT_EQ(Error(yaml, {"dataset.num_files_train=-1"}), "dataset.num_files_train: must be an integer in [1, 2147483647], got -1");
  EXPECT_THAT(Error(yaml, {"num_files_train"}), HasSubstr("expected KEY=VALUE"));
  EXPECT_THAT(Error(yaml, {"dataset.format=[npz"}), HasSubstr("YAML syntax error"));
}

TEST(WorkloadSpec, UnknownKeysNameTheNearestKnownKey) {
  EXPECT_EQ(Error("dataset:\n  num_file_train: 8\n"),
            "job.yaml:2: dataset.num_file_train: unknown key (did you mean dataset.num_files_train?)");
  EXPECT_EQ(Error("datset:\n  format: npz\n"), "job.yaml:1: datset: unknown key (did you mean dataset?)");
  // DLIO reads the exclusions only under output.metric.
  EXPECT_EQ(Error("metric:\n  exclude_start_steps: 2\n"),
            "job.yaml:2: metric.exclude_start_steps: unknown key (did you mean output.metric.exclude_start_steps?)");
  EXPECT_EQ(Error("reader:\n  epochs: 2\n"), "job.yaml:2: reader.epochs: unknown key (did you mean train.epochs?)");
  EXPECT_EQ(Error("zzzzzzzzzzzz: 1\n"), "job.yaml:1: zzzzzzzzzzzz: unknown key");
  EXPECT_EQ(Error("dataset: 5\n"), "job.yaml:1: dataset: must be a mapping of keys, got 5");
  EXPECT_EQ(Error("dataset:\n  format: npz\n  format: hdf5\n"), "job.yaml:3: dataset.format: given twice");
}

TEST(WorkloadSpec, WrongValuesSayWhatIsAllowed) {
  EXPECT_EQ(Error("dataset:\n  num_files_train: -1\n"), "job.yaml:2: dataset.num_files_train: must be an integer in [1, 2147483647], got -1");
  EXPECT_EQ(Error("dataset:\n  record_length_bytes: abc\n"),
            "job.yaml:2: dataset.record_length_bytes: must be a number in (0, 17179869184], got 'abc'");
  EXPECT_EQ(Error("dataset:\n  num_files_train: '8'\n"), "job.yaml:2: dataset.num_files_train: must be an integer in [1, 2147483647], got '8'");
  EXPECT_EQ(Error("dataset:\n  num_files_train: 8.5\n"), "job.yaml:2: dataset.num_files_train: must be an integer in [1, 2147483647], got 8.5");
  EXPECT_EQ(Error("dataset:\n  num_files_train: [1]\n"), "job.yaml:2: dataset.num_files_train: must be an integer in [1, 2147483647], got [1]");
  EXPECT_EQ(Error("workflow:\n  train: yes\n"), "job.yaml:2: workflow.train: must be true or false, got 'yes'");
  EXPECT_EQ(Error("reader:\n  file_shuffle: sometimes\n"),
            "job.yaml:2: reader.file_shuffle: must be one of off, seed, random, got 'sometimes'");
  EXPECT_EQ(Error("reader:\n  sample_shuffle: true\n"),
            "job.yaml:2: reader.sample_shuffle: must be one of off, seed, random, got true");
  EXPECT_EQ(Load("reader:\n  sample_shuffle: false\n").sample_shuffle, ShuffleMode::kOff);
  EXPECT_EQ(Error("dataset:\n  format: orc\n"),
            "job.yaml:2: dataset.format: must be one of npz, hdf5, tfrecord, csv, npy, jpeg, png, indexed_binary, "
            "mmap_indexed_binary, parquet, synthetic, hdf5_opt, got 'orc'");
  EXPECT_EQ(Error("dataset:\n  format: hdf5\n  compression_level: 10\n"),
            "job.yaml:3: dataset.compression_level: must be an integer in [0, 9], got 10");
  EXPECT_EQ(Error("dataset:\n  format: hdf5\n  hdf5:\n    chunk_dims: [1, 0, 32]\n"),
            "job.yaml:4: dataset.hdf5.chunk_dims: must be a list of integers in [1, 2147483647] ([samples, *sample shape]) or [], got [1, 0, 32]");
  EXPECT_EQ(Error("dataset:\n  record_element_type: complex64\n"),
            "job.yaml:2: dataset.record_element_type: must be one of uint8, int8, uint16, int16, uint32, int32, uint64, int64, "
            "float16, float32, float64, got 'complex64'");
  EXPECT_EQ(Error("dataset:\n  record_dims: [4, 0]\n"),
            "job.yaml:2: dataset.record_dims: must be a list of integers in [1, 2147483647] (the sample shape) or [], got [4, 0]");
  EXPECT_EQ(Error("dataset:\n  hdf5:\n    num_dset_per_record: 0\n"),
            "job.yaml:3: dataset.hdf5.num_dset_per_record: must be an integer in [1, 4096], got 0");
  EXPECT_EQ(Error("metric:\n  au: 90\n"), "job.yaml:2: metric.au: must be a number in [0, 1], got 90");
  EXPECT_EQ(Error("train:\n  computation_time: -0.1\n"),
            "job.yaml:2: train.computation_time: must be a number of seconds in [0, 86400], got '-0.1'");
  EXPECT_EQ(Error("train:\n  computation_time: {type: normal, mean: 0.1, stdev: -1}\n"),
            "job.yaml:2: train.computation_time: stdev must be a number >= 0, got -1");
  EXPECT_EQ(Error("framework: jax\n"), "job.yaml:1: framework: must be one of pytorch, tensorflow, got 'jax'");
  EXPECT_EQ(Error("dataset:\n  data_folder: ''\n"), "job.yaml:2: dataset.data_folder: must be a non-empty string, got ''");
  EXPECT_EQ(Load("train:\n  total_training_steps: 0\n").total_training_steps, -1);
  EXPECT_EQ(Load("reader:\n  transfer_size: null\n").transfer_size, 262144);
  EXPECT_EQ(Load("output:\n  folder: ~\n").output_folder, "");
}

TEST(WorkloadSpec, ChecksAcrossKeys) {
  EXPECT_EQ(Error("workflow:\n  train: false\n"),
            "workflow: nothing to do (workflow.generate_data, workflow.train and workflow.checkpoint are all false)");
  EXPECT_EQ(Error("workflow:\n  train: false\n  checkpoint: true\n"), "<loaded>");  // checkpoint-only mode
  EXPECT_EQ(Error("dataset:\n  format: npz\n  compression: gzip\n"),
            "dataset.compression: gzip is not available for npz files (parquet: none, snappy, zstd, lz4, gzip; hdf5: "
            "none, gzip, szip, lzf; npz: none, zip; csv: none, gzip; other formats: none)");
  EXPECT_THAT(Error("dataset:\n  format: hdf5\n  record_length_bytes: 1024\n  hdf5:\n    chunk_dims: [1, 64, 64]\n"),
              HasSubstr("dataset.hdf5.chunk_dims: [1, 64, 64] exceeds the dataset's maximum shape [1, 32, 32]"));
  EXPECT_THAT(Error("dataset:\n  format: hdf5\n  record_dims: [6, 4, 4]\n  hdf5:\n    chunk_dims: [1, 4, 4]\n"),
              HasSubstr("dataset.hdf5.chunk_dims: [1, 4, 4] must have 4 entries, the rank of each records dataset "
                        "[1, 6, 4, 4]"));
  EXPECT_EQ(Error("dataset:\n  record_dims: [64, 64]\n  record_length_bytes_stdev: 100\n"),
            "dataset.record_dims: cannot be combined with dataset.record_length_bytes_stdev (DLIO refuses both; give "
            "record_length_bytes with its stdev instead)");
  EXPECT_EQ(Error("dataset:\n  format: hdf5\n  record_dims: [6, 4]\n  hdf5:\n    num_dset_per_record: 4\n"),
            "dataset.hdf5.num_dset_per_record: 4 does not divide the first sample dimension 6 (sample shape [6, 4])");
  EXPECT_THAT(Error("dataset:\n  format: hdf5\n  record_dims: [6, 4]\n  hdf5:\n    max_shape: [6]\n"),
              HasSubstr("dataset.hdf5.max_shape: [6] must have 2 entries"));
  EXPECT_THAT(Error("dataset:\n  format: hdf5\n  record_dims: [6, 4]\n  hdf5:\n    max_shape: [6, 3]\n"),
              HasSubstr("dataset.hdf5.max_shape: [6, 3] is smaller than the dataset shape"));
  EXPECT_EQ(Error("dataset:\n  format: png\n  record_dims: [4, 4, 4]\n"),
            "dataset.record_dims: png format needs 2 dimensions (height, width), got [4, 4, 4]");
  EXPECT_THAT(Error("dataset:\n  num_files_train: 100000\n  num_samples_per_file: 100000\n"),
              HasSubstr("the most this version plans"));
}

TEST(WorkloadSpec, UnimplementedDlioFeaturesSaySo) {
  EXPECT_EQ(Error("dataset:\n  format: hdf5_opt\n"),
            "job.yaml:2: dataset.format: 'hdf5_opt' is a DLIO format not supported yet (supported: npz, hdf5, tfrecord, csv, npy, "
            "jpeg, png, indexed_binary, mmap_indexed_binary, parquet, synthetic)");
  EXPECT_EQ(Error("dataset:\n  format: csv\n  compression: zip\n"),
            "dataset.compression: zip for csv files is a DLIO compression not supported yet (csv: none, gzip)");
  EXPECT_EQ(Error("dataset:\n  format: csv\n  compression: gzip\n"), "<loaded>");  // zlib
  EXPECT_EQ(Error("reader:\n  read_type: memory\n"), "<loaded>");
  EXPECT_EQ(Error("reader:\n  read_type: mmap\n").rfind("job.yaml:2: reader.read_type:", 0), 0u);
  EXPECT_EQ(Error("dlio_ext:\n  evict_cache: every_epoch\n"), "<loaded>");
  EXPECT_EQ(Error("dlio_ext:\n  evict_cache: always\n").rfind("job.yaml:2: dlio_ext.evict_cache:", 0), 0u);
  // dlio_ext.barrier (issue 29): announce by default, after_compute the old path; anything else names both.
  EXPECT_EQ(Error("dlio_ext:\n  barrier: after_compute\n"), "<loaded>");
  EXPECT_THAT(Error("dlio_ext:\n  barrier: tree\n"),
              ::testing::AllOf(HasSubstr("dlio_ext.barrier"), HasSubstr("announce"), HasSubstr("after_compute")));
  EXPECT_EQ(WorkloadSpec().barrier, "announce");
  EXPECT_EQ(Error("dlio_ext:\n  trace: true\n  trace_events_per_thread: 0\n").rfind(
                "job.yaml:3: dlio_ext.trace_events_per_thread:", 0),
            0u);
  EXPECT_EQ(Error("workflow:\n  checkpoint: true\n"), "<loaded>");  // implemented
  EXPECT_EQ(Error("workflow:\n  checkpoint: true\ncheckpoint:\n  checkpoint_mechanism_classname: x\n"),
            "job.yaml:4: checkpoint.checkpoint_mechanism_classname: DLIO key not supported yet by this version");
  EXPECT_EQ(Error("workflow:\n  evaluation: true\ndataset:\n  num_files_eval: 8\n"), "<loaded>");  // implemented
  EXPECT_EQ(Error("reader:\n  preprocess_time: 0.1\n"), "<loaded>");  // implemented: a sleep per sample
  EXPECT_EQ(Error("storage:\n  storage_type: aistore\n"),
            "job.yaml:2: storage.storage_type: 'aistore' is a DLIO storage type not supported yet (supported: local_fs, "
            "parallel_fs, s3)");
  EXPECT_EQ(Error("train:\n  computation_time:\n    mean: 0.01\n    stdev: 0.002\n"), "<loaded>");  // normal
  EXPECT_EQ(Error("reader:\n  data_loader: native_dali\n"),
            "job.yaml:2: reader.data_loader: 'native_dali' is a DLIO data loader not supported yet (supported: pytorch, "
            "tensorflow, dali)");
  EXPECT_EQ(Error("dataset:\n  format: hdf5\n  compression: xz\n"),
            "job.yaml:3: dataset.compression: 'xz' is a DLIO compression not supported yet (supported: none, snappy, "
            "zstd, lz4, gzip, szip, lzf, zip)");
  EXPECT_EQ(Error("checkpoint:\n  steps_between_checkpoints: 8\nworkflow:\n  checkpoint: true\n"), "<loaded>");
}

TEST(WorkloadSpec, CheckpointKeysAndTheirWarnings) {
  std::vector<std::string> warnings;
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(
      "workflow:\n  train: false\n  checkpoint: true\ncheckpoint:\n  checkpoint_folder: ck\n  fsync: true\n"
      "  recovery_rank_shift: true\n  rank_sync: true\n  num_checkpoints_write: 3\n  num_checkpoints_read: 2\n"
      "  time_between_checkpoints: 0.5\ndlio_ext:\n  checkpoint_evict_cache: true\n",
      {}, "job", &warnings);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->checkpoint_fsync && s->recovery_rank_shift && s->checkpoint_rank_sync && s->checkpoint_evict_cache);
  EXPECT_EQ(s->checkpoint_folder, "ck");
  EXPECT_EQ(s->num_checkpoints_write, 3);
  EXPECT_EQ(s->num_checkpoints_read, 2);
  EXPECT_EQ(s->time_between_checkpoints, 0.5);
  EXPECT_THAT(warnings, testing::Contains(HasSubstr("checkpoint.fsync: true fsyncs every checkpoint file here")));
  EXPECT_THAT(warnings, testing::Contains(HasSubstr("checkpoint.recovery_rank_shift:")));
  absl::StatusOr<WorkloadSpec> back = LoadWorkload(ToYaml(*s), {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == *s);
  EXPECT_THAT(Error("dlio_ext:\n  checkpoint_evict_cashe: true\n"), HasSubstr("checkpoint_evict_cache"));
}

TEST(WorkloadSpec, AcceptsDliosDefaultsAndInertFeatureKeys) {
  // DLIO's defaults of keys this version does not implement.
  Load(R"(
workflow:
  checkpoint: false
  evaluation: false
  profiling: false
storage:
  storage_type: local_fs
  storage_root: ./
reader:
  odirect: false
  read_type: on_demand
  preprocess_time: 0
dataset:
  record_dims: []
  record_element_type: uint8
  keep_files: true
train:
  computation_time_stdev: 0
)");
  // Evaluation keys while evaluation reads nothing; checkpoint and model sizing keys while checkpoints are off.
  const WorkloadSpec s = Load(R"(
model:
  name: unet3d
  type: cnn
  model_size: 499153191
  model_size_bytes: 1048576
workflow:
  evaluation: true
dataset:
  num_files_eval: 8
evaluation:
  eval_time: 0.005
  epochs_between_evals: 2
reader:
  batch_size_eval: 4
checkpoint:
  checkpoint_folder: ckpt
  steps_between_checkpoints: 8
  ksm:
    await_time: 10
)",
                              {"workflow.train=false", "workflow.generate_data=true"});
  EXPECT_EQ(s.model_name, "unet3d");
  // The constant forms of a computation time.
  EXPECT_DOUBLE_EQ(Load("train:\n  computation_time:\n    mean: 0.25\n").computation_time.Mean(), 0.25);
  EXPECT_DOUBLE_EQ(Load("train:\n  computation_time: {mean: 0.5, stdev: 0}\n").computation_time.Mean(), 0.5);
}

TEST(WorkloadSpec, AcceptsAndIgnoresLabels) {
  const WorkloadSpec s = Load(R"(
model:
  name: resnet50
framework: pytorch
workflow:
  profiling: false
  debug: true
dataset:
  format: npz
  record_length_bytes_resize: 150528
reader:
  data_loader: dali
  computation_threads: 8
  dont_use_mmap: true
  pin_memory: false
  multiprocessing_context: spawn
  shuffle_size: 2
  file_access: shared
profiling:
  profiler: darshan
  iostat_devices: [sda]
output:
  log_file: x.log
)");
  EXPECT_EQ(s.data_loader, "dali");
  WorkloadSpec expected;
  expected.model_name = "resnet50";
  expected.format = "npz";
  expected.data_loader = "dali";
  EXPECT_EQ(s, expected);
}

TEST(WorkloadSpec, FormatKeysAndTheirDerivations) {
  // [3, 4, 5] over 3 datasets: each holds (nspf, 4, 5) (DLIO splits the first axis and drops the leading 1).
  WorkloadSpec s = Load("dataset:\n  format: hdf5\n  record_dims: [3, 4, 5]\n  record_element_type: float16\n"
                        "  hdf5:\n    num_dset_per_record: 3\n    max_shape: [8, 5]\n    chunk_dims: [1, 2, 5]\n"
                        "  compression: szip\n");
  EXPECT_EQ(s.record_dims, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(s.SampleShape(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(s.record_element_type, "float16");
  EXPECT_EQ(s.hdf5_num_dset_per_record, 3);
  EXPECT_EQ(s.hdf5_max_shape, (std::vector<int64_t>{8, 5}));
  EXPECT_DOUBLE_EQ(s.record_length_bytes, 3 * 4 * 5 * 2) << "DLIO: prod(record_dims) x element size";
  EXPECT_EQ(*LoadWorkload(ToYaml(s), {}), s);
  EXPECT_EQ(Load("dataset:\n  record_length_bytes: 2048\n").SampleShape(), (std::vector<int64_t>{45, 45}));
  // jpeg/png are uint8 whatever the type says (DLIO resets it too), with a warning.
  std::vector<std::string> warnings;
  auto img = LoadWorkload("dataset:\n  format: jpeg\n  record_element_type: float32\n", {}, "job.yaml", &warnings);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(img->record_element_type, "uint8");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("dataset.record_element_type: jpeg images are uint8"));
}

TEST(WorkloadSpec, KeysDlioIgnoresOrBreaksWarnOneLineEach) {
  auto warn = [](const std::string& yaml) {
    std::vector<std::string> w;
    auto s = LoadWorkload(yaml, {}, "job.yaml", &w);
    EXPECT_TRUE(s.ok()) << s.status();
    for (const std::string& line : w) EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    return w;
  };
  auto chunked = warn("dataset:\n  format: hdf5\n  record_length_bytes: 4096\n  enable_chunking: true\n"
                      "  chunk_size: 1024\n");
  ASSERT_EQ(chunked.size(), 1u);
  EXPECT_THAT(chunked[0], HasSubstr("dataset.enable_chunking: chunks every records dataset by [1, 32, 32]"));
  EXPECT_THAT(chunked[0], HasSubstr("DLIO parses enable_chunking and chunk_size but ignores them"));
  const WorkloadSpec s = Load("dataset:\n  format: hdf5\n  record_length_bytes: 4096\n  enable_chunking: true\n"
                              "  chunk_size: 1024\n");
  EXPECT_EQ(s.Hdf5ChunkDims(), (std::vector<int64_t>{1, 32, 32})) << "DLIO's old (1, ceil(sqrt(chunk_size)), ...)";
  EXPECT_EQ(Load("dataset:\n  format: hdf5\n  record_length_bytes: 100\n  enable_chunking: true\n  chunk_size: "
                 "4096\n").Hdf5ChunkDims(),
            (std::vector<int64_t>{1, 10, 10})) << "at most the sample's extent";
  EXPECT_EQ(Load("dataset:\n  format: hdf5\n  enable_chunking: false\n").Hdf5ChunkDims(), std::vector<int64_t>{});
  auto npz = warn("dataset:\n  format: npz\n  compression: zip\n");
  ASSERT_EQ(npz.size(), 1u);
  EXPECT_THAT(npz[0], HasSubstr("its npz files are never compressed"));
  auto mmap = warn("dataset:\n  format: mmap_indexed_binary\n");
  ASSERT_EQ(mmap.size(), 1u);
  EXPECT_THAT(mmap[0], HasSubstr("DLIO's reader only slices a memmap view"));
  EXPECT_TRUE(warn("dataset:\n  format: hdf5\n  compression: lzf\n").empty());
  EXPECT_TRUE(warn("dataset:\n  format: npz\n  enable_chunking: true\n").empty()) << "inert for npz: no warning";
}

// Every key of the "DLIO differs" policy: one warning line naming the key when set where DLIO's behaviour parts
// from ours, and under --strict that line (and nothing else) is the error.
TEST(WorkloadSpec, EveryDlioDiffersKeyWarnsOnceAndIsAnErrorUnderStrict) {
  struct Case {
    std::string key, yaml, says;
  };
  const std::string ckpt = "workflow:\n  checkpoint: true\n";
  const std::vector<Case> cases = {
      {"model.model_size", "model:\n  model_size: 4096\n", "DLIO reads only model.model_size_bytes"},
      {"checkpoint.model_size", "checkpoint:\n  model_size: 4096\n", "DLIO reads only model.model_size_bytes"},
      {"checkpoint.fsync", ckpt + "checkpoint:\n  fsync: true\n", "never fsynced"},
      {"checkpoint.recovery_rank_shift", ckpt + "checkpoint:\n  recovery_rank_shift: true\n", "misspelled"},
      {"dataset.enable_chunking", "dataset:\n  format: hdf5\n  enable_chunking: true\n  chunk_size: 1024\n",
       "ignores them"},
      {"reader.sample_shuffle", "dataset:\n  format: npz\nreader:\n  sample_shuffle: seed\n",
       "does not change the read order"},
      {"reader.file_shuffle", "dataset:\n  format: npz\nreader:\n  file_shuffle: seed\n", "never changes"},
      {"dataset.record_length_bytes_stdev", "dataset:\n  format: npz\n  record_length_bytes_stdev: 100\n", "0.71x"},
      {"storage.storage_type", "storage:\n  storage_type: parallel_fs\n", "StorageFactory"},
      {"dataset.compression", "dataset:\n  format: npz\n  compression: zip\n", "never compressed"},
      {"dataset.format", "dataset:\n  format: mmap_indexed_binary\n", "memmap view"},
  };
  for (const Case& c : cases) {
    LoadOptions plan;
    plan.plan_only = true;
    LoadDiagnostics d;
    ASSERT_TRUE(LoadWorkload(c.yaml, {}, "job.yaml", plan, &d).ok()) << c.key;
    ASSERT_EQ(d.warnings.size(), 1u) << c.key;
    EXPECT_EQ(d.warnings[0].key, c.key);
    EXPECT_TRUE(absl::StartsWith(d.warnings[0].text, c.key + ": ")) << d.warnings[0].text;
    EXPECT_THAT(d.warnings[0].text, HasSubstr(c.says)) << c.key;
    plan.strict = true;
    absl::StatusOr<WorkloadSpec> strict = LoadWorkload(c.yaml, {}, "job.yaml", plan, nullptr);
    ASSERT_FALSE(strict.ok()) << c.key;
    EXPECT_TRUE(absl::StartsWith(strict.status().message(), c.key + ": ")) << strict.status();
    EXPECT_THAT(std::string(strict.status().message()), HasSubstr("--strict"));
    EXPECT_EQ(std::string(strict.status().message()).find('\n'), std::string::npos);
  }
  // Values where DLIO behaves the same do not warn, so --strict accepts them.
  LoadOptions strict;
  strict.strict = true;
  for (const char* same : {"reader:\n  sample_shuffle: off\n", "dataset:\n  format: tfrecord\nreader:\n  "
                           "sample_shuffle: seed\n  data_loader: tensorflow\n",
                           "storage:\n  storage_type: local_fs\n", "checkpoint:\n  fsync: true\n",
                           "dataset:\n  format: jpeg\n  record_element_type: float32\n"}) {
    EXPECT_TRUE(LoadWorkload(same, {}, "job.yaml", strict, nullptr).ok()) << same;
  }
}

// Issue 25 item 5: DLIO parses checkpoint.type and never reads it; here it is a label (rank_zero or all_ranks) and
// all_ranks warns that it changes nothing (a note, not a "DLIO differs" line: --strict still loads it).
TEST(WorkloadSpec, CheckpointTypeIsALabelThatWarns) {
  LoadDiagnostics diag;
  absl::StatusOr<WorkloadSpec> s =
      LoadWorkload("workflow:\n  checkpoint: true\ncheckpoint:\n  type: all_ranks\n", {}, "job.yaml", {}, &diag);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->checkpoint_type, "all_ranks");
  ASSERT_EQ(diag.warnings.size(), 1u);
  EXPECT_THAT(diag.warnings[0].text, HasSubstr("checkpoint.type: all_ranks is a label"));
  EXPECT_FALSE(diag.warnings[0].dlio_differs);
  LoadOptions strict;
  strict.strict = true;
  EXPECT_TRUE(LoadWorkload("workflow:\n  checkpoint: true\ncheckpoint:\n  type: all_ranks\n", {}, "job.yaml", strict,
                           nullptr).ok());
  diag = {};
  ASSERT_TRUE(LoadWorkload("workflow:\n  checkpoint: true\ncheckpoint:\n  type: rank_zero\n", {}, "job.yaml", {}, &diag)
                  .ok());
  EXPECT_TRUE(diag.warnings.empty());
  EXPECT_EQ(Error("workflow:\n  checkpoint: true\ncheckpoint:\n  type: some_ranks\n").rfind(
                "job.yaml:4: checkpoint.type: ", 0),
            0u);
}

// Issue 25 item 5: DLIO's whole checkpoint model loads: the legacy lists, subset mode with model.parallelism.data,
// randomize_tensor and the KSM keys (labels); bad values are one line naming the key.
TEST(WorkloadSpec, CheckpointModelKeysOfDlioMain) {
  const WorkloadSpec s = Load(R"(
model:
  type: megatron_deepspeed
  optimization_groups: [1009254400, 865075200, 793600]
  layer_parameters: [52583936, 209715200]
  num_layers: 40
  parallelism: {pipeline: 8, tensor: 4, data: 16}
workflow:
  checkpoint: true
checkpoint:
  mode: subset
  randomize_tensor: false
  ksm: {madv_mergeable_id: 12, high_ram_trigger: 30.0, low_ram_exit: 15, await_time: 200}
)");
  EXPECT_EQ(s.optimization_groups, (std::vector<int64_t>{1009254400, 865075200, 793600}));
  EXPECT_EQ(s.layer_parameters, (std::vector<int64_t>{52583936, 209715200}));
  EXPECT_EQ(s.parallelism_data, 16);
  EXPECT_EQ(s.checkpoint_mode, "subset");
  EXPECT_FALSE(s.checkpoint_randomize_tensor);
  EXPECT_TRUE(Load("workflow:\n  checkpoint: true\n").checkpoint_randomize_tensor);  // DLIO's default
  EXPECT_EQ(*LoadWorkload(ToYaml(s), {}), s);
  EXPECT_EQ(Error("workflow:\n  checkpoint: true\ncheckpoint:\n  mode: subset\n"),
            "checkpoint.mode: subset needs model.parallelism.data >= 1 (the data-parallel size of the whole job whose "
            "share this world writes)");
  EXPECT_EQ(Error("checkpoint:\n  mode: partial\n").rfind("job.yaml:2: checkpoint.mode: ", 0), 0u);
  EXPECT_EQ(Error("model:\n  optimization_groups: [1, -2]\n"),
            "job.yaml:2: model.optimization_groups: must be a list of at most 1024 integers in [0, 1125899906842624] "
            "(bytes), got [1, -2]");
  EXPECT_EQ(Error("model:\n  layer_parameters: 5\n").rfind("job.yaml:2: model.layer_parameters: must be a list", 0),
            0u);
  EXPECT_EQ(Error("model:\n  parallelism:\n    data: 0\n"),
            "model.parallelism.data: must be -1 (DP = world / (TP x PP)) or >= 1, got 0");
  EXPECT_EQ(Error("model:\n  parallelism:\n    data: -2\n"),
            "job.yaml:3: model.parallelism.data: must be an integer in [-1, 16777216], got -2");
}

TEST(WorkloadSpec, ModelSizeIsTheModelSizeUnlessModelSizeBytesIsGiven) {
  EXPECT_EQ(Load("model:\n  model_size: 499153191\n").model_size_bytes, 499153191);
  EXPECT_EQ(Load("checkpoint:\n  model_size: 4096\n").model_size_bytes, 4096);
  EXPECT_EQ(Load("model:\n  model_size: 4096\n  model_size_bytes: 8192\n").model_size_bytes, 8192);
  EXPECT_EQ(Error("model:\n  model_size: big\n"), "job.yaml:2: model.model_size: must be an integer in [0, 1125899906842624] (bytes), got 'big'");
}

TEST(WorkloadSpec, PlanOnlyListsWhatARunWouldStopAtAndEveryKeyWithItsPolicy) {
  const std::string yaml =
      "framework: tensorflow\nworkflow:\n  train: false\n  checkpoint: true\nstorage:\n  storage_type: aistore\n"
      "reader:\n  pin_memory: false\ncheckpoint:\n  num_checkpoints_write: 3\n";
  EXPECT_FALSE(LoadWorkload(yaml, {}, "job.yaml").ok());
  LoadOptions plan;
  plan.plan_only = true;
  LoadDiagnostics d;
  ASSERT_TRUE(LoadWorkload(yaml, {}, "job.yaml", plan, &d).ok());
  EXPECT_THAT(d.not_supported, ::testing::ElementsAre(
                                   HasSubstr("storage.storage_type: 'aistore' is a DLIO storage type not supported")));
  std::map<std::string, std::pair<std::string, KeyPolicy>> keys;
  for (const KeyUse& k : d.keys) keys[k.key] = {k.value, k.policy};
  EXPECT_EQ(keys["framework"], std::make_pair(std::string("tensorflow"), KeyPolicy::kLabel));
  EXPECT_EQ(keys["reader.pin_memory"].second, KeyPolicy::kLabel);
  EXPECT_EQ(keys["workflow.checkpoint"].second, KeyPolicy::kImplemented);
  EXPECT_EQ(keys["checkpoint.num_checkpoints_write"].first, "3");
  EXPECT_EQ(keys["workflow.train"].second, KeyPolicy::kImplemented);
}

TEST(WorkloadSpec, FileErrorsAreOneLineNamingTheFile) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkloadFile("/nonexistent/JOB.yaml", {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "/nonexistent/JOB.yaml: cannot read the job file (No such file or directory)");

  const std::string path = ::testing::TempDir() + "/bad_syntax.yaml";
  std::ofstream(path) << "dataset:\n  format: npz\n   num_files_train: 2\n";
  s = LoadWorkloadFile(path, {});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(path + ":3:"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("YAML syntax error"));
  EXPECT_EQ(std::string(s.status().message()).find('\n'), std::string::npos);
}

// Every workload DLIO wrote in the test data either loads or names a DLIO feature this version lacks.
TEST(WorkloadSpec, DlioWorkloadFilesLoadOrSayNotSupportedYet) {
  std::vector<std::string> files;
  for (const char* sub : {"dlio-generated", "dlio-outputs"}) {
    const std::filesystem::path dir = std::filesystem::path(TestData()) / sub;
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " (set DLIO_TESTDATA)";
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (std::filesystem::exists(e.path() / "workload.yaml")) files.push_back((e.path() / "workload.yaml").string());
    }
  }
  ASSERT_GE(files.size(), 10u);
  int loaded = 0;
  for (const std::string& f : files) {
    absl::StatusOr<WorkloadSpec> s = LoadWorkloadFile(f, {});
    if (s.ok()) {
      ++loaded;
      EXPECT_EQ(*LoadWorkload(ToYaml(*s), {}), *s) << f;
    } else {
      EXPECT_THAT(std::string(s.status().message()), HasSubstr("not supported yet")) << f << ": " << s.status();
    }
  }
  EXPECT_GE(loaded, 3);  // npz, hdf5, hdf5_chunked_gzip

  const WorkloadSpec gz = *LoadWorkloadFile(TestData() + "/dlio-generated/hdf5_chunked_gzip/workload.yaml", {});
  EXPECT_EQ(gz.format, "hdf5");
  EXPECT_EQ(gz.hdf5_chunk_dims, (std::vector<int64_t>{1, 32, 32}));
  EXPECT_EQ(gz.compression, "gzip");
  EXPECT_EQ(gz.compression_level, 4);
  EXPECT_EQ(gz.SampleDim(), 128);
  EXPECT_TRUE(gz.generate_data);
  EXPECT_FALSE(gz.train);
}

TEST(WorkloadSpec, ToYamlRoundTrips) {
  EXPECT_EQ(*LoadWorkload(ToYaml(WorkloadSpec{}), {}), WorkloadSpec{});
  WorkloadSpec s;
  s.model_name = "name: with \"quotes\", colons and ünïcode";
  s.framework = "tensorflow";
  s.generate_data = true;
  s.train = true;
  s.data_folder = "/data/with space/#hash";
  s.format = "hdf5";
  s.num_files_train = 1024;
  s.num_samples_per_file = 1251;
  s.record_length_bytes = 114660.07;
  s.record_length_bytes_stdev = 0.1;
  s.num_subfolders_train = 3;
  s.file_prefix = "off";
  s.hdf5_chunk_dims = {1, 16, 16};
  s.compression = "gzip";
  s.compression_level = 9;
  s.data_loader = "dali";
  s.batch_size = 400;
  s.read_threads = 0;
  s.prefetch_size = 7;
  s.file_shuffle = ShuffleMode::kRandom;
  s.sample_shuffle = ShuffleMode::kSeed;
  s.transfer_size = 4096;
  s.epochs = 3;
  s.computation_time.kind = Distribution::Kind::kGamma;
  s.computation_time.a = 1.0 / 3.0;
  s.computation_time.b = 0.125;
  s.preprocess_time.a = 0.001;
  s.preprocess_time.extra_stdev = 0.0002;
  s.seed = 987654321;
  s.seed_change_epoch = false;
  s.total_training_steps = 12;
  s.output_folder = "results/x";
  s.exclude_start_steps = 0;
  s.exclude_end_steps = 2;
  s.au_threshold = 0.7;
  const std::string yaml = ToYaml(s);
  absl::StatusOr<WorkloadSpec> back = LoadWorkload(yaml, {});
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(*back, s) << yaml;
  EXPECT_EQ(ToYaml(*back), yaml);
  EXPECT_NE(s, WorkloadSpec{});
}

TEST(WorkloadSpec, SampleDimIsDliosFloorSqrt) {
  WorkloadSpec s;
  for (auto [len, dim] : std::vector<std::pair<double, int64_t>>{
           {2048, 45}, {4096, 64}, {16384, 128}, {65536, 256}, {114660.07, 338}, {1, 1}, {3, 1}, {146600628, 12107}}) {
    s.record_length_bytes = len;
    EXPECT_EQ(s.SampleDim(), dim) << len;
  }
}

std::string SourceDir() { return DLIO_SOURCE_DIR; }

// docs/workload-keys.md is KeyReferenceMarkdown(); DLIO_UPDATE_DOCS=1 rewrites it.
TEST(WorkloadKeysDoc, MatchesTheKeyTable) {
  const std::string path = SourceDir() + "/docs/workload-keys.md";
  const std::string md = KeyReferenceMarkdown();
  if (const char* u = std::getenv("DLIO_UPDATE_DOCS"); u != nullptr && std::string(u) == "1") {
    std::ofstream(path) << md;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), md) << path << " is stale; regenerate: DLIO_UPDATE_DOCS=1 job_test "
                            << "--gtest_filter='WorkloadKeysDoc.*'";
}

// Every key in the reference accepts the default it documents.
TEST(WorkloadKeysDoc, EveryKeyAcceptsItsDocumentedDefault) {
  int rows = 0;
  for (absl::string_view line : absl::StrSplit(KeyReferenceMarkdown(), '\n')) {
    if (!absl::StartsWith(line, "| `")) continue;
    std::vector<std::string> cells = absl::StrSplit(line, " | ");
    ASSERT_GE(cells.size(), 3u) << line;
    const std::string key = cells[0].substr(3, cells[0].size() - 4);
    const std::string def = cells[1].substr(1, cells[1].size() - 2);
    absl::StatusOr<WorkloadSpec> s = LoadWorkload("", {key + "=" + def});
    EXPECT_TRUE(s.ok()) << key << "=" << def << ": " << s.status();
    ++rows;
  }
  EXPECT_GE(rows, 90);
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

TEST(SampleDimForFile, StdevAppliesToTheByteSizeAndIsReproducible) {
  WorkloadSpec s;
  s.record_length_bytes = 65536;
  s.record_length_bytes_stdev = 8192;
  double sum = 0, sum2 = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const double bytes = static_cast<double>(s.SampleDimForFile(i) * s.SampleDimForFile(i));
    sum += bytes;
    sum2 += bytes * bytes;
    EXPECT_EQ(s.SampleDimForFile(i), s.SampleDimForFile(i));
  }
  const double mean = sum / n, stdev = std::sqrt(sum2 / n - mean * mean);
  // floor(sqrt()) loses up to 2*sqrt(L) bytes, about 0.8 % of L here.
  EXPECT_NEAR(mean, 65536, 0.02 * 65536);
  EXPECT_NEAR(stdev, 8192, 0.10 * 8192);  // DLIO would realise about 0.71 x 8192
}

TEST(SampleDimForFile, NoStdevIsTheFixedSide) {
  WorkloadSpec s;
  s.record_length_bytes = 2048;
  EXPECT_EQ(s.SampleDimForFile(7), 45);
}

TEST(IoEngineKeys, EngineChoiceAndDliosOdirect) {
  EXPECT_EQ(Load("train:\n  epochs: 1\n").io_engine, "posix");
  EXPECT_EQ(Load("dlio_ext:\n  io_engine: io_uring\n").io_engine, "io_uring");
  EXPECT_EQ(Load("", {"dlio_ext.io_engine=odirect"}).io_engine, "odirect");
  // DLIO's reader.odirect: true means the odirect engine, alone or with the same engine given.
  const WorkloadSpec o = Load("reader:\n  odirect: true\n");
  EXPECT_TRUE(o.odirect);
  EXPECT_EQ(o.io_engine, "odirect");
  EXPECT_EQ(Load("data_reader:\n  odirect: true\ndlio_ext:\n  io_engine: odirect\n").io_engine, "odirect");
  EXPECT_EQ(Load("reader:\n  odirect: false\ndlio_ext:\n  io_engine: io_uring\n").io_engine, "io_uring");
  // A contradiction names both keys as written.
  EXPECT_EQ(Error("data_reader:\n  odirect: true\ndlio_ext:\n  io_engine: posix\n"),
            "job.yaml:2: data_reader.odirect: true contradicts dlio_ext.io_engine: posix (give one of them)");
  EXPECT_EQ(Error("reader:\n  odirect: true\n", {"dlio_ext.io_engine=io_uring"}),
            "job.yaml:2: reader.odirect: true contradicts dlio_ext.io_engine: io_uring (give one of them)");
  EXPECT_EQ(Load("dlio_ext:\n  io_engine: mmap\n").io_engine, "mmap");
  EXPECT_EQ(Error("dlio_ext:\n  io_engine: aio\n"),
            "job.yaml:2: dlio_ext.io_engine: must be one of posix, odirect, io_uring, mmap, got 'aio'");
  EXPECT_EQ(Error("dlio_ext:\n  io_engne: posix\n"), "job.yaml:2: dlio_ext.io_engne: unknown key (did you mean dlio_ext.io_engine?)");
  EXPECT_EQ(Error("dataset:\n  format: hdf5\nreader:\n  odirect: true\n"),
            "dlio_ext.io_engine: odirect is not available for hdf5 (libhdf5 does its own reads; use posix)");
  // Round trip keeps the engine (and DLIO's key beside it).
  for (const char* y : {"dlio_ext:\n  io_engine: io_uring\n", "reader:\n  odirect: true\n"}) {
    const WorkloadSpec s = Load(y);
    EXPECT_EQ(Load(ToYaml(s)), s) << ToYaml(s);
  }
}

// Issue 13 (D7-D10 and the lower items): every numeric key has a range checked at load time, text must be clean
// UTF-8, the job file a small regular file with one non-empty document; each error is one line naming the key.
TEST(WorkloadSpecLimits, HugeAndOverflowingValuesAreOneLineErrorsNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dataset:\n  record_length_bytes: 1e300\n", "dataset.record_length_bytes: must be a number in (0, 17179869184]"},
      {"dataset:\n  record_length_bytes: 18446744073709551616\n", "dataset.record_length_bytes: must be"},
      {"dataset:\n  record_dims: [4294967296, 4294967296]\n", "dataset.record_dims: must be a list of integers"},
      {"dataset:\n  record_dims: [2147483647, 2147483647]\n", "dataset.record_dims: [2147483647, 2147483647] uint8"},
      {"dataset:\n  record_length_bytes_stdev: 1e18\n", "dataset.record_length_bytes_stdev: must be a number in"},
      {"reader:\n  read_threads: 100000\n", "reader.read_threads: must be an integer in [0, 256], got 100000"},
      {"dlio_ext:\n  trace_events_per_thread: 1000000000000\n", "dlio_ext.trace_events_per_thread: must be an integer in [1, 1048576]"},
      {"train:\n  computation_time: 1e300\n", "train.computation_time: must be a number of seconds in [0, 86400]"},
      {"train:\n  computation_time: {mean: -1, stdev: 0.1}\n", "train.computation_time: mean must be a number >= 0"},
      {"train:\n  computation_time: {type: gamma, shape: 80000, scale: 80000}\n",
       "train.computation_time: the mean 6400000000 s is more than 86400 s"},
      {"train:\n  epochs: 9223372036854775807\n", "train.epochs: must be an integer in [1, 100000]"},
      {"train:\n  seed: 4294967296\n", "train.seed: must be an integer in [0, 4294967295]"},
      {"dataset:\n  num_files_train: 4\n  num_samples_per_file: 4294967296\n",
       "dataset.num_samples_per_file: 4294967296 samples per file x 4 files"},
      {"dataset:\n  num_samples_per_file: 4294967297\n", "dataset.num_samples_per_file: must be an integer in [1, 4294967296]"},
      {"dataset:\n  num_files_train: 1\n  num_samples_per_file: 100000\n  record_length_bytes: 17179869184\n",
       "dataset.num_samples_per_file: 100000 samples of 17179869184 bytes"},
      {"dlio_ext:\n  read_bandwidth_limit: 1e300\n", "dlio_ext.read_bandwidth_limit: must be a rate of at most"},
      {"model:\n  model_size_bytes: 9223372036854775807\n", "model.model_size_bytes: must be an integer in [0, 1125899906842624]"},
      {"model:\n  transformer:\n    hidden_size: 4294967296\n", "model.transformer.hidden_size: must be an integer in"},
      {"checkpoint:\n  time_between_checkpoints: .inf\n", "checkpoint.time_between_checkpoints: must be a number in"},
      {"reader:\n  transfer_size: 4294967296\n", "reader.transfer_size: must be an integer in [1, 1073741824]"},
  };
  for (const auto& [yaml, want] : cases) {
    const std::string e = Error(yaml);
    EXPECT_THAT(e, HasSubstr(want)) << yaml;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(WorkloadSpecLimits, TextMustBeCleanUtf8AndFilePrefixAName) {
  EXPECT_THAT(Error("model:\n  name: \"t\xff\"\n"), HasSubstr("job.yaml: not valid UTF-8 text"));
  EXPECT_THAT(Error("model:\n  name: \"a\\nb\"\n"), HasSubstr("model.name: must be text without control characters"));
  EXPECT_THAT(Error("dataset:\n  data_folder: \"a\\0b\"\n"), HasSubstr("dataset.data_folder: must be text without"));
  for (const char* prefix : {"../../../../x", "a/b", "..", "."}) {
    EXPECT_THAT(Error(std::string("dataset:\n  file_prefix: \"") + prefix + "\"\n"),
                HasSubstr("dataset.file_prefix: must be a file name prefix without '/'"))
        << prefix;
  }
  EXPECT_THAT(Error("train:\n  epochs: 1\n", {"dataset.file_prefix=../x"}), HasSubstr("dataset.file_prefix: must be"));
  // A key or value holding a newline still gives one line (escaped).
  const std::string e = Error("\"evil\\nkey\": 1\n");
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_THAT(e, HasSubstr("evil\\nkey: unknown key"));
  EXPECT_THAT(Error("train:\n  epochs: 1\n", {std::string("model.name=a\x01")}), HasSubstr("override: must be text"));
}

// Issue 24 item 7e: a data_folder with U+202E (RIGHT-TO-LEFT OVERRIDE) was accepted and printed as another folder.
// Every path and name key refuses Unicode format characters (category Cf), shown escaped, written raw or escaped.
TEST(WorkloadSpecLimits, PathAndNameKeysRefuseUnicodeFormatCharacters) {
  EXPECT_EQ(Error("dataset:\n  data_folder: \"data\\u202etxt.npz\"\n"),
            "job.yaml:2: dataset.data_folder: must be text without Unicode format characters (bidi controls such as U+202E, "
            "zero-width characters: category Cf), got 'data\\u202etxt.npz' (U+202E at byte 4)");
  for (const char* key : {"dataset.data_folder", "checkpoint.checkpoint_folder", "output.folder", "dataset.file_prefix",
                          "model.name", "storage.storage_root", "model.type"}) {
    for (const char* ch : {"\xe2\x80\xae", "\xe2\x80\x8b", "\xef\xbb\xbf", "\xc2\xad", "\xe2\x81\xa6",
                           "\xf3\xa0\x80\x81"}) {
      EXPECT_THAT(Error("train:\n  epochs: 1\n", {std::string(key) + "=a" + ch + "b"}),
                  HasSubstr(std::string(key) + ": must be text without Unicode format characters"))
          << key;
    }
  }
  // Other non-ASCII text stays welcome.
  EXPECT_TRUE(LoadWorkload("model:\n  name: \"résnet-ünïcode ✓ 模型\"\n", {}).ok());
  EXPECT_TRUE(workload_internal::IsFormatCharacter(0x202E));
  EXPECT_TRUE(workload_internal::IsFormatCharacter(0xE007F));
  EXPECT_FALSE(workload_internal::IsFormatCharacter(0x202F));
  EXPECT_FALSE(workload_internal::IsFormatCharacter('a'));
}

// Issue 24 item 7a: caps below 1 B/s were stored as int64_t 0, which means no cap at all.
TEST(WorkloadSpecLimits, BandwidthCapsBelowOneBytePerSecondAreRefused) {
  for (const char* key : {"read_bandwidth_limit", "checkpoint_bandwidth_limit"}) {
    for (const auto& [v, shown] : std::vector<std::pair<std::string, std::string>>{
             {"0.001", "0.001"}, {"1e-9", "1e-9"}, {"0.5B/s", "'0.5B/s'"}, {"0.0001KB", "'0.0001KB'"}}) {
      EXPECT_EQ(Error(std::string("dlio_ext:\n  ") + key + ": " + v + "\n"),
                std::string("job.yaml:2: dlio_ext.") + key + ": must be 0 (no cap) or a rate of at least 1 byte/s (e.g. 200MiB/s), "
                                                 "got " + shown)
          << v;
    }
    absl::StatusOr<WorkloadSpec> none = LoadWorkload(std::string("dlio_ext:\n  ") + key + ": 0\n", {});
    ASSERT_TRUE(none.ok()) << none.status();
    absl::StatusOr<WorkloadSpec> one = LoadWorkload(std::string("dlio_ext:\n  ") + key + ": 1B/s\n", {});
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(none->read_bandwidth_limit + none->checkpoint_bandwidth_limit, 0);
    EXPECT_EQ(one->read_bandwidth_limit + one->checkpoint_bandwidth_limit, 1);
  }
}

TEST(WorkloadSpecLimits, EmptyAndMultiDocumentJobsAreRefused) {
  for (const char* yaml : {"", "\n# only a comment\n", "workload:\n", "{}\n"}) {
    EXPECT_THAT(Error(yaml), HasSubstr("job.yaml: the workload is empty")) << yaml;
  }
  EXPECT_THAT(Error("train:\n  epochs: 1\n---\ntrain:\n  epochs: 2\n"), HasSubstr("job.yaml: holds more than one YAML document"));
  EXPECT_TRUE(LoadWorkload("---\ntrain:\n  epochs: 2\n", {}).ok());
  // fuzz_workload's find: yaml-cpp's LoadAll never returned on this (a stray comma, then a mapping).
  const absl::StatusOr<WorkloadSpec> comma = LoadWorkload(", x\n# c\n  num_files_train: 1\nreader:\n  batch_size: 4\n", {});
  EXPECT_FALSE(comma.ok());
  EXPECT_TRUE(LoadWorkload("", {"train.epochs=2"}).ok()) << "overrides alone are a job";
}

TEST(WorkloadSpecLimits, JobFileMustBeASmallRegularUtf8File) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "dlio-jobfile-limits";
  fs::create_directories(dir);
  auto err = [](const std::string& path) {
    absl::StatusOr<std::string> t = ReadWorkloadFile(path);
    return t.ok() ? std::string("<read>") : std::string(t.status().message());
  };
  EXPECT_THAT(err(dir.string()), HasSubstr("is a directory; a job file must be a regular file"));
  EXPECT_THAT(err("/dev/zero"), HasSubstr("is a character device"));
  const std::string fifo = (dir / "fifo").string();
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(err(fifo), HasSubstr("is a FIFO")) << "must not block";
  const std::string big = (dir / "big.yaml").string();
  std::ofstream(big) << "train:\n  epochs: 1\n" << std::string(kMaxWorkloadBytes, '#');
  EXPECT_THAT(err(big), HasSubstr("a job file may have at most 1048576 bytes"));
  const std::string latin1 = (dir / "latin1.yaml").string();
  std::ofstream(latin1) << "model:\n  name: caf\xe9\n";
  EXPECT_THAT(err(latin1), HasSubstr("not valid UTF-8"));
  EXPECT_THAT(Error(std::string(kMaxWorkloadBytes + 1, '#')), HasSubstr("a job file may have at most"));
  fs::remove_all(dir);
}

TEST(WorkloadSpecLimits, AnAgentRunsAtMost4096LoaderThreads) {
  WorkloadSpec s;
  s.read_threads = 256;
  EXPECT_TRUE(CheckAgentThreads(s, 16).ok());
  const absl::Status st = CheckAgentThreads(s, 17);
  EXPECT_THAT(std::string(st.message()), HasSubstr("reader.read_threads: 256 loader threads x 17 ranks"));
}

// The MLCommons fork's keys (issue 27 item 5): storage_library a label of three values, uri_scheme s3 only (the
// fork's other schemes refused by name), post_generation_settle_seconds, skip_listing and its validation interval;
// each survives ToYaml, each bad value is one line naming the key and what is allowed.
TEST(WorkloadSpecStorage, TheForksObjectStorageKeysLoadAndBadValuesNameTheKey) {
  const std::string base = "storage:\n  storage_type: s3\n  storage_root: my-bucket\n";
  WorkloadSpec s = Load(base + "  storage_library: s3dlio\n  post_generation_settle_seconds: 2.5\n"
                               "  storage_options:\n    uri_scheme: s3\n    secure: false\n"
                               "dataset:\n  skip_listing: true\n  listing_validation_interval: 50\n");
  EXPECT_EQ(s.storage_library, "s3dlio");
  EXPECT_EQ(s.s3_uri_scheme, "s3");
  EXPECT_EQ(s.post_generation_settle_seconds, 2.5);
  EXPECT_EQ(s.skip_listing, 1);
  EXPECT_EQ(s.listing_validation_interval, 50);
  EXPECT_TRUE(s.SkipsListing(8));
  absl::StatusOr<WorkloadSpec> again = LoadWorkload(ToYaml(s), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again == s);
  // Unset: by the split's size.
  WorkloadSpec d = Load(base);
  EXPECT_EQ(d.skip_listing, -1);
  EXPECT_FALSE(d.SkipsListing(kSkipListingAutoFiles - 1));
  EXPECT_TRUE(d.SkipsListing(kSkipListingAutoFiles));
  EXPECT_FALSE(Load(base + "dataset:\n  skip_listing: false\n").SkipsListing(kSkipListingAutoFiles));
  EXPECT_EQ(Error(base + "  storage_library: boto3\n").rfind("job.yaml:4: storage.storage_library: ", 0), 0u)
      << Error(base + "  storage_library: boto3\n");
  EXPECT_THAT(Error(base + "  storage_library: boto3\n"), HasSubstr("s3torchconnector, minio, s3dlio"));
  EXPECT_THAT(Error(base + "  storage_options:\n    uri_scheme: az\n"),
              HasSubstr("storage.storage_options.uri_scheme: 'az'"));
  EXPECT_THAT(Error(base + "  storage_options:\n    uri_scheme: ftp\n"),
              HasSubstr("storage.storage_options.uri_scheme"));
  EXPECT_THAT(Error(base + "  post_generation_settle_seconds: -1\n"),
              HasSubstr("storage.post_generation_settle_seconds: must be"));
  EXPECT_THAT(Error(base + "dataset:\n  skip_listing: maybe\n"),
              HasSubstr("dataset.skip_listing: must be true, false or null (null: by the dataset's size)"));
  EXPECT_THAT(Error(base + "dataset:\n  listing_validation_interval: -2\n"),
              HasSubstr("dataset.listing_validation_interval: must be an integer in [0, "));
}

// Issue 27 item 1: endpoint_url takes a list of endpoints (or the fork's comma-separated string); several are
// written back as a list; dlio_ext.s3_endpoint_policy takes round_robin (the default), per_agent, per_request; bad
// values name the key and what is allowed.
TEST(WorkloadSpecStorage, EndpointListsAndThePolicyLoadAndBadValuesNameTheKey) {
  const std::string base = "storage:\n  storage_type: s3\n  storage_root: my-bucket\n";
  WorkloadSpec s = Load(base + "  storage_options:\n    endpoint_url:\n      - http://a:1\n      - http://b:2\n"
                               "dlio_ext:\n  s3_endpoint_policy: per_request\n");
  EXPECT_EQ(s.s3_endpoint_url, "http://a:1,http://b:2");
  EXPECT_EQ(s.s3_endpoint_policy, "per_request");
  const std::string yaml = ToYaml(s);
  EXPECT_NE(yaml.find("endpoint_url: [\"http://a:1\", \"http://b:2\"]"), std::string::npos) << yaml;
  absl::StatusOr<WorkloadSpec> again = LoadWorkload(yaml, {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again == s);
  EXPECT_EQ(Load(base + "  storage_options:\n    endpoint_url: 'http://a:1, http://b:2'\n").s3_endpoint_url,
            "http://a:1,http://b:2");
  EXPECT_EQ(Load(base).s3_endpoint_policy, "round_robin");
  EXPECT_EQ(Load(base + "  storage_options:\n    endpoint_url: http://a:1\n").s3_endpoint_url, "http://a:1");
  EXPECT_EQ(Error(base + "  storage_options:\n    endpoint_url: [http://a:1, ftp://b]\n"),
            "storage.storage_options.endpoint_url: 'ftp://b' must start with http:// or https://");
  EXPECT_THAT(Error(base + "  storage_options:\n    endpoint_url: {a: 1}\n"),
              HasSubstr("storage.storage_options.endpoint_url: must be an http(s):// endpoint or a list of them"));
  EXPECT_THAT(Error(base + "dlio_ext:\n  s3_endpoint_policy: random\n"),
              HasSubstr("dlio_ext.s3_endpoint_policy: "));
  EXPECT_THAT(Error(base + "dlio_ext:\n  s3_endpoint_policy: random\n"),
              HasSubstr("round_robin, per_agent, per_request"));
}

// Object storage keys (docs/object-storage.md): the bucket, an s3:// data folder, the secret kept out of ToYaml and
// shown as *** by the key list, and each bad value refused naming its key.
TEST(WorkloadSpecStorage, S3KeysLoadValidateAndKeepTheSecretOut) {
  const std::string base = "storage:\n  storage_type: s3\n  storage_root: my-bucket\n";
  WorkloadSpec s = Load(base + "  storage_options:\n    endpoint_url: http://h:1\n    access_key_id: AKID\n"
                               "    secret_access_key: SeCrEt\n    s3_max_attempts: 3\n"
                               "dataset:\n  data_folder: ./data/x/\n");
  EXPECT_TRUE(s.IsS3());
  EXPECT_EQ(s.storage_root, "my-bucket");
  EXPECT_EQ(s.S3DataPrefix(), "data/x");
  EXPECT_EQ(s.s3_secret_access_key, "SeCrEt");
  EXPECT_EQ(s.s3_max_attempts, 3);
  const std::string yaml = ToYaml(s);
  EXPECT_EQ(yaml.find("SeCrEt"), std::string::npos) << yaml;
  absl::StatusOr<WorkloadSpec> again = LoadWorkload(yaml, {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again == s);  // the secret is not part of the comparison either
  EXPECT_TRUE(again->s3_secret_access_key.empty());

  LoadOptions plan;
  plan.plan_only = true;
  LoadDiagnostics d;
  ASSERT_TRUE(LoadWorkload(base + "  storage_options:\n    secret_access_key: SeCrEt\n", {}, "j", plan, &d).ok());
  for (const KeyUse& k : d.keys) {
    EXPECT_EQ(k.value.find("SeCrEt"), std::string::npos) << k.key;
    if (k.key == "storage.storage_options.secret_access_key") {
      EXPECT_EQ(k.value, "'***'");
    }
  }

  // The bucket from an s3:// data folder; a different one is refused.
  WorkloadSpec u = Load("storage:\n  storage_type: s3\ndataset:\n  data_folder: s3://bkt-1/a/b/\n");
  EXPECT_EQ(u.storage_root, "bkt-1");
  EXPECT_EQ(u.S3DataPrefix(), "a/b");
  EXPECT_EQ(Error(base + "dataset:\n  data_folder: s3://other/a\n"),
            "dataset.data_folder: 's3://other/a' names bucket 'other', storage.storage_root is 'my-bucket' (one bucket "
            "per job)");
  EXPECT_EQ(Error("storage:\n  storage_type: s3\n  storage_root: ab\n").rfind("storage.storage_root: 'ab' is not a "
                                                                              "bucket name", 0),
            0u);
  EXPECT_EQ(Error("dataset:\n  data_folder: s3://bkt/x\n"),
            "dataset.data_folder: 's3://bkt/x' is an s3:// URL; set storage.storage_type: s3 to read objects");
  EXPECT_EQ(Error(base + "  storage_options:\n    endpoint_url: ftp://h\n"),
            "storage.storage_options.endpoint_url: 'ftp://h' must start with http:// or https://");
  EXPECT_EQ(Error(base + "  storage_options:\n    s3_max_attempts: 0\n"),
            "job.yaml:5: storage.storage_options.s3_max_attempts: must be an integer in [1, 100], got 0");
  EXPECT_EQ(Error(base + "  storage_options:\n    acces_key_id: x\n"),
            "job.yaml:5: storage.storage_options.acces_key_id: unknown key (did you mean storage.storage_options.access_key_id?)");
  EXPECT_EQ(Error(base + "dataset:\n  format: mmap_indexed_binary\n").rfind("dataset.format: mmap_indexed_binary", 0),
            0u);
  EXPECT_EQ(Error(base + "dlio_ext:\n  io_engine: io_uring\n").rfind("dlio_ext.io_engine: io_uring reads local", 0),
            0u);
  EXPECT_EQ(Error(base + "dlio_ext:\n  evict_cache: every_epoch\n").rfind("dlio_ext.evict_cache: there is no", 0), 0u);
  EXPECT_EQ(Error("storage:\n  storage_root: some/prefix\n").rfind("storage.storage_root: 'some/prefix' for local_fs", 0),
            0u);
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

// dlio_ext.hdf5_engine (issue 31): replay by default, libhdf5 on request, anything else refused naming the key
// and the allowed values; written back by ToYaml (the results' provenance carries the job's YAML).
TEST(Hdf5EngineKey, ReplayByDefaultLibhdf5OnRequestAndABadValueNamed) {
  EXPECT_EQ(Load("train:\n  epochs: 1\n").hdf5_engine, "replay");
  EXPECT_EQ(Load("dlio_ext:\n  hdf5_engine: libhdf5\n").hdf5_engine, "libhdf5");
  EXPECT_EQ(Load("", {"dlio_ext.hdf5_engine=libhdf5"}).hdf5_engine, "libhdf5");
  const std::string e = Error("dlio_ext:\n  hdf5_engine: h5py\n");
  EXPECT_NE(e.find("dlio_ext.hdf5_engine"), std::string::npos) << e;
  EXPECT_NE(e.find("replay"), std::string::npos) << e;
  EXPECT_NE(e.find("libhdf5"), std::string::npos) << e;
  EXPECT_NE(ToYaml(Load("dlio_ext:\n  hdf5_engine: libhdf5\n")).find("hdf5_engine: \"libhdf5\""), std::string::npos);
  EXPECT_NE(ToYaml(Load("train:\n  epochs: 1\n")).find("hdf5_engine: \"replay\""), std::string::npos);
}

}  // namespace
}  // namespace dlio
