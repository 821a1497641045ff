// Process-level tests: real coordinator and agent processes over loopback gRPC, real files, real tools.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "job/format_traits.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A coordinator (serve) and N agents as separate processes.
class EndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(EndToEnd, CoordinatorAndTwoAgentsGenerateAndTrain) {
  const std::string format = GetParam();
  TempDir dir;
  Fleet fleet(dir, 2, 1);
  const std::string job = dir.str() + "/job.yaml";
  // 8 files x 4 samples, batch 2, 2 ranks: 8 steps per epoch, 2 epochs.
  WriteFile(job, Workload(format, 8, 4, 4096, 2, 0.001, 2, true));
  CommandResult r = Submit(fleet, job, dir.str() + "/out", 2);
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << "\ncoordinator:\n" << fleet.coordinator().Log()
                            << "\nagent-0:\n" << fleet.agent(0).Log();
  EXPECT_NE(r.out.find("AU (%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);

  const json summary = LoadJson(dir.str() + "/out/summary.json");
  const json& m = summary["metric"];
  EXPECT_TRUE(m["train_au_mean_percentage"].is_number());
  EXPECT_TRUE(m["train_throughput_mean_samples_per_second"].is_number());
  EXPECT_TRUE(m["train_io_mean_MB_per_second"].is_number());
  EXPECT_EQ(m["train_au_percentage"].size(), 2u);
  EXPECT_EQ(summary["num_accelerators"], 2);
  if (format != "synthetic") {
    EXPECT_GT(m["train_read_bytes"].get<double>(), 0);
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(fs::exists(dir.path() / "out" / (std::to_string(rank) + "_output.json")));
    EXPECT_TRUE(fs::exists(dir.path() / "out" / (std::to_string(rank) + "_per_epoch_stats.json")));
    const json out = LoadJson(dir.str() + "/out/" + std::to_string(rank) + "_output.json");
    EXPECT_EQ(out["1"]["proc"]["block1"].size(), 8u);  // 8 files x 4 samples / (2 ranks x batch 2) steps
  }
  // The data files are where DLIO puts them, with DLIO's names (index files beside them for indexed_binary), and
  // no temporary file is left.
  const fs::path train = dir.path() / "root" / "data" / "train";
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(train)) names.insert(e.path().filename().string());
  const bool indexed = format == "indexed_binary" || format == "mmap_indexed_binary";
  EXPECT_EQ(names.size(), indexed ? 24u : 8u);
  EXPECT_TRUE(names.count("img_0_of_8." + format)) << *names.begin();
  if (indexed) {
    EXPECT_TRUE(names.count("img_7_of_8." + format + ".off.idx"));
    EXPECT_TRUE(names.count("img_7_of_8." + format + ".sz.idx"));
  }
  for (const std::string& n : names) EXPECT_EQ(n.find(".tmp-"), std::string::npos) << n;
  // Every sample was read once per epoch, and the bytes are real (0 for synthetic, which reads nothing).
  const json& io = summary["dlio_ext"]["train_io"];
  EXPECT_EQ(io["samples"], 2 * 8 * 4);
  if (format == "synthetic") {
    EXPECT_EQ(io["bytes"], 0);
  } else {
    EXPECT_GT(io["bytes"].get<double>(), 0);
  }
  std::string expect = "--format " + format + " --samples 4";
  if (format == "tfrecord") expect += " --index-dir " + (dir.path() / "root" / "data" / "index" / "train").string();
  if (format != "tfrecord" && format != "synthetic") expect += " --dims 64,64";
  CommandResult py = RunCommand({"sh", "-c", "/usr/bin/python3 " + SourceDir() + "/tests/python/check_formats.py " +
                                                 train.string() + " " + expect});
  EXPECT_EQ(py.exit_code, 0) << py.out << py.err;
}

// Every format of the registry (job/format_traits.h): a new format runs here without a change to this file.
INSTANTIATE_TEST_SUITE_P(Formats, EndToEnd, ::testing::ValuesIn(dlio::FormatNames()));

// Keys DLIO ignores but we implement warn on one line each and still run: here enable_chunking/chunk_size chunk
// the HDF5 records (DLIO's former meaning), with lzf through Debian's plugin inside the agents; h5py reads it back.
TEST(Hdf5Extras, EnableChunkingWarnsAndLzfChunkedFilesAreWhatH5pyReads) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // The harness workload has its own dataset section; the extra keys come as overrides.
  WriteFile(dir.str() + "/job.yaml", Workload("hdf5", 4, 2, 4096, 1, 0, 1, true));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "2", "--data-root",
                                dir.str() + "/root", "--results-dir", dir.str() + "/results", "--output",
                                dir.str() + "/out", "--set", "dataset.enable_chunking=true", "--set",
                                "dataset.chunk_size=256", "--set", "dataset.compression=lzf", "--set",
                                "dataset.record_element_type=int16"},
                               seconds(120), dir.str());
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  EXPECT_NE(r.err.find("warning: dataset.enable_chunking: chunks every records dataset by [1, 12, 12]"),
            std::string::npos)
      << r.err;
  CommandResult py = RunCommand({"sh", "-c", "/usr/bin/python3 " + SourceDir() + "/tests/python/check_formats.py " +
                                                 dir.str() + "/root/data/train --format hdf5 --dims 64,64 "
                                                 "--dtype int16 --samples 2 --compression lzf --chunks 1,12,12"});
  EXPECT_EQ(py.exit_code, 0) << py.out << py.err;
  EXPECT_EQ(LoadJson(dir.str() + "/out/summary.json")["dlio_ext"]["train_io"]["samples"], 8);
}

