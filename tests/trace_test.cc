// Process-level tests of --trace, the cache hygiene option and the bytes accounting, against real processes and
// real tools (strace).
//  - Trace.*: `dlio-coordinator run --trace FILE` writes a Chrome trace whose events cover every kind per rank, whose
//    tracks never go back in time, and whose read events add up to metric.train_read_bytes.
//  - Strace.*: an agent under `strace -f`: the bytes its read syscalls returned on data files equal
//    metric.train_read_bytes, for every format, and dlio_ext.evict_cache drops every data file's pages (fadvise64
//    DONTNEED) before each epoch. RUN_SERIAL (strace slows the agent down a lot).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

TEST(Trace, RunWritesChromeTraceWithEveryKindPerRankMonotonicTracksAndReadBytesEqualTrainReadBytes) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const std::string job = dir.str() + "/job.yaml";
  // 2 agents x 2 ranks, 16 files x 2 samples, batch 2: 8 steps per rank... 4 ranks: 4 steps per epoch, 2 epochs.
  WriteFile(job, Workload("npz", 16, 2, 4096, 2, 0.002, 2, true));
  const std::string trace = dir.str() + "/trace.json";
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--local-agents", "2", "--accelerators", "2",
                                "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                "--output", dir.str() + "/out", "--trace", trace,
                                // A checkpoint after each epoch (its own phase): one checkpoint_write per rank each.
                                "--set", "workflow.checkpoint=True", "--set", "checkpoint.checkpoint_folder=ck"},
                               seconds(240));
  ASSERT_PRED1(JobRan, r.exit_code) << Dump(r);
  EXPECT_NE(r.out.find("trace: " + trace), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(trace)) << Dump(r);

  const json t = LoadJson(trace);
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  ASSERT_TRUE(t.contains("traceEvents"));
  EXPECT_EQ(t["otherData"]["dropped_events"].get<uint64_t>(), 0u);

  // Per (pid, tid): kinds seen and the last timestamp; per rank (tid / 1000): the kinds of all its tracks.
  std::map<std::pair<int, int>, double> last_ts;
  std::map<int, std::set<std::string>> kinds_per_rank;
  std::map<int, std::set<int>> ranks_per_pid;
  std::set<std::string> process_names;
  uint64_t read_bytes = 0, reads = 0, events = 0;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") process_names.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    ++events;
    const int pid = e["pid"].get<int>(), tid = e["tid"].get<int>();
    const double ts = e["ts"].get<double>();
    auto [it, fresh] = last_ts.emplace(std::make_pair(pid, tid), ts);
    if (!fresh) {
      EXPECT_LE(it->second, ts) << "track " << pid << "/" << tid << " goes back in time at " << e.dump();
      it->second = ts;
    }
    if (e["ph"] == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
    }
    const std::string name = e["name"].get<std::string>();
    kinds_per_rank[tid / 1000].insert(name);
    ranks_per_pid[pid].insert(tid / 1000);
    const std::string phase = e["args"]["phase"].get<std::string>();
    if (name == "read" && phase.rfind("train-epoch-", 0) == 0) {
      read_bytes += e["args"]["bytes"].get<uint64_t>();
      ++reads;
    }
  }
  std::printf("trace: %llu events, %llu train reads = %llu bytes; metric.train_read_bytes %llu\n",
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(reads),
              static_cast<unsigned long long>(read_bytes),
              static_cast<unsigned long long>(summary["metric"]["train_read_bytes"].get<uint64_t>()));
  EXPECT_EQ(events, t["otherData"]["events"].get<uint64_t>());
  EXPECT_EQ(process_names.size(), 2u);
  ASSERT_EQ(kinds_per_rank.size(), 4u);
  for (const auto& [rank, kinds] : kinds_per_rank) {
    for (const char* k : {"open", "read", "wait", "compute", "barrier", "checkpoint_write"}) {
      EXPECT_TRUE(kinds.count(k)) << "rank " << rank << " has no " << k << " event";
    }
  }
  EXPECT_EQ(ranks_per_pid.size(), 2u);
  for (const auto& [pid, ranks] : ranks_per_pid) EXPECT_EQ(ranks.size(), 2u) << "agent " << pid;
  EXPECT_GT(reads, 0u);
  EXPECT_EQ(read_bytes, summary["metric"]["train_read_bytes"].get<uint64_t>());
  // 4 steps x 2 epochs x 4 ranks wait/compute/barrier events.
  uint64_t steps = 0;
  for (const json& e : t["traceEvents"]) steps += e["name"] == "compute";
  EXPECT_EQ(steps, 4u * 2u * 4u);
  uint64_t saves = 0;
  for (const json& e : t["traceEvents"]) saves += e["name"] == "checkpoint_write";
  EXPECT_EQ(saves, 2u * 4u) << "one save per rank after each of the 2 epochs";
}

