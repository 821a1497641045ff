#include "dlio/v1/convert.h"

#include "gtest/gtest.h"

namespace dlio {
namespace {

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
