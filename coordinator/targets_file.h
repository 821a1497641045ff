// TargetsFile: a Prometheus file_sd target file listing the /metrics endpoints of the attached agents, so one
// scrape config (`file_sd_configs: [{files: [PATH]}]`, see dashboards/prometheus.yml) follows the fleet.
//
// Format (Prometheus file_sd JSON): one group per agent, sorted by agent name:
//   [{"targets": ["10.0.0.7:9464"], "labels": {"node": "n1", "dlio_agent": "n1"}}, ...]
// Target labels must not be `agent`, `job_id` or `rank`: the agents' series carry those themselves, and Prometheus
// would rename the series' labels to exported_* on a clash. Agents without a metrics endpoint are left out.
// Every change rewrites the whole file under a temporary name in the same folder and renames it, so Prometheus
// never reads a half-written file. The file is written (empty list) at construction and left in place at exit
// (stale targets then show as down, which is what they are).
// Thread-safety: all methods may be called from any thread (one mutex around the map and the write).
#pragma once

#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"

namespace dlio {

class TargetsFile {
 public:
  explicit TargetsFile(std::string path) : path_(std::move(path)) {}
  // Writes the current (initially empty) list. Errors name the path.
  absl::Status Init();
  // endpoint: host:port to scrape; empty = the agent serves no metrics (not listed).
  absl::Status Add(const std::string& agent, const std::string& node, const std::string& endpoint);
  absl::Status Remove(const std::string& agent);
  const std::string& path() const { return path_; }

 private:
  struct Target {
    std::string node, endpoint;
  };
  absl::Status WriteUnlocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  Mutex mu_;
  std::map<std::string, Target> targets_ ABSL_GUARDED_BY(mu_);
};

// The address Prometheus should scrape for an agent that advertised `advertised` (host:port, see
// AdvertisedMetricsEndpoint in agent/metrics.h) over a gRPC connection from `grpc_peer` ("ipv4:10.0.0.7:51234",
// "ipv6:[fd00::7]:51234"). A wildcard or empty host (0.0.0.0, ::, [::], "") is replaced by the peer's address:
// the agent listens everywhere, and the coordinator knows which of its addresses reaches it. Empty in, empty out.
std::string ResolveMetricsEndpoint(const std::string& advertised, const std::string& grpc_peer);

}  // namespace dlio
