#include "plan/measurement_guards.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

WorkloadSpec Load(const std::string& yaml) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, {});
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : WorkloadSpec();
}

constexpr const char* kTrain = R"(
model: {name: g}
workflow: {generate_data: false, train: true}
dataset: {num_files_train: 64, record_length_bytes: 4096, num_samples_per_file: 1}
reader: {batch_size: 1, read_threads: 4}
train: {epochs: 1, computation_time: 0.01}
)";

constexpr const char* kCheckpointOnly = R"(
model: {name: g, model_size_bytes: 100000000}
workflow: {train: false, checkpoint: true}
checkpoint: {checkpoint_folder: ck, num_checkpoints_write: 2, num_checkpoints_read: 1}
)";

TEST(MeasurementGuards, LoaderThreadsAboveTheNodesCoresAreNamed) {
  const WorkloadSpec spec = Load(kTrain);
  // 4 threads x 2 ranks = 8 on a 4-core node: warned; the 16-core node and the unknown one are not.
  const auto w = MeasurementGuards(spec, {{"n1", 4, 0, 2}, {"n2", 16, 0, 2}, {"n3", 0, 0, 2}}, 6);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("reader.read_threads: 4 loader thread(s) per rank x 2 rank(s) = 8 per agent on node "
                              "n1, which has 4 core(s)"));
  EXPECT_THAT(w[0], HasSubstr("at most 2 thread(s) per rank"));
  EXPECT_THAT(MeasurementGuards(spec, {{"n1", 8, 0, 2}}, 2), IsEmpty());  // 8 threads on 8 cores: fine
  // Per agent: two agents of one rank each on a 4-core node run 4 threads each: fine.
  EXPECT_THAT(MeasurementGuards(spec, {{"n1", 4, 0, 2, 2}}, 2), IsEmpty());
}

TEST(MeasurementGuards, CheckpointLoadsThatFitInRamOfferTheEviction) {
  const WorkloadSpec spec = Load(kCheckpointOnly);
  const auto w = MeasurementGuards(spec, {{"n1", 4, 64ull << 30, 2}}, 2);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("checkpoint: the 1 load(s) read checkpoints this job wrote seconds before"));
  EXPECT_THAT(w[0], HasSubstr("node n1, RAM 64.00 GiB"));
  EXPECT_THAT(w[0], HasSubstr("set dlio_ext.checkpoint_evict_cache: true"));
  // A node whose RAM cannot hold its share, an unknown RAM, and the eviction on: no warning.
  EXPECT_THAT(MeasurementGuards(spec, {{"n1", 4, 1000, 2}}, 2), IsEmpty());
  EXPECT_THAT(MeasurementGuards(spec, {{"n1", 4, 0, 2}}, 2), IsEmpty());
  WorkloadSpec evict = spec;
  evict.checkpoint_evict_cache = true;
  EXPECT_THAT(MeasurementGuards(evict, {{"n1", 4, 64ull << 30, 2}}, 2), IsEmpty());
}

TEST(MeasurementGuards, EachNodeJudgedOnItsOwnRanks) {
  const WorkloadSpec spec = Load(kCheckpointOnly);
  // model_size_bytes is rank 0's alone (plan/checkpoint_plan.h): node a (ranks 0-1) holds 100 MB, node b nothing.
  EXPECT_THAT(MeasurementGuards(spec, {{"a", 4, 1ull << 30, 2}, {"b", 4, 1ull << 30, 2}}, 4),
              ElementsAre(HasSubstr("on node a")));
  // Rank 0 on a node with 64 MiB: its 100 MB cannot stay in that page cache.
  EXPECT_THAT(MeasurementGuards(spec, {{"a", 4, 64ull << 20, 2}, {"b", 4, 1ull << 30, 2}}, 4), IsEmpty());
}

}  // namespace
}  // namespace dlio