// DLIO's subfolders (train/<i % S padded>/...) with the formats that write companion files: indexed_binary's index
// files stay beside their data file; tfrecord's DALI index stays flat in data_folder/index/train.
class Subfolders : public ::testing::TestWithParam<std::string> {};

TEST_P(Subfolders, CompanionFilesFollowDliosLayout) {
  const std::string format = GetParam();
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", Workload(format, 12, 2, 1024, 1, 0, 1, true));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "2", "--data-root",
                                dir.str() + "/root", "--results-dir", dir.str() + "/results", "--output",
                                dir.str() + "/out", "--set", "dataset.num_subfolders_train=3"},
                               seconds(120), dir.str());
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const fs::path data = dir.path() / "root" / "data";
  for (int i = 0; i < 12; ++i) {
    const std::string name = "img_" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "_of_12." + format;
    const fs::path file = data / "train" / std::to_string(i % 3) / name;
    EXPECT_TRUE(fs::exists(file)) << file;
    if (format == "indexed_binary") {
      EXPECT_TRUE(fs::exists(file.string() + ".off.idx")) << file;
      EXPECT_TRUE(fs::exists(file.string() + ".sz.idx")) << file;
    } else {
      EXPECT_TRUE(fs::exists(data / "index" / "train" / (name + ".idx"))) << name;
    }
  }
  EXPECT_EQ(LoadJson(dir.str() + "/out/summary.json")["dlio_ext"]["train_io"]["samples"], 24);
}

INSTANTIATE_TEST_SUITE_P(Formats, Subfolders, ::testing::Values("indexed_binary", "tfrecord"));

// Our agents train on every dataset the real DLIO generated (../shared/testdata/dlio-generated): the case is copied
// into a data root, a workload matching it is written (format, files, samples per file, record length; batch 1 over
// 2 ranks), `dlio-coordinator run --local-agents 2` trains one epoch, and summary.json's samples and bytes are the
// MANIFEST's.
class DlioGenerated : public ::testing::TestWithParam<std::string> {};

std::map<std::string, std::string> ManifestHeader(const std::string& manifest) {
  std::map<std::string, std::string> kv;
  std::istringstream in(ReadFile(manifest));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) != 0) continue;
    std::istringstream words(line.substr(2));
    for (std::string w; words >> w;) {
      if (const size_t eq = w.find('='); eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  return kv;
}

struct ManifestData {
  std::vector<uint64_t> file_sizes;                  // data files, in name order
  std::vector<std::vector<uint64_t>> sample_nbytes;  // per data file, its samples' payload bytes
};

ManifestData ManifestFiles(const std::string& manifest) {
  ManifestData m;
  std::istringstream in(ReadFile(manifest));
  for (std::string line; std::getline(in, line);) {
    const bool file = line.rfind("file ", 0) == 0, sample = line.rfind("  sample ", 0) == 0;
    if (!file && !sample) continue;
    std::map<std::string, std::string> kv;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (const size_t eq = w.find('='); eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
    if (file && kv.count("samples")) {
      m.file_sizes.push_back(std::stoull(kv["size"]));
      m.sample_nbytes.emplace_back();
    } else if (sample && !m.sample_nbytes.empty()) {
      uint64_t elems = 1;
      std::istringstream shape(kv["shape"]);
      for (std::string v; std::getline(shape, v, ',');) elems *= std::stoull(v);
      m.sample_nbytes.back().push_back(elems);  // our readers keep DLIO's uint8 elements as bytes
    }
  }
  return m;
}

TEST_P(DlioGenerated, TwoAgentsTrainOnDliosOwnDataset) {
  const std::string name = GetParam();
  const std::string src = TestDataDir() + "/dlio-generated/" + name;
  const auto header = ManifestHeader(src + "/MANIFEST.txt");
  const ManifestData data = ManifestFiles(src + "/MANIFEST.txt");
  const std::string format = header.at("format");
  const int64_t nspf = std::stoll(header.at("num_samples_per_file"));
  // DLIO's subset rule (the first N files in name order): the largest N whose samples split evenly over 2 ranks,
  // so no sample is dropped and the expected bytes are exact.
  int64_t files = std::stoll(header.at("num_files_train"));
  while ((files * nspf) % 2 != 0) --files;
  ASSERT_GT(files, 0);
  ASSERT_EQ(static_cast<int64_t>(data.file_sizes.size()), std::stoll(header.at("data_files_train")));

  TempDir dir;
  fs::create_directories(dir.path() / "root" / "data");
  fs::copy(src + "/train", dir.path() / "root" / "data" / "train", fs::copy_options::recursive);
  WriteFile(dir.str() + "/job.yaml",
            "model:\n  name: " + name + "\nframework: pytorch\nworkflow:\n  generate_data: false\n  train: true\n"
            "dataset:\n  data_folder: data\n  format: " + format + "\n  num_files_train: " + std::to_string(files) +
            "\n  num_samples_per_file: " + std::to_string(nspf) + "\n  record_length_bytes: " +
            header.at("record_length_bytes") +
            "\nreader:\n  data_loader: pytorch\n  batch_size: 1\n  read_threads: 1\n  prefetch_size: 2\n"
            "train:\n  epochs: 1\n  computation_time: 0\n");
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "2", "--data-root",
                                dir.str() + "/root", "--results-dir", dir.str() + "/results", "--output",
                                dir.str() + "/out"},
                               seconds(120), dir.str());
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  const json& io = summary["dlio_ext"]["train_io"];
  EXPECT_EQ(io["samples"].get<int64_t>(), files * nspf) << "every sample of the case read once";
  EXPECT_EQ(summary["metric"]["train_dropped_samples_per_epoch"], 0);
  // Bytes as DLIO's reader reads them: whole files per sample (npz, npy, csv, images), exactly the sample plus each
  // reader's one-time load of the two 8-byte-per-sample index files (indexed_binary); for hdf5 everything libhdf5
  // reads (its metadata, the sieve buffer around the sample: more than the payload; trace_test's Strace.* checks
  // the exact figure against the read syscalls).
  uint64_t want = 0, index_load = 0;
  for (int64_t f = 0; f < files; ++f) {
    for (uint64_t nbytes : data.sample_nbytes[f]) {
      want += format == "hdf5" || format == "indexed_binary" ? nbytes : data.file_sizes[f];  // hdf5: the least
    }
    index_load = 2 * 8 * static_cast<uint64_t>(nspf);
  }
  const uint64_t got = io["bytes"].get<uint64_t>();
  EXPECT_EQ(summary["metric"]["train_read_bytes"].get<uint64_t>(), got);
  if (format == "indexed_binary") {
    ASSERT_GE(got, want + index_load);
    EXPECT_EQ((got - want) % index_load, 0u) << "whole index loads only";
    EXPECT_LE(got - want, index_load * static_cast<uint64_t>(files * nspf)) << "at most one load per sample";
  } else if (format == "hdf5") {
    EXPECT_GT(got, want) << "the payload and libhdf5's metadata reads";
  } else {
    EXPECT_EQ(got, want) << format;
  }
}

