#include "agent/host_sampler.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using std::chrono::milliseconds;

HostSampler::Options Fast() {
  HostSampler::Options o;
  o.agent = "a1";
  o.data_root = "/";
  o.tick = milliseconds(10);
  return o;
}

// At the real 1 s tick, the first rates come 0.1 s after the start: a scrape right after an agent starts (the
// metric catalogue test's short job) finds every dlio_host_* family.
TEST(HostSampler, FirstRatesComeWellBeforeTheFirstTick) {
  HostSampler::Options o = Fast();
  o.tick = milliseconds(1000);
  HostSampler s(o);
  for (int i = 0; i < 60 && !s.Latest().has_value(); ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(s.Latest().has_value()) << "no rates 0.6 s after the start of a 1 s tick";
  EXPECT_FALSE(s.Collect().empty());
}

TEST(HostSampler, RecordsAPhaseSeriesAtItsIntervalAndTheWholePhase) {
  HostSampler s(Fast());
  const HostSampler::PhaseId id = s.BeginPhase(milliseconds(50));
  std::this_thread::sleep_for(milliseconds(330));
  const HostTelemetry t = s.EndPhase(id);
  ASSERT_TRUE(t.phase.has_value());
  EXPECT_NEAR(t.phase->seconds, 0.33, 0.1);
  // ~6 samples of 50 ms and the cut at the end; a loaded host may skip a few ticks.
  EXPECT_GE(t.series.size(), 3u);
  EXPECT_LE(t.series.size(), 8u);
  double sum = 0;
  for (const HostSample& x : t.series) sum += x.seconds;
  EXPECT_NEAR(sum, t.phase->seconds, 0.06);  // the series tiles the phase (a last piece under 50 ms is dropped)
  EXPECT_GT(t.phase->mem.total, 0u);
  EXPECT_GT(t.phase->cores, 0);
  EXPECT_TRUE(s.EndPhase(id).empty());      // ended already
  EXPECT_TRUE(s.EndPhase(id + 7).empty());  // never begun
}

// Concurrent jobs on one agent (issue 30): each phase carries the host series of its own span, from the same
// readings; a phase begun beside another drops nothing of it.
TEST(HostSampler, OverlappingPhasesEachGetTheSeriesOfTheirOwnSpan) {
  HostSampler s(Fast());
  const HostSampler::PhaseId a = s.BeginPhase(milliseconds(50));
  std::this_thread::sleep_for(milliseconds(150));
  const HostSampler::PhaseId b = s.BeginPhase(milliseconds(100));
  ASSERT_NE(a, b);
  std::this_thread::sleep_for(milliseconds(200));
  const HostTelemetry ta = s.EndPhase(a);
  std::this_thread::sleep_for(milliseconds(150));
  const HostTelemetry tb = s.EndPhase(b);
  ASSERT_TRUE(ta.phase.has_value());
  ASSERT_TRUE(tb.phase.has_value());
  EXPECT_NEAR(ta.phase->seconds, 0.35, 0.1);
  EXPECT_NEAR(tb.phase->seconds, 0.35, 0.1);
  // Each series tiles its own phase: a from its start to its end, b from its later start to its later end.
  for (const HostTelemetry* t : {&ta, &tb}) {
    ASSERT_GE(t->series.size(), 2u);
    double sum = 0;
    for (const HostSample& x : t->series) sum += x.seconds;
    EXPECT_NEAR(sum, t->phase->seconds, 0.11);
  }
  EXPECT_LT(ta.phase->unix_ms, tb.phase->unix_ms);  // b ended later
  EXPECT_GE(ta.series.size(), tb.series.size());    // at 50 ms against 100 ms
}

TEST(HostSampler, ExportsTheHostFamiliesAfterTheFirstTicks) {
  HostSampler s(Fast());
  std::this_thread::sleep_for(milliseconds(60));
  ASSERT_TRUE(s.Latest().has_value());
  std::set<std::string> names;
  for (const auto& f : s.Collect()) names.insert(f.name);
  for (const char* want : {"dlio_host_cpu_ratio", "dlio_host_cpu_core_busy_ratio", "dlio_host_process_cpu_ratio",
                           "dlio_host_memory_bytes", "dlio_host_process_storage_read_bytes_total",
                           "dlio_host_process_read_call_bytes_total", "dlio_host_sampler_cpu_seconds_total"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
}

// dlio-agent --link-speed IFACE=MBPS: the speed given replaces what the driver reports (a veth says 10000 Mb/s or
// nothing, whatever a tc qdisc lets through); the other interfaces keep theirs.
TEST(HostSampler, AGivenLinkSpeedReplacesTheDriversForThatInterface) {
  const std::filesystem::path net =
      std::filesystem::temp_directory_path() / ("dlio-sampler-net-" + std::to_string(::getpid()));
  for (const auto& [nic, speed] : {std::pair{"veth0", "10000"}, std::pair{"eth0", "-1"}}) {
    std::filesystem::create_directories(net / nic / "statistics");
    for (const char* f : {"rx_bytes", "tx_bytes", "rx_packets", "tx_packets"}) {
      std::ofstream(net / nic / "statistics" / f) << "0\n";
    }
    std::ofstream(net / nic / "speed") << speed << "\n";
  }
  HostSampler::Options o = Fast();
  o.sources.net = net.string();
  o.link_speeds_mbps = {{"veth0", 40}};
  HostSampler s(o);
  for (int i = 0; i < 100 && !s.Latest().has_value(); ++i) std::this_thread::sleep_for(milliseconds(10));
  const std::optional<HostSample> latest = s.Latest();  // held: a loop over a temporary's member would dangle
  ASSERT_TRUE(latest.has_value());
  std::map<std::string, int64_t> speeds;
  for (const NicRate& n : latest->nics) speeds[n.name] = n.speed_mbps;
  EXPECT_EQ(speeds["veth0"], 40);
  EXPECT_EQ(speeds["eth0"], -1);  // none given, none reported
  std::filesystem::remove_all(net);
}

// The sampler's cost at its real 1 s tick is measured by the process test (docs/metrics.md); here: at a 10 ms
// tick (100x the real rate) its thread stays under 50 % of a core, i.e. < 0.5 % at 1 s.
TEST(HostSampler, CostsLittleCpu) {
  HostSampler s(Fast());
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_LT(s.SamplerCpuSeconds(), 0.25);
}

}  // namespace
}  // namespace dlio
