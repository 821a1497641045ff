#include "results/host_telemetry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "results/results.h"

namespace dlio {

namespace {

using nlohmann::json;

json SpeedOrNull(int64_t mbps) { return mbps > 0 ? json(mbps) : json(nullptr); }
json PercentOrNull(double p) { return p >= 0 ? json(p) : json(nullptr); }

template <typename T>
T Get(const json& j, const char* key, T fallback = T()) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

json DisksJson(const std::vector<DiskRate>& disks) {
  json out = json::array();
  for (const DiskRate& d : disks) {
    out.push_back({{"device", d.name},
                   {"read_bytes_per_second", d.read_bytes_per_s},
                   {"write_bytes_per_second", d.write_bytes_per_s},
                   {"read_iops", d.read_iops},
                   {"write_iops", d.write_iops},
                   {"in_flight", d.in_flight},
                   {"busy_percent", d.busy_percent}});
  }
  return out;
}

json NicsJson(const std::vector<NicRate>& nics) {
  json out = json::array();
  for (const NicRate& n : nics) {
    out.push_back({{"interface", n.name},
                   {"rx_bytes_per_second", n.rx_bytes_per_s},
                   {"tx_bytes_per_second", n.tx_bytes_per_s},
                   {"rx_packets_per_second", n.rx_packets_per_s},
                   {"tx_packets_per_second", n.tx_packets_per_s},
                   {"speed_mbps", SpeedOrNull(n.speed_mbps)},
                   {"utilisation_percent", PercentOrNull(n.utilisation_percent)}});
  }
  return out;
}

void ReadDevices(const json& j, HostSample* s) {
  for (const json& d : j.value("disks", json::array())) {
    if (!d.is_object()) continue;
    DiskRate r;
    r.name = Get<std::string>(d, "device");
    r.read_bytes_per_s = Get<double>(d, "read_bytes_per_second");
    r.write_bytes_per_s = Get<double>(d, "write_bytes_per_second");
    r.read_iops = Get<double>(d, "read_iops");
    r.write_iops = Get<double>(d, "write_iops");
    r.in_flight = Get<uint64_t>(d, "in_flight");
    r.busy_percent = Get<double>(d, "busy_percent");
    s->disks.push_back(std::move(r));
  }
  for (const json& n : j.value("nics", json::array())) {
    if (!n.is_object()) continue;
    NicRate r;
    r.name = Get<std::string>(n, "interface");
    r.rx_bytes_per_s = Get<double>(n, "rx_bytes_per_second");
    r.tx_bytes_per_s = Get<double>(n, "tx_bytes_per_second");
    r.rx_packets_per_s = Get<double>(n, "rx_packets_per_second");
    r.tx_packets_per_s = Get<double>(n, "tx_packets_per_second");
    r.speed_mbps = Get<int64_t>(n, "speed_mbps", -1);
    r.utilisation_percent = Get<double>(n, "utilisation_percent", -1);
    s->nics.push_back(std::move(r));
  }
}

}  // namespace

json HostSampleJson(const HostSample& s) {
  return {{"time", FormatTimestamp(s.unix_ms * 1000)},
          {"unix_ms", s.unix_ms},
          {"seconds", s.seconds},
          {"cpu",
           {{"user", s.cpu_user},
            {"system", s.cpu_system},
            {"iowait", s.cpu_iowait},
            {"steal", s.cpu_steal},
            {"idle", s.cpu_idle},
            {"busy", s.cpu_busy},
            {"cores", s.core_busy}}},
          {"process",
           {{"cpu_percent", s.process_cpu},
            {"cpu_limit_cores", s.cpu_limit_cores},
            {"read_call_bytes", s.process_rchar},
            {"storage_read_bytes", s.process_read_bytes}}},
          {"memory",
           {{"total_bytes", s.mem.total},
            {"available_bytes", s.mem.available},
            {"page_cache_bytes", s.mem.page_cache},
            {"dirty_bytes", s.mem.dirty}}},
          {"disks", DisksJson(s.disks)},
          {"nics", NicsJson(s.nics)}};
}

absl::StatusOr<HostSample> HostSampleFromJson(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("host sample: not a JSON object");
  HostSample s;
  s.unix_ms = Get<int64_t>(j, "unix_ms");
  s.seconds = Get<double>(j, "seconds");
  const json cpu = j.value("cpu", json::object());
  s.cpu_user = Get<double>(cpu, "user");
  s.cpu_system = Get<double>(cpu, "system");
  s.cpu_iowait = Get<double>(cpu, "iowait");
  s.cpu_steal = Get<double>(cpu, "steal");
  s.cpu_idle = Get<double>(cpu, "idle");
  s.cpu_busy = Get<double>(cpu, "busy");
  s.core_busy = Get<std::vector<double>>(cpu, "cores");
  s.cores = static_cast<int>(s.core_busy.size());
  const json proc = j.value("process", json::object());
  s.process_cpu = Get<double>(proc, "cpu_percent");
  s.cpu_limit_cores = Get<double>(proc, "cpu_limit_cores");
  s.process_rchar = Get<uint64_t>(proc, "read_call_bytes");
  s.process_read_bytes = Get<uint64_t>(proc, "storage_read_bytes");
  const json mem = j.value("memory", json::object());
  s.mem.total = Get<uint64_t>(mem, "total_bytes");
  s.mem.available = Get<uint64_t>(mem, "available_bytes");
  s.mem.page_cache = Get<uint64_t>(mem, "page_cache_bytes");
  s.mem.dirty = Get<uint64_t>(mem, "dirty_bytes");
  ReadDevices(j, &s);
  return s;
}

std::string HostTelemetryText(const HostTelemetry& t) {
  if (t.empty()) return "";
  json series = json::array();
  for (const HostSample& s : t.series) series.push_back(HostSampleJson(s));
  json j = {{"series", series}};
  if (t.phase) j["phase"] = HostSampleJson(*t.phase);
  return j.dump();
}

absl::StatusOr<HostTelemetry> ParseHostTelemetry(const std::string& text) {
  HostTelemetry t;
  if (text.empty()) return t;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::InvalidArgumentError("host telemetry: not a JSON object");
  for (const json& s : j.value("series", json::array())) {
    absl::StatusOr<HostSample> one = HostSampleFromJson(s);
    if (!one.ok()) return one.status();
    t.series.push_back(*std::move(one));
  }
  if (j.contains("phase")) {
    absl::StatusOr<HostSample> p = HostSampleFromJson(j["phase"]);
    if (!p.ok()) return p.status();
    t.phase = *std::move(p);
  }
  return t;
}

std::optional<HostSummary> SummarizeHost(const std::vector<HostSample>& train_phases) {
  HostSummary h;
  std::map<std::string, double> nic_util, nic_rx, disk_busy;  // time-weighted sums per interface / device
  std::map<std::string, int64_t> nic_speed;
  for (const HostSample& s : train_phases) {
    if (s.seconds <= 0) continue;
    h.seconds += s.seconds;
    h.cores = std::max(h.cores, s.cores);
    h.cpu_busy_mean += s.cpu_busy * s.seconds;
    h.cpu_busy_max = std::max(h.cpu_busy_max, s.cpu_busy);
    h.cpu_iowait_mean += s.cpu_iowait * s.seconds;
    h.cpu_steal_mean += s.cpu_steal * s.seconds;
    h.process_cpu_mean += s.process_cpu * s.seconds;
    if (s.cpu_limit_cores > 0) h.cpu_limit_cores = s.cpu_limit_cores;
    h.page_cache_bytes_max = std::max<uint64_t>(h.page_cache_bytes_max, s.mem.page_cache);
    h.dirty_bytes_max = std::max<uint64_t>(h.dirty_bytes_max, s.mem.dirty);
    h.memory_total_bytes = std::max<uint64_t>(h.memory_total_bytes, s.mem.total);
    h.process_read_call_bytes += s.process_rchar;
    h.process_storage_read_bytes += s.process_read_bytes;
    for (const DiskRate& d : s.disks) {
      h.disk_read_bytes += d.read_bytes_per_s * s.seconds;
      disk_busy[d.name] = std::max(disk_busy[d.name], d.busy_percent);
    }
    for (const NicRate& n : s.nics) {
      h.nic_rx_bytes += n.rx_bytes_per_s * s.seconds;
      nic_rx[n.name] = std::max(nic_rx[n.name], n.rx_bytes_per_s);
      if (n.utilisation_percent >= 0) nic_util[n.name] = std::max(nic_util[n.name], n.utilisation_percent);
      nic_speed[n.name] = n.speed_mbps;
    }
  }
  if (h.seconds <= 0) return std::nullopt;
  h.cpu_busy_mean /= h.seconds;
  h.cpu_iowait_mean /= h.seconds;
  h.cpu_steal_mean /= h.seconds;
  h.process_cpu_mean /= h.seconds;
  h.disk_read_bytes_per_s_mean = h.disk_read_bytes / h.seconds;
  for (const auto& [name, busy] : disk_busy) h.disk_busy_max = std::max(h.disk_busy_max, busy);
  for (const auto& [name, util] : nic_util) {
    if (util > h.nic_utilisation_max) {
      h.nic_utilisation_max = util;
      h.nic_busiest = name;
      h.nic_speed_mbps = nic_speed[name];
    }
  }
  for (const auto& [name, rx] : nic_rx) {
    if (h.nic_busiest.empty() || name == h.nic_busiest)
      h.nic_rx_bytes_per_s_max = std::max(h.nic_rx_bytes_per_s_max, rx);
  }
  return h;
}

json HostSummaryJson(const HostSummary& h) {
  return {{"seconds", h.seconds},
          {"cores", h.cores},
          {"cpu_busy_mean_percent", h.cpu_busy_mean},
          {"cpu_busy_max_percent", h.cpu_busy_max},
          {"cpu_iowait_mean_percent", h.cpu_iowait_mean},
          {"cpu_steal_mean_percent", h.cpu_steal_mean},
          {"process_cpu_mean_percent", h.process_cpu_mean},
          {"cpu_limit_cores", h.cpu_limit_cores},
          {"nic_busiest", h.nic_busiest.empty() ? json(nullptr) : json(h.nic_busiest)},
          {"nic_speed_mbps", SpeedOrNull(h.nic_speed_mbps)},
          {"nic_utilisation_max_percent", PercentOrNull(h.nic_utilisation_max)},
          {"nic_rx_bytes", h.nic_rx_bytes},
          {"disk_read_bytes", h.disk_read_bytes},
          {"disk_read_bytes_per_second_mean", h.disk_read_bytes_per_s_mean},
          {"disk_busy_max_percent", h.disk_busy_max},
          {"memory_total_bytes", h.memory_total_bytes},
          {"page_cache_bytes_max", h.page_cache_bytes_max},
          {"dirty_bytes_max", h.dirty_bytes_max},
          {"process_read_call_bytes", h.process_read_call_bytes},
          {"process_storage_read_bytes", h.process_storage_read_bytes}};
}

}  // namespace dlio
