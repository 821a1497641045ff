#include "coordinator/targets_file.h"

#include "results/results.h"
#include "nlohmann/json.hpp"

namespace dlio {

absl::Status TargetsFile::Init() {
  MutexLock lk(&mu_);
  return WriteUnlocked();
}

absl::Status TargetsFile::Add(const std::string& agent, const std::string& node, const std::string& endpoint) {
  MutexLock lk(&mu_);
  if (endpoint.empty()) return absl::OkStatus();
  targets_[agent] = Target{node, endpoint};
  return WriteUnlocked();
}

absl::Status TargetsFile::Remove(const std::string& agent) {
  MutexLock lk(&mu_);
  if (targets_.erase(agent) == 0) return absl::OkStatus();
  return WriteUnlocked();
}

absl::Status TargetsFile::WriteUnlocked() {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [agent, t] : targets_) {
    groups.push_back({{"targets", {t.endpoint}}, {"labels", {{"node", t.node}, {"dlio_agent", agent}}}});
  }
  absl::Status s = WriteFileAtomic(path_, groups.dump(2) + "\n");
  if (!s.ok()) return absl::Status(s.code(), "--targets-file: " + std::string(s.message()));
  return s;
}

std::string ResolveMetricsEndpoint(const std::string& advertised, const std::string& grpc_peer) {
  if (advertised.empty()) return "";
  const size_t colon = advertised.rfind(':');
  const std::string host = colon == std::string::npos ? "" : advertised.substr(0, colon);
  const std::string port = colon == std::string::npos ? advertised : advertised.substr(colon + 1);
  if (!host.empty() && host != "0.0.0.0" && host != "::" && host != "[::]") return advertised;
  // grpc peer: "ipv4:A.B.C.D:PORT" or "ipv6:[addr]:PORT" (anything else, e.g. "unix:", keeps the advertised form).
  std::string peer_host;
  if (grpc_peer.rfind("ipv4:", 0) == 0 || grpc_peer.rfind("ipv6:", 0) == 0) {
    const std::string rest = grpc_peer.substr(5);
    const size_t pc = rest.rfind(':');
    peer_host = pc == std::string::npos ? rest : rest.substr(0, pc);
  }
  if (peer_host.empty()) return advertised;
  return peer_host + ":" + port;
}

}  // namespace dlio
