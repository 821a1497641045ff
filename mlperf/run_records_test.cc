// The run folders' records for `mlperf check`: the capacity gate's (CAP-01) and the code-image pool (CHECK-01..03,
// Rules.md 2.1.6), each rule broken once on a folder of files.
#include "mlperf/run_records.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mlperf/capacity_record.h"
#include "mlperf/code_image.h"
#include "mlperf/fs_separation.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

fs::path Fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / absl::StrCat("dlio-", name, "-", ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

WorkloadSpec Spec(const std::string& yaml) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, {}, "test");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : WorkloadSpec{};
}

TEST(CapacityRecord, TheRunFolderRecordsWhereTheFreeSpaceAndTheBytesNeeded) {
  const fs::path d = Fresh("cap-record");
  const WorkloadSpec spec =
      Spec("model: {name: unet3d}\ndataset: {num_files_train: 4, record_length_bytes: 4096, data_folder: data/u}\n");
  const CapacityRecord c = ProbeCapacity(spec, d.string(), 1);
  EXPECT_EQ(c.key, "dataset.data_folder");
  EXPECT_EQ(c.where, (d / "data/u").string());
  EXPECT_EQ(c.probed, d.string());  // the folder does not exist yet: its nearest existing ancestor
  EXPECT_EQ(c.needed_bytes, static_cast<uint64_t>(4 * spec.SampleDim() * spec.SampleDim()));
  EXPECT_GT(c.free_bytes, 0u);
  EXPECT_TRUE(c.fits());
  ASSERT_TRUE(WriteRunRecords(d, spec, d.string(), 1, d, MlperfReferences(MlperfVersion::kV3_0)).ok());
  const json j = json::parse(Slurp(d / kCapacityRecordFile));
  EXPECT_EQ(j["rule"], "CAP-01");
  EXPECT_EQ(j["fits"], true);
  EXPECT_EQ(j["needed_bytes"], c.needed_bytes);
  EXPECT_EQ(CapacityRecordProblem(d / kCapacityRecordFile), "");
  fs::remove_all(d);
}

TEST(CapacityRecord, AMissingOrShortRecordIsAProblemNamingTheNumbers) {
  const fs::path d = Fresh("cap-short");
  EXPECT_THAT(CapacityRecordProblem(d / kCapacityRecordFile), HasSubstr("missing: the capacity gate's record"));
  std::ofstream(d / kCapacityRecordFile) << json{{"rule", "CAP-01"}, {"key", "dataset.data_folder"},
                                                 {"where", "/data/u"}, {"what", "the dataset"},
                                                 {"free_bytes", 100}, {"present_bytes", 20}, {"needed_bytes", 1000},
                                                 {"fits", false}}
                                                .dump();
  EXPECT_EQ(CapacityRecordProblem(d / kCapacityRecordFile),
            "dataset.data_folder '/data/u': the dataset needs 1000 bytes but its file system had 100 bytes free and "
            "20 bytes of the job's files: short by 880 bytes");
  std::ofstream(d / kCapacityRecordFile) << "not json";
  EXPECT_THAT(CapacityRecordProblem(d / kCapacityRecordFile), HasSubstr("unreadable"));
  fs::remove_all(d);
}

TEST(CapacityRecord, CheckpointingNeedsThePlansBytesForEverySave) {
  const fs::path d = Fresh("cap-ckpt");
  std::string yaml;
  for (const MlperfReference& r : MlperfReferences(MlperfVersion::kV3_0)) {
    if (r.workload == "llama3-8b") yaml = r.yaml;
  }
  ASSERT_FALSE(yaml.empty());
  WorkloadSpec spec = Spec(yaml);
  spec.checkpoint_folder = "ck";
  const CapacityRecord c = ProbeCapacity(spec, d.string(), 8);
  EXPECT_EQ(c.key, "checkpoint.checkpoint_folder");
  EXPECT_EQ(c.where, (d / "ck").string());
  EXPECT_THAT(c.what, HasSubstr("10 save(s)"));
  EXPECT_THAT(c.what, HasSubstr("on 8 ranks"));
  EXPECT_GT(c.needed_bytes, 0u);
  fs::remove_all(d);
}

