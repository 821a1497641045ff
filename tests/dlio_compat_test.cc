// Two-way compatibility with DLIO (issue 17), with real processes:
//  - Resnet50.*: DLIO's resnet50_a100.yaml scaled to 16 files x 100 samples runs: its batches of 400 are cut from the
//    8 loader threads' interleaved stream, as DLIO's TensorFlow pipeline cuts them (plan/epoch_plan.h).
//  - Refusals.*: every refusal a job's own values cause on its fleet (plan/preflight.h) is reported before anything
//    runs, the same line everywhere: `run --explain` prints it first and exits 2, `run` exits 2 before starting its
//    agents, `submit` exits 2 before connecting when --agents and --accelerators-per-agent fix the world, and the
//    coordinator refuses the job once placed, before any phase (exit 2, nothing written under the data root).
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

TEST(Resnet50, A100ScaledTo16FilesOf100SamplesRunsWithBatchesOf400) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const std::string job = SourceDir() + "/tests/fixtures/dlio-workloads/resnet50_a100.yaml";
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--data-root", dir.str() + "/root",
                                "--results-dir", dir.str() + "/results", "--output", dir.str() + "/out", "--set",
                                "workflow.generate_data=True", "--set", "dataset.data_folder=data", "--set",
                                "dataset.num_files_train=16", "--set", "dataset.num_samples_per_file=100", "--set",
                                "train.epochs=1"},
                               seconds(180), dir.str());
  ASSERT_PRED1(JobRan, r.exit_code) << Dump(r);
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  // DLIO: floor(100 x 16 / 400 / 1) = 4 steps of 400 samples, every sample once.
  const json out = LoadJson(dir.str() + "/out/0_output.json");
  EXPECT_EQ(out["1"]["load"]["block1"].size(), 4u) << out["1"].dump();
  EXPECT_EQ(summary["dlio_ext"]["train_io"]["samples"].get<int64_t>(), 1600);
  EXPECT_EQ(summary["metric"]["train_dropped_samples_per_epoch"], 0);
  // DLIO's layout, its DALI index included.
  for (const char* d : {"train", "valid", "index/train"}) {
    EXPECT_TRUE(fs::is_directory(dir.path() / "root" / "data" / d)) << d;
  }
}

// One refusal: a job (tests/harness.h Workload plus overrides) that its fleet (2 agents x 2 accelerators unless
// said otherwise) cannot run, and the line naming why.
struct Refusal {
  std::string name;
  std::string format;
  int files, spf, batch;
  std::vector<std::string> sets;
  std::string expect;
  int agents = 2, accelerators = 2;
  std::string World() const {
    return "world size " + std::to_string(agents * accelerators) + " (" + std::to_string(agents) + " agent(s) x " +
           std::to_string(accelerators) + " accelerator(s))";
  }
};

