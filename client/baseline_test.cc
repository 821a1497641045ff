#include "client/baseline.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;

WorkloadSpec Spec() {
  WorkloadSpec s;
  s.format = "npz";
  s.num_files_train = 48;
  s.num_samples_per_file = 3;
  s.batch_size = 2;
  s.record_length_bytes = 262144;
  s.computation_time.a = 0.05;
  return s;
}

TEST(Baseline, OverridesMakeAPlainReaderOfTheDataset) {
  const std::vector<std::string> o = BaselineOverrides(Spec(), 8);
  for (const char* want : {"train.computation_time=0", "train.epochs=1", "workflow.evaluation=False",
                           "workflow.checkpoint=False", "reader.file_shuffle=off", "reader.sample_shuffle=off",
                           "reader.read_threads=8", "reader.prefetch_size=16",
                           "dlio_ext.evict_cache=before_training"}) {
    EXPECT_THAT(o, Contains(std::string(want)));
  }
  EXPECT_THAT(o, Contains(std::string("reader.batch_size=3")));  // one file per batch
  WorkloadSpec s3 = Spec();
  s3.storage_type = "s3";
  const std::vector<std::string> so = BaselineOverrides(s3, 4);
  EXPECT_EQ(std::count(so.begin(), so.end(), "dlio_ext.evict_cache=before_training"), 0);  // no page cache on S3
}

json Baseline(double total_mb_per_second, int agents) {
  json a = json::array();
  for (int i = 0; i < agents; ++i) a.push_back({{"name", "agent-" + std::to_string(i)}});
  return {{"dataset", BaselineDataset(Spec())},
          {"job_id", "j1"},
          {"agents", a},
          {"total", {{"MB_per_second", total_mb_per_second}}}};
}

TEST(Baseline, CitationComparesTheDemandPerAgentWithThePlainReaderPerAgent) {
  // Demand: 2 x 262144 B / 0.05 s = 10.5 MB/s per accelerator, 4 per agent; 3200 MB/s over 2 agents.
  EXPECT_EQ(BaselineCitation(Baseline(3200, 2), Spec(), 4),
            "demand 41.9 MB/s per agent; this storage gave a plain reader 1.60 GB/s per agent (baseline j1)");
  WorkloadSpec no_compute = Spec();
  no_compute.computation_time.a = 0;  // the demand is unbounded: left out
  EXPECT_EQ(BaselineCitation(Baseline(80, 1), no_compute, 1),
            "this storage gave a plain reader 80.0 MB/s per agent (baseline j1)");
}

// A folder of the plain reader's result files: summary.json naming two agents, and their ranks' output files.
fs::path ResultFolder() {
  const fs::path dir = fs::temp_directory_path() / ("dlio-baseline-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const json summary = {{"num_accelerators", 2},
                        {"dlio_ext",
                         {{"agents",
                           {{{"name", "a0"}, {"hostname", "h0"}, {"first_rank", 0}},
                            {{"name", "a1"}, {"hostname", "h1"}, {"first_rank", 1}}}}}}};
  std::ofstream(dir / "summary.json") << summary.dump();
  for (int rank = 0; rank < 2; ++rank) {
    // Rank 0 reads 24 files (24 MB) in 2 s, rank 1 in 4 s, starting 1 s later.
    const int64_t start = 1'700'000'000'000'000 + rank * 1'000'000;
    const json out = {{"1",
                       {{"start", FormatTimestamp(start)},
                        {"end", FormatTimestamp(start + (rank == 0 ? 2'000'000 : 4'000'000))},
                        {"dlio_ext", {{"io", {{"bytes", 24'000'000}, {"files", 24}}}}}}}};
    std::ofstream(dir / (std::to_string(rank) + "_output.json")) << out.dump();
  }
  return dir;
}

TEST(Baseline, JsonHasPerAgentAndTotalFigures) {
  const fs::path dir = ResultFolder();
  absl::StatusOr<json> b = BaselineJson(dir.string(), Spec(), 8, "j1");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ((*b)["agents"].size(), 2u);
  EXPECT_EQ((*b)["agents"][0]["name"], "a0");
  EXPECT_DOUBLE_EQ((*b)["agents"][0]["MB_per_second"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ((*b)["agents"][1]["MB_per_second"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ((*b)["agents"][1]["files_per_second"].get<double>(), 6.0);
  // The total from the first start to the last end: 48 MB in 5 s.
  EXPECT_DOUBLE_EQ((*b)["total"]["MB_per_second"].get<double>(), 9.6);
  EXPECT_EQ((*b)["total"]["threads"], 16);
  EXPECT_EQ((*b)["block_size_bytes"], 8 << 20);
  EXPECT_FALSE(b->contains("s3"));
  const std::string text = BaselineText(*b);
  EXPECT_THAT(text, HasSubstr("total                         9.6        9.6       16\n"));
  fs::remove(dir / "1_output.json");
  EXPECT_THAT(std::string(BaselineJson(dir.string(), Spec(), 8, "j1").status().message()), HasSubstr("1_output.json"));
  fs::remove_all(dir);
}

TEST(Baseline, FoundBesideTheResultsOnlyForTheSameDataset) {
  const fs::path dir = fs::temp_directory_path() / ("dlio-baseline-find-" + std::to_string(::getpid()));
  fs::create_directories(dir / "run1");
  std::ofstream(dir / "baseline.json") << Baseline(100, 1).dump();
  std::ostringstream err;
  EXPECT_TRUE(FindBaseline("", (dir / "run1").string(), Spec(), err).has_value());  // in the parent
  EXPECT_TRUE(FindBaseline("", (dir / "run1/").string(), Spec(), err).has_value());
  EXPECT_TRUE(FindBaseline("", dir.string(), Spec(), err).has_value());              // in the folder
  WorkloadSpec other = Spec();
  other.num_files_train = 24;
  EXPECT_FALSE(FindBaseline("", (dir / "run1").string(), other, err).has_value());
  EXPECT_EQ(err.str(), "");
  EXPECT_FALSE(FindBaseline((dir / "baseline.json").string(), "", other, err).has_value());
  EXPECT_THAT(err.str(), HasSubstr("--baseline-file: '" + (dir / "baseline.json").string() + "' measured "));
  EXPECT_THAT(err.str(), HasSubstr("; not cited\n"));
  err.str("");
  EXPECT_FALSE(FindBaseline((dir / "none.json").string(), "", Spec(), err).has_value());
  EXPECT_THAT(err.str(), HasSubstr("--baseline-file: "));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlio
