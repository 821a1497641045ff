// MLPerf mode over real processes (docs/mlperf.md): the 5-run mode with its verdicts and results layout, the
// per-agent read-bandwidth cap, the accelerator search, provenance in summary.json; v3.0's classes and references
// (`mlperf classify --mlperf-version`) and retinanet through the jpeg path at MLPerf's sample size. Timed: every test
// runs alone (RUN_SERIAL in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

TEST(MlperfMode, FiveRunsPrintTheMeanAndTheReplicationVerdictAndWriteTheLayout) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // 16 samples over 2 agents x 1 rank, batch 2: 4 steps per rank and run; 20 ms of compute per step.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 16, 1, 4096, 2, 0.02, 1, true));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--mlperf", "--local-agents", "2",
                                "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                "--mlperf-results-dir", dir.str() + "/mlperf", "--set", "reader.read_threads=1"},
                               seconds(240), dir.str());
  // 0 when every verdict passed, 5 when the AU or the replication verdict failed (a loaded machine decides which);
  // the status must match what was printed.
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 5) << r.exit_code << r.out << r.err;
  EXPECT_EQ(r.exit_code == 0, r.out.find("verdict: MLPerf test: AU PASS, replication PASS") != std::string::npos)
      << r.out;
  std::cout << r.out;
  EXPECT_NE(r.out.find("warmup   seed 123: AU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run-5    seed 128: AU"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("mean of 5 runs: AU [0-9.]+ %, throughput [0-9.]+ samples/s")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("replication \\(every run within 5 % of the mean\\): (PASS|FAIL) \\(max deviation")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("AU threshold 90 %: (PASS|FAIL)"))) << r.out;

  // Layout: one folder per run, <dir>/training/<model>/run/<datetime>/, and the set's verdict beside them,
  // <dir>/training/<model>/mlperf_result_<set>.json.
  const fs::path model_dir = dir.path() / "mlperf" / "training" / "test";
  ASSERT_TRUE(fs::is_directory(model_dir / "run"));
  fs::path result_file;
  for (const auto& e : fs::directory_iterator(model_dir)) {
    if (e.path().filename().string().rfind("mlperf_result_", 0) == 0) result_file = e.path();
  }
  ASSERT_FALSE(result_file.empty());
  const nlohmann::json res = LoadJson(result_file.string());
  ASSERT_EQ(res["runs"].size(), 6u);
  EXPECT_GT(res["mean_throughput_samples_per_second"].get<double>(), 0);
  std::set<std::string> jobs;
  std::map<int, fs::path> by_index;  // run index (0 = warm-up) -> folder
  for (const nlohmann::json& run : res["runs"]) {
    const fs::path d = model_dir / run["dir"].get<std::string>();
    ASSERT_TRUE(fs::exists(d / "summary.json")) << d;
    EXPECT_TRUE(fs::exists(d / "dlio_config" / "config.yaml")) << d;
    EXPECT_TRUE(fs::exists(d / "dlio_config" / "overrides.yaml")) << d;
    fs::path meta;
    for (const auto& e : fs::directory_iterator(d)) {
      if (e.path().string().find("_metadata.json") != std::string::npos) meta = e.path();
    }
    ASSERT_FALSE(meta.empty()) << d;
    const nlohmann::json m = LoadJson(meta.string());
    EXPECT_EQ(m["benchmark_type"], "training");
    EXPECT_EQ(m["command"], "run");
    EXPECT_EQ(m["run_datetime"], d.filename().string());
    by_index[m["dlio_cpp"]["run"].get<int>()] = d;
    const nlohmann::json s = LoadJson((d / "summary.json").string());
    jobs.insert(s["dlio_ext"]["job_id"].get<std::string>());
  }
  EXPECT_EQ(jobs.size(), 6u);
  ASSERT_EQ(by_index.size(), 6u);
  const fs::path run1 = by_index[1];
  // The seed changed per run, and the normalised job says so.
  EXPECT_NE(ReadFile((by_index[3] / "dlio_config" / "config.yaml").string()).find("seed: 126"), std::string::npos);

  // Provenance in summary.json.
  const nlohmann::json p = LoadJson((run1 / "summary.json").string())["dlio_ext"]["provenance"];
  EXPECT_FALSE(p["version"].get<std::string>().empty());
  EXPECT_FALSE(p["git_commit"].get<std::string>().empty());
  EXPECT_EQ(p["job_sha256"].get<std::string>().size(), 64u);
  EXPECT_NE(p["job_yaml"].get<std::string>().find("seed: 124"), std::string::npos);
  ASSERT_EQ(p["agents"].size(), 2u);
  EXPECT_NE(p["agents"][0]["kernel"].get<std::string>().find("Linux"), std::string::npos);
  EXPECT_FALSE(p["agents"][0]["cpu_model"].get<std::string>().empty());
  EXPECT_FALSE(p["agents"][0]["data_root_fs"].get<std::string>().empty());
  EXPECT_GT(p["agents"][0]["memory_bytes"].get<uint64_t>(), 0u);
}

