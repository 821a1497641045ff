#include "mlperf/rules.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace dlio {
namespace {

TEST(MlperfDatasize, Unet3dOneHostIsStepBound) {
  // 8 accelerators x batch 7 x 500 steps = 28,000 files; 5 x 128 GiB / 146,600,628 B = 4,687.5 -> 4,688 files.
  const DatasizeResult d = ComputeDatasize({8, 1, 128}, *FindMlperfWorkload("unet3d"));
  EXPECT_EQ(d.files_for_memory, 4688);
  EXPECT_EQ(d.files_for_steps, 28000);
  EXPECT_EQ(d.num_files_train, 28000);
  EXPECT_EQ(d.binding, "steps");
  EXPECT_EQ(d.steps_per_epoch, 500);
  EXPECT_EQ(d.num_subfolders_train, 3);
  EXPECT_EQ(d.override_line,
            "++workload.dataset.num_files_train=28000 ++workload.dataset.num_subfolders_train=3");
}

TEST(MlperfDatasize, Resnet50IsMemoryBound) {
  // 5 x 256 GiB / (1251 x 114,660.07 B) = 9,581.65 -> 9,582 files; steps: 500 x 400 x 8 / 1251 = 1,278.98 -> 1,279.
  const DatasizeResult d = ComputeDatasize({8, 1, 256}, *FindMlperfWorkload("resnet50_h100"));
  EXPECT_EQ(d.files_for_memory, 9582);
  EXPECT_EQ(d.files_for_steps, 1279);
  EXPECT_EQ(d.num_files_train, 9582);
  EXPECT_EQ(d.binding, "memory");
  EXPECT_EQ(d.num_subfolders_train, 0);
  EXPECT_EQ(d.override_line, "++workload.dataset.num_files_train=9582");
  EXPECT_GE(d.dataset_bytes, 5.0 * 256 * 1024 * 1024 * 1024);
}

TEST(MlperfDatasize, CosmoflowTwoHostsSumsMemory) {
  // 5 x 2 x 64 GiB / 2,828,486 B = 242,954.98 -> 242,955 files; steps: 500 x 1 x 4 x 2 = 4,000.
  const DatasizeResult d = ComputeDatasize({4, 2, 64}, *FindMlperfWorkload("cosmoflow"));
  EXPECT_EQ(d.total_accelerators, 8);
  EXPECT_EQ(d.files_for_memory, 242955);
  EXPECT_EQ(d.files_for_steps, 4000);
  EXPECT_EQ(d.num_files_train, 242955);
  EXPECT_EQ(d.num_subfolders_train, 25);
}

TEST(MlperfWorkloads, ThresholdsAndLookup) {
  EXPECT_DOUBLE_EQ(FindMlperfWorkload("unet3d")->au_threshold, 0.90);
  EXPECT_DOUBLE_EQ(FindMlperfWorkload("resnet50")->au_threshold, 0.90);
  EXPECT_DOUBLE_EQ(FindMlperfWorkload("cosmoflow_a100")->au_threshold, 0.70);
  EXPECT_EQ(FindMlperfWorkload("bert"), nullptr);
}

TEST(MlperfClassify, ClosedKeys) {
  const Classification c = ClassifyOverrides(
      *FindMlperfWorkload("unet3d"),
      {"++workload.dataset.num_files_train=28000", "reader.read_threads=8", "++workload.reader.odirect=True",
       "data_reader.prefetch_size=4", "storage.storage_root=/mnt/x"},
      28000, 28000, true);
  EXPECT_EQ(c.overall, MlperfClass::kClosed);
  ASSERT_EQ(c.keys.size(), 5u);
  EXPECT_EQ(c.keys[0].key, "dataset.num_files_train");
  EXPECT_EQ(c.keys[3].key, "reader.prefetch_size");
  for (const auto& k : c.keys) EXPECT_EQ(k.cls, MlperfClass::kClosed) << k.key;
  EXPECT_TRUE(c.problems.empty());
}

TEST(MlperfClassify, OpenKeys) {
  const Classification c = ClassifyOverrides(*FindMlperfWorkload("resnet50"),
                                             {"reader.read_threads=8", "dataset.format=npz", "framework=pytorch"});
  EXPECT_EQ(c.overall, MlperfClass::kOpen);
  EXPECT_EQ(c.keys[0].cls, MlperfClass::kClosed);
  EXPECT_EQ(c.keys[1].cls, MlperfClass::kOpen);
  EXPECT_EQ(c.keys[2].cls, MlperfClass::kOpen);
}

TEST(MlperfClassify, InvalidKeysNameTheReason) {
  const Classification c = ClassifyOverrides(
      *FindMlperfWorkload("resnet50"),
      {"reader.odirect=True", "train.computation_time=0.1", "dlio_ext.read_bandwidth_limit=100MiB", "garbage"});
  EXPECT_EQ(c.overall, MlperfClass::kInvalid);
  EXPECT_EQ(c.keys[0].cls, MlperfClass::kInvalid);
  EXPECT_NE(c.keys[0].reason.find("unet3d only"), std::string::npos);
  EXPECT_EQ(c.keys[1].cls, MlperfClass::kInvalid);
  EXPECT_NE(c.keys[1].reason.find("not in the CLOSED or OPEN list"), std::string::npos);
  EXPECT_EQ(c.keys[2].cls, MlperfClass::kInvalid);
  EXPECT_EQ(c.keys[3].cls, MlperfClass::kInvalid);
}

// v3.0's per-epoch cache drop, which --mlperf sets on every training run: CLOSED with every_epoch, INVALID otherwise.
TEST(MlperfClassify, PerEpochCacheDropIsClosedAndOtherEvictionsAreInvalid) {
  const MlperfWorkload& unet = *FindMlperfWorkload("unet3d");
  Classification c = ClassifyOverrides(unet, {"dlio_ext.evict_cache=every_epoch"}, 0, 0, true);
  EXPECT_EQ(c.overall, MlperfClass::kClosed);
  ASSERT_EQ(c.keys.size(), 1u);
  EXPECT_NE(c.keys[0].reason.find("dropped before every training epoch"), std::string::npos) << c.keys[0].reason;
  c = ClassifyOverrides(unet, {"dlio_ext.evict_cache=before_training"}, 0, 0, true);
  EXPECT_EQ(c.overall, MlperfClass::kInvalid);
  EXPECT_NE(c.keys[0].reason.find("dlio_ext.evict_cache: only every_epoch"), std::string::npos) << c.keys[0].reason;
}

TEST(MlperfClassify, TooFewFilesAndUnet3dWithoutCheckpointAreInvalid) {
  const Classification c =
      ClassifyOverrides(*FindMlperfWorkload("unet3d"), {"dataset.num_files_train=100"}, 100, 28000, false);
  EXPECT_EQ(c.overall, MlperfClass::kInvalid);
  EXPECT_EQ(c.keys[0].cls, MlperfClass::kClosed);
  ASSERT_EQ(c.problems.size(), 2u);
  EXPECT_NE(c.problems[0].find("below the 28000 files"), std::string::npos);
  EXPECT_NE(c.problems[1].find("workflow.checkpoint"), std::string::npos);
}

TEST(MlperfRuns, ReplicationWithinFivePercent) {
  // Mean 100; 104 deviates 4 % -> replicates.
  RunsVerdict v = JudgeRuns({{95, 100}, {96, 98}, {94, 104}, {93, 99}, {92, 99}}, 0.90);
  EXPECT_DOUBLE_EQ(v.throughput_mean.value_or(0), 100);
  EXPECT_DOUBLE_EQ(v.au_mean.value_or(0), 94);
  EXPECT_NEAR(v.max_deviation.value_or(1), 0.04, 1e-12);
  EXPECT_TRUE(v.replicates);
  EXPECT_TRUE(v.au_pass);
  // Mean 100; 107 deviates 7 %, and one run's AU is under 90 %.
  v = JudgeRuns({{95, 107}, {89, 93}, {95, 100}, {95, 100}, {95, 100}}, 0.90);
  EXPECT_FALSE(v.replicates);
  EXPECT_FALSE(v.au_pass);
  EXPECT_EQ(v.au_failed_runs, 1);
}

TEST(MlperfRuns, UnmeasuredFiguresGiveNoVerdictAndNoDeviation) {
  // A run whose samples/s was not measured (too few steps) leaves replication unjudged, never "FAIL, 0.00 %".
  RunsVerdict v = JudgeRuns({{95, std::nullopt}, {96, 98}}, 0.90);
  EXPECT_FALSE(v.throughput_mean.has_value());
  EXPECT_FALSE(v.max_deviation.has_value());
  EXPECT_FALSE(v.replicates);
  EXPECT_TRUE(v.au_pass);
  v = JudgeRuns({{std::nullopt, 100}, {96, 100}}, 0.90);
  EXPECT_FALSE(v.au_mean.has_value());
  EXPECT_FALSE(v.au_pass);
  EXPECT_EQ(v.au_failed_runs, 0);
}

TEST(MlperfClassifyWorkload, AnEditedFileIsJudgedAsTheSameOverrideWouldBe) {
  const MlperfWorkload& unet = *FindMlperfWorkload("unet3d");
  const MlperfReference* h100 = nullptr;
  for (const MlperfReference& r : MlperfReferences()) {
    if (r.workload == "unet3d" && r.accelerator == "h100") h100 = &r;
  }
  ASSERT_NE(h100, nullptr);
  ASSERT_FALSE(h100->yaml.empty());
  // The file as shipped: CLOSED, judged against itself (the name picks h100).
  absl::StatusOr<WorkloadSpec> as_shipped = LoadWorkload(h100->yaml, {}, "unet3d_h100.yaml");
  ASSERT_TRUE(as_shipped.ok()) << as_shipped.status();
  absl::StatusOr<WorkloadClassification> c = ClassifyWorkload(unet, *as_shipped, "", "x/unet3d_h100.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->reference, h100);
  EXPECT_EQ(c->classification.overall, MlperfClass::kClosed);
  EXPECT_TRUE(c->classification.keys.empty());
  // The file edited (compute time 0.323 -> 0.05, batch 7 -> 2): INVALID, naming both keys, as the overrides would.
  std::string edited = h100->yaml;
  edited.replace(edited.find("batch_size: 7"), 13, "batch_size: 2");
  edited.replace(edited.find("computation_time: 0.323"), 23, "computation_time: 0.05");
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(edited, {}, "unet3d_h100.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  c = ClassifyWorkload(unet, *spec, "h100", "mine.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->classification.overall, MlperfClass::kInvalid);
  std::vector<std::string> keys;
  for (const OverrideVerdict& v : c->classification.keys) keys.push_back(v.key);
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("reader.batch_size", "train.computation_time"));
  // The same change as overrides gives the same verdict.
  const Classification by_override =
      ClassifyOverrides(unet, {"reader.batch_size=2", "train.computation_time=0.05"}, spec->num_files_train, 0, true);
  EXPECT_EQ(by_override.overall, c->classification.overall);
  // An allowed change (read threads, dataset size) stays CLOSED; a format change is OPEN.
  absl::StatusOr<WorkloadSpec> tuned =
      LoadWorkload(h100->yaml, {"reader.read_threads=16", "dataset.num_files_train=5000"}, "unet3d_h100.yaml");
  ASSERT_TRUE(tuned.ok());
  c = ClassifyWorkload(unet, *tuned, "", "unet3d_h100.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->classification.overall, MlperfClass::kClosed);
  EXPECT_EQ(c->classification.keys.size(), 2u);
}

TEST(MlperfCheckpointing, WorkloadsOfTable2AndTheirNames) {
  EXPECT_EQ(FindMlperfCheckpointWorkload("llama3-8b")->closed_processes, 8);
  EXPECT_EQ(FindMlperfCheckpointWorkload("llama3_70b")->closed_processes, 64);
  EXPECT_EQ(FindMlperfCheckpointWorkload("llama_405b")->tp_pp, 8 * 32);
  EXPECT_EQ(FindMlperfCheckpointWorkload("LLAMA3-1T")->closed_processes, 1024);
  EXPECT_EQ(FindMlperfCheckpointWorkload("llama_8b_zero3")->name, "llama3-8b");  // DLIO's file: same model
  EXPECT_EQ(FindMlperfCheckpointWorkload("llama_80b"), nullptr);
  EXPECT_EQ(FindMlperfCheckpointWorkload("unet3d"), nullptr);
  int llama = 0;
  for (const MlperfReference& r : MlperfReferences()) llama += absl::StartsWith(r.workload, "llama3-") ? 1 : 0;
  EXPECT_EQ(llama, 4);
}

// The shipped llama3-8b reference, loaded with `overrides`.
WorkloadSpec Llama8b(const std::vector<std::string>& overrides = {}) {
  for (const MlperfReference& r : MlperfReferences()) {
    if (r.workload != "llama3-8b") continue;
    absl::StatusOr<WorkloadSpec> s = LoadWorkload(r.yaml, overrides, r.file);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : WorkloadSpec{};
  }
  ADD_FAILURE() << "no llama3-8b reference";
  return {};
}

MlperfClass CheckpointClass(const WorkloadSpec& spec, int64_t world, int64_t hosts, std::string* why = nullptr) {
  absl::StatusOr<WorkloadClassification> c =
      ClassifyCheckpointWorkload(*FindMlperfCheckpointWorkload("llama3-8b"), spec, world, hosts);
  EXPECT_TRUE(c.ok()) << c.status();
  if (why != nullptr && c.ok()) {
    for (const OverrideVerdict& v : c->classification.keys) *why += v.key + ": " + v.reason + "; ";
    for (const std::string& p : c->classification.problems) *why += p + "; ";
  }
  return c.ok() ? c->classification.overall : MlperfClass::kInvalid;
}

TEST(MlperfCheckpointing, ProcessCountsDecideClosedOpenInvalid) {
  const WorkloadSpec ref = Llama8b();
  EXPECT_EQ(CheckpointClass(ref, 8, 1), MlperfClass::kClosed);
  EXPECT_EQ(CheckpointClass(ref, 8, 2), MlperfClass::kClosed);   // 4 per host: Table 3's minimum
  std::string why;
  EXPECT_EQ(CheckpointClass(ref, 16, 2, &why), MlperfClass::kOpen) << why;  // a multiple of TP x PP = 1
  why.clear();
  EXPECT_EQ(CheckpointClass(ref, 8, 4, &why), MlperfClass::kInvalid);  // 2 per host
  EXPECT_NE(why.find("at least 4"), std::string::npos) << why;
  why.clear();
  EXPECT_EQ(CheckpointClass(ref, 9, 2, &why), MlperfClass::kInvalid);  // unequal hosts
  EXPECT_NE(why.find("same number"), std::string::npos) << why;
  // 70B: TP x PP = 8, so 12 ranks are no multiple.
  absl::StatusOr<WorkloadClassification> c = ClassifyCheckpointWorkload(
      *FindMlperfCheckpointWorkload("llama3-70b"), ref, 12, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->classification.overall, MlperfClass::kInvalid);
}

TEST(MlperfCheckpointing, TheWriteReadSplitAndCacheClearingAreClosedOtherChangesInvalid) {
  std::string why;
  EXPECT_EQ(CheckpointClass(Llama8b(CheckpointWriteOverrides()), 8, 1, &why), MlperfClass::kClosed) << why;
  why.clear();
  EXPECT_EQ(CheckpointClass(Llama8b(CheckpointReadOverrides()), 8, 1, &why), MlperfClass::kClosed) << why;
  EXPECT_EQ(CheckpointClass(Llama8b({"checkpoint.checkpoint_folder=/mnt/ckpt"}), 8, 1), MlperfClass::kClosed);
  why.clear();
  EXPECT_EQ(CheckpointClass(Llama8b({"checkpoint.num_checkpoints_write=5"}), 8, 1, &why), MlperfClass::kInvalid);
  EXPECT_NE(why.find("writes and reads 10"), std::string::npos) << why;
  EXPECT_EQ(CheckpointClass(Llama8b({"checkpoint.time_between_checkpoints=0"}), 8, 1), MlperfClass::kInvalid);
  EXPECT_EQ(CheckpointClass(Llama8b({"checkpoint.fsync=False"}), 8, 1), MlperfClass::kInvalid);
  EXPECT_EQ(CheckpointClass(Llama8b({"dlio_ext.checkpoint_bandwidth_limit=1GB"}), 8, 1), MlperfClass::kInvalid);
}

TEST(MlperfReferencesDir, FilesNamedAsTheShippedOnesReplaceTheSet) {
  const std::string dir = ::testing::TempDir() + "/mlperf-refs-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/unet3d_h100.yaml") << "model: {name: unet3d}\n";
  std::ofstream(dir + "/notes.yaml") << "x: 1\n";
  absl::StatusOr<std::vector<MlperfReference>> refs = LoadMlperfReferences(dir);
  ASSERT_TRUE(refs.ok()) << refs.status();
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].workload, "unet3d");
  EXPECT_EQ((*refs)[0].accelerator, "h100");
  // Judged against the folder's set: its unet3d_h100 is the reference; a100 has none there.
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload("model: {name: unet3d}\n", {}, "x");
  ASSERT_TRUE(spec.ok());
  absl::StatusOr<WorkloadClassification> c =
      ClassifyWorkload(*FindMlperfWorkload("unet3d"), *spec, "", "", 0, &*refs);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->reference, &(*refs)[0]);
  EXPECT_FALSE(ClassifyWorkload(*FindMlperfWorkload("unet3d"), *spec, "a100", "", 0, &*refs).ok());
  std::filesystem::remove(dir + "/unet3d_h100.yaml");
  EXPECT_FALSE(LoadMlperfReferences(dir).ok());
  std::filesystem::remove_all(dir);
}