// A tiny transformer for the checkpoint plan's refusals.
std::vector<std::string> Transformer(std::vector<std::string> extra) {
  std::vector<std::string> v = {"workflow.checkpoint=True", "checkpoint.checkpoint_folder=ck",
                                "model.type=transformer", "model.transformer.vocab_size=256",
                                "model.transformer.hidden_size=64", "model.transformer.ffn_hidden_size=128",
                                "model.transformer.num_attention_heads=4", "model.transformer.num_kv_heads=2"};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

// Every refusal kind of plan/preflight.h; each was an error of a phase (or of the job's start) before.
std::vector<Refusal> AllRefusals() {
  return {
      {"IndexBatchAboveTheDatasetForThisWorld", "npz", 4, 1, 2, {},
       "reader.batch_size: one step of the fleet needs batch 2 x world size 4 = 8 samples"},
      {"TfrecordRankWithLessThanABatch", "tfrecord", 5, 100, 120, {},
       "reader.batch_size: rank 3 of world size 4 streams 1 of the 5 files"},
      {"TfrecordBatchAboveTheDatasetForThisWorld", "tfrecord", 2, 3, 2, {},
       "reader.batch_size: one step of the fleet needs batch 2 x world size 4 = 8 samples"},
      {"TotalTrainingStepsAboveTheStepsOfThisWorld", "npz", 8, 1, 1, {"train.total_training_steps=5"},
       "train.total_training_steps: 5 steps per epoch wanted, but the dataset gives only 2 (world size 4"},
      {"EvalBatchAboveTheEvalDataset", "npz", 8, 1, 1, {"workflow.evaluation=True", "dataset.num_files_eval=2"},
       "reader.batch_size_eval: one step of the fleet needs batch 1 x world size 4 = 4 samples"},
      {"TensorParallelismNotDividingTheWorld", "npz", 8, 1, 1,
       Transformer({"model.num_layers=2", "model.parallelism.tensor=3"}),
       "model.parallelism: the number of ranks (4) must be a multiple of tensor x pipeline (3)"},
      {"PipelineDeeperThanTheLayers", "npz", 8, 1, 1,
       Transformer({"model.num_layers=2", "model.parallelism.pipeline=4"}),
       "model.num_layers: must be at least model.parallelism.pipeline (4)"},
      {"LoaderThreadsOfAnAgentAboveTheLimit", "npz", 64, 1, 1, {"reader.read_threads=256"},
       "reader.read_threads: 256 loader threads x 17 ranks on one agent is 4352 threads", 1, 17},
      {"Hdf5FileShapeNotSplitOverItsDatasets", "hdf5", 64, 1, 1,
       {"dataset.record_length_bytes_stdev=2000", "dataset.hdf5.num_dset_per_record=2"},
       "dataset.hdf5.num_dset_per_record: 2 does not divide the first sample dimension"},
      {"S3DataObjectAboveTheMultipartLimit", "npz", 8, 1000, 1,
       {"storage.storage_type=s3", "storage.storage_root=refused-bucket", "dataset.record_length_bytes=104857600"},
       "dataset.num_samples_per_file: a data file would be 1000 samples x 104857600 bytes = 104857600000 bytes, more "
       "than the 83886080000 bytes an object takes in 10000 parts of 8388608 bytes"},
      {"S3CheckpointObjectAboveTheMultipartLimit", "npz", 8, 1, 1,
       {"storage.storage_type=s3", "storage.storage_root=refused-bucket", "workflow.checkpoint=True",
        "checkpoint.checkpoint_folder=ck", "model.model_size_bytes=700000000000"},
       "checkpoint: rank 0's file model_states-0.pt would be 700000000000 bytes, more than the 671088640000 bytes an "
       "object takes in 10000 parts of 67108864 bytes"},
      {"Hdf5ChunksLargerThanAFilesSamples", "hdf5", 64, 1, 1,
       {"dataset.record_length_bytes_stdev=1500", "dataset.hdf5.chunk_dims=[1,60,60]"},
       "dataset.hdf5.chunk_dims: [1, 60, 60] exceeds the dataset's maximum shape"},
  };
}

std::string RefusalName(const ::testing::TestParamInfo<Refusal>& info) { return info.param.name; }

std::string WriteJob(const TempDir& dir, const Refusal& c) {
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload(c.format, c.files, c.spf, 4096, c.batch, 0.0, 1, true));
  return job;
}