TEST(Evaluation, RunsAfterTheChosenEpochsOverValidFilesAndReportsItsMetrics) {
  TempDir dir;
  Fleet fleet(dir, 2, 1);
  const std::string job = dir.str() + "/job.yaml";
  // 3 epochs over 8 train files; evaluation after epochs 2 and 3 over 6 valid/ files (2 samples each, batch 2:
  // 3 eval steps per rank).
  WriteFile(job, R"(workflow:
  generate_data: true
  train: true
  evaluation: true
dataset:
  data_folder: data
  format: hdf5
  num_files_train: 8
  num_files_eval: 6
  num_samples_per_file: 2
  record_length_bytes: 4096
reader:
  batch_size: 2
  batch_size_eval: 2
  read_threads: 1
train:
  epochs: 3
  computation_time: 0.001
evaluation:
  eval_time: {type: uniform, min: 0.001, max: 0.002}
  eval_after_epoch: 2
  epochs_between_evals: 1
)");
  CommandResult r = Submit(fleet, job, dir.str() + "/out", 2);
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.coordinator().Log();
  EXPECT_NE(r.out.find("eval-epoch-2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("eval-epoch-1"), std::string::npos) << r.out;
  size_t valid = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "root" / "data" / "valid")) valid += e.is_regular_file();
  EXPECT_EQ(valid, 6u);
  const json m = LoadJson(dir.str() + "/out/summary.json")["metric"];
  ASSERT_EQ(m["eval_au_percentage"].size(), 2u) << m.dump(1);
  EXPECT_GT(m["eval_au_mean_percentage"].get<double>(), 0);
  EXPECT_GT(m["eval_throughput_mean_samples_per_second"].get<double>(), 0);
  // 2 evaluations x 6 files x 2 samples, every sample of valid/ read once per evaluation: its payload and what
  // libhdf5 reads around it (metadata, the sieve buffer; trace_test's Strace.* checks such figures to the byte).
  EXPECT_GT(m["eval_read_bytes"].get<uint64_t>(), 2u * 6 * 2 * 4096);
  for (int rank = 0; rank < 2; ++rank) {
    const json out = LoadJson(dir.str() + "/out/" + std::to_string(rank) + "_output.json");
    EXPECT_FALSE(out["1"]["proc"].contains("eval"));
    EXPECT_EQ(out["2"]["proc"]["eval"].size(), 3u);
    EXPECT_EQ(out["3"]["compute"]["eval"].size(), 3u);
    const json stats = LoadJson(dir.str() + "/out/" + std::to_string(rank) + "_per_epoch_stats.json");
    EXPECT_TRUE(stats["3"].contains("eval"));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, DlioGenerated,
                         ::testing::Values("npz", "npy", "hdf5", "hdf5_chunked_gzip", "csv", "png", "jpeg",
                                           "indexed_binary"));

TEST(Fleet, AgentWithAnotherProtocolVersionIsRefusedNamingBothVersions) {
  TempDir dir;
  Fleet fleet(dir, 0, 1);
  fs::create_directories(dir.path() / "root");
  Process agent({Bin("dlio-agent"), "--coordinator", fleet.address(), "--data-root", dir.str() + "/root", "--name",
                 "old-agent", "--protocol-version", "999", "--reconnect-window", "5"},
                dir.str() + "/old.log");
  const int rc = agent.Wait(milliseconds(15000));
  ASSERT_NE(rc, -1) << "the refused agent did not exit: " << agent.Log();
  EXPECT_NE(rc, 0);
  const std::string log = agent.Log();
  EXPECT_NE(log.find("999"), std::string::npos) << log;
  EXPECT_NE(log.find("this coordinator speaks version "), std::string::npos) << log;
  EXPECT_NE(fleet.coordinator().Log().find("999"), std::string::npos);
}

TEST(Fleet, AgentExitsCleanlyWhenTheCoordinatorIsUnreachable) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  Process agent({Bin("dlio-agent"), "--coordinator", "127.0.0.1:" + std::to_string(FreePort()), "--data-root",
                 dir.str(), "--reconnect-window", "1"},
                dir.str() + "/agent.log");
  const int rc = agent.Wait(milliseconds(15000));
  EXPECT_EQ(rc, 3) << agent.Log();  // gives up: "coordinator unreachable", as the client verbs (issue 24: was 0)
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(10));
  EXPECT_NE(agent.Log().find("unreachable"), std::string::npos) << agent.Log();
}