// An empty references folder names files of the round asked for: v3.0's are b200/mi355, v2.0's a100/h100.
TEST(MlperfReferencesDir, AnEmptyFolderNamesTheRoundsOwnFiles) {
  const std::string dir = ::testing::TempDir() + "/mlperf-refs-empty-test";
  std::filesystem::create_directories(dir);
  absl::StatusOr<std::vector<MlperfReference>> v3 = LoadMlperfReferences(dir, MlperfVersion::kV3_0);
  ASSERT_FALSE(v3.ok());
  EXPECT_THAT(std::string(v3.status().message()),
              ::testing::HasSubstr("named as the shipped v3.0 ones: unet3d_b200.yaml, retinanet_b200.yaml, "
                                   "llama3_8b.yaml"));
  EXPECT_THAT(std::string(v3.status().message()), ::testing::Not(::testing::HasSubstr("h100")));
  absl::StatusOr<std::vector<MlperfReference>> v2 = LoadMlperfReferences(dir, MlperfVersion::kV2_0);
  ASSERT_FALSE(v2.ok());
  EXPECT_THAT(std::string(v2.status().message()),
              ::testing::HasSubstr("named as the shipped v2.0 ones: unet3d_h100.yaml, llama3_8b.yaml"));
  std::filesystem::remove_all(dir);
}

