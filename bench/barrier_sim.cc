// dlio-bench-barrier-sim: the step barrier's discrete-event simulation (bench/barrier_sim.h, issue 29 item 3) as
// Markdown tables: the harness ceiling (AU with free storage / ideal AU) and the coordinator's CPU per step of main's
// protocol (arrive after compute, serial release loop) and of the announce-at-compute-start protocol, each over a flat
// star and a relay tree, projected to fleets this machine cannot emulate.
//
//   dlio-bench-barrier-sim                      the projection: 16 .. 10,000 agents x 20/100 us x 3.5/47.5/224 ms
//   dlio-bench-barrier-sim --mode fanout        ceiling and coordinator CPU per fan-out: the default and the crossover
//   dlio-bench-barrier-sim --mode validate --agents 16,64,256 --computes-ms 47.5 --latencies-us 25 --agent-cores 1
//                                               main's protocol on this machine's shape, beside dlio-bench-swarm
// The per-message costs default to the figures measured on the 2-core development VM (bench/RESULTS.md, "Harness
// ceiling and the barrier at scale", says where each comes from); every one is an option. A benchmark tool: it
// prints and exits 0; a bad option gets CLI11's one line naming it (and what it allows) and a non-zero exit.
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "barrier_sim.h"

namespace dlio::bench {
namespace {

struct Options {
  std::string mode = "projection";
  std::vector<int> agents = {16, 64, 256, 1024, 4096, 10000};
  std::vector<double> computes_ms = {3.5, 47.5, 224};
  std::vector<double> latencies_us = {20, 100};
  std::vector<int> fanouts = {8, 16, 32, 64, 128};
  SimParams base;
};

SimParams With(const Options& o, int agents, double latency_us, double compute_ms, Protocol protocol, int fanout) {
  SimParams p = o.base;
  p.agents = agents;
  p.latency_us = latency_us;
  p.compute_us = compute_ms * 1000;
  p.protocol = protocol;
  p.fanout = fanout;
  return p;
}

void Projection(const Options& o) {
  std::printf("| agents | latency us | compute ms | after_compute star %% | after_compute tree %% | announce star %% | "
              "announce tree %% | coordinator CPU us/step star / tree | relays (levels) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int n : o.agents) {
    for (double l : o.latencies_us) {
      for (double c : o.computes_ms) {
        const int f = o.base.fanout;
        const SimResult as = Simulate(With(o, n, l, c, Protocol::kAfterCompute, 0));
        const SimResult at = Simulate(With(o, n, l, c, Protocol::kAfterCompute, f));
        const SimResult bs = Simulate(With(o, n, l, c, Protocol::kAnnounce, 0));
        const SimResult bt = Simulate(With(o, n, l, c, Protocol::kAnnounce, f));
        std::printf("| %d | %g | %g | %.2f | %.2f | %.2f | %.2f | %.0f / %.0f | %d (%d) |\n", n, l, c,
                    100 * as.ceiling, 100 * at.ceiling, 100 * bs.ceiling, 100 * bt.ceiling, bs.coord_cpu_us_per_step,
                    bt.coord_cpu_us_per_step, bt.relays, bt.levels);
      }
    }
  }
}

// Per fleet size and latency, for the star and each fan-out (announce protocol, the one the issue builds): the first
// compute's ceiling, the release latency p99 (from the last announcement to each agent's release: the compute it
// hides) and the coordinator's CPU per step. Reads as: the default fan-out and the star/tree crossover.
void Fanout(const Options& o) {
  const double c = o.computes_ms.front();
  std::printf("announce protocol, compute %g ms: harness ceiling %% / release p99 ms / coordinator CPU us per step\n\n",
              c);
  std::printf("| agents | latency us | star |");
  for (int f : o.fanouts) std::printf(" F=%d |", f);
  std::printf("\n|---|---|---|");
  for (size_t i = 0; i < o.fanouts.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (int n : o.agents) {
    for (double l : o.latencies_us) {
      const SimResult s = Simulate(With(o, n, l, c, Protocol::kAnnounce, 0));
      std::printf("| %d | %g | %.2f / %.2f / %.0f |", n, l, 100 * s.ceiling, s.release_p99_us / 1000,
                  s.coord_cpu_us_per_step);
      for (int f : o.fanouts) {
        const SimResult t = Simulate(With(o, n, l, c, Protocol::kAnnounce, f));
        std::printf(" %.2f / %.2f / %.0f |", 100 * t.ceiling, t.release_p99_us / 1000, t.coord_cpu_us_per_step);
      }
      std::printf("\n");
    }
  }
}

// Main's protocol over a star, as dlio-bench-swarm measures it: release latency, AU, coordinator CPU per agent-step.
void Validate(const Options& o) {
  std::printf("| agents | compute ms | latency us | agent cores | release p50 / p99 ms | AU %% | "
              "coordinator CPU us per agent-step |\n|---|---|---|---|---|---|---|\n");
  for (int n : o.agents) {
    for (double l : o.latencies_us) {
      for (double c : o.computes_ms) {
        const SimResult r = Simulate(With(o, n, l, c, Protocol::kAfterCompute, 0));
        std::printf("| %d | %g | %g | %d | %.1f / %.1f | %.1f | %.1f |\n", n, c, l, o.base.agent_cores,
                    r.release_p50_us / 1000, r.release_p99_us / 1000, r.au_percent, r.coord_cpu_us_per_step / n);
      }
    }
  }
}

int Main(int argc, char** argv) {
  Options o;
  o.base.fanout = 32;
  CLI::App app{"dlio-bench-barrier-sim: the step barrier simulated (issue 29): harness ceiling and coordinator CPU"};
  app.add_option("--mode", o.mode, "projection, fanout or validate")
      ->check(CLI::IsMember({"projection", "fanout", "validate"}));
  app.add_option("--agents", o.agents, "fleet sizes, comma-separated")->delimiter(',')->check(CLI::Range(1, 1000000));
  app.add_option("--computes-ms", o.computes_ms, "compute per step, ms, comma-separated (fanout: the first)")
      ->delimiter(',')->check(CLI::Range(0.001, 1e6));
  app.add_option("--latencies-us", o.latencies_us, "one-way link latency, us, comma-separated")
      ->delimiter(',')->check(CLI::Range(0.0, 1e6));
  app.add_option("--fanout", o.base.fanout, "the tree's fan-out (projection)")->check(CLI::Range(2, 1000000));
  app.add_option("--fanouts", o.fanouts, "fan-outs compared (fanout mode)")
      ->delimiter(',')->check(CLI::Range(2, 1000000));
  app.add_option("--steps", o.base.steps, "steps simulated per point")->check(CLI::Range(1, 100000));
  app.add_option("--jitter", o.base.jitter, "stdev of compute, fraction of it")->check(CLI::Range(0.0, 10.0));
  app.add_option("--coord-recv-us", o.base.coord_recv_us, "coordinator CPU per message in")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--coord-send-us", o.base.coord_send_us, "coordinator CPU per message out")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--relay-recv-us", o.base.relay_recv_us, "relay CPU per message in")->check(CLI::Range(0.0, 1e6));
  app.add_option("--relay-send-us", o.base.relay_send_us, "relay CPU per message out")->check(CLI::Range(0.0, 1e6));
  app.add_option("--agent-recv-us", o.base.agent_recv_us, "agent CPU per message in")->check(CLI::Range(0.0, 1e6));
  app.add_option("--agent-send-us", o.base.agent_send_us, "agent CPU per message out")->check(CLI::Range(0.0, 1e6));
  app.add_option("--agent-cores", o.base.agent_cores, "cores the agents share (0: one each, a real fleet)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--seed", o.base.seed, "seed of the compute jitter");
  CLI11_PARSE(app, argc, argv);
  std::printf("costs (us): coordinator in %g / out %g, relay in %g / out %g, agent in %g / out %g; agent cores %d; "
              "jitter %g; %d steps\n\n", o.base.coord_recv_us, o.base.coord_send_us, o.base.relay_recv_us,
              o.base.relay_send_us, o.base.agent_recv_us, o.base.agent_send_us, o.base.agent_cores, o.base.jitter,
              o.base.steps);
  if (o.mode == "fanout") {
    Fanout(o);
  } else if (o.mode == "validate") {
    Validate(o);
  } else {
    Projection(o);
  }
  return 0;
}

}  // namespace
}  // namespace dlio::bench

int main(int argc, char** argv) { return dlio::bench::Main(argc, argv); }