TEST(Fleet, SecondAgentWithTheSameNameIsRefusedNamingIt) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  ASSERT_TRUE(Eventually([&] { return fleet.agent(0).Log().find("attached") != std::string::npos; }, seconds(10)));
  Process dup({Bin("dlio-agent"), "--coordinator", fleet.address(), "--data-root", dir.str() + "/root", "--name",
               "agent-0"},
              dir.str() + "/dup.log");
  const int rc = dup.Wait(milliseconds(10000));
  EXPECT_NE(rc, 0);
  EXPECT_NE(dup.Log().find("agent-0"), std::string::npos) << dup.Log();
}

TEST(Metrics, PromtoolAcceptsAgentMetricsTakenDuringARun) {
  TempDir dir;
  const int mport = FreePort();
  Fleet fleet(dir, 1, 2, {"--metrics-listen", "127.0.0.1:" + std::to_string(mport)});
  const std::string job = dir.str() + "/job.yaml";
  // 2 ranks x 20 steps x 0.05 s: about 1 s of training to scrape in the middle of.
  WriteFile(job, Workload("npz", 80, 1, 4096, 2, 0.05, 1, true));
  CommandResult r;
  std::thread submit([&] { r = Submit(fleet, job, dir.str() + "/out", 1); });
  std::string metrics;
  const bool seen = Eventually(
      [&] {
        metrics = HttpGet(mport, "/metrics");
        // Both ranks: the second registers a moment after the first.
        return metrics.find("dlio_samples_total{") != std::string::npos &&
               metrics.find("dlio_read_bytes_total{") != std::string::npos &&
               metrics.find("rank=\"1\"") != std::string::npos;
      },
      seconds(60));
  submit.join();
  ASSERT_TRUE(seen) << metrics;
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  for (const char* name : {"dlio_read_bytes_total", "dlio_samples_total", "dlio_read_latency_seconds_bucket",
                           "dlio_accelerator_utilization_ratio"}) {
    EXPECT_NE(metrics.find(name), std::string::npos) << name;
  }
  EXPECT_NE(metrics.find("job_id=\""), std::string::npos);
  EXPECT_NE(metrics.find("agent=\"agent-0\""), std::string::npos);
  EXPECT_NE(metrics.find("rank=\"1\""), std::string::npos);
  EXPECT_EQ(metrics.find("job=\""), std::string::npos) << "the `job` label belongs to Prometheus";
  WriteFile(dir.str() + "/metrics.txt", metrics);
  CommandResult lint = RunCommand({"sh", "-c", "promtool check metrics < " + dir.str() + "/metrics.txt"});
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
}

// The job_id label values of the dlio_ series in a scrape.
std::set<std::string> ScrapedJobIds(const std::string& metrics) {
  std::set<std::string> ids;
  const std::regex job_id(R"re(^dlio_[^{]*\{.*job_id="([^"]+)")re");
  std::istringstream in(metrics);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, job_id)) ids.insert(m[1]);
  }
  return ids;
}