TEST(MlperfRuns, ReplicationOfOneFigure) {
  ReplicationVerdict v = JudgeReplication({1.0, 1.04, 0.96});
  EXPECT_NEAR(v.mean.value_or(0), 1.0, 1e-12);
  EXPECT_NEAR(v.max_deviation.value_or(1), 0.04, 1e-12);
  EXPECT_TRUE(v.replicates);
  v = JudgeReplication({1.0, 1.2});
  EXPECT_FALSE(v.replicates);
  v = JudgeReplication({1.0, std::nullopt});
  EXPECT_FALSE(v.mean.has_value());
  EXPECT_FALSE(v.max_deviation.has_value());
  EXPECT_FALSE(JudgeReplication({}).mean.has_value());
}

TEST(MlperfProvenance, Sha256AndHost) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const HostProvenance p = CollectHostProvenance("/");
  EXPECT_NE(p.kernel.find("Linux"), std::string::npos);
  EXPECT_GT(p.memory_bytes, 0u);
  EXPECT_FALSE(p.data_root_fs.empty());
  EXPECT_EQ(FsTypeName(0x01021994), "tmpfs");
  EXPECT_EQ(FsTypeName(0x12345678), "0x12345678");
  EXPECT_FALSE(ToolVersion().empty());
  EXPECT_FALSE(ToolCommit().empty());
  for (const NicInfo& n : p.nics) {
    EXPECT_NE(n.name, "lo");
    EXPECT_FALSE(n.state.empty()) << n.name;
  }
  EXPECT_TRUE(p.cgroup_memory_limit_bytes == 0 || p.cgroup_memory_limit_bytes < p.memory_bytes);
}

