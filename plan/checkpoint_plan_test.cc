#include "plan/checkpoint_plan.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CheckpointModel Llama(int64_t layers, int64_t h, int64_t ffn, int64_t heads, int64_t kv, int64_t vocab) {
  CheckpointModel m;
  m.transformer = true;
  m.num_layers = layers;
  m.hidden_size = h;
  m.ffn_hidden_size = ffn;
  m.num_attention_heads = heads;
  m.num_kv_heads = kv;
  m.vocab_size = vocab;
  return m;
}

CheckpointModel Llama3_8B() { return Llama(32, 4096, 14336, 32, 8, 128256); }

std::vector<std::string> Names(const RankCheckpoint& r) {
  std::vector<std::string> names;
  for (const CheckpointFile& f : r.files) names.push_back(f.name);
  return names;
}

// Worked example, llama3-8B: d_kv = 4096/32*8 = 1024; 2·V·h = 1,050,673,152; one layer = 2·4096 + 4096·6144 +
// 4096² + 3·4096·14336 = 218,112,000; 32 layers = 6,979,584,000; + h = 8,030,261,248.
TEST(CheckpointPlan, Llama3ParameterCounts) {
  EXPECT_EQ(TransformerParameters(Llama3_8B()), 8030261248);
  // 70B as in DLIO's llama_70b.yaml (128 heads, 8 KV heads): 69.88e9.
  EXPECT_EQ(TransformerParameters(Llama(80, 8192, 28672, 128, 8, 128256)), 69882617856);
  // 405B: 405.85e9.
  EXPECT_EQ(TransformerParameters(Llama(126, 16384, 53248, 128, 8, 128256)), 405853388800);
}

// llama3-8B, ZeRO-3 on 8 ranks (MLPerf closed): every rank writes a model shard (N·2/8) and an optimizer shard
// 3·(N/8 + 5h)·4 bytes; the total is 104.7 GiB (the reference's "8B gives 105 GiB").
TEST(CheckpointPlan, Llama3_8BZero3EightRanks) {
  CheckpointModel m = Llama3_8B();
  m.zero_stage = 3;
  auto plan = MakeCheckpointPlan(m, 8);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->parameters, 8030261248);
  for (int rank = 0; rank < 8; ++rank) {
    const RankCheckpoint& r = plan->ranks[rank];
    EXPECT_THAT(Names(r), ElementsAre("zero_pp_rank_" + std::to_string(rank) + "_mp_rank_0_model_states.pt",
                                      "zero_pp_rank_" + std::to_string(rank) + "_mp_rank_0_optim_states.pt"));
    EXPECT_EQ(r.model_bytes, 2007565312);
    EXPECT_EQ(r.optimizer_bytes, 3 * (8030261248 / 8 + 5 * 4096) * 4);
  }
  EXPECT_EQ(plan->TotalBytes(), 112425623552);
  EXPECT_NEAR(static_cast<double>(plan->TotalBytes()) / (1LL << 30), 104.7, 0.05);
}