TEST(Trace, WithoutTraceNoTraceFileIsWritten) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npy", 4, 1, 4096, 1, 0.0, 1, true));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--data-root", dir.str() + "/root",
                                "--results-dir", dir.str() + "/results", "--output", dir.str() + "/out"},
                               seconds(120));
  ASSERT_PRED1(JobRan, r.exit_code) << Dump(r);
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "trace.json"));
}

// The agent's syscalls as strace -f saw them: bytes returned by reads on data files, and DONTNEED advice on them.
struct StraceTotals {
  uint64_t read_bytes = 0, reads = 0, opens = 0, dontneed = 0;
};

StraceTotals ParseStrace(const std::string& log, const std::string& data_marker) {
  StraceTotals t;
  std::map<std::string, std::string> unfinished;    // tid -> the start of a call interrupted by another thread
  static const std::regex line_re(R"(^(\d+)\s+(.*)$)");
  static const std::regex resumed_re(R"(^<\.\.\. (\w+) resumed>(.*)$)");
  static const std::regex call_re(R"(^(\w+)\((.*)\)\s+=\s+(-?\d+)(.*)$)");
  std::istringstream in(log);
  std::string raw;
  while (std::getline(in, raw)) {
    std::smatch m;
    if (!std::regex_match(raw, m, line_re)) continue;
    const std::string tid = m[1];
    std::string rest = m[2];
    const size_t u = rest.find(" <unfinished ...>");
    if (u != std::string::npos) {
      unfinished[tid] = rest.substr(0, u);
      continue;
    }
    std::smatch rm;
    if (std::regex_match(rest, rm, resumed_re)) {
      rest = unfinished[tid] + std::string(rm[2]);
      unfinished.erase(tid);
    }
    std::smatch c;
    if (!std::regex_match(rest, c, call_re)) continue;
    const std::string name = c[1], args = c[2];
    const long ret = std::stol(c[3]);
    if (name == "openat" || name == "open") {
      if (ret >= 0 && args.find(data_marker) != std::string::npos && args.find(".tmp") == std::string::npos) ++t.opens;
      continue;
    }
    // strace -y names each descriptor's file in the call itself ("7</path/x.npz>"): no fd bookkeeping, which a
    // close in one thread and an open in another (the fd number reused before strace prints the close) would fool.
    const std::string fd_arg = args.substr(0, args.find(','));
    const bool data = fd_arg.find(data_marker) != std::string::npos && fd_arg.find(".tmp") == std::string::npos;
    if (name == "read" || name == "pread64" || name == "preadv" || name == "readv" || name == "preadv2") {
      if (data && ret > 0) {
        t.read_bytes += static_cast<uint64_t>(ret);
        ++t.reads;
      }
    } else if (name == "fadvise64") {
      if (data && args.find("POSIX_FADV_DONTNEED") != std::string::npos && ret == 0) ++t.dontneed;
    }
  }
  return t;
}

