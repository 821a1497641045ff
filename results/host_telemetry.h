// Host telemetry in the results: the samples an agent's sampler took during a phase (agent/host_sampler.h), as they
// travel to the coordinator (inside RankResult, on the agent's first local rank), as they are stored
// (<agent>_host.jsonl, one JSON object a line, docs/results.md "Host telemetry") and as summary.json sums them up
// (dlio_ext.host).
//
// A phase's telemetry is its series (one HostSample every dlio_ext.telemetry_interval seconds, the last one cut at
// the phase's end) and one HostSample over the whole phase (the figures the limit classification reads,
// results/limit.h). The JSON form of a sample (HostSampleJson) is both the wire form and the file's line.
// Units: percentages 0-100 (CPU shares of all cores; the process's CPU of one core), bytes, bytes/s, operations/s.
// Thread-safety: plain values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/host_stats.h"
#include "nlohmann/json.hpp"

namespace dlio {

struct HostTelemetry {
  std::vector<HostSample> series;   // every telemetry_interval seconds of the phase
  std::optional<HostSample> phase;  // the whole phase (absent from agents without a sampler)
  bool empty() const { return series.empty() && !phase; }
};

// One sample as an object: {"time" (ISO-8601 local, DLIO's format), "unix_ms", "seconds", "cpu": {"user",
// "system", "iowait", "steal", "idle", "busy", "cores": [busy per core]}, "process": {"cpu_percent",
// "cpu_limit_cores", "read_call_bytes", "storage_read_bytes"}, "memory": {"total_bytes", "available_bytes",
// "page_cache_bytes", "dirty_bytes"}, "disks": [{"device", "read_bytes_per_second", "write_bytes_per_second",
// "read_iops", "write_iops", "in_flight", "busy_percent"}], "nics": [{"interface", "rx_bytes_per_second",
// "tx_bytes_per_second", "rx_packets_per_second", "tx_packets_per_second", "speed_mbps" (null when unknown),
// "utilisation_percent" (null when unknown)}]}.
nlohmann::json HostSampleJson(const HostSample& s);
// The inverse; missing members read 0 (an error only when `j` is not an object).
absl::StatusOr<HostSample> HostSampleFromJson(const nlohmann::json& j);

// The wire form of a phase's telemetry: {"series": [...], "phase": {...}} as text; "" for empty telemetry.
std::string HostTelemetryText(const HostTelemetry& t);
// The inverse; "" gives empty telemetry. An error names what is malformed.
absl::StatusOr<HostTelemetry> ParseHostTelemetry(const std::string& text);

// What summary.json keeps of one agent's host over the training epochs (mean over time, weighted by the phases'
// lengths, and the highest phase figure), and what the limit line quotes.
struct HostSummary {
  double seconds = 0;                 // training time sampled
  int cores = 0;
  double cpu_busy_mean = 0, cpu_busy_max = 0;  // percent of all cores
  double cpu_iowait_mean = 0, cpu_steal_mean = 0;
  double process_cpu_mean = 0;        // percent of one core
  double cpu_limit_cores = 0;         // the cores the agent process may use (affinity, cgroup quota); 0 unknown
  double nic_utilisation_max = -1;    // percent of its link speed, the busiest interface's phase mean; -1 unknown
  std::string nic_busiest;            // that interface
  int64_t nic_speed_mbps = -1;
  double nic_rx_bytes_per_s_max = 0;  // the busiest interface's receive rate (any speed)
  double disk_read_bytes_per_s_mean = 0;
  double disk_busy_max = 0;           // percent, the busiest device's phase mean
  uint64_t page_cache_bytes_max = 0, dirty_bytes_max = 0, memory_total_bytes = 0;
  uint64_t process_read_call_bytes = 0;   // /proc/self/io rchar over the training epochs
  uint64_t process_storage_read_bytes = 0;  // /proc/self/io read_bytes: what the block layer fetched
  double disk_read_bytes = 0;         // bytes the data root's devices read over the training epochs
  double nic_rx_bytes = 0;            // bytes every interface received over the training epochs
};
// Summed over the whole-phase samples of an agent's training epochs; nullopt when there are none.
std::optional<HostSummary> SummarizeHost(const std::vector<HostSample>& train_phases);
nlohmann::json HostSummaryJson(const HostSummary& h);

}  // namespace dlio
