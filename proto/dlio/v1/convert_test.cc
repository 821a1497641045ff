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
           checkpoint_index: 3 checkpoint_step: 1099511627776 s3_secret_access_key: "secret" share_agent: true
           barrier_tree { relay: "a1" relay_endpoint: "10.0.0.1:7000" group: "a1" group: "a2"
                          upper { members: "a1" members: "a3" } upper { members: "a1" members: "a5" }
                          relay_tls_name: "relay-1.example" }
           list_split: "valid"
           listing { split: "train" pattern: true count: 200000 file_prefix: "img" subfolders: 4 ext: "npz"
                     names_zstd: "\x28\xb5" note: "left out 2 files" seconds: 1.25 requests: 201 agent: "a0" })pb",
      &wire));
  const std::vector<std::pair<v1::PhaseKind, PhaseKind>> kinds = {{v1::PHASE_KIND_GENERATE, PhaseKind::kGenerate},
                                                                  {v1::PHASE_KIND_TRAIN_EPOCH, PhaseKind::kTrainEpoch},
                                                                  {v1::PHASE_KIND_EVAL, PhaseKind::kEval},
                                                                  {v1::PHASE_KIND_CHECKPOINT, PhaseKind::kCheckpoint},
                                                                  {v1::PHASE_KIND_LIST, PhaseKind::kList}};
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

// Issue 26: a phase's host telemetry and the verdict's limit cross the wire whole.
TEST(HostTelemetryWire, RankResultCarriesTheSeriesAndTheVerdictItsLimit) {
  RankEpochResult r;
  r.rank = 3;
  HostSample s;
  s.unix_ms = 1234;
  s.seconds = 10;
  s.cpu_busy = 42;
  s.nics = {NicRate{"eth0", 1, 2, 3, 4, 1000, 0.5}};
  r.host.series = {s, s};
  r.host.phase = s;
  v1::RankResult p;
  ToProto(r, &p);
  const RankEpochResult back = FromProto(p);
  ASSERT_EQ(back.host.series.size(), 2u);
  ASSERT_TRUE(back.host.phase.has_value());
  EXPECT_EQ(HostSampleJson(*back.host.phase), HostSampleJson(s));
  v1::RankResult bad;
  bad.set_host_telemetry("{not json");
  EXPECT_TRUE(FromProto(bad).host.empty());

  // A long phase's series (20000 samples, ~10 MB of JSON) is cut into parts under the limit and merged back whole.
  RankEpochResult big;
  big.rank = 0;
  big.host.phase = s;
  for (int i = 0; i < 20000; ++i) {
    s.unix_ms = i;
    big.host.series.push_back(s);
  }
  v1::PhaseDone done;
  ToProto(big, done.add_ranks());
  ASSERT_GT(done.ByteSizeLong(), static_cast<size_t>(kMaxReceiveMessageBytes));
  std::vector<RankEpochResult> merged;
  for (const v1::PhaseDone& part : SplitPhaseDone(done)) {
    ASSERT_LE(part.ByteSizeLong(), static_cast<size_t>(kMaxReceiveMessageBytes));
    ASSERT_TRUE(MergePhaseDonePart(part, &merged));
  }
  ASSERT_EQ(merged.size(), 1u);
  ASSERT_EQ(merged[0].host.series.size(), 20000u);
  EXPECT_EQ(merged[0].host.series[19999].unix_ms, 19999);
  ASSERT_TRUE(merged[0].host.phase.has_value());

  Verdict v;
  v.status = VerdictStatus::kFail;
  v.limit_class = "storage";
  v.limit_line = "storage: ranks waited 41 % of each step for data";
  v.limit_evidence = {{"batch_wait_share", 0.41}};
  v1::Verdict pv;
  ToProto(v, &pv);
  const Verdict vb = FromProto(pv);
  EXPECT_EQ(vb.limit_class, v.limit_class);
  EXPECT_EQ(vb.limit_line, v.limit_line);
  EXPECT_EQ(vb.limit_evidence, v.limit_evidence);
}

}  // namespace
}  // namespace dlio