std::vector<std::string> With(std::vector<std::string> argv, const Refusal& c) {
  for (const std::string& s : c.sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  return argv;
}

class Refusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(Refusals, ExplainReportsItFirstAndRunAndSubmitRefuseBeforeAnythingStarts) {
  const Refusal& c = GetParam();
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const std::string job = WriteJob(dir, c);

  // --explain: the refusal is the first thing after the fleet, and the plan is not runnable.
  CommandResult explain = RunCommand(
      With({Bin("dlio-coordinator"), "run", job, "--explain", "--local-agents", std::to_string(c.agents),
            "--accelerators", std::to_string(c.accelerators)},
           c),
      seconds(30), dir.str());
  EXPECT_EQ(explain.exit_code, 2) << Dump(explain);
  std::istringstream lines(explain.out);
  std::string line;
  std::vector<std::string> v;
  while (std::getline(lines, line)) v.push_back(line);
  ASSERT_GE(v.size(), 3u) << explain.out;
  EXPECT_EQ(v[2].rfind("  refused on this fleet: ", 0), 0u) << explain.out;
  EXPECT_NE(explain.out.find("refused on this fleet: " + c.expect), std::string::npos) << explain.out;
  CommandResult json_plan = RunCommand(With({Bin("dlio-coordinator"), "run", job, "--explain", "--json",
                                             "--local-agents", std::to_string(c.agents), "--accelerators",
                                             std::to_string(c.accelerators)},
                                            c),
                                       seconds(30), dir.str());
  const json p = json::parse(json_plan.out);
  EXPECT_FALSE(p["runnable"].get<bool>());
  ASSERT_GE(p["refusals"].size(), 1u);
  EXPECT_NE(p["refusals"][0].get<std::string>().find(c.expect), std::string::npos) << p["refusals"];

  // run: refused before its agents start; nothing written.
  CommandResult run = RunCommand(With({Bin("dlio-coordinator"), "run", job, "--local-agents", std::to_string(c.agents),
                                       "--accelerators", std::to_string(c.accelerators), "--data-root",
                                       dir.str() + "/root", "--results-dir", dir.str() + "/results"},
                                      c),
                                 seconds(60), dir.str());
  EXPECT_EQ(run.exit_code, 2) << Dump(run);
  EXPECT_NE(run.err.find(c.expect), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("refused before anything ran, on " + c.World()), std::string::npos) << run.err;
  EXPECT_TRUE(fs::is_empty(dir.path() / "root")) << "the refused run wrote into the data root";
  EXPECT_FALSE(fs::exists(dir.path() / "results")) << "the local fleet was started";

  // submit with the fleet's shape: refused before connecting (no coordinator listens on that port).
  CommandResult submit = RunCommand(
      With({Bin("dlio-coordinator"), "submit", job, "--coordinator", "127.0.0.1:" + std::to_string(FreePort()),
            "--agents", std::to_string(c.agents), "--accelerators-per-agent", std::to_string(c.accelerators)},
           c),
      seconds(30), dir.str());
  EXPECT_EQ(submit.exit_code, 2) << Dump(submit);
  EXPECT_NE(submit.err.find(c.expect), std::string::npos) << submit.err;
}

INSTANTIATE_TEST_SUITE_P(Kinds, Refusals, ::testing::ValuesIn(AllRefusals()), RefusalName);

// The coordinator, which alone knows the fleet when the client does not: each job is refused once placed (on
// 2 agents x 2 accelerators, or the case's own fleet), before any phase: exit 2, the message names the world and the
// key, nothing is written.
TEST(RefusalsAtPlacement, CoordinatorRefusesEveryKindBeforeAnyPhase) {
  std::map<std::pair<int, int>, std::vector<Refusal>> by_fleet;
  for (const Refusal& c : AllRefusals()) by_fleet[{c.agents, c.accelerators}].push_back(c);
  for (const auto& [shape, cases] : by_fleet) {
    TempDir dir;
    Fleet fleet(dir, shape.first, shape.second);
    ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == static_cast<size_t>(shape.first); },
                           std::chrono::seconds(30)))
        << fleet.Logs();
    for (const Refusal& c : cases) {
      SCOPED_TRACE(c.name);
      const std::string job = WriteJob(dir, c);
      CommandResult r = fleet.Client(With({"submit", job, "--wait-for-agents", "30"}, c));
      EXPECT_EQ(r.exit_code, 2) << Dump(r);
      EXPECT_NE(r.err.find("refused on " + c.World() + ": "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("phase "), std::string::npos) << "a phase started:\n" << r.out;
    }
    EXPECT_TRUE(fs::is_empty(dir.path() / "root")) << "a refused job wrote into the data root";
  }
}

}  // namespace
}  // namespace dlio::testing