TEST(Strace, AgentReadSyscallBytesOnDataFilesEqualTrainReadBytesAndEvictionAdvisesEveryFileEveryEpoch) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const std::string job = dir.str() + "/job.yaml";
  // 8 npz files x 2 samples, 1 agent x 1 rank, batch 2: 8 steps per epoch, 2 epochs; every sample re-reads its
  // file (on_demand), so the bytes are 2 x 2 x the dataset.
  WriteFile(job, Workload("npz", 8, 2, 16384, 2, 0.0, 2, true));
  // Generation first (not traced), then training under strace.
  CommandResult gen = RunCommand({Bin("dlio-coordinator"), "run", job, "--data-root", dir.str() + "/root",
                                  "--results-dir", dir.str() + "/results", "--set", "workflow.train=false"},
                                 seconds(120));
  ASSERT_PRED1(JobRan, gen.exit_code) << Dump(gen);

  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  Process coordinator({Bin("dlio-coordinator"), "serve", "--listen", address, "--results-dir",
                       dir.str() + "/coord-results"},
                      dir.str() + "/coordinator.log");
  ASSERT_TRUE(WaitForListening(port)) << coordinator.Log();
  const std::string strace_log = dir.str() + "/strace.log";
  Process agent({"strace", "-f", "-y", "-qq", "-s", "0", "-o", strace_log, "-e",
                 "trace=openat,close,read,pread64,readv,preadv,preadv2,fadvise64", Bin("dlio-agent"),
                 "--coordinator", address, "--data-root", dir.str() + "/root", "--name", "traced"},
                dir.str() + "/agent.log");
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "submit", job, "--coordinator", address, "--output",
                                dir.str() + "/out", "--wait-for-agents", "60", "--set", "workflow.generate_data=false",
                                "--set", "dlio_ext.evict_cache=every_epoch"},
                               seconds(240));
  ASSERT_PRED1(JobRan, r.exit_code) << Dump(r) << "\nagent:\n" << agent.Log();
  // Stop the agent itself (strace, signalled, would detach and leave it running); strace then exits and its log
  // is complete.
  const std::string children =
      ReadFile("/proc/" + std::to_string(agent.pid()) + "/task/" + std::to_string(agent.pid()) + "/children");
  ASSERT_FALSE(children.empty()) << "no agent process under strace";
  ASSERT_EQ(::kill(static_cast<pid_t>(std::stol(children)), SIGTERM), 0);
  ASSERT_NE(agent.Wait(std::chrono::milliseconds(20000)), -1) << agent.Log();

  const json summary = LoadJson(dir.str() + "/out/summary.json");
  const uint64_t train_read_bytes = summary["metric"]["train_read_bytes"].get<uint64_t>();
  const StraceTotals t = ParseStrace(ReadFile(strace_log), "/data/train/");
  const uint64_t dataset = DataBytes(dir.path() / "root" / "data" / "train", "npz");
  std::printf("strace: %llu opens, %llu reads = %llu bytes on data files; metric.train_read_bytes %llu; "
              "fadvise DONTNEED %llu\n",
              static_cast<unsigned long long>(t.opens), static_cast<unsigned long long>(t.reads),
              static_cast<unsigned long long>(t.read_bytes), static_cast<unsigned long long>(train_read_bytes),
              static_cast<unsigned long long>(t.dontneed));
  EXPECT_GT(t.reads, 0u);
  EXPECT_EQ(t.read_bytes, train_read_bytes) << "strace saw " << t.reads << " reads on data files";
  EXPECT_EQ(train_read_bytes, 2u * 2u * dataset) << "every sample re-reads its whole file (on_demand)";
  // every_epoch: each of the 8 files advised away before each of the 2 epochs.
  EXPECT_EQ(t.dontneed, 16u);
}