// Issue 25 item 1: MLPerf Storage v3.0's workloads, accelerators and their memory (Rules.md 4.3.4).
TEST(MlperfV3, WorkloadsAcceleratorsAndVersions) {
  EXPECT_EQ(*ParseMlperfVersion("v3.0"), MlperfVersion::kV3_0);
  EXPECT_EQ(*ParseMlperfVersion("2.0"), MlperfVersion::kV2_0);
  EXPECT_FALSE(ParseMlperfVersion("v2.5").ok());
  EXPECT_EQ(kDefaultMlperfVersion, MlperfVersion::kV3_0);
  const MlperfWorkload* retinanet = FindMlperfWorkload("retinanet_b200", MlperfVersion::kV3_0);
  ASSERT_NE(retinanet, nullptr);
  EXPECT_DOUBLE_EQ(retinanet->au_threshold, 0.85);
  EXPECT_EQ(retinanet->batch_size, 24);
  EXPECT_DOUBLE_EQ(retinanet->record_length_bytes, 322957);
  EXPECT_THAT(retinanet->closed_accelerators, ::testing::ElementsAre("b200", "mi355"));
  EXPECT_EQ(FindMlperfWorkload("retinanet"), nullptr);  // not a v2.0 workload
  EXPECT_TRUE(FindMlperfWorkload("resnet50", MlperfVersion::kV3_0)->whatif_only());
  EXPECT_FALSE(FindMlperfWorkload("unet3d", MlperfVersion::kV3_0)->needs_checkpoint);  // v3.0's template: off
  EXPECT_TRUE(FindMlperfWorkload("unet3d")->needs_checkpoint);
  EXPECT_EQ(MlperfAcceleratorMemoryGb("h100"), 80);
  EXPECT_EQ(MlperfAcceleratorMemoryGb("a100"), 80);
  EXPECT_EQ(MlperfAcceleratorMemoryGb("b200"), 180);
  EXPECT_EQ(MlperfAcceleratorMemoryGb("mi355"), 288);
  // Every v3.0 reference loads; every training one names an accelerator of the round.
  int training = 0, llama = 0;
  for (const MlperfReference& r : MlperfReferences(MlperfVersion::kV3_0)) {
    ASSERT_FALSE(r.yaml.empty()) << r.file;
    EXPECT_TRUE(LoadWorkload(r.yaml, {}, r.file).ok()) << r.file;
    (absl::StartsWith(r.workload, "llama3-") ? llama : training) += 1;
  }
  EXPECT_EQ(llama, 4);
  EXPECT_EQ(training, 11);  // unet3d b200/h100, retinanet x4, dlrm h100, cosmoflow and resnet50 a100/h100
}

