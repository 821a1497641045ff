#include "client/explain.h"

#include "plan/checkpoint_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// `agents` agents spread over `nodes` nodes of `ram` bytes each (0: RAM unknown).
json Explain(const std::string& yaml, int64_t agents, int64_t accelerators, uint64_t ram, int64_t nodes = 0) {
  LoadOptions o;
  o.plan_only = true;
  LoadDiagnostics d;
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, {}, "job.yaml", o, &d);
  EXPECT_TRUE(s.ok()) << s.status();
  ExplainFleet f;
  f.agents = agents;
  f.accelerators_per_agent = accelerators;
  if (nodes == 0) nodes = agents;
  for (int64_t n = 0; ram > 0 && n < nodes; ++n) {
    f.nodes.push_back({"node" + std::to_string(n), ram, agents / nodes + (n < agents % nodes ? 1 : 0)});
  }
  f.memory_source = "test";
  return ExplainJob(s.ok() ? *s : WorkloadSpec{}, d, f, "job.yaml");
}

// unet3d_a100's numbers (dlio.md §3): 168 files, batch 7, 0.636 s -> 1.61 GB/s per accelerator.
TEST(Explain, StepsBytesDemandAndCachingFollowTheFormulas) {
  const json p = Explain(R"(
dataset: {format: npz, num_files_train: 168, num_samples_per_file: 1, record_length_bytes: 146600628}
reader: {batch_size: 7}
train: {epochs: 5, computation_time: 0.636}
)",
                         2, 4, uint64_t{1} << 40);
  EXPECT_EQ(p["world"], 8);
  EXPECT_EQ(p["train"]["steps_per_epoch"], 168 / 7 / 8);  // floor(N / B / P) = 3
  EXPECT_EQ(p["train"]["samples_per_rank_per_epoch"], 21);
  EXPECT_EQ(p["train"]["bytes_per_rank_per_epoch"], 21 * int64_t{146600628});
  EXPECT_EQ(p["train"]["bytes_per_agent_per_epoch"], 4 * 21 * int64_t{146600628});
  EXPECT_NEAR(p["demand"]["bytes_per_second_per_accelerator"].get<double>(), 7 * 146600628.0 / 0.636, 1);
  EXPECT_NEAR(p["demand"]["bytes_per_second_per_accelerator"].get<double>() / 1e9, 1.61, 0.01);
  EXPECT_NEAR(p["demand"]["samples_per_second_per_accelerator"].get<double>(), 11.0, 0.01);
  EXPECT_EQ(p["memory"]["dataset_bytes_train"], 168 * int64_t{146600628});
  EXPECT_TRUE(p["memory"]["potential_caching"].get<bool>()) << "12 GiB per agent fit in 1 TiB";
  EXPECT_FALSE(p["memory"]["mlperf_5x_ram_rule_met"].get<bool>());
  const json small = Explain(
      "dataset: {format: npz, num_files_train: 168, record_length_bytes: 146600628}\n"
      "reader: {batch_size: 7}\n",
      2, 4, uint64_t{1} << 30);
  EXPECT_FALSE(small["memory"]["potential_caching"].get<bool>()) << "12 GiB per agent do not fit in 1 GiB";
  const std::string text = ExplainText(p);
  EXPECT_THAT(text, HasSubstr("3 step(s) per epoch of batch 7"));
  EXPECT_THAT(text, HasSubstr("warning: potential caching"));
  EXPECT_THAT(text, HasSubstr("demand per accelerator at 100% AU"));
}

TEST(Explain, RamCountsOncePerNodeHoweverManyAgentsShareIt) {
  const std::string job = "dataset: {format: npz, num_files_train: 1000, record_length_bytes: 1048576}\n";
  const uint64_t ram = uint64_t{117} << 30;
  const json one_host = Explain(job, 2, 1, ram, /*nodes=*/1);
  EXPECT_EQ(one_host["memory"]["fleet_memory_bytes"], ram) << "two agents on one host: its RAM once";
  EXPECT_EQ(one_host["memory"]["nodes"], 1);
  EXPECT_EQ(one_host["memory"]["bytes_per_node_per_epoch"], 1000 * int64_t{1048576});
  const json two_hosts = Explain(job, 2, 1, ram, /*nodes=*/2);
  EXPECT_EQ(two_hosts["memory"]["fleet_memory_bytes"], 2 * ram);
  EXPECT_THAT(ExplainText(one_host), HasSubstr("1 node(s), RAM 117.00 GiB each at least, 117.00 GiB in all"));
}

