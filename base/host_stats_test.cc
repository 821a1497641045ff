#include "base/host_stats.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

// Captured from a 2-core Debian 12 VM (the intr line cut short).
constexpr char kStat[] =
    "cpu  2590055 32253 366804 1056189 16588 0 4576 2212 0 0\n"
    "cpu0 1280278 14807 169615 561437 5161 0 1717 1109 0 0\n"
    "cpu1 1309777 17445 197189 494752 11427 0 2859 1103 0 0\n"
    "intr 16902974 0 0 0 0\n"
    "ctxt 123\n";
constexpr char kSelfStat[] =
    "27807 (dlio agent) x) R 27804 27804 22628 0 -1 4194304 99 0 0 0 250 50 0 0 20 0 1 0 2040411 3133440 415\n";
constexpr char kMeminfo[] =
    "MemTotal:       24684084 kB\nMemFree:        20000000 kB\nMemAvailable:   23979384 kB\n"
    "Buffers:           1000 kB\nCached:          1967080 kB\nSwapCached:            0 kB\nDirty:               340 "
    "kB\n";
constexpr char kDiskstats[] =
    "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    " 254       0 vda 935039 25686 84326322 6070955 1114867 305276 321647728 1575392 3 395732 7761886 477918 50 "
    "302237800 100445 209560 15092\n"
    " 254       1 vda1 100 0 800 10 0 0 0 0 0 10 10 0 0 0 0\n";
constexpr char kSelfIo[] =
    "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";

TEST(HostStats, ParsesProcStatAggregateThenCores) {
  absl::StatusOr<std::vector<CpuTimes>> cpu = ParseProcStat(kStat);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_EQ(cpu->size(), 3u);
  EXPECT_EQ((*cpu)[0].user, 2590055u);
  EXPECT_EQ((*cpu)[0].idle, 1056189u);
  EXPECT_EQ((*cpu)[0].iowait, 16588u);
  EXPECT_EQ((*cpu)[0].steal, 2212u);
  EXPECT_EQ((*cpu)[2].system, 197189u);
  EXPECT_FALSE(ParseProcStat("intr 1 2 3\n").ok());
}

TEST(HostStats, ParsesSelfStatPastACommWithSpacesAndParentheses) {
  absl::StatusOr<uint64_t> ticks = ParseSelfStatCpuTicks(kSelfStat);
  ASSERT_TRUE(ticks.ok()) << ticks.status();
  EXPECT_EQ(*ticks, 300u);  // utime 250 + stime 50
  EXPECT_FALSE(ParseSelfStatCpuTicks("12 (x) R 1 2").ok());
}

TEST(HostStats, ParsesMeminfoInBytes) {
  absl::StatusOr<MemCounters> m = ParseMeminfo(kMeminfo);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->total, 24684084ull * 1024);
  EXPECT_EQ(m->available, 23979384ull * 1024);
  EXPECT_EQ(m->page_cache, 1967080ull * 1024);
  EXPECT_EQ(m->dirty, 340ull * 1024);
  EXPECT_FALSE(ParseMeminfo("Cached: 1 kB\n").ok());
}