TEST(MlperfMode, ReadBandwidthCapHoldsTheAgentsReadRate) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // 300 npz files of ~64 KiB, no compute: uncapped this reads at hundreds of MB/s; capped at 10 MB/s it takes ~2 s.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 300, 1, 65536, 2, 0, 1, true,
                                              "dlio_ext:\n  read_bandwidth_limit: 10MB/s\n"));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "1", "--accelerators",
                                "2", "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                "--output", dir.str() + "/out"},
                               seconds(120), dir.str());
  // No compute time: a read-rate test (docs/results.md), judged NOT_APPLICABLE with its read rate, exit 0.
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("NOT_APPLICABLE (read rate "), std::string::npos) << r.out;
  const nlohmann::json s = LoadJson(dir.str() + "/out/summary.json");
  const double mbps = s["metric"]["train_io_actual_mean_MB_per_second"].get<double>();
  std::cout << "capped at 10 MB/s, measured " << mbps << " MB/s\n";
  EXPECT_GT(mbps, 9.0);
  EXPECT_LT(mbps, 11.0);
}

TEST(MlperfMode, FindMaxAcceleratorsListsEveryTrialAndReportsAMaximumBetweenTwoAndEight) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // Per accelerator: batch 2 x ~65.8 KB every 50 ms = ~2.6 MB/s. The agent's cap of 11.3 MB/s feeds ~4.3 of them:
  // 2 accelerators keep AU near 100 %, 8 get about 54 %. 15 steps per rank per trial (total_training_steps).
  WriteFile(dir.str() + "/job.yaml",
            Workload("npz", 260, 1, 65536, 2, 0.05, 1, true,
                     "  total_training_steps: 15\ndlio_ext:\n  read_bandwidth_limit: 11300000\n"));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--find-max-accelerators",
                                "--max-accelerators", "8", "--local-agents", "1", "--data-root",
                                dir.str() + "/root", "--results-dir", dir.str() + "/results"},
                               seconds(240), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("trial [0-9]+: 2 accelerators per agent: AU [0-9.]+ %, [0-9.]+ "
                                                  "samples/s: pass")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("trial [0-9]+: 8 accelerators per agent: AU [0-9.]+ %, [0-9.]+ "
                                                  "samples/s: fail")))
      << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("maximum accelerators per agent with AU >= 90 %: ([0-9]+)")))
      << r.out;
  const int max = std::stoi(m[1]);
  EXPECT_GE(max, 2);
  EXPECT_LT(max, 8);
  // Exponential 1, 2, 4, 8 then a binary search between the last pass and 8: at least 5 trials, each listed.
  const std::regex trial_line("\ntrial [0-9]+:");
  const auto trials =
      std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), trial_line), std::sregex_iterator());
  EXPECT_GE(trials, 5);
}

// ---- The whole MLPerf workflow, scaled down: datagen, the runs, report, check ----------------------------------

fs::path MetadataFile(const fs::path& run_dir) {
  for (const auto& e : fs::directory_iterator(run_dir)) {
    if (e.path().filename().string().find("_metadata.json") != std::string::npos) return e.path();
  }
  return {};
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The folder of the run with this role and index in `parent`.
fs::path RunFolder(const fs::path& parent, const std::string& role, int index) {
  for (const auto& e : fs::directory_iterator(parent)) {
    if (!e.is_directory()) continue;
    const fs::path m = MetadataFile(e.path());
    if (m.empty()) continue;
    const nlohmann::json j = LoadJson(m.string())["dlio_cpp"];
    if (j["role"] == role && j["run"] == index) return e.path();
  }
  return {};
}

// Every path in `dir` and one level below (a workload's folder: its run folders, its run/ folder's, its verdicts).
std::set<fs::path> Entries(const fs::path& dir) {
  std::set<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    out.insert(it->path());
    if (it.depth() >= 1) it.disable_recursion_pending();
  }
  return out;
}