TEST(Explain, WarnsBeforeTheRunWhenTheMetricWindowLeavesAFigureUnmeasured) {
  // 8 files, batch 2, 4 ranks: 1 step per epoch. DLIO prints AU 0 and a negative samples/s for that.
  const json p = Explain("dataset: {format: npz, num_files_train: 8}\nreader: {batch_size: 2}\n", 2, 2, 0);
  EXPECT_EQ(p["train"]["steps_per_epoch"], 1);
  const std::string text = ExplainText(p);
  EXPECT_THAT(text, HasSubstr("warning: AU will not be measured: 1 step(s) per epoch"));
  EXPECT_THAT(text, HasSubstr("warning: samples/s will not be measured"));
  const json fine = Explain("dataset: {format: npz, num_files_train: 64}\nreader: {batch_size: 2}\n", 2, 2, 0);
  EXPECT_THAT(ExplainText(fine), ::testing::Not(HasSubstr("will not be measured")));
}

TEST(Explain, CheckpointBytesPerRankAreTheCheckpointPlans) {
  const std::string llama = R"(
model:
  type: transformer
  num_layers: 32
  parallelism: {tensor: 1, pipeline: 1, zero_stage: 3}
  transformer: {vocab_size: 128256, hidden_size: 4096, ffn_hidden_size: 14336, num_attention_heads: 32,
                num_kv_heads: 8}
workflow: {train: false, checkpoint: true}
checkpoint: {num_checkpoints_write: 10, num_checkpoints_read: 4, fsync: true}
)";
  const json p = Explain(llama, 2, 4, 0);
  const WorkloadSpec spec = *LoadWorkload(llama, {}, "job.yaml", LoadOptions{false, true}, nullptr);
  const CheckpointPlan plan = *MakeCheckpointPlan(*CheckpointModelFor(spec), 8);
  ASSERT_EQ(p["checkpoint"]["bytes_per_rank"].size(), 8u);
  for (size_t r = 0; r < 8; ++r) EXPECT_EQ(p["checkpoint"]["bytes_per_rank"][r], plan.ranks[r].bytes()) << r;
  EXPECT_EQ(p["checkpoint"]["bytes_per_checkpoint"], plan.TotalBytes());
  EXPECT_EQ(p["checkpoint"]["checkpoints_written"], 10);
  EXPECT_EQ(p["checkpoint"]["bytes_read"], 4 * plan.TotalBytes());
  EXPECT_TRUE(p["runnable"].get<bool>()) << p.dump(1);
  EXPECT_EQ(p["train"]["enabled"], false);
  EXPECT_EQ(p["memory"]["memory_source"], "unknown");
  const std::string text = ExplainText(p);
  EXPECT_THAT(text, HasSubstr("checkpoint: 104.")) << text;  // GiB: the reference's "8B gives 105 GiB"
  EXPECT_THAT(text, HasSubstr("warning: checkpoint.fsync: true fsyncs every checkpoint file here"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("a run would stop here")));
}

TEST(Explain, LabelsAreListedWithTheirNote) {
  const json p = Explain("framework: tensorflow\nreader: {data_loader: dali, pin_memory: false}\n", 1, 1, 0);
  bool dali = false;
  for (const json& k : p["keys"]) {
    if (k["key"] == "reader.data_loader") {
      dali = true;
      EXPECT_EQ(k["value"], "dali");
      EXPECT_EQ(k["policy"], "label");
    }
  }
  EXPECT_TRUE(dali);
  EXPECT_THAT(ExplainText(p), HasSubstr("reader.pin_memory = false: label (torch pin_memory)"));
}

}  // namespace
}  // namespace dlio