TEST(HostStats, ParsesTheNamedDisksOnly) {
  const std::vector<DiskCounters> d = ParseDiskstats(kDiskstats, {"vda"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "vda");
  EXPECT_EQ(d[0].major, 254u);
  EXPECT_EQ(d[0].minor, 0u);
  EXPECT_EQ(d[0].reads, 935039u);
  EXPECT_EQ(d[0].read_sectors, 84326322u);
  EXPECT_EQ(d[0].writes, 1114867u);
  EXPECT_EQ(d[0].write_sectors, 321647728u);
  EXPECT_EQ(d[0].in_flight, 3u);
  EXPECT_EQ(d[0].io_ms, 395732u);
  EXPECT_EQ(ParseDiskstats(kDiskstats, {}).size(), 3u);
}

TEST(HostStats, ParsesSelfIo) {
  const SelfIo io = ParseSelfIo(kSelfIo);
  EXPECT_EQ(io.rchar, 6976u);
  EXPECT_EQ(io.read_bytes, 4096u);
  EXPECT_EQ(ParseSelfIo("").read_bytes, 0u);
}

HostCounters At(double s) {
  HostCounters c;
  c.steady_s = s;
  c.unix_ms = static_cast<int64_t>(s * 1000);
  return c;
}

TEST(HostStats, DiffGivesSharesRatesAndUtilisation) {
  HostCounters a = At(10), b = At(12);
  a.cpu = {CpuTimes{100, 0, 50, 800, 50, 0, 0, 0}, CpuTimes{50, 0, 25, 400, 25, 0, 0, 0},
           CpuTimes{50, 0, 25, 400, 25, 0, 0, 0}};
  // +400 ticks: user 200, system 40, idle 120, iowait 40; core 0 fully busy, core 1 half idle.
  b.cpu = {CpuTimes{300, 0, 90, 920, 90, 0, 0, 0}, CpuTimes{250, 0, 25, 400, 25, 0, 0, 0},
           CpuTimes{50, 0, 65, 520, 65, 0, 0, 0}};
  a.process_cpu_ticks = 10;
  b.process_cpu_ticks = 110;  // 1 s of CPU over 2 s at 100 ticks/s
  a.disks = {DiskCounters{"vda", 10, 100, 0, 0, 0, 0}};
  b.disks = {DiskCounters{"vda", 30, 100 + 2048 * 4, 4, 8, 2, 500}};
  a.nics = {NicCounters{"eth0", 0, 0, 0, 0, 1000}, NicCounters{"veth", 0, 0, 0, 0, -1}};
  b.nics = {NicCounters{"eth0", 62'500'000, 1000, 20, 2, 1000}, NicCounters{"veth", 10, 10, 1, 1, -1}};
  a.io = {1000, 0};
  b.io = {1000 + (8 << 20), 1 << 20};
  b.mem.page_cache = 77;
  const HostSample s = DiffHost(a, b, 100);
  EXPECT_DOUBLE_EQ(s.seconds, 2);
  EXPECT_EQ(s.unix_ms, 12000);
  EXPECT_DOUBLE_EQ(s.cpu_user, 50);
  EXPECT_DOUBLE_EQ(s.cpu_system, 10);
  EXPECT_DOUBLE_EQ(s.cpu_idle, 30);
  EXPECT_DOUBLE_EQ(s.cpu_iowait, 10);
  EXPECT_DOUBLE_EQ(s.cpu_busy, 60);
  ASSERT_EQ(s.cores, 2);
  EXPECT_DOUBLE_EQ(s.core_busy[0], 100);
  EXPECT_DOUBLE_EQ(s.core_busy[1], 20);
  EXPECT_DOUBLE_EQ(s.process_cpu, 50);
  ASSERT_EQ(s.disks.size(), 1u);
  EXPECT_DOUBLE_EQ(s.disks[0].read_bytes_per_s, 2048 * 4 * 512 / 2.0);
  EXPECT_DOUBLE_EQ(s.disks[0].read_iops, 10);
  EXPECT_DOUBLE_EQ(s.disks[0].write_iops, 2);
  EXPECT_EQ(s.disks[0].in_flight, 2u);
  EXPECT_DOUBLE_EQ(s.disks[0].busy_percent, 25);  // 500 ms of 2 s
  ASSERT_EQ(s.nics.size(), 2u);
  EXPECT_DOUBLE_EQ(s.nics[0].rx_bytes_per_s, 31'250'000);
  EXPECT_DOUBLE_EQ(s.nics[0].utilisation_percent, 25);  // 250 Mb/s of 1 Gb/s
  EXPECT_DOUBLE_EQ(s.nics[1].utilisation_percent, -1);  // speed unknown
  EXPECT_EQ(s.process_rchar, 8u << 20);
  EXPECT_EQ(s.process_read_bytes, 1u << 20);
  EXPECT_EQ(s.mem.page_cache, 77u);
}

TEST(HostStats, CountersThatWentBackwardsReadZero) {
  HostCounters a = At(1), b = At(2);
  a.io = {500, 500};
  b.io = {100, 100};
  const HostSample s = DiffHost(a, b, 100);
  EXPECT_EQ(s.process_rchar, 0u);
  EXPECT_EQ(s.process_read_bytes, 0u);
}

TEST(HostStats, ReadsACapturedFolder) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("host_stats_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "self");
  std::filesystem::create_directories(dir / "net/eth0/statistics");
  std::filesystem::create_directories(dir / "net/lo/statistics");
  auto put = [&](const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; };
  put(dir / "stat", kStat);
  put(dir / "meminfo", kMeminfo);
  put(dir / "diskstats", kDiskstats);
  put(dir / "self/stat", kSelfStat);
  put(dir / "self/io", kSelfIo);
  put(dir / "net/eth0/statistics/rx_bytes", "12345\n");
  put(dir / "net/eth0/speed", "25000\n");
  HostSources src{(dir).string(), (dir / "self").string(), (dir / "net").string(), {"vda"}};
  const HostCounters c = ReadHostCounters(src, 5, 6);
  EXPECT_EQ(c.cpu.size(), 3u);
  EXPECT_EQ(c.process_cpu_ticks, 300u);
  EXPECT_EQ(c.mem.dirty, 340u * 1024);
  ASSERT_EQ(c.disks.size(), 1u);
  ASSERT_EQ(c.nics.size(), 1u);  // lo left out
  EXPECT_EQ(c.nics[0].rx_bytes, 12345u);
  EXPECT_EQ(c.nics[0].speed_mbps, 25000);
  EXPECT_EQ(c.io.read_bytes, 4096u);
  std::filesystem::remove_all(dir);
}

TEST(HostStats, CpuQuotaAsCores) {
  EXPECT_DOUBLE_EQ(ParseCpuQuotaCores("50000 100000\n"), 0.5);
  EXPECT_DOUBLE_EQ(ParseCpuQuotaCores("max 100000\n"), 0);
  EXPECT_DOUBLE_EQ(ParseCpuQuotaCores("-1 100000"), 0);
  EXPECT_DOUBLE_EQ(ParseCpuQuotaCores(""), 0);
  const double cores = CpuLimitCores();
  EXPECT_GT(cores, 0);
  EXPECT_LE(cores, static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(HostStats, DataRootDevicesNamesTheDiskOfThePath) {
  const std::vector<std::string> d = DataRootDevices(::testing::TempDir());
  EXPECT_FALSE(d.empty());
  for (const std::string& name : d) EXPECT_THAT(name, ::testing::Not(::testing::StartsWith("loop")));
}

}  // namespace
}  // namespace dlio
