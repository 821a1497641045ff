#include "plan/checkpoint_schedule.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

WorkloadSpec Ckpt() {
  WorkloadSpec s;
  s.checkpoint = true;
  return s;
}

TEST(CheckpointSchedule, EpochBasedFollowsAfterAndBetween) {
  WorkloadSpec s = Ckpt();
  s.checkpoint_after_epoch = 2;
  s.epochs_between_checkpoints = 3;
  std::vector<int64_t> epochs;
  for (int64_t e = 1; e <= 9; ++e) {
    if (CheckpointAfterEpoch(s, e)) epochs.push_back(e);
  }
  EXPECT_THAT(epochs, ElementsAre(2, 5, 8));
  // DLIO's defaults: every epoch.
  WorkloadSpec d = Ckpt();
  EXPECT_TRUE(CheckpointAfterEpoch(d, 1));
  EXPECT_TRUE(CheckpointAfterEpoch(d, 2));
  // Off, or step-based: never at the end of an epoch.
  d.checkpoint = false;
  EXPECT_FALSE(CheckpointAfterEpoch(d, 1));
  WorkloadSpec st = Ckpt();
  st.steps_between_checkpoints = 4;
  EXPECT_FALSE(CheckpointAfterEpoch(st, 1));
  EXPECT_EQ(EpochCheckpointStep(10), 11);  // DLIO's name after a 10-step epoch: global_epoch1_step11
}

TEST(CheckpointSchedule, StepBasedRestartsEveryEpoch) {
  WorkloadSpec s = Ckpt();
  s.steps_between_checkpoints = 4;
  EXPECT_THAT(CheckpointStepsInEpoch(s, 10), ElementsAre(4, 8));
  EXPECT_THAT(CheckpointStepsInEpoch(s, 8), ElementsAre(4, 8));  // the last step too
  EXPECT_THAT(CheckpointStepsInEpoch(s, 3), IsEmpty());
  s.steps_between_checkpoints = 0;  // DLIO compares the step with 0: never
  EXPECT_THAT(CheckpointStepsInEpoch(s, 10), IsEmpty());
  s.steps_between_checkpoints = -1;  // epoch-based
  EXPECT_THAT(CheckpointStepsInEpoch(s, 10), IsEmpty());
  s.steps_between_checkpoints = 1;
  s.checkpoint = false;
  EXPECT_THAT(CheckpointStepsInEpoch(s, 10), IsEmpty());
}

TEST(CheckpointSchedule, CheckpointOnlyWritesThenReadsTheSameNames) {
  WorkloadSpec s = Ckpt();
  s.train = false;
  s.num_checkpoints_write = 3;
  s.num_checkpoints_read = 2;
  EXPECT_THAT(CheckpointOnlySequence(s),
              ElementsAre(CheckpointOp{false, 1, 1, 1}, CheckpointOp{false, 2, 1, 2}, CheckpointOp{false, 3, 1, 3},
                          CheckpointOp{true, 1, 1, 1}, CheckpointOp{true, 2, 1, 2}));
  s.num_checkpoints_write = -1;  // MLPerf's separate read invocation
  EXPECT_THAT(CheckpointOnlySequence(s), ElementsAre(CheckpointOp{true, 1, 1, 1}, CheckpointOp{true, 2, 1, 2}));
  s.train = true;  // checkpoints inside training instead
  EXPECT_THAT(CheckpointOnlySequence(s), IsEmpty());
}

TEST(CheckpointSchedule, RecoveryRankShiftReadsAnotherAgentsFiles) {
  WorkloadSpec s = Ckpt();
  EXPECT_EQ(LoadSourceRank(s, 1, 4, 2), 1);
  s.recovery_rank_shift = true;
  EXPECT_EQ(LoadSourceRank(s, 0, 4, 2), 2);
  EXPECT_EQ(LoadSourceRank(s, 3, 4, 2), 1);
  EXPECT_EQ(LoadSourceRank(s, 1, 2, 2), 1);  // one agent: nothing to shift to
}

}  // namespace
}  // namespace dlio