// Every format: metric.train_read_bytes equals the bytes the agent's read syscalls returned on the dataset's files,
// as strace sees them (docs/results.md says what that is per format). mmap_indexed_binary reads its samples through
// page faults, which are no syscalls: there strace sees the index files, and the rest is the samples' bytes. One
// traced agent serves a job per format (each generating its own data folder, then training one epoch).
TEST(Strace, EveryFormatsTrainReadBytesEqualTheReadSyscallsOnItsFiles) {
  TempDir dir;
  const std::string strace_log = dir.str() + "/strace.log";
  Fleet fleet(dir, 1, 1, {},
              {"strace", "-f", "-y", "-qq", "-s", "0", "-o", strace_log, "-e",
               "trace=openat,close,read,pread64,readv,preadv,preadv2"});
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 1; }, std::chrono::seconds(30))) << fleet.Logs();
  const std::vector<std::string> formats = {"npz", "npy", "hdf5", "tfrecord", "csv", "jpeg", "png",
                                            "indexed_binary", "mmap_indexed_binary", "synthetic"};
  std::map<std::string, json> summaries;
  for (const std::string& f : formats) {
    const bool image = f == "jpeg" || f == "png";  // one image per file
    const std::string job = dir.str() + "/" + f + ".yaml";
    WriteFile(job, Workload(f, 4, image ? 1 : 2, 4096, 2, 0.0, 1, true));
    const std::string out = dir.str() + "/out-" + f;
    CommandResult r = fleet.Client({"submit", job, "--output", out, "--wait-for-agents", "30", "--set",
                                    "dataset.data_folder=data-" + f},
                                   seconds(180));
    ASSERT_PRED1(JobRan, r.exit_code) << f << "\n" << Dump(r) << fleet.Logs();
    summaries[f] = LoadJson(out + "/summary.json");
  }
  // Stop the agent itself (strace, signalled, would detach and leave it running); strace then exits, its log whole.
  Process& traced = fleet.agent(0);
  const std::string children =
      ReadFile("/proc/" + std::to_string(traced.pid()) + "/task/" + std::to_string(traced.pid()) + "/children");
  ASSERT_FALSE(children.empty()) << "no agent process under strace";
  ASSERT_EQ(::kill(static_cast<pid_t>(std::stol(children)), SIGTERM), 0);
  ASSERT_NE(traced.Wait(std::chrono::milliseconds(20000)), -1) << traced.Log();
  const std::string log = ReadFile(strace_log);
  for (const std::string& f : formats) {
    const json& summary = summaries[f];
    const uint64_t train_read_bytes = summary["metric"]["train_read_bytes"].get<uint64_t>();
    const uint64_t samples = summary["dlio_ext"]["train_io"]["samples"].get<uint64_t>();
    const StraceTotals t = ParseStrace(log, "/data-" + f + "/train/");
    std::printf("%s: strace %llu reads = %llu bytes on its files; metric.train_read_bytes %llu (%llu samples)\n",
                f.c_str(), static_cast<unsigned long long>(t.reads), static_cast<unsigned long long>(t.read_bytes),
                static_cast<unsigned long long>(train_read_bytes), static_cast<unsigned long long>(samples));
    EXPECT_GT(samples, 0u) << f;
    if (f == "mmap_indexed_binary") {
      EXPECT_EQ(train_read_bytes, t.read_bytes + samples * 4096) << f << ": index files by read, samples mapped";
    } else {
      EXPECT_EQ(train_read_bytes, t.read_bytes) << f;
    }
    if (f == "synthetic") {
      EXPECT_EQ(train_read_bytes, 0u);
    } else {
      EXPECT_GT(t.reads, 0u) << f;
    }
  }
}

// The pread64 calls on a data folder's files, as strace -f -y saw them: (file name, offset, length, result), in
// the log's order; a call another thread interrupted ("<unfinished ...>", then "<... pread64 resumed>") is joined.
std::vector<std::tuple<std::string, uint64_t, uint64_t, long>> Preads(const std::string& log, const std::string& marker) {
  std::vector<std::tuple<std::string, uint64_t, uint64_t, long>> out;
  std::map<std::string, std::string> unfinished;  // tid -> the start of an interrupted call
  static const std::regex line_re(R"(^(\d+)\s+(.*)$)");
  static const std::regex resumed_re(R"(^<\.\.\. (\w+) resumed>(.*)$)");
  static const std::regex re(R"(^pread64\(\d+<([^>]*)>, .*, (\d+), (\d+)\)\s+=\s+(-?\d+))");
  std::istringstream in(log);
  std::string raw;
  while (std::getline(in, raw)) {
    std::smatch l;
    if (!std::regex_match(raw, l, line_re)) continue;
    const std::string tid = l[1];
    std::string rest = l[2];
    const size_t u = rest.find(" <unfinished ...>");
    if (u != std::string::npos) {
      unfinished[tid] = rest.substr(0, u);
      continue;
    }
    std::smatch rm;
    if (std::regex_match(rest, rm, resumed_re)) {
      rest = unfinished[tid] + std::string(rm[2]);
      unfinished.erase(tid);
    }
    std::smatch m;
    if (!std::regex_search(rest, m, re) || std::string(m[1]).find(marker) == std::string::npos) continue;
    const std::string path = m[1];
    out.emplace_back(path.substr(path.rfind('/') + 1), std::stoull(m[3]), std::stoull(m[2]), std::stol(m[4]));
  }
  return out;
}