TEST(Metrics, AnAgentKeepsPerJobSeriesForItsLastSixteenJobsOnly) {
  TempDir dir;
  const int mport = FreePort();
  Fleet fleet(dir, 1, 1, {"--metrics-listen", "127.0.0.1:" + std::to_string(mport)});
  const std::string job = dir.str() + "/job.yaml";
  // 8 steps of one 4 KiB sample; metric.au 0: this test is about series, not about this machine's AU.
  WriteFile(job, Workload("npz", 8, 1, 4096, 1, 0.001, 1, true, "metric:\n  au: 0\n"));
  constexpr int kKept = 16;  // AgentMetrics::kJobsKept, as docs/metrics.md says
  std::vector<std::string> ids;
  size_t lines_at_kept = 0;
  for (int j = 1; j <= kKept + 2; ++j) {
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "submit", job, "--coordinator", fleet.address(),
                                  "--wait-for-agents", "30", "--json"},
                                 seconds(60));
    ASSERT_FALSE(r.out.empty()) << r.err;
    const json out = json::parse(r.out);
    ASSERT_EQ(out["state"], "succeeded") << r.out << r.err;
    ids.push_back(out["job_id"]);
    if (j == kKept) {
      const std::string at_kept = HttpGet(mport, "/metrics");
      lines_at_kept = static_cast<size_t>(std::count(at_kept.begin(), at_kept.end(), '\n'));
    }
  }
  const std::string metrics = HttpGet(mport, "/metrics");
  const std::set<std::string> scraped = ScrapedJobIds(metrics);
  EXPECT_EQ(scraped, std::set<std::string>(ids.end() - kKept, ids.end())) << "the last 16 jobs, and only them";
  // The same number of lines as after 16 jobs: the endpoint no longer grows with every job.
  EXPECT_EQ(static_cast<size_t>(std::count(metrics.begin(), metrics.end(), '\n')), lines_at_kept);
}

// Issue 26 item 7: a shipped workload named as DLIO takes it (workload=NAME, with ++workload.KEY=VALUE overrides
// after it) or by its bare name, from any folder: the binary of the build tree finds the source tree's
// configs/workloads (an installed one PREFIX/share/dlio/configs/workloads: tests/install/install_prefix.sh). A name
// that is not there is bad input naming that folder and the near names; nothing is written.
TEST(JobArgument, DliosWorkloadFormAndABareNameComeFromTheShippedFolder) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const std::string folder = SourceDir() + "/configs/workloads";
  CommandResult explain = RunCommand({Bin("dlio-coordinator"), "run", "workload=unet3d_h100",
                                      "++workload.dataset.num_files_train=8", "--explain"}, seconds(30), dir.str());
  ASSERT_EQ(explain.exit_code, 0) << explain.out << explain.err;
  EXPECT_EQ(explain.out.rfind("plan for " + folder + "/unet3d_h100.yaml ", 0), 0u) << explain.out;
  EXPECT_NE(explain.out.find("dataset.num_files_train = 8"), std::string::npos) << explain.out;

  // A real run of a bare name, scaled down by overrides.
  CommandResult run = RunCommand({Bin("dlio-coordinator"), "run", "quickstart", "--local-agents", "1", "--data-root",
                                  "root", "--results-dir", "results", "--set", "dataset.num_files_train=8", "--set",
                                  "dataset.record_length_bytes=4096", "--set", "train.epochs=1", "--set",
                                  "train.computation_time=0.001", "--set", "metric.au=0"},
                                 seconds(120), dir.str());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("verdict: "), std::string::npos) << run.out;

  TempDir empty;
  for (const std::string& arg : {std::string("unet3d_h10"), std::string("workload=unet3d")}) {
    CommandResult bad = RunCommand({Bin("dlio-coordinator"), "run", arg, "--local-agents", "1"}, seconds(30),
                                   empty.str());
    EXPECT_EQ(bad.exit_code, 2) << arg << ": " << bad.out << bad.err;
    EXPECT_EQ(bad.err.rfind(arg + ": ", 0), 0u) << bad.err;
    EXPECT_NE(bad.err.find(" in " + folder + " (near names: unet3d_"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("unet3d_h100"), std::string::npos) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
    EXPECT_TRUE(fs::is_empty(empty.path())) << arg << ": something was written";
  }
}

