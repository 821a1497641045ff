// Process tests of scenarios (issue 30 items 2-3, client/scenario.h, docs/scenarios.md): `run SCENARIO.yaml` with a
// local fleet, a training member beside a checkpoint member that starts at an offset and repeats, a member that runs
// until the training ends, on files and on the suite's Ceph RGW (the test named *OnTheSuitesRgw, registered with the
// s3_gateway fixture); `--baseline` and its alone-vs-together table; the shipped unet3d + llama3-8b example; a
// bad scenario file refused in one line.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

// ~3 s of training: 16 steps of 0.15 s per epoch, 1 epoch, on a small generated npz dataset.
std::string TrainJob() { return Workload("npz", 32, 1, 65536, 2, 0.15, 1, true); }


CommandResult RunScenarioFile(const TempDir& dir, const std::string& scenario, std::vector<std::string> extra = {}) {
  WriteFile(dir.str() + "/train.yaml", TrainJob());
  WriteFile(dir.str() + "/ckpt.yaml", kTinyCheckpointJob);
  WriteFile(dir.str() + "/scenario.yaml", scenario);
  fs::create_directories(dir.path() / "root");
  std::vector<std::string> argv = {Bin("dlio-coordinator"), "run", "scenario.yaml", "--local-agents", "2",
                                   "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                   "--output", dir.str() + "/out"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv, seconds(240), dir.str());
}

const json& Member(const json& doc, const std::string& name) {
  for (const json& m : doc["members"]) {
    if (m["name"] == name) return m;
  }
  static const json none;
  ADD_FAILURE() << "no member " << name << " in " << doc.dump(2);
  return none;
}

TEST(Scenario, OffsetRepeatingCheckpointAndUntilMembersOnFiles) {
  TempDir dir;
  const CommandResult r = RunScenarioFile(dir, R"(scenario:
  name: train-with-bursts
  members:
    - name: train
      workload: train.yaml
      placement: {agents: 1}
    - name: ckpt
      workload: ckpt.yaml
      placement: {agents: 1}
      start: 1
      repeat_every: 1
      times: 2
    - name: tail
      workload: ckpt.yaml
      start: 0.5
      repeat_every: 1
      until: train
)");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  const json doc = LoadJson(dir.str() + "/out/scenario.json");
  EXPECT_EQ(doc["scenario"], "train-with-bursts");
  EXPECT_EQ(doc["baseline"], false);
  const json& train = Member(doc, "train")["together"];
  ASSERT_EQ(train["runs"].size(), 1u) << doc.dump(2);
  EXPECT_TRUE(fs::exists(dir.path() / "out/together/train/summary.json"));
  EXPECT_TRUE(train["figures"]["au_percentage"].is_number()) << doc.dump(2);
  EXPECT_TRUE(train["figures"]["read_latency_p99_seconds"].is_number()) << doc.dump(2);
  EXPECT_TRUE(train["figures"]["write_latency_p50_seconds"].is_number()) << doc.dump(2);  // it generated its data
  // The checkpoint member: its offset, then again a period later, each run in its own folder with its saves.
  const json& ckpt = Member(doc, "ckpt")["together"];
  ASSERT_EQ(ckpt["runs"].size(), 2u) << doc.dump(2);
  EXPECT_GE(ckpt["runs"][0]["start_seconds"].get<double>(), 1.0);
  EXPECT_GE(ckpt["runs"][1]["start_seconds"].get<double>(), 2.0);
  EXPECT_GE(ckpt["runs"][1]["start_seconds"].get<double>(), ckpt["runs"][0]["end_seconds"].get<double>());
  for (const json& run : ckpt["runs"]) {
    const json s = LoadJson(dir.str() + "/out/" + run["folder"].get<std::string>() + "/summary.json");
    EXPECT_EQ(s["dlio_ext"]["checkpoints"].size(), 2u) << s.dump(2);  // one save, one load
    EXPECT_TRUE(run["checkpoint_write_seconds"].is_number()) << run.dump();
  }
  EXPECT_EQ(ckpt["runs"][1]["folder"], "together/ckpt/run-2");
  EXPECT_TRUE(ckpt["figures"]["checkpoint_read_seconds"].is_number());
  // `until: train`: at least one run, and none started after the training ended.
  const json& tail = Member(doc, "tail")["together"];
  ASSERT_GE(tail["runs"].size(), 1u) << doc.dump(2);
  for (const json& run : tail["runs"]) {
    EXPECT_LE(run["start_seconds"].get<double>(), train["runs"][0]["end_seconds"].get<double>()) << doc.dump(2);
  }
  // One line per run, then the table.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("together ckpt run 2: \\+[0-9.]+ s to \\+[0-9.]+ s, job ")))
      << r.out;
  EXPECT_NE(r.out.find("ckpt (2 runs together)"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("ckpt write s +[0-9.]+"))) << r.out;
}

// A summary's dlio_ext.s3.<op>.requests (docs/object-storage.md), 0 when the job made no such request.
int64_t S3Requests(const json& summary, const std::string& op) {
  return summary.value(json::json_pointer("/dlio_ext/s3/" + op + "/requests"), int64_t{0});
}

// The same shape on the suite's Ceph RGW (the s3_gateway fixture; skipped where Ceph is not installed): the training
// reads its generated objects from a bucket, the checkpoint member writes a 72 MiB model (2 parts of the checkpoint
// writer's 64 MiB buffer, kCheckpointBufferBytes: a smaller one is a single PUT) to the same bucket from its offset,
// twice, and reads it back.
TEST(Scenario, OffsetRepeatingCheckpointMemberOnTheSuitesRgw) {
  if (S3Gateway().empty() && !CephInstalled()) {
    GTEST_SKIP() << "no Ceph here (radosgw): install it with scripts/setup.sh --test";
  }
  ASSERT_FALSE(S3Gateway().empty()) << "no gateway: " << S3GatewayDir() << "/env is missing (the s3_gateway fixture "
                                       "starts scripts/ceph-rgw.sh)";
  const std::string bucket = NewS3Bucket("scen");
  ASSERT_FALSE(bucket.empty());
  const std::string storage = "storage:\n  storage_type: s3\n  storage_root: " + bucket + "\n";
  constexpr int64_t kModel = int64_t{72} << 20;
  TempDir dir;
  WriteFile(dir.str() + "/train-s3.yaml", TrainJob() + storage);
  WriteFile(dir.str() + "/ckpt-s3.yaml", "model:\n  name: ckpt\n  model_size_bytes: " + std::to_string(kModel) +
                                             "\nworkflow:\n  train: false\n  checkpoint: true\n" + storage +
                                             "checkpoint:\n  checkpoint_folder: s3://" + bucket +
                                             "/ckpt\n  num_checkpoints_write: 1\n  num_checkpoints_read: 1\n");
  const CommandResult r = RunScenarioFile(dir, R"(scenario:
  name: rgw-train-with-bursts
  members:
    - name: train
      workload: train-s3.yaml
      placement: {agents: 1}
    - name: ckpt
      workload: ckpt-s3.yaml
      placement: {agents: 1}
      start: 1
      repeat_every: 1
      times: 2
)");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  const json doc = LoadJson(dir.str() + "/out/scenario.json");
  // The training member: its figures, its reads from the bucket.
  const json& train = Member(doc, "train")["together"];
  ASSERT_EQ(train["runs"].size(), 1u) << doc.dump(2);
  EXPECT_TRUE(train["figures"]["au_percentage"].is_number()) << doc.dump(2);
  EXPECT_TRUE(train["figures"]["read_latency_p99_seconds"].is_number()) << doc.dump(2);
  const json ts = LoadJson(dir.str() + "/out/together/train/summary.json");
  EXPECT_GE(S3Requests(ts, "get") + S3Requests(ts, "get_range"), 32) << ts["dlio_ext"].dump(2);
  const CommandResult data = S3Tool({"list", bucket, "data/train/"});
  ASSERT_EQ(data.exit_code, 0) << Dump(data);
  EXPECT_EQ(json::parse(data.out).size(), 32u) << data.out;
  // The checkpoint member: its offset, its two bursts a period apart, each a multipart save and a load.
  const json& ckpt = Member(doc, "ckpt")["together"];
  ASSERT_EQ(ckpt["runs"].size(), 2u) << doc.dump(2);
  EXPECT_GE(ckpt["runs"][0]["start_seconds"].get<double>(), 1.0);
  EXPECT_GE(ckpt["runs"][1]["start_seconds"].get<double>(), 2.0);
  EXPECT_GE(ckpt["runs"][1]["start_seconds"].get<double>(), ckpt["runs"][0]["end_seconds"].get<double>());
  for (const json& run : ckpt["runs"]) {
    EXPECT_EQ(run["ok"], true) << run.dump();
    EXPECT_TRUE(run["checkpoint_write_seconds"].is_number()) << run.dump();
    const json s = LoadJson(dir.str() + "/out/" + run["folder"].get<std::string>() + "/summary.json");
    EXPECT_EQ(s["dlio_ext"]["checkpoints"].size(), 2u) << s.dump(2);  // one save, one load
    EXPECT_EQ(S3Requests(s, "multipart_part"), 2) << s["dlio_ext"].dump(2);
  }
  EXPECT_TRUE(ckpt["figures"]["checkpoint_read_seconds"].is_number()) << doc.dump(2);
  const CommandResult listed = S3Tool({"list", bucket, "ckpt/"});
  ASSERT_EQ(listed.exit_code, 0) << Dump(listed);
  const json objects = json::parse(listed.out);
  ASSERT_GE(objects.size(), 1u) << objects.dump();
  for (const auto& [key, size] : objects.items()) EXPECT_EQ(size.get<int64_t>(), kModel) << key;
  const CommandResult uploads = S3Tool({"uploads", bucket});
  EXPECT_EQ(uploads.exit_code == 0 ? std::stoi(uploads.out) : -1, 0) << Dump(uploads);  // none left open
  EXPECT_NE(r.out.find("ckpt (2 runs together)"), std::string::npos) << r.out;
}

TEST(Scenario, BaselineRunsEachMemberAloneThenTogetherAndReportsTheInterference) {
  TempDir dir;
  const CommandResult r = RunScenarioFile(dir, R"(scenario:
  members:
    - name: train
      workload: train.yaml
      placement: {agents: 1}
    - name: ckpt
      workload: ckpt.yaml
      placement: {agents: 1}
      start: 0.5
)", {"--baseline"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  const json doc = LoadJson(dir.str() + "/out/scenario.json");
  EXPECT_EQ(doc["scenario"], "scenario");  // the file's stem
  EXPECT_EQ(doc["baseline"], true);
  for (const char* name : {"train", "ckpt"}) {
    const json& m = Member(doc, name);
    EXPECT_TRUE(fs::exists(dir.path() / "out/alone" / name / "summary.json")) << name;
    EXPECT_TRUE(fs::exists(dir.path() / "out/together" / name / "summary.json")) << name;
    ASSERT_EQ(m["alone"]["runs"].size(), 1u) << m.dump(2);
    ASSERT_TRUE(m["interference"].is_array()) << m.dump(2);
  }
  // The alone run generated the training data; the run together reads it.
  const std::string together_job = ReadFile(dir.str() + "/out/together/train/job.yaml");
  EXPECT_NE(together_job.find("generate_data: false"), std::string::npos) << together_job;
  // Training's AU and read p99 alone vs together with a delta and a direction; the checkpoint member's write time.
  const auto row = [&](const std::string& member, const std::string& figure) {
    for (const json& x : Member(doc, member)["interference"]) {
      if (x["figure"] == figure) return x;
    }
    return json();
  };
  for (const auto& [member, figure] : {std::pair{"train", "au_percentage"}, std::pair{"train", "samples_per_second"},
                                       std::pair{"train", "read_latency_p99_seconds"},
                                       std::pair{"ckpt", "checkpoint_write_seconds"}}) {
    const json x = row(member, figure);
    EXPECT_TRUE(x["alone"].is_number() && x["together"].is_number()) << member << " " << figure << x.dump();
    if (x["delta_percent"].is_number()) {
      EXPECT_TRUE(x["direction"] == "better" || x["direction"] == "worse" || x["direction"] == "same") << x.dump();
    }
  }
  EXPECT_TRUE(std::regex_search(r.out, std::regex("figure +alone +together +delta % +direction"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("AU % +[0-9.]+ +[0-9.]+ +-?[0-9.]+ (better|worse|same)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("verdict: alone [A-Z_]+, together [A-Z_]+"))) << r.out;
  EXPECT_NE(r.out.find("alone train run 1"), std::string::npos) << r.out;
}

// `submit SCENARIO.yaml` to a coordinator with attached agents, --json: scenario.json on stdout and nothing else; the
// members' workload paths resolved against the scenario file's folder, whatever the client's folder.
TEST(Scenario, SubmitToAFleetPrintsScenarioJson) {
  TempDir dir;
  Fleet fleet(dir, 2, 1);
  WriteFile(dir.str() + "/train.yaml", TrainJob());
  WriteFile(dir.str() + "/ckpt.yaml", kTinyCheckpointJob);
  WriteFile(dir.str() + "/scenario.yaml",
            "scenario:\n  name: sub\n  members:\n    - {name: train, workload: train.yaml, placement: {agents: 1}}\n"
            "    - {name: ckpt, workload: ckpt.yaml, placement: {agents: 1}, start: 0.5}\n");
  const CommandResult r =
      fleet.Client({"submit", dir.str() + "/scenario.yaml", "--output", dir.str() + "/out", "--wait-for-agents", "30",
                    "--json"},
                   seconds(200));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << fleet.Logs();
  const json doc = json::parse(r.out);  // the whole of stdout
  EXPECT_EQ(doc, LoadJson(dir.str() + "/out/scenario.json"));
  EXPECT_EQ(doc["scenario"], "sub");
  EXPECT_EQ(Member(doc, "train")["together"]["runs"].size(), 1u);
  EXPECT_EQ(Member(doc, "ckpt")["together"]["runs"][0]["ok"], true) << doc.dump(2);
  EXPECT_TRUE(fs::exists(dir.path() / "out/together/ckpt/summary.json"));
}

// The shipped example (configs/scenarios/, scaled to run here): unet3d training beside llama3-8b checkpoints, with
// --baseline; the shipped workloads resolved by name, each member's figures on both sides.
TEST(Scenario, ShippedUnet3dWithLlama3CheckpointsRunsWithBaseline) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const CommandResult r = RunCommand(
      {Bin("dlio-coordinator"), "run", SourceDir() + "/configs/scenarios/unet3d_with_llama3_8b_checkpoints.yaml",
       "--baseline", "--local-agents", "2", "--data-root", dir.str() + "/root", "--results-dir",
       dir.str() + "/results", "--output", dir.str() + "/out"},
      seconds(280), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = LoadJson(dir.str() + "/out/scenario.json");
  EXPECT_EQ(doc["scenario"], "unet3d-with-llama3-8b-checkpoints");
  const json& train = Member(doc, "unet3d");
  EXPECT_TRUE(train["alone"]["figures"]["au_percentage"].is_number()) << train.dump(2);
  EXPECT_TRUE(train["together"]["figures"]["au_percentage"].is_number()) << train.dump(2);
  const json& ckpt = Member(doc, "llama3-8b-checkpoint");
  EXPECT_TRUE(ckpt["alone"]["figures"]["checkpoint_write_seconds"].is_number()) << ckpt.dump(2);
  ASSERT_GE(ckpt["together"]["runs"].size(), 1u) << ckpt.dump(2);
  EXPECT_TRUE(ckpt["together"]["figures"]["checkpoint_write_seconds"].is_number()) << ckpt.dump(2);
  EXPECT_NE(r.out.find("verdict: alone PASS, together "), std::string::npos) << r.out;
}

TEST(Scenario, BadScenarioFileIsOneLineNamingTheKeyAndExit2) {
  TempDir dir;
  WriteFile(dir.str() + "/scenario.yaml", "scenario:\n  members:\n    - {name: a, workload: x.yaml, start: -2}\n");
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "scenario.yaml"}, seconds(30), dir.str());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("scenario.yaml:3: scenario.members[0].start: '-2' is out of range; expected a number of "
                       "seconds >= 0"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A scenario runs on its own: not with a one-job mode (--baseline with a job file is the plain-reader baseline,
  // tests/baseline_test.cc).
  WriteFile(dir.str() + "/ok.yaml", "scenario:\n  members:\n    - {name: a, workload: job.yaml}\n");
  WriteFile(dir.str() + "/job.yaml", TrainJob());
  r = RunCommand({Bin("dlio-coordinator"), "run", "ok.yaml", "--ramp", "accelerators=1,2"}, seconds(30), dir.str());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("a scenario runs on its own"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dlio::testing