// dlio_ext.hdf5_engine (issue 31): the replay engine makes the libhdf5 engine's read syscalls, the same files,
// offsets and lengths (their order across the two loader threads aside), and reports the same train_read_bytes, on
// contiguous and on chunked gzip files. One traced agent runs both engines over the same data, one job after the
// other; each job's reads are the log's lines written while it ran.
TEST(Strace, Hdf5ReplayMakesTheLibhdf5EnginesReadSyscalls) {
  TempDir dir;
  const std::string strace_log = dir.str() + "/strace.log";
  Fleet fleet(dir, 1, 1, {},
              {"strace", "-f", "-y", "-qq", "-s", "0", "-o", strace_log, "-e", "trace=openat,close,read,pread64"});
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 1; }, std::chrono::seconds(30))) << fleet.Logs();
  struct Case {
    const char* name;
    std::vector<std::string> sets;
  };
  for (const Case& c : {Case{"contiguous", {}}, Case{"gzip", {"dataset.hdf5.chunk_dims=[1,16,32]",
                                                             "dataset.compression=gzip"}}}) {
    const std::string folder = std::string("data-h5-") + c.name;
    std::map<std::string, std::vector<std::tuple<std::string, uint64_t, uint64_t, long>>> reads;
    std::map<std::string, uint64_t> bytes;
    for (const char* engine : {"libhdf5", "replay"}) {
      const bool first = std::string(engine) == "libhdf5";
      const std::string job = dir.str() + "/" + c.name + "-" + engine + ".yaml";
      WriteFile(job, Workload("hdf5", 4, 16, 4096, 2, 0.0, 1, first));
      const std::string out = dir.str() + "/out-" + c.name + "-" + engine;
      std::vector<std::string> args = {"submit", job, "--output", out, "--wait-for-agents", "30", "--set",
                                       "dataset.data_folder=" + folder, "--set",
                                       std::string("dlio_ext.hdf5_engine=") + engine};
      for (const std::string& set : c.sets) args.insert(args.end(), {"--set", set});
      const size_t before = ReadFile(strace_log).size();
      CommandResult r = fleet.Client(args, seconds(180));
      ASSERT_PRED1(JobRan, r.exit_code) << c.name << " " << engine << "\n" << Dump(r) << fleet.Logs();
      reads[engine] = Preads(ReadFile(strace_log).substr(before), "/" + folder + "/train/");
      std::sort(reads[engine].begin(), reads[engine].end());
      bytes[engine] = LoadJson(out + "/summary.json")["metric"]["train_read_bytes"].get<uint64_t>();
    }
    std::printf("%s: %zu preads under libhdf5, %zu under replay; train_read_bytes %llu and %llu\n", c.name,
                reads["libhdf5"].size(), reads["replay"].size(), static_cast<unsigned long long>(bytes["libhdf5"]),
                static_cast<unsigned long long>(bytes["replay"]));
    EXPECT_GT(reads["libhdf5"].size(), 64u) << c.name << ": several reads per sample";
    EXPECT_TRUE(reads["replay"] == reads["libhdf5"]) << c.name << ": the same (file, offset, length, result) reads";
    EXPECT_EQ(bytes["replay"], bytes["libhdf5"]) << c.name;
  }
}