TEST(BadInput, EachBadJobExitsTwoWithOneLineNamingTheKeyAndWritesNothing) {
  struct Case {
    std::string name, yaml, expect;
  };
  const std::vector<Case> cases = {
      {"unknown key", Workload("npz", 4, 1, 4096, 1, 0, 1, true, "") + "reader_x: 1\n", "reader_x"},
      {"misspelt key", "dataset:\n  num_file_train: 4\n", "num_files_train"},
      {"negative files", "dataset:\n  num_files_train: -1\n", "dataset.num_files_train"},
      {"not a number", "dataset:\n  record_length_bytes: abc\n", "dataset.record_length_bytes"},
      {"record_dims with a stdev", "dataset:\n  record_dims: [8, 8]\n  record_length_bytes_stdev: 10\n",
       "dataset.record_dims"},
      {"chunk_dims of the wrong rank", "dataset:\n  format: hdf5\n  hdf5:\n    chunk_dims: [1, 8]\n",
       "dataset.hdf5.chunk_dims"},
      {"unknown element type", "dataset:\n  record_element_type: float128\n", "dataset.record_element_type"},
      {"negative stdev", "train:\n  computation_time:\n    type: normal\n    mean: 1\n    stdev: -1\n",
       "train.computation_time: stdev must be a number >= 0, got -1"},
      {"unknown format", "dataset:\n  format: orc\n", "dataset.format: must be one of npz, hdf5"},
      {"batch 0", "reader:\n  batch_size: 0\n", "reader.batch_size: must be an integer in [1, 4294967296], got 0"},
      {"chunk_dims extent", "dataset:\n  format: hdf5\n  record_length_bytes: 4096\n  num_samples_per_file: 2\n"
       "  hdf5:\n    chunk_dims: [1, 128, 128]\n", "dataset.hdf5.chunk_dims: [1, 128, 128] exceeds the dataset's "
       "maximum shape [2, 64, 64]"},
      {"object storage without a bucket", "storage:\n  storage_type: s3\n",
       "storage.storage_root: './' is not a bucket name"},
      {"a local mapping over objects",
       "storage:\n  storage_type: s3\n  storage_root: bkt-one\ndataset:\n  format: mmap_indexed_binary\n",
       "dataset.format: mmap_indexed_binary maps a local file and cannot read objects"},
      {"aistore", "storage:\n  storage_type: aistore\n",
       "storage.storage_type: 'aistore' is a DLIO storage type not supported yet"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteFile(dir.str() + "/job.yaml", c.yaml);
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "1"}, seconds(30), dir.str());
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) entries += e.path().filename() != "job.yaml";
    EXPECT_EQ(entries, 0u) << c.name << ": something was written";
  }
  TempDir dir;
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "missing.yaml", "--local-agents", "1"}, seconds(30),
                        dir.str());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// --strict on run and submit: every key of the "DLIO differs" kind is an error, exit 2, one line naming the key;
// without --strict the same file gives one "warning:" line for it (seen through --explain, which runs nothing).
// Checkpoint keys are checked through `run --explain --strict`, since runs refuse workflow.checkpoint for now.
TEST(BadInput, StrictRefusesEveryKeyWhereDlioBehavesDifferently) {
  struct Case {
    std::string key, yaml;
    bool checkpoint = false;
  };
  const std::string ckpt = "workflow:\n  checkpoint: true\n";
  const std::vector<Case> cases = {
      {"model.model_size", "model:\n  model_size: 4096\n"},
      {"checkpoint.model_size", "checkpoint:\n  model_size: 4096\n"},
      {"dataset.enable_chunking", "dataset:\n  format: hdf5\n  enable_chunking: true\n  chunk_size: 1024\n"},
      {"dataset.chunk_size", "dataset:\n  format: hdf5\n  enable_chunking: true\n  chunk_size: 1024\n"},
      {"reader.sample_shuffle", "dataset:\n  format: npz\nreader:\n  sample_shuffle: seed\n"},
      {"reader.file_shuffle", "dataset:\n  format: npz\nreader:\n  file_shuffle: random\n"},
      {"dataset.record_length_bytes_stdev", "dataset:\n  format: npz\n  record_length_bytes_stdev: 100\n"},
      {"storage.storage_type", "storage:\n  storage_type: parallel_fs\n"},
      {"dataset.compression", "dataset:\n  format: npz\n  compression: zip\n"},
      {"dataset.format", "dataset:\n  format: mmap_indexed_binary\n"},
      {"checkpoint.fsync", ckpt + "checkpoint:\n  fsync: true\n", true},
      {"checkpoint.recovery_rank_shift", ckpt + "checkpoint:\n  recovery_rank_shift: true\n", true},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteFile(dir.str() + "/job.yaml", c.yaml);
    // The warning names enable_chunking for both chunking keys (one line for the pair).
    const std::string named = c.key == "dataset.chunk_size" ? "dataset.enable_chunking" : c.key;
    std::vector<std::vector<std::string>> strict_runs = {
        {Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "1", "--strict", "--explain"}};
    if (!c.checkpoint) {
      strict_runs.push_back({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "1", "--strict"});
      strict_runs.push_back({Bin("dlio-coordinator"), "submit", "job.yaml", "--strict", "--coordinator",
                             "127.0.0.1:1"});
    }
    for (const auto& argv : strict_runs) {
      CommandResult r = RunCommand(argv, seconds(30), dir.str());
      EXPECT_EQ(r.exit_code, 2) << c.key << " " << argv[1] << ": " << r.out << r.err;
      EXPECT_EQ(r.err.rfind(named + ": ", 0), 0u) << c.key << ": " << r.err;
      EXPECT_NE(r.err.find("--strict"), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.key << ": " << r.err;
    }
    CommandResult plain = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--explain"}, seconds(30),
                                     dir.str());
    EXPECT_EQ(plain.exit_code, 0) << c.key << ": " << plain.err;
    EXPECT_NE(plain.out.find("warning: " + named + ": "), std::string::npos) << c.key << ": " << plain.out;
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) entries += e.path().filename() != "job.yaml";
    EXPECT_EQ(entries, 0u) << c.key << ": something was written";
  }
}

