// Issue 13's and issue 24's fault and bad-input probes, kept as tests with real processes:
//  - Corpus: 385+ bad workloads (every integer, number, rate, enum and boolean key below and above its range and of
//    the wrong type; overflow, distributions, paths, symbolic links, encodings and Unicode format characters, special
//    files, sizes; bandwidth caps below 1 B/s, an output folder holding the job file, --host-memory out of range,
//    files of another layout, checkpoint and plan sizes), each run through `run --explain` and `run`: exit 2 and one
//    line naming the key for everything that can be judged before anything runs, exit 1 naming the key and the agent
//    for what only an agent can judge (a folder below its --data-root that is a link or outside it, files of mixed
//    layouts in the data folder); no run hangs, and nothing appears outside the
//    sandbox's data root and results folder. A few cases are good input beside bad (a 100 MiB checkpoint, a data
//    folder with files of another layout): they must run (exit 0).
//  - Flags: --host-memory is a bounded size in both binaries.
//  - Raw gRPC against a token-protected coordinator: a huge message without the token is refused before it is
//    buffered (the coordinator's memory does not grow), messages above the receive limit are refused, a job name of
//    megabytes is refused, a Hello with a newline in its name or 2^31-1 accelerators is refused naming the field,
//    and an "agent" reporting rank 2^32-1 fails its job naming it, without a "-1_output.json".
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/convert.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool Contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct Case {
  Case(std::string n, std::string y, std::string k, int e = 2, int r = 2, std::vector<std::string> o = {},
       std::function<std::string(const fs::path&)> j = {}, std::function<void(const fs::path&)> s = {})
      : name(std::move(n)), yaml(std::move(y)), key(std::move(k)), explain_rc(e), run_rc(r), overrides(std::move(o)),
        job(std::move(j)), setup(std::move(s)) {}
  std::string name;
  std::string yaml;                       // the job file's text (unless `job` names another file)
  std::string key;                        // what the error line must name
  int explain_rc = 2;                     // run --explain
  int run_rc = 2;                         // run (1: the agent refuses; the job fails)
  std::vector<std::string> overrides;
  std::function<std::string(const fs::path& sandbox)> job;  // the job path to pass (special files); empty = job.yaml
  std::function<void(const fs::path& root)> setup;           // prepares the data root (links)
  // Refused by the plan (plan/preflight.h), not by the loader: --explain prints the plan with the refusal (on
  // stdout), `run` the refusal and a last line naming the fleet (on stderr).
  bool plan_refusal = false;
};

// A valid job around one bad value: `section.key: value` in block style under a top-level key that no case sets.
std::string With(const std::string& dotted, const std::string& value) {
  std::string yaml = "framework: pytorch\n";
  std::string indent;
  size_t start = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
    yaml += indent + dotted.substr(start, dot - start) + ":\n";
    indent += "  ";
    start = dot + 1;
  }
  return yaml + indent + dotted.substr(start) + ": " + value + "\n";
}