// A folder of two run folders pointing at one captured image: accepted; then each rule broken once.
TEST(CodeImage, EveryRunPointsAtAnImageThatReHashesToItsRecord) {
  const fs::path root = Fresh("code-image");
  const std::vector<MlperfReference>& refs = MlperfReferences(MlperfVersion::kV3_0);
  fs::create_directories(root / "run/a");
  fs::create_directories(root / "run/b");
  absl::StatusOr<std::string> hash = CaptureCodeImage(root, refs);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(*CaptureCodeImage(root, refs), *hash);  // content-addressed: the same image again
  ASSERT_TRUE(WriteCodePointer(root / "run/a", *hash).ok());
  ASSERT_TRUE(WriteCodePointer(root / "run/b", *hash).ok());
  const fs::path image = root / ("code-" + hash->substr(0, 8));
  EXPECT_TRUE(fs::exists(root / kCodePoolSentinel));
  EXPECT_TRUE(fs::exists(image / "build_info.json"));
  EXPECT_TRUE(fs::exists(image / "workloads/unet3d_b200.yaml"));
  const json meta = json::parse(Slurp(image / kCodeHashFile));
  EXPECT_EQ(meta["hash"], *hash);
  EXPECT_EQ(meta["algorithm"], kCodeImageAlgorithm);
  EXPECT_EQ(Slurp(root / "run/a" / kCodePointerFile), std::string(kCodeImageAlgorithm) + ":" + *hash + "\n");
  const std::map<std::string, std::string> sums = ReferenceChecksums(refs);
  const std::vector<std::pair<fs::path, fs::path>> runs = {{"run/a", ""}, {"run/b", ""}};
  auto check = [&](const std::map<std::string, std::string>& s) {
    std::string all;
    for (const CodeImageFinding& f : CheckCodeImages(root, {""}, runs, &s)) {
      all += f.file + ": " + f.rule + ": " + f.message + "\n";
    }
    return all;
  };
  EXPECT_EQ(check(sums), "");
  // 2.1.6: judged against references whose checksum differs.
  std::map<std::string, std::string> other = sums;
  other["unet3d_b200"] = std::string(32, '0');
  EXPECT_THAT(check(other), HasSubstr("code-" + hash->substr(0, 8) + "/workloads/unet3d_b200.yaml: Rules.md 2.1.6: "
                                      "MD5 "));
  EXPECT_THAT(check(other), HasSubstr("is not the reference checksum 00000000000000000000000000000000 of "
                                      "unet3d_b200.yaml"));
  // CHECK-01: a missing pointer, then one naming no image.
  fs::remove(root / "run/b" / kCodePointerFile);
  EXPECT_THAT(check(sums), HasSubstr("run/b/.mlps-code-image: CHECK-01: missing"));
  ASSERT_TRUE(WriteCodePointer(root / "run/b", std::string(32, 'a')).ok());
  EXPECT_THAT(check(sums), HasSubstr("run/b/.mlps-code-image: CHECK-01: points at " + std::string(32, 'a')));
  std::ofstream(root / "run/b" / kCodePointerFile) << "sha1:xyz\n";
  EXPECT_THAT(check(sums), HasSubstr("run/b/.mlps-code-image: CHECK-01: malformed: 'sha1:xyz'"));
  ASSERT_TRUE(WriteCodePointer(root / "run/b", *hash).ok());
  // CHECK-02: an image's file edited after the capture.
  std::ofstream(image / "build_info.json", std::ios::app) << " ";
  EXPECT_THAT(check(sums), HasSubstr("/.code-hash.json: CHECK-02: the image's files re-hash to "));
  // CHECK-03: an image no run points at.
  fs::copy(image, root / "code-deadbeef", fs::copy_options::recursive);
  EXPECT_THAT(check(sums), HasSubstr("code-deadbeef: CHECK-03: no run folder points at this image"));
  EXPECT_THAT(check(sums), HasSubstr("code-deadbeef: CHECK-02: named for another hash"));
  fs::remove_all(root);
}

