// Live figures and measurement guards, over real processes (issue 26 items 5 and 6; docs/results.md "While a job
// runs" and "Measurement guards"):
//  - Live.*: the training progress line carries the bytes read per second while the epoch runs (not only once the
//    phase ended), and `status`/`list` of a running job show the AU and samples/s of its completed epochs;
//  - Guards.*: more loader threads than the agent's cores, and checkpoint loads the page cache would serve, each a
//    one-line warning in --explain and at the run's start (and none once dlio_ext.checkpoint_evict_cache is on).
// Timed (an epoch of several seconds): the tests run alone (RUN_SERIAL).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

// Lines of `text` that match `re`.
std::vector<std::string> Lines(const std::string& text, const std::string& re) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, std::regex(re))) out.push_back(line);
  }
  return out;
}

// `literal` as a regular expression matching itself.
std::string Escaped(const std::string& literal) {
  return std::regex_replace(literal, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// `run JOB --local-agents 1` in `dir` with `extra` flags.
CommandResult RunLocal(const TempDir& dir, const std::string& job, std::vector<std::string> extra) {
  std::filesystem::create_directories(dir.path() / "root");
  std::vector<std::string> argv = {Bin("dlio-coordinator"), "run", job, "--local-agents", "1", "--data-root",
                                   dir.str() + "/root", "--results-dir", dir.str() + "/results"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv, seconds(240), dir.str());
}

TEST(Live, ProgressLineShowsBytesPerSecondWhileTheEpochRuns) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  // One epoch of 120 steps x 0.1 s (~12 s): the plain progress line comes every 5 s, so twice before the end.
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npy", 120, 1, 65536, 1, 0.1, 1, true));
  const CommandResult r = Submit(fleet, job, dir.str() + "/out", 1);
  ASSERT_TRUE(JobRan(r.exit_code)) << Dump(r) << fleet.Logs();
  // "[train-epoch-1] epoch 1/1  40/120 steps  AU 98.0 %  9.8 samples/s  642.3 KB/s  ETA ..."
  const std::vector<std::string> mid = Lines(r.out, R"(^\[train-epoch-1\] .* ([0-9]+)/120 steps )");
  std::vector<std::string> running;
  for (const std::string& l : mid) {
    if (l.find(" 120/120 steps") == std::string::npos) running.push_back(l);
  }
  ASSERT_FALSE(running.empty()) << "no progress line before the epoch's end:\n" << r.out;
  for (const std::string& l : running) {
    EXPECT_TRUE(std::regex_search(l, std::regex(R"(samples/s  [0-9.]+ [KMGT]?B/s  ETA)"))) << l;
    EXPECT_TRUE(std::regex_search(l, std::regex(R"(  AU [0-9.]+ %)"))) << l;
  }
}

TEST(Live, StatusAndListOfARunningJobShowItsCompletedEpochs) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  // 3 epochs of 40 steps x 0.1 s (~4 s each): status is asked during the second or third.
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npy", 40, 1, 4096, 1, 0.1, 3, true));
  Process submit({Bin("dlio-coordinator"), "submit", job, "--coordinator", fleet.address(), "--agents", "1",
                  "--wait-for-agents", "30", "--output", dir.str() + "/out"},
                 dir.str() + "/submit.log");
  json st;
  ASSERT_TRUE(Eventually(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a client process per poll: not too many
        const json list = fleet.ClientJson({"list"});
        if (!list.is_object() || list["jobs"].empty()) return false;
        st = fleet.Status(list["jobs"][0]["job_id"].get<std::string>());
        return st.is_object() && st["state"] == "running" && st.contains("completed_au_percent");
      },
      std::chrono::seconds(60)))
      << st.dump(2) << submit.Log() << fleet.Logs();
  const std::string id = st["job_id"].get<std::string>();
  EXPECT_GT(st["completed_au_percent"].get<double>(), 0) << st.dump(2);
  EXPECT_LE(st["completed_au_percent"].get<double>(), 100) << st.dump(2);
  EXPECT_GT(st["completed_samples_per_second"].get<double>(), 0) << st.dump(2);
  // The text forms, while it still runs (3 epochs: at least ~4 s left after the first ended).
  const CommandResult text = fleet.Client({"status", id});
  EXPECT_TRUE(std::regex_search(
      text.out, std::regex(R"(epochs: +[0-9] of 3 completed \(AU [0-9.]+ %, [0-9.]+ samples/s\))")))
      << text.out;
  const CommandResult list = fleet.Client({"list"});
  EXPECT_TRUE(std::regex_search(list.out, std::regex(R"(epochs so far: AU [0-9.]+ %, [0-9.]+ samples/s; )")))
      << list.out;
  ASSERT_TRUE(JobRan(submit.Wait(std::chrono::seconds(120)))) << submit.Log();
  // Ended: the verdict says it; the figures of a running job are gone.
  const json done = fleet.Status(id);
  EXPECT_FALSE(done.contains("completed_au_percent")) << done.dump(2);
}