// v3.0's classes: the same whitelist, WHATIF for whatif workloads and accelerators, --allow-invalid-params.
TEST(MlperfV3, ClassesOfTheV3Round) {
  const MlperfWorkload& retinanet = *FindMlperfWorkload("retinanet", MlperfVersion::kV3_0);
  std::map<std::string, const MlperfReference*> refs;
  for (const MlperfReference& r : MlperfReferences(MlperfVersion::kV3_0)) {
    if (r.workload == "retinanet") refs[r.accelerator] = &r;
  }
  ASSERT_EQ(refs.size(), 4u);
  const MlperfReference* b200 = refs["b200"];
  auto judge = [&](const std::vector<std::string>& ov, const std::string& acc, bool aip) {
    absl::StatusOr<WorkloadSpec> spec = LoadWorkload(refs[acc]->yaml, ov, refs[acc]->file);
    EXPECT_TRUE(spec.ok()) << spec.status();
    MlperfV3Options o;
    o.allow_invalid_params = aip;
    absl::StatusOr<WorkloadClassification> c =
        ClassifyWorkload(retinanet, *spec, acc, "", 0, nullptr, MlperfVersion::kV3_0, o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->classification : Classification{};
  };
  EXPECT_EQ(judge({}, "b200", false).overall, MlperfClass::kClosed);
  EXPECT_EQ(judge({"reader.read_threads=2", "reader.prefetch_size=4"}, "b200", false).overall, MlperfClass::kClosed);
  EXPECT_EQ(judge({"dataset.format=png"}, "b200", false).overall, MlperfClass::kOpen);
  EXPECT_EQ(judge({"reader.odirect=true"}, "b200", false).overall, MlperfClass::kInvalid);  // unet3d only
  Classification c = judge({"reader.batch_size=2"}, "b200", false);
  EXPECT_EQ(c.overall, MlperfClass::kInvalid);
  c = judge({"reader.batch_size=2"}, "b200", true);
  EXPECT_EQ(c.overall, MlperfClass::kOpen);
  ASSERT_EQ(c.keys.size(), 1u);
  EXPECT_THAT(c.keys[0].reason, ::testing::HasSubstr("allowed by --allow-invalid-params"));
  // h100 is whatif for retinanet; an INVALID key allowed by the flag is WHATIF there.
  c = judge({}, "h100", false);
  EXPECT_EQ(c.overall, MlperfClass::kWhatif);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_THAT(c.problems[0], ::testing::HasSubstr("h100 is a whatif accelerator"));
  c = judge({"reader.batch_size=2"}, "h100", true);
  EXPECT_EQ(c.overall, MlperfClass::kWhatif);
  EXPECT_EQ(c.keys[0].cls, MlperfClass::kWhatif);
  // Job-level problems stay INVALID whatever the flag: datasize's count is not a parameter.
  absl::StatusOr<WorkloadSpec> few = LoadWorkload(b200->yaml, {"dataset.num_files_train=10"}, b200->file);
  ASSERT_TRUE(few.ok());
  MlperfV3Options aip;
  aip.allow_invalid_params = true;
  absl::StatusOr<WorkloadClassification> short_set =
      ClassifyWorkload(retinanet, *few, "b200", "", 1000, nullptr, MlperfVersion::kV3_0, aip);
  ASSERT_TRUE(short_set.ok());
  EXPECT_EQ(short_set->classification.overall, MlperfClass::kInvalid);
  EXPECT_STREQ(MlperfClassName(MlperfClass::kWhatif), "WHATIF");
}

// v3.0's llama3 references carry model.parallelism.data, read only in subset mode: v2.0's file (without it) is the
// same workload in default mode, CLOSED at Table 2's process count.
TEST(MlperfV3, CheckpointingDataParallelismCountsOnlyInSubsetMode) {
  const MlperfReference* v2 = nullptr;
  for (const MlperfReference& r : MlperfReferences()) {
    if (r.workload == "llama3-8b") v2 = &r;
  }
  ASSERT_NE(v2, nullptr);
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(v2->yaml, {}, v2->file);
  ASSERT_TRUE(spec.ok());
  const MlperfCheckpointWorkload& w = *FindMlperfCheckpointWorkload("llama3-8b");
  absl::StatusOr<WorkloadClassification> c =
      ClassifyCheckpointWorkload(w, *spec, 8, 2, nullptr, MlperfVersion::kV3_0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->classification.overall, MlperfClass::kClosed);
  EXPECT_TRUE(c->classification.keys.empty());
  absl::StatusOr<WorkloadSpec> subset =
      LoadWorkload(v2->yaml, {"checkpoint.mode=subset", "model.parallelism.data=8"}, v2->file);
  ASSERT_TRUE(subset.ok());
  c = ClassifyCheckpointWorkload(w, *subset, 4, 1, nullptr, MlperfVersion::kV3_0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->classification.overall, MlperfClass::kInvalid);  // the subset rule (8B only) comes with item 3
}

}  // namespace
}  // namespace dlio
