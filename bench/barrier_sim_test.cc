// Unit tests of the barrier simulation (bench/barrier_sim.h): pure logic, closed-form cases.
#include "barrier_sim.h"

#include <gtest/gtest.h>

namespace dlio::bench {
namespace {

SimParams Measured() {
  SimParams p;
  p.coord_recv_us = 13;
  p.coord_send_us = 17;
  p.relay_recv_us = 13;
  p.relay_send_us = 17;
  p.agent_recv_us = 35;
  p.agent_send_us = 35;
  p.latency_us = 100;
  return p;
}

TEST(BarrierSim, OneAgentStarCeilingIsComputeOverComputePlusTwoLatenciesAndCosts) {
  SimParams p = Measured();
  p.agents = 1;
  p.compute_us = 3500;
  p.steps = 10;
  const SimResult r = Simulate(p);
  const double costs = p.agent_send_us + p.coord_recv_us + p.coord_send_us + p.agent_recv_us;
  EXPECT_NEAR(r.ceiling, p.compute_us / (p.compute_us + 2 * p.latency_us + costs), 1e-12);
  EXPECT_NEAR(r.ideal_au_percent, 100, 1e-12);
  EXPECT_NEAR(r.coord_cpu_us_per_step, p.coord_recv_us + p.coord_send_us, 1e-9);
  EXPECT_NEAR(r.exposed_p50_us, 2 * p.latency_us + costs, 1e-9);
}

TEST(BarrierSim, StarCoordinatorCpuGrowsWithAgentsAndTheReleaseLoopIsSerial) {
  SimParams p = Measured();
  p.agents = 1024;
  p.steps = 5;
  const SimResult r = Simulate(p);
  EXPECT_NEAR(r.coord_cpu_us_per_step, 1024 * (p.coord_recv_us + p.coord_send_us), 1e-6);
  // The last agent of the loop waits for 1,024 writes: the p99 release is at least 1,000 sends after the first.
  EXPECT_GT(r.release_p99_us, 1000 * p.coord_send_us);
  EXPECT_EQ(r.relays, 0);
}

TEST(BarrierSim, TreeCoordinatorCpuPerStepIsBoundedByFanoutNotAgents) {
  for (int agents : {1024, 4096, 10000}) {
    SimParams p = Measured();
    p.agents = agents;
    p.fanout = 32;
    p.steps = 3;
    const SimResult r = Simulate(p);
    EXPECT_LE(r.coord_cpu_us_per_step, 32 * (p.coord_recv_us + p.coord_send_us) + 1e-6) << agents << " agents";
    EXPECT_GT(r.relays, 0) << agents;
  }
  SimParams p = Measured();
  p.agents = 10000;
  p.fanout = 32;
  p.steps = 3;
  const SimResult r = Simulate(p);
  EXPECT_EQ(r.levels, 2);           // 10,000 -> 313 relays -> 10 relays -> the coordinator
  EXPECT_EQ(r.relays, 313 + 10);
  EXPECT_NEAR(r.coord_cpu_us_per_step, 10 * (p.coord_recv_us + p.coord_send_us), 1e-6);
}

TEST(BarrierSim, FanoutAtLeastAgentsIsTheStar) {
  SimParams p = Measured();
  p.agents = 16;
  p.steps = 5;
  const SimResult star = Simulate(p);
  p.fanout = 32;
  const SimResult tree = Simulate(p);
  EXPECT_EQ(tree.relays, 0);
  EXPECT_DOUBLE_EQ(star.ceiling, tree.ceiling);
}

TEST(BarrierSim, AnnounceHidesAReleaseLatencyBelowTheCompute) {
  SimParams p = Measured();
  p.agents = 256;
  p.compute_us = 47500;
  p.steps = 10;
  p.protocol = Protocol::kAfterCompute;
  const SimResult after = Simulate(p);
  p.protocol = Protocol::kAnnounce;
  const SimResult announce = Simulate(p);
  // 256 releases of 17 us plus the links are ~5 ms < 47.5 ms: nothing is exposed, the ceiling is exactly 1.
  EXPECT_GT(announce.release_p99_us, 4000);
  EXPECT_NEAR(announce.ceiling, 1.0, 1e-12);
  EXPECT_NEAR(announce.exposed_p99_us, 0, 1e-6);
  EXPECT_LT(after.ceiling, 0.95);
}

TEST(BarrierSim, AnnounceExposesOnlyTheReleaseLatencyBeyondTheCompute) {
  SimParams p = Measured();
  p.agents = 1;
  p.compute_us = 100;  // shorter than the round trip: 2 x 100 us + 100 us of costs
  p.steps = 10;
  p.protocol = Protocol::kAnnounce;
  const SimResult r = Simulate(p);
  const double round_trip = 2 * p.latency_us + p.agent_send_us + p.coord_recv_us + p.coord_send_us + p.agent_recv_us;
  EXPECT_NEAR(r.exposed_p50_us, round_trip - p.compute_us, 1e-9);
  EXPECT_NEAR(r.ceiling, p.compute_us / round_trip, 1e-12);
}

TEST(BarrierSim, JitterLowersTheIdealAuButAHiddenReleaseKeepsTheCeiling) {
  SimParams p = Measured();
  p.agents = 64;
  p.compute_us = 47500;
  p.jitter = 0.05;
  p.steps = 20;
  p.protocol = Protocol::kAnnounce;
  const SimResult r = Simulate(p);
  EXPECT_LT(r.ideal_au_percent, 99.0);
  EXPECT_GT(r.ideal_au_percent, 80.0);
  EXPECT_NEAR(r.ceiling, 1.0, 1e-12);
}

TEST(BarrierSim, NoStepEndsBeforeItsSlowestComputeWhateverTheProtocolAndTopology) {
  for (Protocol protocol : {Protocol::kAfterCompute, Protocol::kAnnounce}) {
    for (int fanout : {0, 4}) {
      SimParams p = Measured();
      p.protocol = protocol;
      p.fanout = fanout;
      p.agents = 50;
      p.compute_us = 3500;
      p.jitter = 0.3;  // large: the slowest rank changes every step
      p.steps = 20;
      const SimResult r = Simulate(p);
      EXPECT_GE(r.exposed_min_us, 0) << static_cast<int>(protocol) << " fanout " << fanout;
    }
  }
}

TEST(BarrierSim, SharedAgentCoresSerialiseTheAgentsWork) {
  SimParams p = Measured();
  p.agents = 64;
  p.steps = 5;
  const SimResult own = Simulate(p);
  p.agent_cores = 1;
  const SimResult shared = Simulate(p);
  // One core sends 64 arrivals and reads 64 releases of 35 us one after another, where 64 cores overlap them: the
  // last agent's step ends about 64 x 35 us later than with a core each.
  EXPECT_GT(shared.exposed_p99_us, own.exposed_p99_us + 1000);
  EXPECT_LT(shared.ceiling, own.ceiling);
}

}  // namespace
}  // namespace dlio::bench
