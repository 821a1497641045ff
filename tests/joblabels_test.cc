// Concurrent jobs seen from outside (issue 30 item 3), with real coordinator and agent processes over loopback:
//  - two jobs sharing one agent: the agent's /metrics has each job's series under its own job_id with the figures
//    of that job's results, and both jobs' results carry the host telemetry of their own phases' spans (one sampler,
//    its readings shared by every phase that overlaps them; docs/metrics.md, docs/results.md "Host telemetry");
//  - a scenario writes one trace.json (docs/scenarios.md "The trace") that Python's json module reads, with every
//    member as its own process and its runs, phases, checkpoints and steps inside the scenario's span.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

// Client flags: the suite's loaded 2-core machine may need more than the default 10 s to connect.
const std::vector<std::string> kClient = {"--connect-timeout", "60"};

// 1 rank x `files` steps x `compute` s per epoch, telemetry every second, its own data folder.
std::string Job(int epochs, int files, double compute, const std::string& folder) {
  std::string w = Workload("npz", files, 1, 4096, 1, compute, epochs, true, "dlio_ext:\n  telemetry_interval: 1\n");
  const std::string from = "data_folder: data\n";
  return w.replace(w.find(from), from.size(), "data_folder: " + folder + "\n");
}

std::string Detach(const Fleet& fleet, const std::string& job, std::vector<std::string> flags) {
  std::vector<std::string> args = {"submit", job, "--detach"};
  args.insert(args.end(), flags.begin(), flags.end());
  const CommandResult r = fleet.Client(args);
  EXPECT_EQ(r.exit_code, 0) << Dump(r);
  return r.exit_code == 0 ? r.out.substr(0, r.out.find('\n')) : "";
}

json StatusOf(const Fleet& fleet, const std::string& job) {
  json s;
  Eventually([&] { return (s = fleet.Status(job)).is_object(); }, seconds(30));
  return s;
}

bool Ended(const Fleet& fleet, const std::string& job) {
  const json s = StatusOf(fleet, job);
  const std::string state = s.is_object() ? s.value("state", "") : "";
  return state == "succeeded" || state == "failed" || state == "cancelled" || state == "interrupted";
}

// The sum of a family's samples whose labels hold every one of `labels` (`name="value"` texts).
double Sum(const std::string& scrape, const std::string& family, const std::vector<std::string>& labels) {
  const std::regex re("^" + family + R"(\{([^}]*)\} ([^ ]+)$)");
  std::istringstream in(scrape);
  std::string line;
  std::smatch m;
  double sum = 0;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, m, re)) continue;
    bool all = true;
    for (const std::string& l : labels) all = all && m[1].str().find(l) != std::string::npos;
    if (all) sum += std::stod(m[2].str());
  }
  return sum;
}

// A results file's "start"/"end" as unix ms (local-time ISO text, as DLIO writes it).
int64_t UnixMs(const std::string& iso) {
  std::tm tm{};
  double frac = 0;
  std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
              &tm.tm_sec, &frac);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(std::mktime(&tm)) * 1000 + static_cast<int64_t>(frac * 1000);
}