// Parquet in each read mode (docs/workloads.md "Parquet"): metric.train_read_bytes equals the bytes the agent's read
// syscalls returned on the files: the footers and the selected column chunks (row_group: one range per chunk;
// iterable: one span per row group; with decoding as without), counted as issued.
TEST(Strace, ParquetTrainReadBytesEqualTheReadSyscallsInEveryReadMode) {
  TempDir dir;
  const std::string strace_log = dir.str() + "/strace.log";
  Fleet fleet(dir, 1, 1, {},
              {"strace", "-f", "-y", "-qq", "-s", "0", "-o", strace_log, "-e",
               "trace=openat,close,read,pread64,readv,preadv,preadv2"});
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 1; }, std::chrono::seconds(30))) << fleet.Logs();
  const std::string columns =
      "  compression: snappy\n  parquet:\n    row_group_size: 3\n    columns:\n"
      "      - {name: t5_encodings, dtype: float32, size: 3000}\n      - {name: clip_encodings, dtype: float32, size: 41}\n"
      "      - {name: timestamp, dtype: float16, size: 7, read: false}\n";
  const std::map<std::string, std::vector<std::string>> modes = {
      {"row_group", {"dataset.parquet.read_mode=row_group"}},
      {"iterable", {"dataset.parquet.read_mode=iterable", "storage.storage_options.columns=[clip_encodings]"}},
      {"decode", {"dataset.parquet.read_mode=row_group", "dlio_ext.parquet_decode=true", "dataset.compression=zstd"}},
  };
  std::map<std::string, json> summaries;
  for (const auto& [mode, sets] : modes) {
    std::string job_text = Workload("parquet", 4, 8, 12192, 4, 0.0, 1, true);
    job_text.replace(job_text.find("reader:"), 0, columns);
    const std::string job = dir.str() + "/" + mode + ".yaml";
    WriteFile(job, job_text);
    const std::string out = dir.str() + "/out-" + mode;
    std::vector<std::string> argv = {"submit", job, "--output", out, "--wait-for-agents", "30", "--set",
                                     "dataset.data_folder=data-" + mode};
    for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
    CommandResult r = fleet.Client(argv, seconds(180));
    ASSERT_PRED1(JobRan, r.exit_code) << mode << "\n" << Dump(r) << fleet.Logs();
    summaries[mode] = LoadJson(out + "/summary.json");
  }
  Process& traced = fleet.agent(0);
  const std::string children =
      ReadFile("/proc/" + std::to_string(traced.pid()) + "/task/" + std::to_string(traced.pid()) + "/children");
  ASSERT_FALSE(children.empty()) << "no agent process under strace";
  ASSERT_EQ(::kill(static_cast<pid_t>(std::stol(children)), SIGTERM), 0);
  ASSERT_NE(traced.Wait(std::chrono::milliseconds(20000)), -1) << traced.Log();
  const std::string log = ReadFile(strace_log);
  for (const auto& [mode, summary] : summaries) {
    const uint64_t train_read_bytes = summary["metric"]["train_read_bytes"].get<uint64_t>();
    const StraceTotals t = ParseStrace(log, "/data-" + mode + "/train/");
    std::printf("parquet %s: strace %llu reads = %llu bytes; metric.train_read_bytes %llu\n", mode.c_str(),
                static_cast<unsigned long long>(t.reads), static_cast<unsigned long long>(t.read_bytes),
                static_cast<unsigned long long>(train_read_bytes));
    EXPECT_GT(t.reads, 0u) << mode;
    EXPECT_EQ(train_read_bytes, t.read_bytes) << mode;
    EXPECT_EQ(summary["dlio_ext"]["train_io"]["samples"].get<uint64_t>(), 32u) << mode;
  }
  // iterable reads one narrow column: fewer bytes than row_group's two wide ones
  EXPECT_LT(summaries["iterable"]["metric"]["train_read_bytes"].get<uint64_t>(),
            summaries["row_group"]["metric"]["train_read_bytes"].get<uint64_t>());
}

}  // namespace
}  // namespace dlio::testing