// The 5-run mode, again when the machine's load decided its verdict, at most 3 times. On a machine shared with other
// work the runs' throughput can differ by more than 5 %, or a run's AU drop below the threshold: the tool then rightly
// says FAIL. A submitter discards such a set and runs another; so does this test (the set's folders and its verdict
// file are removed, so the tree holds one set). Any other outcome (a CLOSED/OPEN/INVALID change, an error) is final.
CommandResult RunMlperfSet(const std::function<CommandResult()>& run, const fs::path& workload_dir) {
  CommandResult r;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::set<fs::path> before = Entries(workload_dir);
    r = run();
    std::smatch verdict;
    const std::regex measured_fail("verdict: MLPerf [^\n]*FAIL[^\n]*, CLOSED\n");
    if (r.exit_code != 5 || !std::regex_search(r.out, verdict, measured_fail)) return r;
    std::cout << r.out << "attempt " << attempt << " of 3: " << verdict.str()
              << "  (a measured figure on this machine's load; the set is discarded)\n";
    for (const fs::path& p : Entries(workload_dir)) {
      if (before.count(p) == 0) fs::remove_all(p);
    }
  }
  return r;
}

CommandResult Check(const fs::path& tree, const std::string& refs) {
  return RunCommand({Bin("dlio-coordinator"), "mlperf", "check", tree.string(), "--mlperf-references", refs},
                    seconds(60));
}