// A DLIO-differs key: one warning line on the client (once, however often the key is read) and a line in the
// coordinator's log naming the job; the job runs.
TEST(Warnings, SubmitPrintsOneLinePerKeyAndTheCoordinatorLogsIt) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  WriteFile(dir.str() + "/job.yaml",
            "model:\n  model_size: 4096\nworkflow:\n  generate_data: true\ndataset:\n  data_folder: data\n"
            "  format: npz\n  num_files_train: 4\n  record_length_bytes: 4096\nreader:\n  batch_size: 1\n");
  CommandResult r = Submit(fleet, dir.str() + "/job.yaml", dir.str() + "/out", 1);
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const std::string line = "warning: model.model_size: 4096 bytes is the model size here";
  ASSERT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line), r.err.rfind(line)) << "printed twice: " << r.err;
  EXPECT_TRUE(Eventually([&] { return fleet.coordinator().Log().find(": warning: model.model_size: 4096 bytes") !=
                                      std::string::npos; },
                         seconds(5)))
      << fleet.coordinator().Log();
}

// run --explain: the plan without running: steps, bytes per rank, demand, RAM, policies; --json for scripts.
TEST(Explain, RunPrintsThePlanAndWritesNothing) {
  TempDir dir;
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 16, 2, 4096, 2, 0.5, 3, true,
                                              "metric:\n  au: 0.5\n"));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--explain", "--local-agents", "2",
                                "--accelerators", "2"},
                               seconds(30), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // 32 samples, batch 2, world 4: 4 steps; 8 samples of 4096 bytes per rank; 8192 bytes per step over 0.5 s.
  EXPECT_NE(r.out.find("world 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("train: 4 step(s) per epoch of batch 2; per rank per epoch 8 samples, 32.00 KiB"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8.00 KiB per step / 0.5 s compute = 16.00 KiB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("local /proc/meminfo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: potential caching"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("framework = pytorch: label"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  CommandResult j = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--explain", "--json", "--local-agents",
                                "2", "--accelerators", "2"},
                               seconds(30), dir.str());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json p = json::parse(j.out);
  EXPECT_EQ(p["train"]["steps_per_epoch"], 4);
  EXPECT_EQ(p["train"]["bytes_per_rank_per_epoch"], 8 * 4096);
  EXPECT_DOUBLE_EQ(p["demand"]["bytes_per_second_per_accelerator"].get<double>(), 2 * 4096 / 0.5);
  EXPECT_GT(p["memory"]["node_memory_bytes"].get<double>(), 0);
  EXPECT_EQ(p["memory"]["nodes"], 1) << "two local agents share one machine's RAM";
  EXPECT_EQ(p["memory"]["fleet_memory_bytes"], p["memory"]["node_memory_bytes"]);
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) entries += e.path().filename() != "job.yaml";
  EXPECT_EQ(entries, 0u) << "--explain wrote something";
}

// submit --explain takes the attached agents' count, accelerators and memory from the coordinator.
TEST(Explain, SubmitUsesTheAttachedAgentsAndTheirMemory) {
  TempDir dir;
  Fleet fleet(dir, 2, 3);
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 12, 1, 4096, 1, 0.1, 1, true));
  json p;
  ASSERT_TRUE(Eventually(
      [&] {
        CommandResult r = RunCommand({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--explain",
                                      "--json", "--coordinator", fleet.address()},
                                     seconds(30));
        if (r.exit_code != 0) return false;
        p = json::parse(r.out);
        return p["agents"] == 2;
      },
      seconds(20)))
      << p.dump();
  EXPECT_EQ(p["accelerators_per_agent"], 3);
  EXPECT_EQ(p["world"], 6);
  EXPECT_EQ(p["memory"]["memory_source"], "attached agents, as the coordinator reports them");
  EXPECT_GT(p["memory"]["node_memory_bytes"].get<double>(), 0);
  // No coordinator: the flags and local memory, with a note.
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--explain",
                                "--coordinator", "127.0.0.1:1", "--agents", "2", "--accelerators-per-agent", "2"},
                               seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("world 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did not answer within 2 s"), std::string::npos) << r.out;
}

TEST(Cli, HelpDescribesEveryOption) {
  const std::vector<std::vector<std::string>> commands = {
      {Bin("dlio-coordinator"), "--help"},       {Bin("dlio-coordinator"), "serve", "--help"},
      {Bin("dlio-coordinator"), "submit", "--help"}, {Bin("dlio-coordinator"), "run", "--help"},
      {Bin("dlio-coordinator"), "status", "--help"}, {Bin("dlio-coordinator"), "list", "--help"},
      {Bin("dlio-coordinator"), "cancel", "--help"}, {Bin("dlio-coordinator"), "results", "--help"},
      {Bin("dlio-agent"), "--help"}};
  // An option line starts with "-" (after indentation); its description follows a gap of two or more spaces.
  const std::regex option_line(R"(^\s+-.*$)");
  const std::regex described(R"(^\s+-\S.*\S\s{2,}\S.*$)");
  for (const auto& argv : commands) {
    CommandResult r = RunCommand(argv, seconds(10));
    ASSERT_EQ(r.exit_code, 0) << argv.back();
    std::istringstream in(r.out);
    std::string line;
    int options = 0;
    while (std::getline(in, line)) {
      if (!std::regex_match(line, option_line)) continue;
      ++options;
      EXPECT_TRUE(std::regex_match(line, described)) << "undocumented option in `" << argv.back() << "`: " << line;
    }
    EXPECT_GT(options, 0) << r.out;
  }
}

