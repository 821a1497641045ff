#include "coordinator/trace_writer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "results/trace_buffer.h"
#include "nlohmann/json.hpp"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string MakeDir() {
  char tmpl[] = "/tmp/dlio_trace_writer_test.XXXXXX";
  return ::mkdtemp(tmpl);
}

TEST(TraceBuffer, KeepsTheFirstEventsUpToItsCapAndCountsTheRest) {
  TraceBuffer b(StepTrackId(3), 2);
  b.Record(TraceKind::kWait, 10, 5, 0);
  b.Record(TraceKind::kCompute, 15, 5, 0);
  b.Record(TraceKind::kBarrier, 20, 5, 0);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.dropped(), 1u);
  std::string packed;
  b.Pack(1000, &packed);
  ASSERT_EQ(packed.size(), 2 * sizeof(PackedTraceEvent));
  std::vector<PackedTraceEvent> ev = UnpackTraceEvents(packed);
  EXPECT_EQ(ev[0].start_ns, 1010);
  EXPECT_EQ(ev[1].kind, static_cast<uint32_t>(TraceKind::kCompute));
  EXPECT_EQ(ev[1].tid, 3000u);
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.dropped(), 0u);
}

TEST(TraceWriter, MergesPhasesIntoChromeTraceSortedPerTrackWithNamedProcessesAndThreads) {
  const std::string dir = MakeDir();
  const int64_t start_us = 1'700'000'000'000'000;
  const int64_t t0 = start_us * 1000;
  std::vector<AgentInfo> agents(2);
  agents[0].name = "a";
  agents[0].first_rank = 0;
  agents[0].ranks = 1;
  agents[1].name = "b";
  agents[1].first_rank = 1;
  agents[1].ranks = 1;
  TraceWriter w(*ConfinedDir::OpenRoot(dir), "job-1", start_us);
  std::vector<RankEpochResult> phase1(2);
  for (int r = 0; r < 2; ++r) {
    phase1[r].rank = r;
    TraceBuffer loader(LoaderTrackId(r, 0), 16), step(StepTrackId(r), 16);
    // Out of order on purpose (io_uring completions may be): the writer sorts per track.
    loader.Record(TraceKind::kRead, 3000, 1500, 4096);
    loader.Record(TraceKind::kOpen, 1000, 0, 0);
    loader.Record(TraceKind::kRead, 2000, 999, 100);
    step.Record(TraceKind::kWait, 500, 4000, 0);
    step.Record(TraceKind::kCompute, 4500, 1000, 0);
    step.Record(TraceKind::kBarrier, 5500, 10, 0);
    loader.Pack(t0, &phase1[r].trace_events);
    step.Pack(t0, &phase1[r].trace_events);
    phase1[r].trace_dropped = static_cast<uint64_t>(r);
  }
  ASSERT_TRUE(w.AddPhase("train-epoch-1", phase1, agents).ok());
  EXPECT_TRUE(phase1[0].trace_events.empty());  // moved out
  ASSERT_TRUE(w.Finish(agents).ok());

  std::ifstream in(dir + "/trace.json");
  const json t = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  EXPECT_EQ(t["otherData"]["events"], 12);
  EXPECT_EQ(t["otherData"]["dropped_events"], 1);
  EXPECT_EQ(t["otherData"]["job_id"], "job-1");
  std::map<std::pair<int, int>, double> last;
  std::set<std::string> names;
  uint64_t bytes = 0;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["args"].contains("name")) names.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    const auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
    const double ts = e["ts"].get<double>();
    if (last.count(key)) {
      EXPECT_LE(last[key], ts);
    }
    last[key] = ts;
    EXPECT_EQ(e["args"]["phase"], "train-epoch-1");
    if (e["name"] == "read") bytes += e["args"]["bytes"].get<uint64_t>();
    if (e["name"] == "open") {
      EXPECT_EQ(e["ph"], "i");
    }
  }
  EXPECT_EQ(bytes, 2u * (4096 + 100));
  EXPECT_TRUE(names.count("agent a") && names.count("agent b") && names.count("rank 1 loader 0") &&
              names.count("rank 0"));
  // The first read of rank 0 starts 2 us after the job start, with ns decimals kept exactly.
  bool found = false;
  for (const json& e : t["traceEvents"]) {
    if (e["name"] == "read" && e["pid"] == 0 && e["args"]["bytes"] == 100) {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.999);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  fs::remove_all(dir);
}

// Issue 24 item 5: the job folder renamed away and replaced by a link to an outside folder between two phases.
// The events file and trace.json stay in the folder that was opened (now "moved"); nothing appears outside.
TEST(TraceWriter, AJobFolderSwappedForALinkMidJobKeepsEveryTraceFileOutOfTheLinksTarget) {
  const fs::path base = MakeDir();
  fs::create_directories(base / "results" / "job-1");
  fs::create_directories(base / "outside");
  std::vector<AgentInfo> agents(1);
  agents[0].name = "a";
  agents[0].ranks = 1;
  auto phase = [] {
    std::vector<RankEpochResult> ranks(1);
    TraceBuffer step(StepTrackId(0), 4);
    step.Record(TraceKind::kCompute, 100, 10, 0);
    step.Pack(0, &ranks[0].trace_events);
    return ranks;
  };
  {
    TraceWriter w(*ConfinedDir::OpenRoot((base / "results" / "job-1").string()), "job-1", 0);
    std::vector<RankEpochResult> p1 = phase();
    ASSERT_TRUE(w.AddPhase("train-epoch-1", p1, agents).ok());
    fs::rename(base / "results" / "job-1", base / "results" / "moved");
    fs::create_directory_symlink(base / "outside", base / "results" / "job-1");
    std::vector<RankEpochResult> p2 = phase();
    ASSERT_TRUE(w.AddPhase("train-epoch-2", p2, agents).ok());
    ASSERT_TRUE(w.Finish(agents).ok());
  }
  EXPECT_TRUE(fs::is_empty(base / "outside"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(base / "results" / "moved")) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"trace.json"}) << "the events file is removed, through the folder";
  std::ifstream in(base / "results" / "moved" / "trace.json");
  const json t = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  EXPECT_EQ(t["otherData"]["events"], 2);
  fs::remove_all(base);
}

}  // namespace
}  // namespace dlio
