// Every workload file we ship (configs/workloads/) and every DLIO-shipped workload file
// (tests/fixtures/dlio-workloads/) runs over `dlio-coordinator run` with 2 real agent processes, scaled down by
// overrides (4 files x 2 samples of 4 KiB, batch 2, 1 epoch, no compute time), and its --explain plan is what the
// planning code derives.
//  - Object-storage files (storage_type s3): --explain shows their bucket; their runs need a gateway and are made by
//    tests/s3_test.cc against a real one (s3.S3.DlioUnet3dS3WorkloadsRunWithEndpointOverride), so here they are
//    skipped.
//  - Files with workflow.checkpoint run scaled down with a tiny transformer and one checkpoint written and read;
//    megatron's explicit tensor lists (model.optimization_groups / layer_parameters) are scaled down the same way
//    (tests/checkpoint_test.cc runs DLIO's megatron_deepspeed_LLNL.yaml with its own lists).
//  - MLPerf Storage v3.0's files (configs/workloads/mlperf-v3.0/) are shipped workload files too.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "plan/checkpoint_plan.h"
#include "job/workload_spec.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

std::vector<std::string> WorkloadFiles() {
  std::vector<std::string> files;
  for (const char* dir : {"configs/workloads", "configs/workloads/mlperf-v3.0", "tests/fixtures/dlio-workloads"}) {
    for (const auto& e : fs::directory_iterator(fs::path(SourceDir()) / dir)) {
      if (e.path().extension() == ".yaml") files.push_back((fs::path(dir) / e.path().filename()).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The job as the loader sees it, not-supported keys tolerated (as --explain does).
struct Loaded {
  WorkloadSpec spec;
  LoadDiagnostics diag;
  bool Sets(const std::string& key, const std::string& value) const {
    for (const KeyUse& k : diag.keys) {
      if (k.key == key && (value.empty() || k.value == value)) return true;
    }
    return false;
  }
};

Loaded Load(const std::string& path, const std::vector<std::string>& overrides = {}) {
  Loaded l;
  LoadOptions o;
  o.plan_only = true;
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(ReadFile(path), overrides, path, o, &l.diag);
  EXPECT_TRUE(s.ok()) << path << ": " << s.status();
  if (s.ok()) l.spec = *s;
  return l;
}

// Overrides that make a workload tiny and fast while keeping its format, loader and layout choices.
std::vector<std::string> ScaleDown(const Loaded& l) {
  const WorkloadSpec& s = l.spec;
  std::vector<std::string> o = {"workflow.generate_data=True",
                                "dataset.data_folder=data",
                                "dataset.num_files_train=4",
                                "dataset.num_samples_per_file=2",
                                "dataset.record_length_bytes=4096",
                                "dataset.record_length_bytes_stdev=0",
                                "dataset.record_dims=[]",
                                "dataset.record_element_type=uint8",
                                "reader.batch_size=2",
                                "reader.batch_size_eval=1",
                                "reader.read_threads=2",
                                "train.epochs=1",
                                "train.computation_time=0",
                                "train.total_training_steps=-1",
                                "evaluation.eval_time=0"};
  if (s.num_files_eval > 0) o.push_back("dataset.num_files_eval=2");
  if (!s.hdf5_chunk_dims.empty()) o.push_back("dataset.hdf5.chunk_dims=[1,16,16]");  // 64x64 samples
  if (l.Sets("workflow.checkpoint", "")) {
    // A tiny model and one checkpoint written and read, whatever the file's schedule.
    for (const char* k : {"model.num_layers=2", "model.parallelism.tensor=1", "model.parallelism.pipeline=1",
                          "model.transformer.vocab_size=256", "model.transformer.hidden_size=64",
                          "model.transformer.ffn_hidden_size=128", "model.transformer.num_attention_heads=4",
                          "model.transformer.num_kv_heads=2", "model.model_size_bytes=65536",
                          "checkpoint.checkpoint_folder=checkpoints", "checkpoint.time_between_checkpoints=0",
                          "checkpoint.num_checkpoints_write=1", "checkpoint.num_checkpoints_read=1",
                          "checkpoint.steps_between_checkpoints=1"}) {
      o.push_back(k);
    }
    // DLIO's legacy explicit sizes, when the file has them, scaled down like the transformer's shape.
    if (l.Sets("model.optimization_groups", "")) o.push_back("model.optimization_groups=[4096,1024]");
    if (l.Sets("model.layer_parameters", "")) o.push_back("model.layer_parameters=[8192,2048]");
  }
  return o;
}

std::vector<std::string> RunArgs(const std::string& job, const TempDir& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {Bin("dlio-coordinator"),
                                   "run",
                                   job,
                                   "--local-agents",
                                   "2",
                                   "--accelerators",
                                   "1",
                                   "--data-root",
                                   dir.str(),
                                   "--results-dir",
                                   dir.str() + "/results",
                                   "--wait-for-agents",
                                   "30"};
  for (const std::string& o : extra) {
    argv.push_back("--set");
    argv.push_back(o);
  }
  return argv;
}

bool CheckpointOn(const Loaded& l) {
  return l.Sets("workflow.checkpoint", "True") || l.Sets("workflow.checkpoint", "true");
}

bool ObjectStorage(const Loaded& l) {
  return l.Sets("storage.storage_type", "s3") || l.Sets("storage.storage_type", "aistore");
}

class Workloads : public ::testing::TestWithParam<std::string> {};

// --explain of the file as written, on a fleet its parallelism fits (2 agents x TP*PP accelerators): nothing written,
// no refusal for that fleet (exit 0, or 2 for a file with a key not supported yet), and checkpoint bytes per rank
// equal common/checkpoint_plan's.
TEST_P(Workloads, ExplainShowsThePlanAndTheCheckpointPlansBytes) {
  const std::string job = SourceDir() + "/" + GetParam();
  const Loaded l = Load(job);
  const int64_t per_agent = std::max<int64_t>(1, l.spec.parallelism_tensor * l.spec.parallelism_pipeline);
  TempDir dir;
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--explain", "--json", "--local-agents", "2",
                                "--accelerators", std::to_string(per_agent)},
                               seconds(30), dir.str());
  EXPECT_TRUE(fs::is_empty(dir.path())) << "--explain wrote something";
  const json p = json::parse(r.out);
  EXPECT_EQ(p["refusals"].size(), 0u) << p["refusals"];
  ASSERT_EQ(r.exit_code, p["not_supported"].empty() ? 0 : 2) << r.out << r.err;
  EXPECT_EQ(p["world"], 2 * per_agent);
  EXPECT_EQ(p["keys"].size(), l.diag.keys.size());
  if (l.spec.train) {
    EXPECT_TRUE(p["train"].contains("steps_per_epoch") || p["train"].contains("error")) << p["train"];
    EXPECT_EQ(p["demand"]["bytes_per_step_per_accelerator"],
              std::llround(static_cast<double>(l.spec.batch_size) * l.spec.record_length_bytes));
  }
  if (ObjectStorage(l)) {
    EXPECT_TRUE(p["runnable"].get<bool>()) << r.out;
    EXPECT_EQ(p["storage"]["bucket"], l.spec.storage_root) << r.out;
  }
  if (CheckpointOn(l)) {
    const json& c = p["checkpoint"];
    ASSERT_TRUE(c["enabled"].get<bool>());
    ASSERT_FALSE(c.contains("error")) << c["error"];
    absl::StatusOr<CheckpointModel> model = CheckpointModelFor(l.spec);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(*model, 2 * per_agent);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(c["bytes_per_rank"].size(), plan->ranks.size());
    for (size_t i = 0; i < plan->ranks.size(); ++i) {
      ASSERT_EQ(c["bytes_per_rank"][i].get<int64_t>(), plan->ranks[i].bytes()) << "rank " << i;
    }
    EXPECT_EQ(c["bytes_per_checkpoint"].get<int64_t>(), plan->TotalBytes());
    EXPECT_GT(plan->TotalBytes(), 0);
  }
}

TEST_P(Workloads, RunsScaledDownOnTwoAgents) {
  const std::string job = SourceDir() + "/" + GetParam();
  const Loaded l = Load(job);
  if (ObjectStorage(l)) {
    GTEST_SKIP() << "object storage: run against a real gateway by s3.S3.DlioUnet3dS3WorkloadsRunWithEndpointOverride";
  }
  std::vector<std::string> overrides = ScaleDown(l);
  TempDir dir;
  CommandResult r = RunCommand(RunArgs(job, dir, overrides), seconds(120), dir.str());
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  if (l.spec.train) {
    fs::path result;
    for (const auto& e : fs::directory_iterator(dir.path() / "results")) result = e.path();
    const json summary = LoadJson((result / "summary.json").string());
    EXPECT_EQ(summary["num_accelerators"], 2) << summary.dump();
    EXPECT_GT(summary["metric"]["train_read_bytes"].get<double>(), 0) << summary.dump();
  }
  if (CheckpointOn(l)) {
    // The scaled-down checkpoint (tiny model, one per epoch step or one write and read) happened and was timed.
    fs::path result;
    for (const auto& e : fs::directory_iterator(dir.path() / "results")) result = e.path();
    const json summary = LoadJson((result / "summary.json").string());
    EXPECT_GT(summary["metric"]["checkpoint_size_GB"].get<double>(), 0) << summary.dump();
    EXPECT_TRUE(fs::is_directory(dir.path() / "checkpoints")) << "no checkpoint folder under the data root";
  }
}

std::string Name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  n = n.substr(0, n.size() - 5);  // .yaml
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Files, Workloads, ::testing::ValuesIn(WorkloadFiles()), Name);

}  // namespace
}  // namespace dlio::testing