// ZeRO-0 with TP2 on 4 ranks: only the first DP replica (ranks 0, 1) writes; the optimizer is N/(TP·PP) per rank.
TEST(CheckpointPlan, Zero0OnlyFirstReplicaWrites) {
  CheckpointModel m = Llama(4, 64, 256, 8, 8, 1000);
  m.tensor = 2;
  auto plan = MakeCheckpointPlan(m, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int64_t n = TransformerParameters(m);
  EXPECT_THAT(Names(plan->ranks[0]),
              ElementsAre("zero_pp_rank_0_mp_rank_0_model_states.pt", "zero_pp_rank_0_mp_rank_0_optim_states.pt"));
  EXPECT_THAT(Names(plan->ranks[1]),
              ElementsAre("zero_pp_rank_0_mp_rank_1_model_states.pt", "zero_pp_rank_0_mp_rank_1_optim_states.pt"));
  EXPECT_TRUE(plan->ranks[2].files.empty());
  EXPECT_TRUE(plan->ranks[3].files.empty());
  EXPECT_EQ(plan->ranks[0].optimizer_bytes, 3 * (n / 2 + 5 * 64) * 4);
  // Model with TP2: matrices halved, norms replicated. Layer: norms 2·64, QKV 64·(64+128)/2, out 64²/2,
  // MLP (2+1)·64·256/2; embedding and LM head 1000·64/2; final norm 64. fp16.
  const int64_t layer = 2 * 64 + 64 * 192 / 2 + 64 * 64 / 2 + 2 * 64 * 256 / 2 + 64 * 256 / 2;
  EXPECT_EQ(plan->ranks[0].model_bytes, (4 * layer + 2 * (1000 * 64 / 2) + 64) * 2);
}

// ZeRO-1 with PP2 on 4 ranks (DP 2): DP-rank 0 writes one file per layer of its stage; every rank its optimizer.
TEST(CheckpointPlan, Zero1PipelineWritesLayerFiles) {
  CheckpointModel m = Llama(3, 64, 256, 8, 8, 1000);
  m.pipeline = 2;
  m.zero_stage = 1;
  auto plan = MakeCheckpointPlan(m, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Stage 0: layers 0 (embedding), 1, 2 (3 layers over 2 stages: the first gets 2); stage 1: 3, LM head 4, norm 5.
  EXPECT_THAT(Names(plan->ranks[0]),
              ElementsAre("layer_0-model_0_model_states.pt", "layer_1-model_0_model_states.pt",
                          "layer_2-model_0_model_states.pt", "zero_pp_rank_0_mp_rank_0_optim_states.pt"));
  EXPECT_THAT(Names(plan->ranks[1]),
              ElementsAre("layer_3-model_1_model_states.pt", "layer_4-model_1_model_states.pt",
                          "layer_5-model_1_model_states.pt", "zero_pp_rank_0_mp_rank_1_optim_states.pt"));
  EXPECT_THAT(Names(plan->ranks[2]), ElementsAre("zero_pp_rank_1_mp_rank_0_optim_states.pt"));
  EXPECT_THAT(Names(plan->ranks[3]), ElementsAre("zero_pp_rank_1_mp_rank_1_optim_states.pt"));
  const int64_t n = TransformerParameters(m);
  EXPECT_EQ(plan->ranks[3].optimizer_bytes, 3 * (n / 4 + 5 * 64) * 4);
  // The model files of both stages add up to the whole model once (no TP, no sharding).
  EXPECT_EQ(plan->ranks[0].model_bytes + plan->ranks[1].model_bytes, n * 2);
  EXPECT_EQ(plan->ranks[2].model_bytes, 0);
}

TEST(CheckpointPlan, Zero1WithoutPipelineWritesOneModelFile) {
  CheckpointModel m = Llama(2, 64, 256, 8, 8, 1000);
  m.zero_stage = 1;
  auto plan = MakeCheckpointPlan(m, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Names(plan->ranks[0]),
              ElementsAre("model_0_model_states.pt", "zero_pp_rank_0_mp_rank_0_optim_states.pt"));
  EXPECT_THAT(Names(plan->ranks[1]), ElementsAre("zero_pp_rank_1_mp_rank_0_optim_states.pt"));
  EXPECT_EQ(plan->ranks[0].model_bytes, TransformerParameters(m) * 2);
}

TEST(CheckpointPlan, NonTransformerIsOneTensorOnRankZero) {
  CheckpointModel m;
  m.model_size_bytes = 499153191;
  auto plan = MakeCheckpointPlan(m, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->ranks.size(), 3u);
  EXPECT_THAT(Names(plan->ranks[0]), ElementsAre("model_states-0.pt"));
  EXPECT_EQ(plan->ranks[0].files[0].bytes, 499153191);
  EXPECT_TRUE(plan->ranks[1].files.empty());
  EXPECT_EQ(plan->TotalBytes(), 499153191);
  EXPECT_EQ(plan->parameters, 0);
}

TEST(CheckpointPlan, Errors) {
  CheckpointModel m = Llama3_8B();
  m.tensor = 8;
  EXPECT_THAT(std::string(MakeCheckpointPlan(m, 12).status().message()), HasSubstr("multiple of tensor x pipeline"));
  m = Llama3_8B();
  m.zero_stage = 3;
  m.pipeline = 2;
  EXPECT_THAT(std::string(MakeCheckpointPlan(m, 4).status().message()), HasSubstr("ZeRO-3"));
  m = Llama3_8B();
  m.zero_stage = 4;
  EXPECT_THAT(std::string(MakeCheckpointPlan(m, 1).status().message()), HasSubstr("zero_stage"));
  m = Llama3_8B();
  m.num_attention_heads = 30;
  EXPECT_THAT(std::string(MakeCheckpointPlan(m, 1).status().message()), HasSubstr("num_attention_heads"));
  m = Llama3_8B();
  m.num_layers = -1;
  EXPECT_THAT(std::string(MakeCheckpointPlan(m, 1).status().message()), HasSubstr("model.num_layers"));
}

TEST(CheckpointPlan, DtypesAndDirName) {
  EXPECT_EQ(*CheckpointDtypeBytes("bf16", "k"), 2);
  EXPECT_EQ(*CheckpointDtypeBytes("fp64", "k"), 8);
  EXPECT_EQ(*CheckpointDtypeBytes("uint8", "k"), 1);
  EXPECT_THAT(std::string(CheckpointDtypeBytes("fp8", "model.model_datatype").status().message()),
              HasSubstr("model.model_datatype"));
  EXPECT_EQ(CheckpointDirName(1, 7), "global_epoch1_step7");
}

// DLIO's llama_8b_zero3.yaml model section, through the workload loader.
TEST(CheckpointPlan, ModelKeysFromWorkload) {
  const std::string yaml = R"(
model:
  name: llama_8b
  type: transformer
  model_datatype: bf16
  optimizer_datatype: fp32
  num_layers: 32
  parallelism: {tensor: 1, pipeline: 1, zero_stage: 3}
  transformer: {vocab_size: 128256, hidden_size: 4096, ffn_hidden_size: 14336, num_attention_heads: 32,
                num_kv_heads: 8}
)";
  auto spec = LoadWorkload(yaml, {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto again = LoadWorkload(ToYaml(*spec), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again == *spec);
  auto m = CheckpointModelFor(*spec);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->transformer);
  EXPECT_EQ(m->zero_stage, 3);
  EXPECT_EQ(TransformerParameters(*m), 8030261248);
  auto plan = MakeCheckpointPlan(*m, 8);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->TotalBytes(), 112425623552);

  EXPECT_THAT(std::string(LoadWorkload(yaml, {"model.parallelism.zero_stage=4"}).status().message()),
              HasSubstr("model.parallelism.zero_stage"));
  EXPECT_THAT(std::string(LoadWorkload(yaml, {"model.model_datatype=fp8"}).status().message()),
              HasSubstr("model.model_datatype"));
  EXPECT_THAT(std::string(LoadWorkload(yaml, {"model.transformer.num_attention_heads=30"}).status().message()),
              HasSubstr("num_attention_heads"));
  EXPECT_THAT(std::string(LoadWorkload(yaml, {"model.parallelism.pipeline=2"}).status().message()),
              HasSubstr("ZeRO-3"));
}

// Issue 24 item 2: every transformer key within its range, their product 50 PiB per checkpoint, which --explain
// announced with exit 0 and the agents began to write. Refused like a model_size_bytes above its bound.
TEST(CheckpointPlan, ACheckpointAboveOnePebibyteIsRefusedNamingTheKeys) {
  const CheckpointModel m = Llama(16384, 131072, 524288, 32, 8, 4194304);
  const absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(m, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(plan.status().message());
  EXPECT_THAT(msg, HasSubstr("model.transformer: num_layers 16384, vocab_size 4194304, hidden_size 131072, "
                             "ffn_hidden_size 524288"));
  EXPECT_THAT(msg, HasSubstr("(50.7"));
  EXPECT_THAT(msg, HasSubstr(" PiB) per checkpoint, more than the 1125899906842624 bytes (1.00 PiB)"));
  EXPECT_THAT(msg, HasSubstr("lower model.num_layers"));
}

// With many K/V heads the parameter count itself passes int64 (2^17 x 2^31 x 2^14): refused, not wrapped around.
TEST(CheckpointPlan, AParameterCountBeyondInt64IsRefusedNotWrapped) {
  const CheckpointModel m = Llama(16384, 131072, 524288, 1, 16384, 4194304);
  const absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(m, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("per checkpoint, more than the 1125899906842624"));
}

// The bound is the same for both kinds of model: model_size_bytes up to it plans, above it is refused.
TEST(CheckpointPlan, TheBoundIsModelSizeBytesBound) {
  EXPECT_EQ(kMaxCheckpointBytes, kMaxModelBytes);
  CheckpointModel m;
  m.model_size_bytes = kMaxCheckpointBytes;
  const absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(m, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->TotalBytes(), kMaxCheckpointBytes);
  m.model_size_bytes = kMaxCheckpointBytes + 1;
  EXPECT_THAT(std::string(MakeCheckpointPlan(m, 4).status().message()), HasSubstr("model.model_size_bytes"));
  // A large model under the bound still plans (llama3-405B, DLIO's 405b shape: ~5.7 TB per checkpoint).
  const absl::StatusOr<CheckpointPlan> big = MakeCheckpointPlan(Llama(126, 16384, 53248, 128, 8, 128256), 8);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_LT(big->TotalBytes(), kMaxCheckpointBytes);
}

// The saves a job makes, as the coordinator orders them (the names tests/checkpoint_test.cc finds on disk).
TEST(CheckpointPlan, SaveDirsListEverySaveOfTheJob) {
  WorkloadSpec spec;
  EXPECT_TRUE(CheckpointSaveDirs(spec, 2).empty());  // workflow.checkpoint off
  spec.checkpoint = true;
  spec.train = false;
  spec.num_checkpoints_write = 3;
  spec.num_checkpoints_read = 2;
  EXPECT_THAT(CheckpointSaveDirs(spec, 2),
              ElementsAre("global_epoch1_step1", "global_epoch1_step2", "global_epoch1_step3"));
  // 8 files x 4 samples, batch 2 on 2 ranks: 8 steps per epoch, 2 epochs.
  spec.train = true;
  spec.num_files_train = 8;
  spec.num_samples_per_file = 4;
  spec.batch_size = 2;
  spec.epochs = 2;
  spec.checkpoint_after_epoch = 1;
  spec.epochs_between_checkpoints = 1;
  EXPECT_THAT(CheckpointSaveDirs(spec, 2), ElementsAre("global_epoch1_step9", "global_epoch2_step9"));
  spec.steps_between_checkpoints = 3;
  EXPECT_THAT(CheckpointSaveDirs(spec, 2), ElementsAre("global_epoch1_step3", "global_epoch1_step6",
                                                       "global_epoch2_step3", "global_epoch2_step6"));
  spec.batch_size = 64;  // no step for this world: no save either (PreRunRefusals refuses the job)
  EXPECT_TRUE(CheckpointSaveDirs(spec, 2).empty());
}

// DLIO's megatron_deepspeed_LLNL.yaml as DLIO main sizes it (base_checkpointing.py, the predefined lists): TP4 x PP8,
// ZeRO 0, 40 layers; every writer (ranks < TP x PP = 32) holds model_size bytes of model state, 5 transformer layers
// of (52583936 + 209715200) / 4 bytes each, and 3 x (1009254400 + 865075200 + 793600) bytes of optimizer state.
CheckpointModel MegatronLlnl() {
  CheckpointModel m;
  m.transformer = false;  // model.type: megatron_deepspeed
  m.model_size_bytes = 30102;
  m.num_layers = 40;
  m.tensor = 4;
  m.pipeline = 8;
  m.zero_stage = 0;
  m.layer_parameters = {52583936, 209715200};
  m.optimization_groups = {1009254400, 865075200, 793600};
  return m;
}

TEST(CheckpointPlan, PredefinedListsSizeEveryWriterAsDlioMain) {
  absl::StatusOr<CheckpointPlan> p = MakeCheckpointPlan(MegatronLlnl(), 64);
  ASSERT_TRUE(p.ok()) << p.status();
  const int64_t layer = 52583936 / 4 + 209715200 / 4;  // 65,574,784
  const int64_t opt = 3 * (1009254400LL + 865075200 + 793600);
  for (int64_t rank = 0; rank < 64; ++rank) {
    const RankCheckpoint& r = p->ranks[static_cast<size_t>(rank)];
    if (rank >= 32) {  // ZeRO 0: only the first data-parallel replica writes
      EXPECT_TRUE(r.files.empty()) << rank;
      continue;
    }
    const int64_t mp = rank % 32;
    EXPECT_THAT(Names(r), ElementsAre("model_states-" + std::to_string(rank) + ".pt",
                                      "zero_pp_rank_0_mp_rank_" + std::to_string(mp) + "_model_states.pt",
                                      "zero_pp_rank_0_mp_rank_" + std::to_string(mp) + "_optim_states.pt"));
    EXPECT_EQ(r.files[0].bytes, 30102);
    EXPECT_EQ(r.files[1].bytes, 5 * layer) << rank;  // 40 layers over 8 stages; no embedding or LM head
    EXPECT_EQ(r.files[2].bytes, opt);
  }
  EXPECT_EQ(p->TotalBytes(), 32 * (30102 + 5 * layer + opt));
  // ZeRO 1 with PP > 1: DP-rank 0 writes one file per layer of its stage (stage 1 holds layers 6..10).
  CheckpointModel z1 = MegatronLlnl();
  z1.zero_stage = 1;
  p = MakeCheckpointPlan(z1, 64);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Names(p->ranks[4]), ElementsAre("model_states-4.pt", "layer_6-model_4_model_states.pt",
                                              "layer_7-model_4_model_states.pt", "layer_8-model_4_model_states.pt",
                                              "layer_9-model_4_model_states.pt", "layer_10-model_4_model_states.pt",
                                              "zero_pp_rank_0_mp_rank_4_optim_states.pt"));
  EXPECT_THAT(Names(p->ranks[36]), ElementsAre("model_states-36.pt", "zero_pp_rank_1_mp_rank_4_optim_states.pt"));
  // Only one list given: the other half is the formula's for a transformer, none otherwise.
  CheckpointModel only_opt;
  only_opt.optimization_groups = {100, 0, 28};
  only_opt.model_size_bytes = 0;
  p = MakeCheckpointPlan(only_opt, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Names(p->ranks[0]), ElementsAre("zero_pp_rank_0_mp_rank_0_optim_states.pt"));
  EXPECT_EQ(p->ranks[0].bytes(), 3 * 128);
  EXPECT_TRUE(p->ranks[1].files.empty());  // ZeRO 0, TP x PP = 1
  // Bounded before any integer sum: 16384 layers of 1024 entries of 2^50 bytes is refused naming the key.
  CheckpointModel huge = MegatronLlnl();
  huge.num_layers = 16384;
  huge.layer_parameters.assign(1024, int64_t{1} << 50);
  p = MakeCheckpointPlan(huge, 32);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("model.layer_parameters:"));
}