TEST(MlperfWorkflow, ScaledDownTreeIsAcceptedAndEachBrokenRuleIsNamed) {
  TempDir dir;
  // Checkpoints on tmpfs when there is one: no fsync jitter in the per-checkpoint figures.
  std::error_code ec;
  TempDir shm(fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm")
                                                                                : fs::temp_directory_path());
  fs::create_directories(dir.path() / "root");
  const std::string refs = SourceDir() + "/tests/fixtures/mlperf-scaled";
  const fs::path tree = dir.path() / "mlperf";
  auto run = [&](const std::string& workload, const std::vector<std::string>& extra, const std::string& root) {
    // v2.0's references (unet3d_h100, llama3_8b): judged by v2.0, where h100 is CLOSED (v3.0: WHATIF).
    std::vector<std::string> argv = {Bin("dlio-coordinator"), "run", refs + "/" + workload, "--data-root", root,
                                     "--results-dir", dir.str() + "/results", "--mlperf-results-dir", tree.string(),
                                     "--mlperf-references", refs, "--mlperf-version", "v2.0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, seconds(180), dir.str());
  };
  // unet3d: the agents declare 512 kB of RAM, so datasize's count is the 500-step rule's: 1,000 files.
  const std::vector<std::string> unet = {"--local-agents", "1", "--accelerators", "2", "--host-memory", "512kB"};
  std::vector<std::string> a = unet;
  a.push_back("--mlperf-datagen");
  // The data on tmpfs, the results tree on the disk: v3.0's fs-separation gate (Rules.md 3.4.2) stops a CLOSED set
  // whose data and results share a file system.
  fs::create_directories(shm.path() / "root");
  CommandResult r = run("unet3d_h100.yaml", a, shm.str() + "/root");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("datasize: 1000 files (set by the 500-step rule"), std::string::npos) << r.out;
  // A warm-up and the 5 timed runs (--mlperf-runs defaults to 5): 500 steps of 10 ms each, compute-bound, so they
  // replicate (the fixture says why 10 ms).
  a = unet;
  a.push_back("--mlperf");
  const fs::path unet_dir = tree / "training" / "unet3d", llama_dir = tree / "checkpointing" / "llama3-8b";
  r = RunMlperfSet([&] { return run("unet3d_h100.yaml", a, shm.str() + "/root"); }, unet_dir);
  std::cout << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("dataset: as generated in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run-5    seed 128: AU "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: MLPerf unet3d: AU PASS, replication PASS, CLOSED\n"), std::string::npos) << r.out;
  // llama3-8b: 8 ranks on one host, 5 runs of a write job then a read job that clears the cache.
  const std::vector<std::string> llama = {"--local-agents", "2", "--accelerators", "4", "--mlperf"};
  r = RunMlperfSet([&] { return run("llama3_8b.yaml", llama, shm.str()); }, llama_dir);
  std::cout << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int k = 1; k <= 5; ++k) {
    for (const std::string op : {"write", "read "}) {
      const std::string line = "run-" + std::to_string(k) + " " + op + ": [0-9.]+ GiB/s, [0-9.]+ s per checkpoint, 10 ";
      EXPECT_TRUE(std::regex_search(r.out, std::regex(line))) << line << "\n" << r.out;
    }
  }
  EXPECT_NE(r.out.find("verdict: MLPerf llama3-8b: replication write PASS, read PASS, CLOSED"), std::string::npos)
      << r.out;

  r = RunCommand({Bin("dlio-coordinator"), "mlperf", "report", tree.string(), "--mlperf-references", refs}, seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  const nlohmann::json report = LoadJson((tree / "mlperf_storage_report.json").string());
  ASSERT_EQ(report["workloads"].size(), 2u);
  for (const nlohmann::json& w : report["workloads"]) {
    EXPECT_EQ(w["division"], "CLOSED") << w.dump();
    EXPECT_EQ(w["timed_runs"], 5) << w.dump();
    for (const nlohmann::json& rep : w["replication"]) EXPECT_EQ(rep["verdict"], "PASS") << w.dump();
  }
  const nlohmann::json& ck = report["workloads"][0]["benchmark_type"] == "checkpointing" ? report["workloads"][0]
                                                                                         : report["workloads"][1];
  EXPECT_GT(ck["score"]["write_GiB_per_second"].get<double>(), 0);
  EXPECT_GT(ck["score"]["read_GiB_per_second"].get<double>(), 0);
  EXPECT_EQ(ck["write"]["per_rank"].size(), 8u);
  EXPECT_EQ(ck["read"]["per_host"].size(), 1u);
  // results.csv: a header and one row per run folder (datagen, warm-up and 5 runs; 5 writes and 5 reads).
  const std::string csv = ReadFile((tree / "results.csv").string());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 7 + 10) << csv;
  // The pre-filled system description: the host as the agents reported it, the rest marked for the submitter.
  const std::string sd_path = (tree / "system_description.yaml").string();
  std::string sd = ReadFile(sd_path);
  EXPECT_NE(sd.find("cpu_model:"), std::string::npos) << sd;
  EXPECT_NE(sd.find("memory_source: \"--host-memory\""), std::string::npos) << sd;
  EXPECT_NE(sd.find("nics:"), std::string::npos) << sd;
  r = Check(tree, refs);
  EXPECT_EQ(r.exit_code, 5) << r.out;
  EXPECT_NE(r.out.find("system_description.yaml: system description: System.submitter is not filled in"),
            std::string::npos)
      << r.out;
  WriteFile(sd_path, std::regex_replace(sd, std::regex("\"FILL IN[^\"]*\""), "\"rehearsal\""));
  r = Check(tree, refs);
  std::cout << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("check: ACCEPTED"), std::string::npos) << r.out;
  // Against the shipped references the scaled runs are INVALID.
  r = RunCommand({Bin("dlio-coordinator"), "mlperf", "check", tree.string()}, seconds(60));
  EXPECT_EQ(r.exit_code, 5) << r.out;
  EXPECT_NE(r.out.find(": class: INVALID: "), std::string::npos) << r.out;

  // Each broken rule is refused, naming the file and the rule.
  auto broken = [&](const std::string& name, const std::function<void(const fs::path&)>& edit) {
    const fs::path copy = dir.path() / name;
    fs::copy(tree, copy, fs::copy_options::recursive);
    edit(copy);
    CommandResult c = Check(copy, refs);
    EXPECT_EQ(c.exit_code, 5) << name << "\n" << c.out << c.err;
    return c.out;
  };
  auto rel = [](const fs::path& copy, const fs::path& p) { return p.lexically_relative(copy).string(); };
  std::string run2, run4;
  std::string out = broken("one-run-removed", [&](const fs::path& t) {
    fs::remove_all(RunFolder(t / "training" / "unet3d" / "run", "run", 3));
  });
  EXPECT_NE(out.find("training/unet3d/run: 5-run rule: set "), std::string::npos) << out;
  EXPECT_NE(out.find("4 timed runs, 5 required (missing run 3)"), std::string::npos) << out;
  out = broken("one-run-open", [&](const fs::path& t) {
    const fs::path cfg = RunFolder(t / "training" / "unet3d" / "run", "run", 2) / "dlio_config" / "config.yaml";
    run2 = rel(t, cfg);
    WriteFile(cfg.string(), Replace(ReadFile(cfg.string()), "framework: \"pytorch\"", "framework: \"tensorflow\""));
  });
  EXPECT_NE(out.find(run2 + ": class: OPEN, but "), std::string::npos) << out;
  EXPECT_NE(out.find(run2 + ": integrity: differs from the job that ran"), std::string::npos) << out;
  out = broken("below-datasize", [&](const fs::path& t) {
    const fs::path s = RunFolder(t / "training" / "unet3d" / "run", "run", 4) / "summary.json";
    run4 = rel(t, s);
    nlohmann::json j = LoadJson(s.string());
    j["host_memory_GB"] = {1.0};  // 5 GiB of dataset needed: 1,310,720 files of 4 KiB
    WriteFile(s.string(), j.dump(2));
  });
  EXPECT_NE(out.find(run4 + ": datasize rule: num_files_train 1000 is below the 1310720 files"), std::string::npos)
      << out;
  out = broken("one-read-removed", [&](const fs::path& t) {
    fs::remove_all(RunFolder(t / "checkpointing" / "llama3-8b", "read", 2));
  });
  EXPECT_NE(out.find("checkpointing/llama3-8b: 5-run rule: set "), std::string::npos) << out;
  EXPECT_NE(out.find("(missing run 2)"), std::string::npos) << out;
  // The other rules, one file each.
  auto edit_metric = [](const fs::path& s, const std::string& key, double factor) {
    nlohmann::json j = LoadJson(s.string());
    j["metric"][key] = j["metric"][key].get<double>() * factor;
    WriteFile(s.string(), j.dump(2));
  };
  std::string path;
  out = broken("au-below", [&](const fs::path& t) {
    const fs::path s = RunFolder(t / "training" / "unet3d" / "run", "run", 1) / "summary.json";
    path = rel(t, s);
    edit_metric(s, "train_au_mean_percentage", 0.5);
  });
  EXPECT_NE(out.find(path + ": AU rule: AU "), std::string::npos) << out;
  EXPECT_NE(out.find("is below unet3d's 90 %"), std::string::npos) << out;
  out = broken("not-replicated", [&](const fs::path& t) {
    edit_metric(RunFolder(t / "training" / "unet3d" / "run", "run", 5) / "summary.json",
                "train_throughput_mean_samples_per_second", 1.3);
  });
  EXPECT_NE(out.find("training/unet3d/run: replication: samples/s of the runs deviate up to "), std::string::npos)
      << out;
  out = broken("cache-not-cleared", [&](const fs::path& t) {
    const fs::path cfg = RunFolder(t / "checkpointing" / "llama3-8b", "read", 3) / "dlio_config" / "config.yaml";
    path = rel(t, cfg);
    WriteFile(cfg.string(), Replace(ReadFile(cfg.string()), "checkpoint_evict_cache: true",
                                    "checkpoint_evict_cache: false"));
  });
  EXPECT_NE(out.find(path + ": cache rule: the cache was not cleared"), std::string::npos) << out;
  // v3.0's run behaviour: a timed run without the per-epoch cache drop, a run whose data shared the results' file
  // system (its fs_separation.json).
  out = broken("cache-not-dropped", [&](const fs::path& t) {
    const fs::path cfg = RunFolder(t / "training" / "unet3d" / "run", "run", 2) / "dlio_config" / "config.yaml";
    path = rel(t, cfg);
    WriteFile(cfg.string(), std::regex_replace(ReadFile(cfg.string()), std::regex("evict_cache: \"?every_epoch\"?"),
                                               "evict_cache: \"none\""));
  });
  EXPECT_NE(out.find(path + ": cache rule: the page cache was not dropped before every training epoch "
                            "(dlio_ext.evict_cache is none"),
            std::string::npos)
      << out;
  out = broken("one-file-system", [&](const fs::path& t) {
    const fs::path f = RunFolder(t / "training" / "unet3d" / "run", "run", 4) / "fs_separation.json";
    path = rel(t, f);
    nlohmann::json j = LoadJson(f.string());
    EXPECT_EQ(j["separate"], true) << j.dump();
    j["separate"] = false;
    WriteFile(f.string(), j.dump(2));
  });
  EXPECT_NE(out.find(path + ": fs separation: Rules.md 3.4.2: the data ("), std::string::npos) << out;
  out = broken("pause-too-long", [&](const fs::path& t) {
    const fs::path wr = RunFolder(t / "checkpointing" / "llama3-8b", "write", 1) / "summary.json";
    const fs::path rd = RunFolder(t / "checkpointing" / "llama3-8b", "read", 1) / "summary.json";
    path = rel(t, rd);
    nlohmann::json j = LoadJson(rd.string());
    std::string end = LoadJson(wr.string())["end"].get<std::string>();  // "2026-11-22T02:03:49.804834"
    end.replace(0, 4, std::to_string(std::stoi(end.substr(0, 4)) + 1));  // the read starts a year later
    j["start"] = end;
    WriteFile(rd.string(), j.dump(2));
  });
  EXPECT_NE(out.find(path + ": checkpoint rule: Rules.md 4.7.2: the read invocation started "), std::string::npos)
      << out;
  out = broken("per-rank-file-missing", [&](const fs::path& t) {
    const fs::path f = RunFolder(t / "training" / "unet3d" / "run", "run", 2) / "0_per_epoch_stats.json";
    path = rel(t, f);
    fs::remove(f);
  });
  EXPECT_NE(out.find(path + ": required files: missing"), std::string::npos) << out;
}

