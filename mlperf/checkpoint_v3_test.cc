#include "mlperf/checkpoint_v3.h"

#include <unistd.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mlperf/fs_separation.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

CheckpointV3Input Llama(const std::string& name, int64_t world, int64_t hosts, uint64_t bytes) {
  CheckpointV3Input in;
  in.workload = FindMlperfCheckpointWorkload(name);
  in.world = world;
  in.hosts = hosts;
  in.checkpoint_bytes = bytes;
  return in;
}

TEST(CheckpointV3, AClosedShapeOnEightRanksPerHostPasses) {
  CheckpointV3Input in = Llama("llama3-8b", 8, 1, 105'000'000'000ull);
  in.accelerator = "b200";
  in.host_memory_bytes = 64ull << 30;
  EXPECT_TRUE(CheckpointV3Problems(in).empty());
}

TEST(CheckpointV3, FourOrFewerRanksPerHostBreak462) {
  const std::vector<std::string> p = CheckpointV3Problems(Llama("llama3-8b", 8, 2, 1000));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_THAT(p[0], HasSubstr("Rules.md 4.6.2: 8 ranks on 2 host(s) is 4 per host; a checkpointing run needs more "
                              "than 4 ranks per host"));
  EXPECT_TRUE(CheckpointV3Problems(Llama("llama3-8b", 10, 2, 1000)).empty());
}

TEST(CheckpointV3, AcceleratorMemoryBelowTheCheckpointBreaks434) {
  // llama3-70b's 912 GB on 8 x h100 (640 GB): the OPEN shape mlpstorage refuses; 8 x mi355 (2304 GB) holds it.
  CheckpointV3Input in = Llama("llama3-70b", 8, 1, 912'000'000'000ull);
  in.accelerator = "h100";
  std::vector<std::string> p = CheckpointV3Problems(in);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_THAT(p[0], HasSubstr("Rules.md 4.3.4: 8 x h100 at 80 GB = 640 GB of accelerator memory is below the "
                              "llama3-70b checkpoint of 912 GB"));
  in.accelerator = "mi355";
  EXPECT_TRUE(CheckpointV3Problems(in).empty());
  in.accelerator = "tpu";
  p = CheckpointV3Problems(in);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_THAT(p[0], HasSubstr("Rules.md 4.3.4: accelerator 'tpu' has no memory figure"));
  in.accelerator.clear();  // not declared: not checked
  EXPECT_TRUE(CheckpointV3Problems(in).empty());
}

TEST(CheckpointV3, SubsetIsLegalOnlyFor8b) {
  CheckpointV3Input in = Llama("llama3-70b", 64, 8, 1000);
  in.subset = true;
  std::vector<std::string> p = CheckpointV3Problems(in);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_THAT(p[0], HasSubstr("Rules.md 4.3.5: checkpoint.mode: subset is legal only for llama3-8b (storage #841), "
                              "not for llama3-70b"));
  in = Llama("llama3-8b", 8, 1, 1000);
  in.subset = true;
  EXPECT_TRUE(CheckpointV3Problems(in).empty());
}

TEST(CheckpointV3, NoFlushNeedsMoreThanThreeTimesTheHostsRam) {
  CheckpointV3Input in = Llama("llama3-8b", 8, 1, 300'000'000'000ull);
  in.host_memory_bytes = 100'000'000'000ull;
  in.cache_flush = false;
  std::vector<std::string> p = CheckpointV3Problems(in);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_THAT(p[0], HasSubstr("Rules.md 4.3.1: 300 GB of checkpoint data per host is not above 3x the host's RAM "
                              "(300 GB)"));
  in.checkpoint_bytes = 301'000'000'000ull;  // above 3x: no flush needed
  EXPECT_TRUE(CheckpointV3Problems(in).empty());
  in.checkpoint_bytes = 1000;
  in.cache_flush = true;
  EXPECT_TRUE(CheckpointV3Problems(in).empty());
}

TEST(FsSeparation, OneFileSystemIsNotSeparateAndTmpfsIs) {
  const std::string tmp = std::filesystem::temp_directory_path().string();
  FsSeparation s = ProbeSeparation(tmp + "/not/made/yet", tmp, "local_fs");
  EXPECT_FALSE(s.separate);
  EXPECT_EQ(s.data.probed, tmp);  // the nearest existing ancestor
  EXPECT_EQ(s.data.device, s.results.device);
  EXPECT_EQ(FsSeparationJson(s, false)["rule"], "Rules.md 3.4.2");
  EXPECT_EQ(FsSeparationJson(s, true)["rule"], "Rules.md 4.4.2");
  EXPECT_TRUE(ProbeSeparation(tmp, tmp, "s3").separate);  // objects share no file system with the results
  if (access("/dev/shm", W_OK) == 0) {
    s = ProbeSeparation("/dev/shm", tmp, "local_fs");
    EXPECT_EQ(s.separate, s.data.device != s.results.device);
    EXPECT_EQ(s.data.fs_type, "tmpfs");
  }
}

}  // namespace
}  // namespace dlio
