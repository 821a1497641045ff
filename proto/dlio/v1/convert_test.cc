#include "dlio/v1/convert.h"

#include <limits>
#include <utility>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

// Issue 14: one phase order for both sides. Every field of RunPhase (each set to a value other than its default)
// survives the trip through PhaseOrder and back, for each kind; a field added to the wire and not to the order fails.
TEST(PhaseOrderWire, EveryFieldAndKindRoundTrips) {
  v1::RunPhase wire;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(job_id: "j" phase_id: "save-checkpoint-3" workload_yaml: "model:\n  name: x\n" world_size: 16
           first_rank: 8 local_ranks: 4 epoch: 2 num_agents: 4 agent_index: 2 checkpoint_load: true
           checkpoint_index: 3 checkpoint_step: 1099511627776 s3_secret_access_key: "secret")pb",
      &wire));
  const std::vector<std::pair<v1::PhaseKind, PhaseKind>> kinds = {{v1::PHASE_KIND_GENERATE, PhaseKind::kGenerate},
                                                                  {v1::PHASE_KIND_TRAIN_EPOCH, PhaseKind::kTrainEpoch},
                                                                  {v1::PHASE_KIND_EVAL, PhaseKind::kEval},
                                                                  {v1::PHASE_KIND_CHECKPOINT, PhaseKind::kCheckpoint}};
  for (const auto& [w, k] : kinds) {
    wire.set_kind(w);
    std::vector<const google::protobuf::FieldDescriptor*> set;
    wire.GetReflection()->ListFields(wire, &set);
    ASSERT_EQ(set.size(), static_cast<size_t>(wire.GetDescriptor()->field_count())) << "a field is left at its default";
    const PhaseOrder o = FromProto(wire);
    EXPECT_EQ(o.kind, k);
    v1::RunPhase back;
    ToProto(o, &back);
    EXPECT_EQ(back.SerializeAsString(), wire.SerializeAsString()) << back.DebugString();
  }
}

// An order without a kind is a training epoch, as agents always read it; wire numbers beyond int saturate rather
// than turn negative.
TEST(PhaseOrderWire, UnspecifiedKindIsATrainingEpochAndLargeNumbersSaturate) {
  v1::RunPhase wire;
  wire.set_world_size(std::numeric_limits<uint32_t>::max());
  wire.set_checkpoint_step(std::numeric_limits<uint64_t>::max());
  const PhaseOrder o = FromProto(wire);
  EXPECT_EQ(o.kind, PhaseKind::kTrainEpoch);
  EXPECT_EQ(o.world, std::numeric_limits<int>::max());
  EXPECT_EQ(o.checkpoint_step, std::numeric_limits<int64_t>::max());
}

// D4 of issue 13: the coordinator accepts messages of at most kMaxReceiveMessageBytes, so an agent cuts a large
// phase result (long epochs, traces) into parts that each fit, and the coordinator puts them back together.
TEST(SplitPhaseDone, LargeResultsGoInPartsUnderTheLimitAndMergeBackExactly) {
  std::vector<RankEpochResult> ranks(3);
  for (int i = 0; i < 3; ++i) {
    RankEpochResult& r = ranks[static_cast<size_t>(i)];
    r.rank = 8 + i;
    r.epoch = 2;
    r.io.bytes = 1000u + static_cast<uint64_t>(i);
    for (int b = 1; b <= 2; ++b) {
      BlockTimings t;
      t.block = b;
      t.duration_s = 1.5 * b;
      const int steps = i == 1 ? 150000 : 10;  // rank 9: ~4.8 MB of step values per block
      for (int k = 0; k < steps; ++k) {
        t.load.push_back(k * 1e-6);
        t.proc.push_back(k * 2e-6);
        t.compute.push_back(k * 3e-6);
        t.barrier.push_back(k * 4e-6);
      }
      r.blocks.push_back(std::move(t));
    }
    if (i == 2) r.trace_events.assign(size_t{32} * 300000, 'x');  // 9.6 MB of trace events
  }
  v1::PhaseDone done;
  done.set_job_id("j");
  done.set_phase_id("train-epoch-2");
  for (const RankEpochResult& r : ranks) ToProto(r, done.add_ranks());
  ASSERT_GT(done.ByteSizeLong(), static_cast<size_t>(kMaxReceiveMessageBytes));

  const std::vector<v1::PhaseDone> parts = SplitPhaseDone(done);
  ASSERT_GT(parts.size(), 3u);
  std::vector<RankEpochResult> merged;
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_LE(parts[i].ByteSizeLong(), static_cast<size_t>(kMaxReceiveMessageBytes)) << "part " << i;
    EXPECT_EQ(parts[i].more(), i + 1 < parts.size());
    EXPECT_EQ(parts[i].job_id(), "j");
    EXPECT_EQ(parts[i].phase_id(), "train-epoch-2");
    ASSERT_TRUE(MergePhaseDonePart(parts[i], &merged));
  }
  ASSERT_EQ(merged.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(merged[i].rank, ranks[i].rank);
    EXPECT_EQ(merged[i].io.bytes, ranks[i].io.bytes);
    EXPECT_EQ(merged[i].trace_events, ranks[i].trace_events);
    ASSERT_EQ(merged[i].blocks.size(), 2u);
    for (size_t b = 0; b < 2; ++b) {
      EXPECT_EQ(merged[i].blocks[b].duration_s, ranks[i].blocks[b].duration_s);
      EXPECT_EQ(merged[i].blocks[b].load, ranks[i].blocks[b].load);
      EXPECT_EQ(merged[i].blocks[b].barrier, ranks[i].blocks[b].barrier);
    }
  }
  // A small result stays one message.
  v1::PhaseDone small;
  ToProto(ranks[0], small.add_ranks());
  EXPECT_EQ(SplitPhaseDone(small).size(), 1u);
  // A continuation without its head is refused.
  v1::PhaseDone orphan;
  orphan.add_ranks()->set_continuation(true);
  std::vector<RankEpochResult> none;
  EXPECT_FALSE(MergePhaseDonePart(orphan, &none));
}

}  // namespace
}  // namespace dlio