// `mlperf report` into a tree an earlier report filled: the image no run points at any more goes (CHECK-03), the
// pointed one and anything that is not an image of ours stay; a folder without the pool's sentinel is not touched.
TEST(CodeImage, PruningRemovesOnlyTheImagesNoRunPointsAt) {
  const fs::path root = Fresh("code-prune");
  fs::create_directories(root / "run/a");
  absl::StatusOr<std::string> hash = CaptureCodeImage(root, MlperfReferences(MlperfVersion::kV3_0));
  ASSERT_TRUE(hash.ok()) << hash.status();
  ASSERT_TRUE(WriteCodePointer(root / "run/a", *hash).ok());
  const fs::path image = root / ("code-" + hash->substr(0, 8));
  fs::copy(image, root / "code-0ld1mage", fs::copy_options::recursive);
  fs::create_directories(root / "code-notes");  // no .code-hash.json: not an image
  absl::StatusOr<std::vector<std::string>> removed = PruneUnpointedImages(root, root);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_THAT(*removed, ::testing::ElementsAre("code-0ld1mage"));
  EXPECT_FALSE(fs::exists(root / "code-0ld1mage"));
  EXPECT_TRUE(fs::exists(image / kCodeHashFile));
  EXPECT_TRUE(fs::exists(root / "code-notes"));
  const std::vector<std::pair<fs::path, fs::path>> runs = {{"run/a", ""}};
  for (const CodeImageFinding& f : CheckCodeImages(root, {""}, runs, nullptr)) {
    EXPECT_NE(f.rule, "CHECK-03") << f.file << ": " << f.message;  // (code-notes is CHECK-02's: not ours to remove)
  }
  fs::remove(root / "run/a" / kCodePointerFile);
  fs::remove(root / kCodePoolSentinel);
  removed = PruneUnpointedImages(root, root);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_TRUE(removed->empty());
  EXPECT_TRUE(fs::exists(image));
  fs::remove_all(root);
}

// `submit`: the agents' data roots as their summary.json reports them (Hello.data_root_mount) against the results
// folder probed here: a local device on this host is the results' file system; on another host it is not; an agent
// that reported no mount is no proof of separation.
TEST(FsSeparation, RemoteAgentsAreComparedByTheMountTheyReported) {
  const fs::path results = Fresh("fs-remote");
  const MountId here = ProbeMount(results.string());
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  auto summary = [&](const std::string& hostname, bool with_mount) {
    json agent = {{"agent", "agent-0"}, {"hostname", hostname}};
    if (with_mount) {
      agent["data_root_mount"] = {{"mount_point", here.mount_point}, {"source", here.source},
                                  {"fs_type", here.fs_type},         {"device", here.device},
                                  {"fsid", here.fsid}};
    }
    return json{{"dlio_ext", {{"provenance", {{"agents", json::array({agent})}}}}}};
  };
  FsSeparation s = SeparationFromSummary(summary(host, true), results.string(), "file");
  EXPECT_FALSE(s.separate);
  EXPECT_EQ(s.data.agent, "agent-0");
  EXPECT_EQ(s.data.path, "agent-0:--data-root");
  EXPECT_EQ(s.data.device, here.device);
  const json j = FsSeparationJson(s, false);
  EXPECT_EQ(j["rule"], "Rules.md 3.4.2");
  ASSERT_EQ(j["agents"].size(), 1u);
  EXPECT_EQ(j["data"]["mount"]["source"], here.source);
  EXPECT_EQ(j["results"]["mount"]["mount_point"], here.mount_point);
  if (!IsNetworkFs(here.fs_type)) {
    EXPECT_TRUE(SeparationFromSummary(summary("another-host", true), results.string(), "file").separate);
  }
  const FsSeparation old = SeparationFromSummary(summary(host, false), results.string(), "file");
  EXPECT_FALSE(old.separate);
  EXPECT_THAT(old.data.error, HasSubstr("reported no data-root mount"));
  // Its refusal says it could not be told, and why; it does not claim one file system.
  std::ostringstream refusal;
  PrintFsRefusal(old, false, "stopping", refusal);
  EXPECT_THAT(refusal.str(), HasSubstr("cannot tell whether the data (agent-0:--data-root) and the results"));
  EXPECT_THAT(refusal.str(), HasSubstr("reported no data-root mount"));
  EXPECT_THAT(refusal.str(), Not(HasSubstr("are on one file system")));
  std::ostringstream shared;
  PrintFsRefusal(s, false, "stopping", shared);
  EXPECT_THAT(shared.str(), HasSubstr(") are on one file system; a CLOSED result needs them on different file systems; "
                                      "stopping"));
  EXPECT_TRUE(SeparationFromSummary(summary(host, true), results.string(), "s3").separate);
  fs::remove_all(results);
}

}  // namespace
}  // namespace dlio