// Issue 24 item 7: every number (float, size, rate) key below and above its range and of the wrong type, and every
// enum and boolean key with values it does not take.
void AddNumberAndChoiceCases(std::vector<Case>& c) {
  struct NumberKey {
    const char* key;
    const char* below;
    const char* above;
  };
  const NumberKey numbers[] = {
      {"dataset.record_length_bytes", "0", "17179869185"},
      {"dataset.record_length_bytes_stdev", "-0.5", "17179869185"},
      {"reader.preprocess_time_stdev", "-0.5", "86401"},
      {"train.computation_time_stdev", "-0.5", "86401"},
      {"evaluation.eval_time_stdev", "-1e-9", "86400.5"},
      {"checkpoint.time_between_checkpoints", "-1.5", "86401"},
      {"metric.au", "-0.01", "1.01"},
      {"dlio_ext.read_bandwidth_limit", "-1", "2e15"},
      {"dlio_ext.checkpoint_bandwidth_limit", "-1", "2PB/s"},
  };
  for (const NumberKey& k : numbers) {
    for (const char* v : {k.below, k.above, "abc", "[1]", "{a: 1}", ".nan", ".inf", "true"}) {
      c.push_back({std::string(k.key) + " = " + v, With(k.key, v), k.key});
    }
  }
  const char* choices[] = {"model.model_datatype", "model.optimizer_datatype", "framework", "storage.storage_type",
                           "dataset.format", "dataset.record_element_type", "dataset.compression",
                           "reader.data_loader", "reader.file_shuffle", "reader.sample_shuffle", "reader.read_type",
                           "dlio_ext.io_engine", "dlio_ext.evict_cache"};
  for (const char* k : choices) {
    for (const char* v : {"nope", "[x]", "{a: 1}", """"}) c.push_back({std::string(k) + " = " + v, With(k, v), k});
  }
  const char* bools[] = {"workflow.generate_data", "workflow.train", "workflow.evaluation", "workflow.checkpoint",
                         "storage.storage_options.s3_force_path_style", "reader.odirect", "train.seed_change_epoch",
                         "dlio_ext.checkpoint_evict_cache", "dlio_ext.trace"};
  for (const char* k : bools) {
    for (const char* v : {"maybe", "2", "[true]"}) c.push_back({std::string(k) + " = " + v, With(k, v), k});
  }
}

// Issue 24's own items: bandwidth caps below 1 B/s (item 7a), an output folder holding the job file (7b),
// --host-memory out of range (7c), files of another layout (7d), Unicode format characters in names (7e), and the
// checkpoint and plan sizes of items 2 and 4.
void AddIssue24Cases(std::vector<Case>& c) {
  for (const char* key : {"dlio_ext.read_bandwidth_limit", "dlio_ext.checkpoint_bandwidth_limit"}) {
    for (const char* v : {"0.001", "1e-9", "0.5B/s", "0.9", "1e-300", "0.0001KB"}) {
      c.push_back({std::string(key) + " below 1 B/s: " + v, With(key, v), key});
    }
  }
  const std::string runnable = "dataset:\n  format: npz\n  num_files_train: 1\n  record_length_bytes: 1024\n";
  for (const char* folder : {".", "./", "sub/..", "./."}) {
    c.push_back({std::string("output.folder ") + folder + " holds job.yaml",
                 runnable + "output:\n  folder: \"" + folder + "\"\n", "output.folder"});
  }
  c.push_back({"--output . holds job.yaml", runnable, "--output", 2, 2, {"--output", "."}});
  c.push_back({"job file summary.json in output.folder", "", "output.folder", 2, 2, {}, [runnable](const fs::path& s) {
                 std::ofstream(s / "summary.json") << runnable << "output:\n  folder: .\n";
                 return (s / "summary.json").string();
               }});
  c.push_back({"--trace is the job file", runnable, "--trace", 2, 2, {"--trace", "job.yaml"}});
  c.push_back({"--trace is the job file through sub/..", runnable, "--trace", 2, 2, {"--trace", "sub/../job.yaml"}});
  c.push_back({"--output sub/.. holds job.yaml", runnable, "--output", 2, 2, {"--output", "new/../"}});
  for (const char* v : {"-1", "-5GiB", "18446744073709551616", "18446744073709551615", "2PiB", "1e30", "abc", "1.5"}) {
    c.push_back({std::string("--host-memory ") + v, runnable, "--host-memory", 2, 2, {"--host-memory", v}});
  }
  // 7d: a data folder that also holds 8 files of another layout.
  auto other_layout = [](const fs::path& root) {
    fs::create_directories(root / "data" / "train");
    for (int i = 0; i < 8; ++i) std::ofstream(root / "data" / "train" / ("img_" + std::to_string(i) + "_of_8.npz")) << "x";
    std::ofstream(root / "data" / "train" / "img_0_of_3.npz") << "x";
  };
  c.push_back({"another layout beside the generated one",
               "workflow:\n  generate_data: true\ndataset:\n  format: npz\n  num_files_train: 4\n"
               "  record_length_bytes: 1024\n  data_folder: data\nmetric:\n  au: 0\n",
               "", 0, 0, {}, {}, other_layout});
  c.push_back({"two layouts, none the job's",
               "dataset:\n  format: npz\n  num_files_train: 2\n  record_length_bytes: 1024\n  data_folder: data\n",
               "dataset.num_files_train: the data files under", 0, 1, {}, {}, other_layout});
  // 7e: Unicode format characters (category Cf) in every path and name key, as YAML escapes and as raw UTF-8.
  const char* cf[] = {"\\u202e", "\\u202a", "\\u2066", "\\u200b", "\\u200d", "\\ufeff", "\\u00ad", "\\u061c",
                      "\\U000e0001"};
  for (const char* key : {"dataset.data_folder", "checkpoint.checkpoint_folder", "output.folder", "dataset.file_prefix",
                          "model.name", "storage.storage_root"}) {
    for (const char* ch : cf) {
      c.push_back({std::string(key) + " with " + ch, With(key, std::string("\"a") + ch + "b\""), key});
    }
  }
  c.push_back({"raw U+202E in data_folder", With("dataset.data_folder", "\"data\xe2\x80\xaetxt\""),
               "dataset.data_folder"});
  c.push_back({"raw U+200B in model.name", "model:\n  name: res\xe2\x80\x8bnet\n", "model.name"});
  c.push_back({"U+202E by override", With("train.epochs", "1"), "dataset.data_folder", 2, 2,
               {"++workload.dataset.data_folder=data\xe2\x80\xae"}});
  // Items 2 and 4: a 100 MiB checkpoint runs; a transformer of 50 PiB per checkpoint is refused naming its size;
  // 2^32 samples in a file with a seeded sample shuffle run or are refused, never build a 16 GiB plan.
  const std::string ckpt = "workflow:\n  train: false\n  checkpoint: true\ncheckpoint:\n  checkpoint_folder: ck\n"
                           "  num_checkpoints_write: 1\n  num_checkpoints_read: 0\n";
  c.push_back({"100 MiB checkpoint", ckpt + "model:\n  model_size_bytes: 104857600\n", "", 0, 0});
  Case huge{"50 PiB transformer checkpoint",
            ckpt + "model:\n  type: transformer\n  num_layers: 16384\n  transformer:\n    vocab_size: 4194304\n"
                   "    hidden_size: 131072\n    ffn_hidden_size: 524288\n",
            "bytes (50.76 PiB) per checkpoint, more than the 1125899906842624 bytes (1.00 PiB)"};
  huge.plan_refusal = true;
  c.push_back(huge);
  // Its plan once took 16 GiB and the agent's life (now a keyed bijection, plan_test); with no dataset and
  // generate_data off, the agent's preflight refuses it before anything is built (issue 26 item 6: exit 2).
  c.push_back({"2^32 samples per file, seeded sample shuffle",
               "dataset:\n  num_files_train: 1\n  num_samples_per_file: 4294967296\n  record_length_bytes: 1\n"
               "reader:\n  sample_shuffle: seed\n",
               "dataset.data_folder '", 0, 2});
}

std::vector<Case> Corpus() {
  std::vector<Case> c;
  // Integer keys with their ranges (docs/workload-keys.md).
  struct IntKey {
    const char* key;
    const char* below;
    const char* above;
  };
  const IntKey ints[] = {
      {"dataset.num_files_train", "0", "2147483648"},
      {"dataset.num_files_eval", "-1", "2147483648"},
      {"dataset.num_samples_per_file", "0", "4294967297"},
      {"dataset.num_subfolders_train", "-1", "2147483648"},
      {"dataset.hdf5.num_dset_per_record", "0", "4097"},
      {"dataset.compression_level", "-1", "10"},
      {"dataset.chunk_size", "-1", "17179869185"},
      {"reader.batch_size", "0", "4294967297"},
      {"reader.read_threads", "-1", "257"},
      {"reader.prefetch_size", "-1", "65537"},
      {"reader.transfer_size", "0", "1073741825"},
      {"train.epochs", "0", "100001"},
      {"train.seed", "-1", "4294967296"},
      {"evaluation.eval_after_epoch", "0", "100001"},
      {"checkpoint.num_checkpoints_write", "-2", "100001"},
      {"output.metric.exclude_start_steps", "-1", "4294967297"},
      {"dlio_ext.trace_events_per_thread", "0", "1048577"},
      {"model.transformer.hidden_size", "0", "131073"},
      // Issue 24 item 7: every other integer key of the key table (job/keys_*.cc), at both ends of its range.
      {"model.model_size_bytes", "-1", "1125899906842625"},
      {"model.model_size", "-1", "1125899906842625"},
      {"model.num_layers", "-2", "16385"},
      {"model.parallelism.tensor", "0", "16385"},
      {"model.parallelism.pipeline", "0", "16385"},
      {"model.parallelism.zero_stage", "-1", "4"},
      {"model.parallelism.data", "-2", "16777217"},
      {"model.transformer.vocab_size", "0", "4194305"},
      {"model.transformer.ffn_hidden_size", "0", "524289"},
      {"model.transformer.num_attention_heads", "0", "16385"},
      {"model.transformer.num_kv_heads", "0", "16385"},
      {"storage.storage_options.s3_max_attempts", "0", "101"},
      {"dataset.num_subfolders_eval", "-1", "2147483648"},
      {"reader.batch_size_eval", "0", "4294967297"},
      {"evaluation.epochs_between_evals", "0", "100001"},
      {"checkpoint.checkpoint_after_epoch", "0", "100001"},
      {"checkpoint.epochs_between_checkpoints", "0", "100001"},
      {"checkpoint.steps_between_checkpoints", "-2", "4294967297"},
      {"checkpoint.num_checkpoints_read", "-2", "100001"},
      {"checkpoint.model_size", "-1", "1125899906842625"},
      {"output.metric.exclude_end_steps", "-1", "4294967297"},
      {"train.total_training_steps", "4294967297", "99999999999"},  // no lower end: <= 0 means no cap
  };
  for (const IntKey& k : ints) {
    for (const char* v : {k.below, k.above, "abc", "[1]", "{a: 1}", "1.5", "99999999999999999999999", ".nan"}) {
      c.push_back({std::string(k.key) + " = " + v, With(k.key, v), k.key});
    }
  }
  // Numbers, sizes and products that overflowed or hung before (D7, D8).
  const std::pair<std::string, std::string> overflow[] = {
      {With("dataset.record_length_bytes", "1e300"), "dataset.record_length_bytes"},
      {With("dataset.record_length_bytes", "18446744073709551616"), "dataset.record_length_bytes"},
      {With("dataset.record_length_bytes", "-5"), "dataset.record_length_bytes"},
      {With("dataset.record_length_bytes", ".inf"), "dataset.record_length_bytes"},
      {With("dataset.record_dims", "[4294967296, 4294967296]"), "dataset.record_dims"},
      {With("dataset.record_dims", "[2147483647, 2147483647]"), "dataset.record_dims"},
      {With("model.layer_parameters", "[1125899906842625]"), "model.layer_parameters"},
      {With("model.optimization_groups", "[-1]"), "model.optimization_groups"},
      {With("dataset.record_dims", "[" + std::string(40, '1') + "]"), "dataset.record_dims"},
      {With("dataset.record_length_bytes_stdev", "1e18"), "dataset.record_length_bytes_stdev"},
      {"dataset:\n  num_files_train: 4\n  num_samples_per_file: 4294967296\n", "dataset.num_samples_per_file"},
      {"dataset:\n  num_files_train: 2147483647\n  num_samples_per_file: 3\n", "dataset.num_samples_per_file"},
      {"dataset:\n  num_samples_per_file: 1000000\n  record_length_bytes: 17179869184\n",
       "dataset.num_samples_per_file"},
      {"dataset:\n  num_files_train: 2000000\n  num_samples_per_file: 2000\n  record_length_bytes: 17179869184\n",
       "dataset."},
      {With("reader.read_threads", "100000"), "reader.read_threads"},
      {With("dlio_ext.trace_events_per_thread", "1000000000000"), "dlio_ext.trace_events_per_thread"},
      {With("dlio_ext.read_bandwidth_limit", "1e300"), "dlio_ext.read_bandwidth_limit"},
      {With("dlio_ext.read_bandwidth_limit", "-1MB"), "dlio_ext.read_bandwidth_limit"},
      {With("train.total_training_steps", "99999999999"), "train.total_training_steps"},
      {With("model.model_size_bytes", "9223372036854775807"), "model.model_size_bytes"},
      {With("model.model_size", "1e400"), "model.model_size"},
      {With("checkpoint.time_between_checkpoints", "1e300"), "checkpoint.time_between_checkpoints"},
  };
  for (const auto& [yaml, key] : overflow) c.push_back({"overflow " + key, yaml, key});
  AddNumberAndChoiceCases(c);
  AddIssue24Cases(c);
  // Times and distributions ("computation_time: 1e300" ran with no compute at all; a mean of -1 was accepted).
  const std::string dists[] = {"1e300", "-1", ".nan", ".inf", "abc", "[1, 2]", "{mean: -1}", "{mean: -1, stdev: 1}",
                               "{type: normal, mean: -1, stdev: 1}", "{type: normal, mean: 1, stdev: -1}",
                               "{type: uniform, min: 2, max: 1}", "{type: uniform, min: -3, max: 1}",
                               "{type: gamma, shape: 0, scale: 1}", "{type: gamma, shape: 80000, scale: 80000}",
                               "{type: exponential, scale: 1e300}", "{type: poisson, lam: -1}",
                               "{type: cauchy, scale: 1}", "{type: normal, mean: 1, stdev: 1, skew: 2}",
                               "{mean: .nan}", "{}"};
  for (const std::string& d : dists) c.push_back({"computation_time " + d, With("train.computation_time", d),
                                                  "train.computation_time"});
  c.push_back({"eval_time stdev", With("evaluation.eval_time_stdev", "-0.5"), "evaluation.eval_time_stdev"});
  c.push_back({"preprocess huge", With("reader.preprocess_time", "1e9"), "reader.preprocess_time"});
  // Paths: names and folders judged before anything runs (D2), then what only the agent can judge (D3).
  for (const std::string& p : std::vector<std::string>{"../../../../x", "a/b", "..", ".", "", "x\\ny", "x\\0y",
                                                        std::string(300, 'p')}) {
    c.push_back({"file_prefix " + p, With("dataset.file_prefix", "\"" + p + "\""),
                 "dataset.file_prefix"});
  }
  c.push_back({"file_prefix override", With("train.epochs", "1"), "dataset.file_prefix", 2, 2,
               {"++workload.dataset.file_prefix=../../../x"}});
  for (const char* p : {"../../etc", "a/../../b", "./../x", "a/b/../../.."}) {
    c.push_back({std::string("data_folder ") + p, With("dataset.data_folder", p), "dataset.data_folder"});
    c.push_back({std::string("checkpoint_folder ") + p, With("checkpoint.checkpoint_folder", p),
                 "checkpoint.checkpoint_folder"});
  }
  c.push_back({"data_folder NUL", With("dataset.data_folder", "\"data\\0x\""), "dataset.data_folder"});
  c.push_back({"data_folder empty", With("dataset.data_folder", "\"\""), "dataset.data_folder"});
  c.push_back({"output folder newline", With("output.folder", "\"r\\nesults\""), "output.folder"});
  const std::string gen = "workflow:\n  generate_data: true\ndataset:\n  format: npz\n  num_files_train: 2\n"
                          "  record_length_bytes: 1024\n";
  auto link_out = [](const fs::path& root) {
    fs::create_directories(root.parent_path() / "outside");
    fs::create_directory_symlink(root.parent_path() / "outside", root / "lnk");
  };
  c.push_back({"data_folder through a link", gen + "  data_folder: lnk/data\n", "dataset.data_folder", 0, 1, {}, {},
               link_out});
  c.push_back({"data_folder zz/../lnk", gen + "  data_folder: zz/../lnk\n", "dataset.data_folder", 0, 1, {}, {},
               link_out});
  c.push_back({"data_folder absolute outside", gen + "  data_folder: /tmp\n", "dataset.data_folder", 0, 1});
  c.push_back({"checkpoint_folder qq/../lnk/ck",
               "workflow:\n  train: false\n  checkpoint: true\ncheckpoint:\n  checkpoint_folder: qq/../lnk/ck\n"
               "  num_checkpoints_write: 1\n",
               "checkpoint.checkpoint_folder", 0, 1, {}, {}, link_out});
  c.push_back({"a link planted among the data files",
               "dataset:\n  format: npz\n  num_files_train: 1\n  record_length_bytes: 1024\n  data_folder: data\n",
               "dataset.data_folder", 0, 1, {}, {}, [](const fs::path& root) {
                 fs::create_directories(root / "data" / "train");
                 std::ofstream(root.parent_path() / "outside-secret") << "s";
                 fs::create_symlink(root.parent_path() / "outside-secret", root / "data" / "train" / "img_0_of_1.npz");
               }});
  // Encodings (D9) and text.
  c.push_back({"raw 0xff", "model:\n  name: \"t\xff\"\n", "job.yaml: not valid UTF-8"});
  c.push_back({"latin-1", "model:\n  name: caf\xe9\n", "not valid UTF-8"});
  c.push_back({"overlong slash", "dataset:\n  data_folder: \"\xc0\xaf" "etc\"\n", "not valid UTF-8"});
  c.push_back({"surrogate bytes", "model:\n  name: \"\xed\xa0\x80\"\n", "not valid UTF-8"});
  c.push_back({"control char in name", "model:\n  name: \"a\\x01b\"\n", "model.name"});
  c.push_back({"newline in name", "model:\n  name: \"a\\nINFO forged\"\n", "model.name"});
  c.push_back({"C1 control", "model:\n  name: \"a\\x85b\"\n", "model.name"});
  c.push_back({"NUL in format", "dataset:\n  format: \"npz\\0\"\n", "dataset.format"});
  c.push_back({"newline in key", "\"data\\nset\":\n  format: npz\n", "unknown key"});
  c.push_back({"override not UTF-8", With("train.epochs", "1"), "override", 2, 2, {"++workload.model.name=\xff"}});
  c.push_back({"override control", With("train.epochs", "1"), "override", 2, 2, {"model.name=a\x07"}});
  // The job file itself (D10 and the lower items).
  auto special = [](std::function<std::string(const fs::path&)> make) { return make; };
  c.push_back({"directory", "", "is a directory", 2, 2, {}, special([](const fs::path& s) {
                 fs::create_directories(s / "adir");
                 return (s / "adir").string();
               })});
  c.push_back({"FIFO", "", "is a FIFO", 2, 2, {}, special([](const fs::path& s) {
                 ::mkfifo((s / "fifo").c_str(), 0600);
                 return (s / "fifo").string();
               })});
  c.push_back({"/dev/zero", "", "is a character device", 2, 2, {}, special([](const fs::path&) {
                 return std::string("/dev/zero");
               })});
  c.push_back({"/dev/null", "", "is a character device", 2, 2, {}, special([](const fs::path&) {
                 return std::string("/dev/null");
               })});
  c.push_back({"missing", "", "missing.yaml: cannot read the job file", 2, 2, {}, special([](const fs::path& s) {
                 return (s / "missing.yaml").string();
               })});
  c.push_back({"link to a FIFO", "", "is a FIFO", 2, 2, {}, special([](const fs::path& s) {
                 ::mkfifo((s / "fifo2").c_str(), 0600);
                 fs::create_symlink(s / "fifo2", s / "tofifo.yaml");
                 return (s / "tofifo.yaml").string();
               })});
  c.push_back({"2 MiB file", "train:\n  epochs: 1\n" + std::string(2 << 20, '#'), "at most 1048576 bytes"});
  c.push_back({"binary", std::string("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", 18), "not valid UTF-8"});
  for (const char* empty : {"", "\n\n", "# only a comment\n", "workload:\n", "{}\n", "---\n", "workload: {}\n"}) {
    c.push_back({std::string("empty: ") + empty, empty, "the workload is empty"});
  }
  c.push_back({"multi-document", "train:\n  epochs: 1\n---\ntrain:\n  epochs: 3\n", "holds more than one YAML document"});
  c.push_back({"three documents", "a: 1\n---\nb: 2\n---\nc: 3\n", "more than one YAML document"});
  c.push_back({"top-level list", "- dataset\n- reader\n", "a workload must be a YAML mapping"});
  c.push_back({"top-level scalar", "42\n", "a workload must be a YAML mapping"});
  c.push_back({"deep nesting", "a: " + std::string(20000, '[') + std::string(20000, ']') + "\n", "job.yaml"});
  c.push_back({"syntax", "dataset:\n  format: npz\n   num_files_train: 2\n", "YAML syntax error"});
  c.push_back({"duplicate key", "train:\n  epochs: 1\n  epochs: 2\n", "train.epochs: given twice"});
  c.push_back({"section not a map", "dataset: 5\n", "dataset: must be a mapping"});
  c.push_back({"beside workload", "workload:\n  train:\n    epochs: 1\nextra: 1\n", "extra"});
  std::vector<std::string> many(300, "train.epochs=1");
  c.push_back({"300 overrides", With("train.epochs", "1"), "overrides: 300 given", 2, 2, many});
  c.push_back({"long override", With("train.epochs", "1"), "override: must be at most 4096 bytes", 2, 2,
               {"model.name=" + std::string(5000, 'n')}});
  c.push_back({"override syntax", With("train.epochs", "1"), "expected KEY=VALUE", 2, 2, {"train.epochs"}});
  c.push_back({"override unknown", With("train.epochs", "1"), "dataset.num_file_train: unknown key", 2, 2,
               {"dataset.num_file_train=2"}});
  c.push_back({"override overflow", With("train.epochs", "1"), "dataset.record_dims", 2, 2,
               {"dataset.record_dims=[4294967296,4294967296]"}});
  return c;
}

// Every path below `dir`, except the ones under `skip`.
std::set<std::string> Tree(const fs::path& dir, const std::vector<fs::path>& skip) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    bool skipped = false;
    for (const fs::path& s : skip) skipped |= it->path() == s;
    if (skipped) {
      if (it->is_directory(/*follow*/)) it.disable_recursion_pending();
      continue;
    }
    out.insert(it->path().string());
  }
  return out;
}

TEST(Corpus, EveryBadWorkloadGivesOneLineNamingTheKeyNoHangAndNothingOutsideTheRoot) {
  const std::vector<Case> corpus = Corpus();
  ASSERT_GE(corpus.size(), 385u);
  size_t runs = 0;
  for (const Case& c : corpus) {
    TempDir sandbox;
    const fs::path root = sandbox.path() / "root", results = sandbox.path() / "results";
    fs::create_directories(root);
    if (c.setup) c.setup(root);
    std::string job = (sandbox.path() / "job.yaml").string();
    if (c.job) {
      job = c.job(sandbox.path());
    } else {
      std::ofstream(job, std::ios::binary) << c.yaml;
    }
    const std::set<std::string> before = Tree(sandbox.path(), {root, results});
    for (bool explain : {true, false}) {
      std::vector<std::string> argv = {Bin("dlio-coordinator"), "run", job, "--data-root", root.string(),
                                       "--results-dir", results.string(), "--wait-for-agents", "20"};
      if (explain) argv.push_back("--explain");
      for (const std::string& o : c.overrides) argv.push_back(o);
      const CommandResult r = RunCommand(argv, seconds(60), sandbox.str());
      ++runs;
      const int want = explain ? c.explain_rc : c.run_rc;
      const std::string what = c.name + (explain ? " (--explain)" : " (run)");
      ASSERT_NE(r.exit_code, -1) << what << ": hung (killed after 60 s)";
      EXPECT_EQ(r.exit_code, want) << what << ": " << r.out << r.err;
      if (want == 2 && c.plan_refusal) {
        EXPECT_TRUE(Contains(explain ? r.out : r.err, c.key)) << what << ": does not name " << c.key << ": " << r.out
                                                              << r.err;
        if (!explain) {
          EXPECT_TRUE(Contains(r.err, "\nrefused before anything ran, on ")) << what << ": " << r.err;
        }
      } else if (want == 2) {
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": not one line: " << r.err;
        EXPECT_TRUE(Contains(r.err, c.key)) << what << ": does not name " << c.key << ": " << r.err;
      } else if (want == 1) {
        EXPECT_TRUE(Contains(r.err, c.key)) << what << ": " << r.err;
        EXPECT_TRUE(Contains(r.err, "agent 'local-0'")) << what << ": " << r.err;
      }
    }
    EXPECT_EQ(Tree(sandbox.path(), {root, results}), before) << c.name << ": something was written outside the root";
    if (fs::exists(sandbox.path() / "outside")) {
      EXPECT_TRUE(fs::is_empty(sandbox.path() / "outside")) << c.name << ": a write followed the link";
    }
    // No temporary file anywhere after the runs, failed or not (issue 24's target).
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(sandbox.path(), ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      EXPECT_EQ(it->path().filename().string().find(".tmp"), std::string::npos)
          << c.name << ": a temporary file was left: " << it->path();
    }
  }
  RecordProperty("corpus_cases", static_cast<int>(corpus.size()));
  RecordProperty("runs", static_cast<int>(runs));
  std::printf("corpus: %zu cases, %zu runs of the coordinator\n", corpus.size(), runs);
}

// Issue 24 item 7c: `--host-memory -1` (and 2^64) read as 16 EiB in both binaries (CLI11's AsSizeValue); each is
// refused naming the flag, exit 2, while sizes with units keep working (`run --explain` reports the declared one).
TEST(Flags, HostMemoryIsABoundedSizeInBothBinaries) {
  TempDir dir;
  WriteFile(dir.str() + "/job.yaml", "dataset:\n  format: npz\n  num_files_train: 1\n  record_length_bytes: 1024\n");
  for (const char* v : {"-1", "-1GiB", "18446744073709551615", "18446744073709551616", "1125899906842625", "2PiB"}) {
    const CommandResult agent = RunCommand({Bin("dlio-agent"), "--coordinator", "127.0.0.1:1", "--data-root", dir.str(),
                                            "--host-memory", v, "--reconnect-window", "0"},
                                           seconds(30));
    EXPECT_EQ(agent.exit_code, 2) << v << ": " << agent.out << agent.err;
    EXPECT_TRUE(Contains(agent.err, std::string("--host-memory: must be a size in bytes in [0, 1125899906842624] (1 "
                                                "PiB), got '") + v + "'"))
        << v << ": " << agent.err;
    const CommandResult run = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--explain",
                                          "--host-memory", v},
                                         seconds(30), dir.str());
    EXPECT_EQ(run.exit_code, 2) << v << ": " << run.out << run.err;
    EXPECT_TRUE(Contains(run.err, "--host-memory: must be a size in bytes")) << v << ": " << run.err;
  }
  const CommandResult ok = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--explain",
                                       "--host-memory", "1PiB"},
                                      seconds(30), dir.str());
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(Contains(ok.out, "--host-memory")) << ok.out;
}

// ---------------------------------------------------------------------------------------------------------------
// Raw gRPC against a token-protected coordinator.

class Coordinator {
 public:
  explicit Coordinator(const TempDir& dir) : port_(FreePort()) {
    WriteFile(dir.str() + "/token", "s3cret-token\n");
    proc_ = std::make_unique<Process>(
        std::vector<std::string>{Bin("dlio-coordinator"), "serve", "--listen", address(), "--results-dir",
                                 dir.str() + "/results", "--token-file", dir.str() + "/token"},
        dir.str() + "/coordinator.log");
    channel_ = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
    EXPECT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + seconds(20))) << proc_->Log();
    stub_ = v1::Coordinator::NewStub(channel_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  v1::Coordinator::Stub& stub() { return *stub_; }
  Process& process() { return *proc_; }
  // Peak resident memory of the coordinator (VmHWM), in bytes.
  uint64_t PeakRss() const {
    std::ifstream in("/proc/" + std::to_string(proc_->pid()) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
  }
  static void Authorize(grpc::ClientContext* ctx) { ctx->AddMetadata("authorization", "Bearer s3cret-token"); }

 private:
  int port_;
  std::unique_ptr<Process> proc_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

// D4 of issue 13: without the token, a large message is refused on its metadata, before the coordinator buffers it;
// messages above the receive limit are refused whoever sends them.
TEST(Grpc, MessagesWithoutTheTokenAreRefusedBeforeTheyAreBufferedAndLargeOnesAreRefused) {
  TempDir dir;
  Coordinator coord(dir);
  const uint64_t rss0 = coord.PeakRss();
  v1::SubmitRequest huge;
  huge.set_workload_yaml(std::string(size_t{60} << 20, 'x'));
  std::vector<std::thread> senders;
  std::vector<grpc::Status> statuses(4);
  for (size_t i = 0; i < statuses.size(); ++i) {
    senders.emplace_back([&, i] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
      v1::SubmitResponse resp;
      statuses[i] = coord.stub().Submit(&ctx, huge, &resp);
    });
  }
  for (auto& t : senders) t.join();
  for (const grpc::Status& s : statuses) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  }
  const uint64_t grown = coord.PeakRss() - rss0;
  EXPECT_LT(grown, uint64_t{40} << 20) << "the coordinator buffered unauthenticated messages: +" << (grown >> 20)
                                       << " MiB";
  // With the token, a message above the limit is refused (and nothing is queued).
  grpc::ClientContext ctx;
  Coordinator::Authorize(&ctx);
  v1::SubmitResponse resp;
  grpc::Status s = coord.stub().Submit(&ctx, huge, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // A job name of megabytes is refused (it used to be kept and sent in every list reply).
  v1::SubmitRequest named;
  named.set_workload_yaml("train:\n  epochs: 1\n");
  named.set_source_name(std::string(size_t{5} << 20, 'n'));
  grpc::ClientContext ctx2;
  Coordinator::Authorize(&ctx2);
  s = coord.stub().Submit(&ctx2, named, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(Contains(s.error_message(), "job name")) << s.error_message();
  // NaN and 2^31-1 placement values are refused naming the flag.
  v1::SubmitRequest nan;
  nan.set_workload_yaml("train:\n  epochs: 1\n");
  nan.set_barrier_timeout_s(std::nan(""));
  grpc::ClientContext ctx3;
  Coordinator::Authorize(&ctx3);
  s = coord.stub().Submit(&ctx3, nan, &resp);
  EXPECT_TRUE(Contains(s.error_message(), "--barrier-timeout")) << s.error_message();
  v1::SubmitRequest accel;
  accel.set_workload_yaml("train:\n  epochs: 1\n");
  accel.set_accelerators_per_agent(2147483647);
  grpc::ClientContext ctx4;
  Coordinator::Authorize(&ctx4);
  s = coord.stub().Submit(&ctx4, accel, &resp);
  EXPECT_TRUE(Contains(s.error_message(), "--accelerators-per-agent: must be an integer in [0, 4096]"))
      << s.error_message();
}

// Issue 24 item 1: every method refuses a caller without the token on the call's metadata, before it reads the
// request. Watch read its request first (gRPC reads the request of a server-streaming callback method before the
// handler runs): 20 Watch calls of 200 MB raised the coordinator from 19 MiB to 2,476 MiB. Raw generic calls with no
// send limit, so neither the stub nor the message type bounds what is sent; the 20 calls of a method run at once, and
// each method is measured from its own start (writing 5 to /proc/PID/clear_refs resets the peak; where that is
// refused, every method is measured from the first start, which is only stricter).
TEST(Grpc, HugeUnauthenticatedCallsOfEveryMethodAreRefusedBeforeTheirRequestIsRead) {
  TempDir dir;
  Coordinator coord(dir);
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  grpc::GenericStub stub(grpc::CreateCustomChannel(coord.address(), grpc::InsecureChannelCredentials(), args));
  v1::WatchRequest huge;
  huge.set_job_id(std::string(size_t{50} << 20, 'j'));
  grpc::ByteBuffer body;  // the same bytes for every method: the body is never meant to be read
  bool own = false;
  ASSERT_TRUE(grpc::SerializationTraits<v1::WatchRequest>::Serialize(huge, &body, &own).ok());
  constexpr size_t kCalls = 20;
  const std::string clear_refs = "/proc/" + std::to_string(coord.process().pid()) + "/clear_refs";
  uint64_t rss0 = coord.PeakRss();
  for (const char* method : {"Watch", "Attach", "Submit", "Cancel", "GetResults", "ListJobs", "GetJob"}) {
    if (std::ofstream(clear_refs) << "5" << std::flush) rss0 = coord.PeakRss();
    std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
    std::vector<grpc::ByteBuffer> replies(kCalls);
    std::vector<std::promise<grpc::Status>> done(kCalls);
    for (size_t i = 0; i < kCalls; ++i) {
      ctxs.push_back(std::make_unique<grpc::ClientContext>());
      ctxs.back()->set_deadline(std::chrono::system_clock::now() + seconds(60));
      stub.UnaryCall(ctxs.back().get(), absl::StrCat("/dlio.v1.Coordinator/", method), grpc::StubOptions(), &body,
                     &replies[i], [&done, i](grpc::Status s) { done[i].set_value(std::move(s)); });
    }
    for (std::promise<grpc::Status>& p : done) {
      const grpc::Status s = p.get_future().get();
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method << ": " << s.error_message();
    }
    // The peak read at the start is the resident size then, which may shrink before the next read.
    const uint64_t grown = std::max(coord.PeakRss(), rss0) - rss0;
    std::cout << "coordinator peak RSS after " << kCalls << " unauthenticated " << method << " calls of 50 MiB: +"
              << (grown >> 10) << " KiB\n";
    EXPECT_LT(grown, uint64_t{64} << 20) << "the coordinator buffered unauthenticated " << method
                                         << " requests: its peak RSS rose " << (grown >> 20) << " MiB";
  }
}

using AttachStream = grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>;

v1::AgentMessage Hello(const std::string& name, uint32_t accelerators) {
  v1::AgentMessage m;
  v1::Hello* h = m.mutable_hello();
  h->set_protocol_version(kProtocolVersion);
  h->set_name(name);
  h->set_hostname("node");
  h->set_instance("i1");
  h->set_accelerators(accelerators);
  return m;
}

// Lower items of issue 13: nothing an agent sends was checked.
TEST(Grpc, WhatAnAgentSendsIsChecked) {
  TempDir dir;
  Coordinator coord(dir);
  const std::vector<std::pair<v1::AgentMessage, std::string>> bad = {
      {Hello("evil\n[info] agent 'x' attached", 1), "Hello.name: must be text without control characters"},
      {Hello("big", 2147483647), "Hello.accelerators must be in [1, 4096]"},
      {Hello("", 1), "Hello.name"},
      {Hello(std::string(300, 'a'), 1), "Hello.name: must be at most 255 bytes"},
  };
  // Each refusal comes as an Error with its code (then the stream ends with the matching status).
  v1::AgentMessage future = Hello("future", 1);
  future.mutable_hello()->set_protocol_version(kProtocolVersion + 1);
  const std::vector<std::tuple<v1::AgentMessage, std::string, v1::ErrorCode, grpc::StatusCode>> refused = {
      {future, absl::StrCat("protocol version ", kProtocolVersion + 1, ", this coordinator speaks version ",
                            kProtocolVersion),
       v1::ERROR_CODE_PROTOCOL_MISMATCH, grpc::StatusCode::FAILED_PRECONDITION},
      {v1::AgentMessage(), "the first message on Attach must be Hello", v1::ERROR_CODE_BAD_HELLO,
       grpc::StatusCode::INVALID_ARGUMENT}};
  std::vector<std::tuple<v1::AgentMessage, std::string, v1::ErrorCode, grpc::StatusCode>> cases = refused;
  for (const auto& [hello, want] : bad) {
    cases.emplace_back(hello, want, v1::ERROR_CODE_BAD_HELLO, grpc::StatusCode::INVALID_ARGUMENT);
  }
  for (const auto& [hello, want, code, status] : cases) {
    grpc::ClientContext ctx;
    Coordinator::Authorize(&ctx);
    std::unique_ptr<AttachStream> s = coord.stub().Attach(&ctx);
    s->Write(hello);
    v1::CoordinatorMessage in;
    ASSERT_TRUE(s->Read(&in)) << want;
    EXPECT_TRUE(in.has_error()) << in.DebugString();
    EXPECT_EQ(in.error().code(), code) << in.DebugString();
    EXPECT_TRUE(Contains(in.error().message(), want)) << in.error().message();
    EXPECT_FALSE(s->Read(&in)) << want;
    const grpc::Status st = s->Finish();
    EXPECT_EQ(st.error_code(), status) << st.error_message();
    EXPECT_TRUE(Contains(st.error_message(), want)) << st.error_message();
  }
  EXPECT_FALSE(Contains(coord.process().Log(), "\n[info] agent 'x' attached")) << "a name forged a log line";

  // A well-formed agent that reports a result for rank 2^32-1: the job fails naming it; no "-1_output.json".
  grpc::ClientContext actx;
  Coordinator::Authorize(&actx);
  std::unique_ptr<AttachStream> agent = coord.stub().Attach(&actx);
  ASSERT_TRUE(agent->Write(Hello("liar", 1)));
  v1::CoordinatorMessage in;
  ASSERT_TRUE(agent->Read(&in));
  ASSERT_TRUE(in.has_welcome());
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 2, 1, 1024, 1, 0, 1, false));
  CommandResult sub = RunCommand({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator",
                                  coord.address(), "--token-file", dir.str() + "/token", "--detach"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  const std::string job = sub.out.substr(0, sub.out.find('\n'));
  while (agent->Read(&in) && !in.has_run_phase()) {
  }
  ASSERT_TRUE(in.has_run_phase());
  v1::AgentMessage done;
  done.mutable_phase_done()->set_job_id(in.run_phase().job_id());
  done.mutable_phase_done()->set_phase_id(in.run_phase().phase_id());
  v1::RankResult* r = done.mutable_phase_done()->add_ranks();
  r->set_rank(4294967295u);
  r->set_epoch(1);
  ASSERT_TRUE(agent->Write(done));
  CommandResult st;
  ASSERT_TRUE(Eventually(
      [&] {
        st = RunCommand({Bin("dlio-coordinator"), "status", job, "--coordinator", coord.address(), "--token-file",
                         dir.str() + "/token"});
        return Contains(st.out, "failed");
      },
      seconds(30)))
      << st.out << st.err;
  EXPECT_TRUE(Contains(st.out, "agent 'liar' (rank 0) sent an invalid result")) << st.out;
  EXPECT_TRUE(Contains(st.out, "rank 4294967295") || Contains(st.out, "rank -1")) << st.out;
  EXPECT_FALSE(fs::exists(dir.path() / "results" / job / "-1_output.json"));
  actx.TryCancel();
}

}  // namespace
}  // namespace dlio::testing