// checkpoint.mode subset: the world writes its ranks' shares of a job of TP x PP x data ranks (DLIO's
// model.parallelism.data), so 2 ranks of llama3-8B at data 8 write exactly ranks 0 and 1 of the 8-rank job.
TEST(CheckpointPlan, SubsetWritesTheShareOfTheWholeJob) {
  CheckpointModel full = Llama3_8B();
  full.zero_stage = 3;
  absl::StatusOr<CheckpointPlan> whole = MakeCheckpointPlan(full, 8);
  ASSERT_TRUE(whole.ok()) << whole.status();
  CheckpointModel subset = full;
  subset.data = 8;
  absl::StatusOr<CheckpointPlan> part = MakeCheckpointPlan(subset, 2);
  ASSERT_TRUE(part.ok()) << part.status();
  ASSERT_EQ(part->ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(Names(part->ranks[r]), Names(whole->ranks[r]));
    EXPECT_EQ(part->ranks[r].bytes(), whole->ranks[r].bytes());
  }
  EXPECT_EQ(part->TotalBytes() * 4, whole->TotalBytes());
  // More ranks than the whole job is refused naming the key; in default mode data is not used.
  absl::StatusOr<CheckpointPlan> over = MakeCheckpointPlan(subset, 9);
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("model.parallelism.data: checkpoint.mode subset: the 9 ranks"));
  CheckpointModel tp8 = full;
  tp8.tensor = 8;
  tp8.data = 1;
  EXPECT_TRUE(MakeCheckpointPlan(tp8, 3).ok());  // a subset need not be a multiple of TP x PP
  tp8.data = -1;
  EXPECT_FALSE(MakeCheckpointPlan(tp8, 3).ok());
}

}  // namespace
}  // namespace dlio