TEST(Cli, ParseErrorsOfBothBinariesExitTwoWithOneLineAndTheNearestName) {
  struct Case {
    std::vector<std::string> argv;
    std::string expect;  // in the one line on stderr
  };
  const std::string c = Bin("dlio-coordinator"), a = Bin("dlio-agent");
  const std::vector<Case> cases = {
      {{c, "sumbit", "job.yaml"}, "dlio-coordinator: unknown command 'sumbit' (did you mean submit?)"},
      {{c, "submit", "job.yaml", "--agnets", "2"}, "dlio-coordinator submit: unknown option --agnets (did you mean --agents?)"},
      {{c, "run", "job.yaml", "--local-agent=2"}, "dlio-coordinator run: unknown option --local-agent (did you mean --local-agents?)"},
      {{c, "mlperf", "datasiz"}, "dlio-coordinator mlperf: unknown command 'datasiz' (did you mean datasize?)"},
      {{c, "mlperf", "datasize", "--acc", "4"}, "unknown option --acc (did you mean --accelerators?)"},
      {{c, "serve", "--port-fil", "p"}, "dlio-coordinator serve: unknown option --port-fil (did you mean --port-file?)"},
      {{c, "submit", "job.yaml", "--agents", "x"}, "dlio-coordinator submit: "},
      {{c}, "a command is required (one of serve, submit,"},
      {{c, "submit"}, "dlio-coordinator submit: job is required"},
      {{a, "--coordinater", "127.0.0.1:1", "--data-root", "/tmp"}, "dlio-agent: unknown option --coordinater (did you mean --coordinator?)"},
      {{a, "--coordinator", "127.0.0.1:1", "--data-root", "/tmp", "--accelerators", "0"}, "dlio-agent: --accelerators: "},
      {{a, "--data-root", "/tmp"}, "dlio-agent: --coordinator is required"},
  };
  for (const Case& k : cases) {
    CommandResult r = RunCommand(k.argv, seconds(10));
    const std::string shown = k.argv.size() > 1 ? k.argv[1] : k.argv[0];
    EXPECT_EQ(r.exit_code, 2) << shown << ": " << r.err;
    EXPECT_NE(r.err.find(k.expect), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_EQ(r.out, "") << shown;
  }
}

TEST(Cli, RefusedConnectionFailsAtOnceWithoutATlsHintOrWaitsForACoordinatorThatIsStarting) {
  TempDir dir;
  const int port = FreePort();  // nothing listens there
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "list", "--coordinator", address}, seconds(30));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_LT(took, 0.5) << r.err;
  EXPECT_NE(r.err.find("nothing listens at " + address + " (connection refused)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("TLS"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // --wait-for-coordinator: a coordinator that starts 1 s later is found.
  std::unique_ptr<Process> coordinator;
  std::thread later([&] {
    std::this_thread::sleep_for(seconds(1));
    coordinator = std::make_unique<Process>(
        std::vector<std::string>{Bin("dlio-coordinator"), "serve", "--listen", address, "--results-dir",
                                 dir.str() + "/results"},
        dir.str() + "/coordinator.log");
  });
  r = RunCommand({Bin("dlio-coordinator"), "list", "--coordinator", address, "--wait-for-coordinator", "20"},
                 seconds(30));
  later.join();
  EXPECT_EQ(r.exit_code, 0) << r.err << coordinator->Log();
}

TEST(Cli, ServePortFileHoldsTheListeningPortAndGoesAwayAtShutdown) {
  TempDir dir;
  const std::string port_file = dir.str() + "/coordinator.port";
  {
    Process serve({Bin("dlio-coordinator"), "serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
                   "--results-dir", dir.str() + "/results"},
                  dir.str() + "/serve.log");
    ASSERT_TRUE(Eventually([&] { return fs::exists(port_file); }, seconds(20))) << serve.Log();
    const std::string text = ReadFile(port_file);
    ASSERT_TRUE(std::regex_match(text, std::regex("[0-9]+\n"))) << text;
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "list", "--coordinator", "127.0.0.1:" + text.substr(0, text.size() - 1)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    serve.Signal(SIGTERM);
    EXPECT_EQ(serve.Wait(std::chrono::milliseconds(10000)), 0) << serve.Log();
    EXPECT_FALSE(fs::exists(port_file));
  }
  CommandResult bad = RunCommand({Bin("dlio-coordinator"), "serve", "--listen", "127.0.0.1:0", "--port-file",
                                  dir.str() + "/no/such/folder/port", "--results-dir", dir.str() + "/results"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--port-file"), std::string::npos) << bad.err;
}

TEST(Cli, ReadmeAndDocsCliReferenceAreTheCurrentHelpText) {
  CommandResult r = RunCommand({"env", "DLIO_BIN_DIR=" + BinDir(), "bash", SourceDir() + "/scripts/gen-cli-docs.sh",
                                "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace dlio::testing