// Issue 25 item 1: `mlperf classify` judges by MLPerf Storage v3.0 by default: its references (retinanet, unet3d on
// b200/mi355), its classes (CLOSED, OPEN, WHATIF for the workloads and accelerators outside CLOSED), the same CLOSED
// whitelist and OPEN additions, --allow-invalid-params; v2.0 stays available with --mlperf-version v2.0.
TEST(MlperfV3, ClassifyJudgesByTheV3ReferencesAndClasses) {
  TempDir dir;
  const std::string v3 = SourceDir() + "/configs/workloads/mlperf-v3.0/";
  auto classify = [&](const std::string& job, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {Bin("dlio-coordinator"), "mlperf", "classify", job};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, seconds(30), dir.str());
  };
  CommandResult r = classify(v3 + "retinanet_b200.yaml", {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("workload: retinanet (MLPerf Storage v3.0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("classification: CLOSED (the effective workload against "
                       "configs/workloads/mlperf-v3.0/retinanet_b200.yaml: 0 key(s) differ)"),
            std::string::npos)
      << r.out;
  // The whitelist: read_threads is CLOSED, the file format OPEN, the batch INVALID (each key with its reason).
  r = classify(v3 + "retinanet_b200.yaml", {"reader.read_threads=16", "dataset.num_files_train=2000000"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("classification: CLOSED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CLOSED   reader.read_threads=16: loader parallelism is tunable"), std::string::npos) << r.out;
  r = classify(v3 + "retinanet_b200.yaml", {"dataset.format=png"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("classification: OPEN"), std::string::npos) << r.out;
  r = classify(v3 + "retinanet_b200.yaml", {"reader.batch_size=2"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("INVALID  reader.batch_size=2: not in the CLOSED or OPEN list"), std::string::npos) << r.out;
  r = classify(v3 + "retinanet_b200.yaml", {"--allow-invalid-params", "reader.batch_size=2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("classification: OPEN"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OPEN     reader.batch_size=2: allowed by --allow-invalid-params"), std::string::npos) << r.out;
  // retinanet's AU is 0.85 in v3.0; mi355 is a CLOSED accelerator too.
  r = classify(v3 + "retinanet_mi355.yaml", {"--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["class"], "CLOSED") << r.out;
  EXPECT_EQ(j["mlperf_version"], "v3.0");
  // h100 and resnet50 are whatif in v3.0; CLOSED in v2.0.
  r = classify(v3 + "unet3d_h100.yaml", {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("classification: WHATIF"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("problem  WHATIF: h100 is a whatif accelerator in v3.0 (CLOSED and OPEN unet3d emulate b200, "
                       "mi355)"),
            std::string::npos)
      << r.out;
  r = classify(SourceDir() + "/configs/workloads/resnet50_h100.yaml", {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("classification: WHATIF"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WHATIF: resnet50 is a whatif workload in v3.0"), std::string::npos) << r.out;
  r = classify(SourceDir() + "/configs/workloads/unet3d_h100.yaml", {"--mlperf-version", "v2.0"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("classification: CLOSED"), std::string::npos) << r.out;
  // Bad values: one line naming the flag and what is allowed.
  r = classify(v3 + "retinanet_b200.yaml", {"--mlperf-version", "v4.0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "--mlperf-version: 'v4.0' is not a round this version knows (v3.0, the default, or v2.0)\n");
  r = classify(SourceDir() + "/configs/workloads/unet3d_h100.yaml", {"--mlperf-version", "v2.0", "--allow-invalid-params"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "--allow-invalid-params: a v3.0 option (OPEN and WHATIF); v2.0 has no such class\n");
  r = classify(v3 + "retinanet_b200.yaml", {"--mlperf-version", "v2.0", "--accelerator-type", "b200"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "--accelerator-type: 'b200' is not an accelerator of MLPerf Storage v2.0 (a100, h100)\n");
  // datasize knows v3.0's retinanet (batch 24 x 500 steps x 8 accelerators).
  r = RunCommand({Bin("dlio-coordinator"), "mlperf", "datasize", "--workload", "retinanet", "--accelerators", "8",
                  "--host-memory-gib", "1", "--json"},
                 seconds(30), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["files_for_steps"], 500 * 24 * 8);
}

// Issue 25 item 1: retinanet_b200 scaled down (240 files instead of 1,170,301, one epoch) through the jpeg path at
// MLPerf's sample size: every file a baseline JPEG of 568 x 568 pixels (floor(sqrt(322,957))^2 bytes decoded), each
// read whole once in the epoch.
TEST(MlperfV3, RetinanetRunsScaledDownThroughTheJpegPathAtMlperfsSampleSize) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  CommandResult r = RunCommand(
      {Bin("dlio-coordinator"), "run", SourceDir() + "/configs/workloads/mlperf-v3.0/retinanet_b200.yaml",
       "--local-agents", "2", "--accelerators", "1", "--data-root", dir.str() + "/root", "--results-dir",
       dir.str() + "/results", "--wait-for-agents", "30", "--set", "workflow.generate_data=True", "--set",
       "dataset.data_folder=data", "--set", "dataset.num_files_train=240", "--set", "train.epochs=1"},
      seconds(240), dir.str());
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  uint64_t bytes = 0;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "root" / "data" / "train")) {
    if (!e.is_regular_file()) continue;
    ++files;
    bytes += fs::file_size(e.path());
    const std::string jpg = ReadFile(e.path().string());
    ASSERT_GE(jpg.size(), 4u);
    EXPECT_EQ(jpg.substr(0, 2), std::string("\xFF\xD8", 2)) << e.path();
    const size_t sof = jpg.find(std::string("\xFF\xC0", 2));  // baseline SOF0: length, precision, height, width
    ASSERT_NE(sof, std::string::npos) << e.path();
    const auto u16 = [&](size_t at) {
      return (static_cast<unsigned char>(jpg[at]) << 8) | static_cast<unsigned char>(jpg[at + 1]);
    };
    EXPECT_EQ(u16(sof + 5), 568) << e.path();
    EXPECT_EQ(u16(sof + 7), 568) << e.path();
  }
  EXPECT_EQ(files, 240);
  fs::path result;
  for (const auto& e : fs::directory_iterator(dir.path() / "results")) result = e.path();
  const nlohmann::json summary = LoadJson((result / "summary.json").string());
  EXPECT_EQ(summary["num_accelerators"], 2) << summary.dump();
  EXPECT_DOUBLE_EQ(summary["metric"]["train_read_bytes"].get<double>(), static_cast<double>(bytes)) << summary.dump();
}

}  // namespace
}  // namespace dlio::testing