// Every line of a job's <agent>_host.jsonl.
std::vector<json> HostLines(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

TEST(JobLabels, TwoJobsSharingAnAgentEachExportTheirOwnSeriesAndCarryTheHostTelemetryOfTheirSpan) {
  TempDir dir;
  const int mport = FreePort();
  Fleet fleet(dir, {}, kClient);
  fleet.AddAgent("agent-0", {"--accelerators", "2", "--metrics-listen", "127.0.0.1:" + std::to_string(mport)});
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 1; }, seconds(30))) << fleet.Logs();
  // Different datasets, step counts and lengths (~2-3 s an epoch): each job's figures are its own.
  WriteFile(dir.str() + "/a.yaml", Job(2, 40, 0.06, "data-a"));
  WriteFile(dir.str() + "/b.yaml", Job(2, 24, 0.1, "data-b"));
  const std::vector<std::string> shared = {"--agents", "1", "--accelerators-per-agent", "1", "--share-agents"};
  const std::string a = Detach(fleet, dir.str() + "/a.yaml", shared);
  const std::string b = Detach(fleet, dir.str() + "/b.yaml", shared);
  ASSERT_FALSE(a.empty() || b.empty());
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, a) && Ended(fleet, b); }, seconds(180))) << fleet.Logs();
  const json sa = StatusOf(fleet, a), sb = StatusOf(fleet, b);
  ASSERT_EQ(sa["state"], "succeeded") << sa.dump(1) << fleet.Logs();
  ASSERT_EQ(sb["state"], "succeeded") << sb.dump(1) << fleet.Logs();
  // They ran at the same time, on the one agent.
  ASSERT_LT(sa["started_unix_us"].get<int64_t>(), sb["ended_unix_us"].get<int64_t>());
  ASSERT_LT(sb["started_unix_us"].get<int64_t>(), sa["ended_unix_us"].get<int64_t>());

  const std::string scrape = HttpGet(mport, "/metrics");
  ASSERT_FALSE(scrape.empty());
  for (const auto& [job, files] : {std::make_pair(a, 40), std::make_pair(b, 24)}) {
    SCOPED_TRACE(job);
    const std::string results = dir.str() + "/coord-results/" + job;
    const json summary = LoadJson(results + "/summary.json");
    const json& io = summary["dlio_ext"]["train_io"];
    const std::string label = "job_id=\"" + job + "\"";
    // The job's own series, with its own figures (2 epochs of its dataset).
    EXPECT_EQ(Sum(scrape, "dlio_samples_total", {label, "phase=\"train\""}), io["samples"].get<double>());
    EXPECT_EQ(Sum(scrape, "dlio_samples_total", {label, "phase=\"train\""}), 2.0 * files);
    EXPECT_EQ(Sum(scrape, "dlio_read_bytes_total", {label, "phase=\"train\""}), io["bytes"].get<double>());
    EXPECT_EQ(Sum(scrape, "dlio_read_ops_total", {label, "phase=\"train\""}), io["ops"].get<double>());
    EXPECT_EQ(Sum(scrape, "dlio_steps_total", {label}), 2.0 * summary["dlio_ext"]["epoch_steps"].get<double>());
    EXPECT_EQ(Sum(scrape, "dlio_epoch", {label}), 2.0);

    // Host telemetry: every phase of the job has its series, and each training epoch's covers the epoch.
    ASSERT_TRUE(summary["dlio_ext"]["host"].contains("agent-0")) << summary["dlio_ext"].dump(1);
    const std::vector<json> lines = HostLines(results + "/agent-0_host.jsonl");
    std::map<std::string, std::pair<double, double>> span;  // phase -> first start, last end (unix ms)
    for (const json& l : lines) {
      const double end = l["unix_ms"].get<double>(), start = end - 1000 * l["seconds"].get<double>();
      auto [it, fresh] = span.emplace(l["phase"].get<std::string>(), std::make_pair(start, end));
      if (!fresh) it->second = {std::min(it->second.first, start), std::max(it->second.second, end)};
    }
    const json stats = LoadJson(results + "/0_per_epoch_stats.json");
    for (const std::string e : {"1", "2"}) {
      const std::string phase = "train-epoch-" + e;
      ASSERT_TRUE(span.count(phase)) << phase << " has no host series:\n" << ReadFile(results + "/agent-0_host.jsonl");
      const double begin = static_cast<double>(UnixMs(stats[e]["start"].get<std::string>()));
      const double finish = static_cast<double>(UnixMs(stats[e]["end"].get<std::string>()));
      EXPECT_LE(span[phase].first, begin + 300) << phase;   // recorded from the phase's start ...
      EXPECT_GE(span[phase].second, finish - 300) << phase;  // ... to its end (the last sample cut there)
    }
  }
}


// The trace's events of member process `pid` named `name` (all of them when `name` is empty).
std::vector<json> Events(const json& trace, int pid, const std::string& name = "") {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == pid && (name.empty() || e["name"] == name)) out.push_back(e);
  }
  return out;
}

bool Inside(const json& e, double begin, double end) {
  const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
  return ts >= begin && ts + dur <= end;
}