TEST(Guards, MoreLoaderThreadsThanCoresWarnedInExplainAndAtTheRunsStart) {
  TempDir dir;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string threads = std::to_string(cores + 1);
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Replace(Workload("npy", 8, 1, 4096, 1, 0.001, 1, true), "read_threads: 2",
                         "read_threads: " + threads));
  const std::string want = "reader.read_threads: " + threads + " loader thread(s) per rank x 1 rank(s) = " + threads +
                           " per agent on node ";
  const CommandResult explain = RunLocal(dir, job, {"--explain"});
  ASSERT_EQ(explain.exit_code, 0) << Dump(explain);
  const std::vector<std::string> warned = Lines(explain.out, "warning: " + Escaped(want));
  ASSERT_EQ(warned.size(), 1u) << explain.out;
  EXPECT_NE(warned[0].find("which has " + std::to_string(cores) + " core(s)"), std::string::npos) << warned[0];
  const CommandResult run = RunLocal(dir, job, {});
  ASSERT_TRUE(JobRan(run.exit_code)) << Dump(run);
  EXPECT_EQ(Lines(run.out + run.err, "warning: .*" + Escaped(want)).size(), 1u) << Dump(run);
  // As many threads as cores: no warning.
  WriteFile(job, Replace(Workload("npy", 8, 1, 4096, 1, 0.001, 1, false), "read_threads: 2",
                         "read_threads: " + std::to_string(cores)));
  const CommandResult fits = RunLocal(dir, job, {"--explain"});
  EXPECT_TRUE(Lines(fits.out, "reader.read_threads: .* loader thread").empty()) << fits.out;
}

TEST(Guards, CheckpointLoadsFromThePageCacheWarnedUnlessEvicted) {
  TempDir dir;
  const std::string job = dir.str() + "/job.yaml";
  const std::string base = R"(model:
  name: ckpt
  model_size_bytes: 4000000
workflow:
  train: false
  checkpoint: true
checkpoint:
  checkpoint_folder: ckpt
  num_checkpoints_write: 2
  num_checkpoints_read: 1
)";
  WriteFile(job, base);
  const std::string want = "checkpoint: the 1 load(s) read checkpoints this job wrote seconds before";
  const CommandResult explain = RunLocal(dir, job, {"--explain"});
  ASSERT_EQ(explain.exit_code, 0) << Dump(explain);
  const std::vector<std::string> warned =
      Lines(explain.out, "warning: " + Escaped(want));
  ASSERT_EQ(warned.size(), 1u) << explain.out;
  EXPECT_NE(warned[0].find("set dlio_ext.checkpoint_evict_cache: true"), std::string::npos) << warned[0];
  const CommandResult run = RunLocal(dir, job, {});
  ASSERT_TRUE(JobRan(run.exit_code)) << Dump(run);
  EXPECT_NE((run.out + run.err).find(want), std::string::npos) << Dump(run);
  // The eviction on: neither says it.
  WriteFile(job, base + "dlio_ext:\n  checkpoint_evict_cache: true\n");
  const CommandResult evicted = RunLocal(dir, job, {"--explain"});
  EXPECT_EQ(evicted.out.find(want), std::string::npos) << evicted.out;
  const CommandResult run2 = RunLocal(dir, job, {});
  ASSERT_TRUE(JobRan(run2.exit_code)) << Dump(run2);
  EXPECT_EQ((run2.out + run2.err).find(want), std::string::npos) << Dump(run2);
}

}  // namespace
}  // namespace dlio::testing
