// HostSampler: the agent's host telemetry (issue 26 item 1). One thread reads the kernel's counters once a tick
// (1 s; base/host_stats.h: /proc/stat, /proc/self/stat, /proc/meminfo, /proc/diskstats of the data root's devices,
// /proc/self/io, /sys/class/net) and keeps
//   - the last tick's rates, exported as the dlio_host_* Prometheus families (docs/metrics.md "Agent: host");
//   - while a phase runs (BeginPhase .. EndPhase), the phase's series: one HostSample every `interval`
//     (dlio_ext.telemetry_interval), the last one cut at EndPhase, and one sample over the whole phase. The agent
//     sends both with the phase's result (RankResult.host_telemetry on its first local rank). Phases of concurrent
//     jobs on one agent are recorded at once, each with its own span and interval from the same readings (the host
//     is one: every phase that overlaps a second carries that second's figures).
// Nothing on the read path or in the step loop touches it: its cost is its own thread's, a few file reads a second
// (dlio_host_sampler_cpu_seconds_total counts that thread's CPU time; docs/metrics.md gives the figure measured).
// Thread-safety: every method may be called from any thread; the state the thread shares is guarded by mu_.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/host_stats.h"
#include "base/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "results/host_telemetry.h"

namespace dlio {

class HostSampler : public prometheus::Collectable {
 public:
  struct Options {
    std::string agent;                  // the `agent` label
    std::string data_root;              // its block devices are the ones sampled (DataRootDevices)
    // Between two readings of the counters: the resolution of /metrics (1 s: Prometheus scrapes every 5-15 s, so
    // a finer tick would cost CPU for nothing; a coarser one would blur the short phases of small jobs).
    std::chrono::milliseconds tick{1000};
    HostSources sources;                // where the files are (tests: a captured folder); devices filled in
    // Link speeds in Mb/s given for interfaces whose driver reports none or not the real one (a veth pair, a link
    // shaped by tc):
    // dlio-agent --link-speed IFACE=MBPS. They replace what /sys/class/net says for those interfaces.
    std::map<std::string, int64_t> link_speeds_mbps;
  };
  // Starts the thread (the first rates 0.1 s later, or after one tick if shorter; then every tick).
  explicit HostSampler(Options opt);
  // Stops the thread (within one tick's wake-up, not a full tick).
  ~HostSampler() override;
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  // Names one phase's recording (BeginPhase's answer, EndPhase's argument). Never 0.
  using PhaseId = uint64_t;
  // A phase begins: its series starts now, one sample every `interval` (at least one tick). Other phases being
  // recorded (another job's, on a shared agent) go on: each has a series of its own.
  PhaseId BeginPhase(std::chrono::milliseconds interval);
  // Phase `id` ended: its series (the last sample cut here, unless shorter than 50 ms) and the whole phase's sample.
  // Empty telemetry for an id that is not being recorded (never begun, or ended already).
  HostTelemetry EndPhase(PhaseId id);
  // The last tick's rates (nullopt before the first tick).
  std::optional<HostSample> Latest() const;
  // CPU time the sampler's thread used so far, in seconds (CLOCK_THREAD_CPUTIME_ID).
  double SamplerCpuSeconds() const;
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  HostCounters Read() const;
  void Loop();

  const Options opt_;
  const int64_t ticks_per_second_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<HostCounters> last_ ABSL_GUARDED_BY(mu_);      // the last tick's reading
  std::optional<HostSample> latest_ ABSL_GUARDED_BY(mu_);      // rates between the last two ticks
  double sampler_cpu_s_ ABSL_GUARDED_BY(mu_) = 0;
  // One phase being recorded.
  struct Recording {
    std::chrono::milliseconds interval{10000};
    HostCounters start, last;  // the phase's first reading; the one its series' last sample ended at
    std::vector<HostSample> series;
  };
  PhaseId last_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<PhaseId, Recording> recordings_ ABSL_GUARDED_BY(mu_);  // the phases being recorded, at most one per job
  std::thread thread_;
};

}  // namespace dlio