TEST(ScenarioTrace, OneTraceHoldsEveryMembersRunsPhasesAndStepsInsideTheScenariosSpan) {
  TempDir dir;
  // ~1.6 s of training (8 steps of 0.2 s), its steps traced; checkpoints at 0.5 s and 2 s.
  WriteFile(dir.str() + "/train.yaml", Workload("npz", 16, 1, 65536, 2, 0.2, 1, true));
  WriteFile(dir.str() + "/ckpt.yaml", kTinyCheckpointJob);
  WriteFile(dir.str() + "/scenario.yaml", R"(scenario:
  name: traced
  members:
    - name: train
      workload: train.yaml
      overrides: [dlio_ext.trace=true]
      placement: {agents: 1}
    - name: ckpt
      workload: ckpt.yaml
      placement: {agents: 1}
      start: 0.5
      repeat_every: 1.5
      times: 2
)");
  fs::create_directories(dir.path() / "root");
  const CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "scenario.yaml", "--local-agents", "2",
                                      "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                      "--output", dir.str() + "/out"},
                                     seconds(240), dir.str());
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  const std::string path = dir.str() + "/out/trace.json";
  // Python's json module reads it (what Perfetto's and chrome://tracing's loaders need first).
  const CommandResult py = RunCommand({"python3", "-c", "import json,sys; t=json.load(open(sys.argv[1])); "
                                       "print(len(t['traceEvents']))", path}, seconds(30), dir.str());
  ASSERT_EQ(py.exit_code, 0) << Dump(py);
  const json trace = LoadJson(path);
  const json doc = LoadJson(dir.str() + "/out/scenario.json");
  const double span = trace["otherData"]["span_us"].get<double>();
  EXPECT_EQ(trace["otherData"]["started_unix_ms"], doc["started_unix_ms"]);
  EXPECT_GT(span, 1e6);
  std::map<int, std::string> processes;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"].get<int>()] = e["args"]["name"];
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{1, "member train"}, {2, "member ckpt"}}));
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_TRUE(Inside(e, 0, span)) << e.dump();
    }
  }
  // train: its run, its epoch inside the run, its 8 steps' compute inside the epoch; its own trace kept.
  const std::vector<json> run = Events(trace, 1, "run 1"), epoch = Events(trace, 1, "train-epoch-1");
  ASSERT_EQ(run.size(), 1u);
  ASSERT_EQ(epoch.size(), 1u);
  const double run_ts = run[0]["ts"].get<double>(), run_end = run_ts + run[0]["dur"].get<double>();
  EXPECT_TRUE(Inside(epoch[0], run_ts, run_end)) << epoch[0].dump() << run[0].dump();
  EXPECT_EQ(epoch[0]["args"]["steps"], 8);
  const double epoch_ts = epoch[0]["ts"].get<double>(), epoch_end = epoch_ts + epoch[0]["dur"].get<double>();
  const std::vector<json> compute = Events(trace, 1, "compute");
  EXPECT_EQ(compute.size(), 8u);
  for (const json& c : compute) EXPECT_TRUE(Inside(c, epoch_ts - 1000, epoch_end + 1000)) << c.dump();
  EXPECT_TRUE(fs::exists(dir.path() / "out/together/train/trace.json"));
  // ckpt: two bursts, each with its save and its load inside it.
  const std::vector<json> bursts = Events(trace, 2, "run 1"), second = Events(trace, 2, "run 2");
  ASSERT_EQ(bursts.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(bursts[0]["cat"], "burst");
  std::vector<json> saves = Events(trace, 2, "save_ckpt1"), loads = Events(trace, 2, "load_ckpt1");
  ASSERT_EQ(saves.size(), 2u);
  ASSERT_EQ(loads.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const json& burst = k == 0 ? bursts[0] : second[0];
    const double ts = burst["ts"].get<double>(), end = ts + burst["dur"].get<double>();
    EXPECT_TRUE(Inside(saves[k], ts, end)) << saves[k].dump() << burst.dump();
    EXPECT_TRUE(Inside(loads[k], ts, end)) << loads[k].dump() << burst.dump();
  }
}

}  // namespace
}  // namespace dlio::testing
