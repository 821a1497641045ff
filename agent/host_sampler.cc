#include "agent/host_sampler.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "results/prometheus_family.h"

namespace dlio {

namespace {

using prometheus::MetricType;

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double ThreadCpuSeconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A sample cut shorter than this at the phase's end is dropped: its rates would be noise.
constexpr double kMinCutSeconds = 0.05;

// The CPU, memory and process families of one sample.
void AppendCpuFamilies(const MetricLabels& agent, const HostSample& s, std::vector<prometheus::MetricFamily>* out) {
  auto cpu = MetricFamily("dlio_host_cpu_ratio",
                          "Share of all cores' time in each mode over the last second (label mode: user, system, "
                          "iowait, steal, idle).",
                          MetricType::Gauge);
  const std::pair<const char*, double> modes[] = {{"user", s.cpu_user},
                                                  {"system", s.cpu_system},
                                                  {"iowait", s.cpu_iowait},
                                                  {"steal", s.cpu_steal},
                                                  {"idle", s.cpu_idle}};
  for (const auto& [mode, pct] : modes) {
    MetricLabels l = agent;
    l.push_back({"mode", mode});
    AddSample(cpu, l, pct / 100);
  }
  out->push_back(std::move(cpu));
  auto core = MetricFamily("dlio_host_cpu_core_busy_ratio",
                           "Share of the last second each core was busy (not idle nor in iowait; label core).",
                           MetricType::Gauge);
  for (size_t i = 0; i < s.core_busy.size(); ++i) {
    MetricLabels l = agent;
    l.push_back({"core", std::to_string(i)});
    AddSample(core, l, s.core_busy[i] / 100);
  }
  out->push_back(std::move(core));
  auto proc =
      MetricFamily("dlio_host_process_cpu_ratio",
                   "CPU the agent process used over the last second, in cores (1 = one core busy).", MetricType::Gauge);
  AddSample(proc, agent, s.process_cpu / 100);
  out->push_back(std::move(proc));
  auto mem = MetricFamily("dlio_host_memory_bytes", "Host memory (label kind: total, available, page_cache, dirty).",
                          MetricType::Gauge);
  const std::pair<const char*, uint64_t> kinds[] = {
      {"total", s.mem.total}, {"available", s.mem.available}, {"page_cache", s.mem.page_cache}, {"dirty", s.mem.dirty}};
  for (const auto& [kind, bytes] : kinds) {
    MetricLabels l = agent;
    l.push_back({"kind", kind});
    AddSample(mem, l, static_cast<double>(bytes));
  }
  out->push_back(std::move(mem));
}

// The disk and network families of one sample.
void AppendDeviceFamilies(const MetricLabels& agent, const HostSample& s, std::vector<prometheus::MetricFamily>* out) {
  auto bytes = MetricFamily("dlio_host_disk_bytes_per_second",
                            "Bytes read and written per second by a block device under the data root over the last "
                            "second (labels device, direction).",
                            MetricType::Gauge);
  auto iops = MetricFamily("dlio_host_disk_iops",
                           "Read and write operations per second completed by a block device under the data root "
                           "(labels device, direction).",
                           MetricType::Gauge);
  auto inflight = MetricFamily("dlio_host_disk_in_flight",
                               "I/O requests in flight on a block device under the data root (its queue depth).",
                               MetricType::Gauge);
  auto busy =
      MetricFamily("dlio_host_disk_busy_ratio",
                   "Share of the last second a block device under the data root had I/O in flight.", MetricType::Gauge);
  for (const DiskRate& d : s.disks) {
    for (const auto& [dir, b, ops] : {std::tuple{"read", d.read_bytes_per_s, d.read_iops},
                                      std::tuple{"write", d.write_bytes_per_s, d.write_iops}}) {
      AddSample(bytes, MetricLabels{agent[0], {"device", d.name}, {"direction", dir}}, b);
      AddSample(iops, MetricLabels{agent[0], {"device", d.name}, {"direction", dir}}, ops);
    }
    AddSample(inflight, MetricLabels{agent[0], {"device", d.name}}, static_cast<double>(d.in_flight));
    AddSample(busy, MetricLabels{agent[0], {"device", d.name}}, d.busy_percent / 100);
  }
  auto nb = MetricFamily("dlio_host_network_bytes_per_second",
                         "Bytes received and sent per second by a network interface over the last second (labels "
                         "interface, direction: rx, tx).",
                         MetricType::Gauge);
  auto np = MetricFamily("dlio_host_network_packets_per_second",
                         "Packets received and sent per second by a network interface (labels interface, direction).",
                         MetricType::Gauge);
  auto speed = MetricFamily("dlio_host_network_speed_bytes_per_second",
                            "Link speed of a network interface, where its driver reports one.", MetricType::Gauge);
  for (const NicRate& n : s.nics) {
    for (const auto& [dir, b, p] : {std::tuple{"rx", n.rx_bytes_per_s, n.rx_packets_per_s},
                                    std::tuple{"tx", n.tx_bytes_per_s, n.tx_packets_per_s}}) {
      AddSample(nb, MetricLabels{agent[0], {"interface", n.name}, {"direction", dir}}, b);
      AddSample(np, MetricLabels{agent[0], {"interface", n.name}, {"direction", dir}}, p);
    }
    if (n.speed_mbps > 0) {
      AddSample(speed, MetricLabels{agent[0], {"interface", n.name}}, static_cast<double>(n.speed_mbps) * 1e6 / 8);
    }
  }
  // Exported even without a series (no device under the data root, no interface with a known speed): the families
  // stay the same on every host.
  for (auto* f : {&bytes, &iops, &inflight, &busy, &nb, &np, &speed}) out->push_back(std::move(*f));
}

}  // namespace

// The data root's devices, found once before the thread starts.
HostSampler::Options WithDevices(HostSampler::Options o) {
  if (o.sources.devices.empty() && !o.data_root.empty()) o.sources.devices = DataRootDevices(o.data_root);
  return o;
}

HostSampler::HostSampler(Options opt)
    : opt_(WithDevices(std::move(opt))), ticks_per_second_(std::max(1L, sysconf(_SC_CLK_TCK))) {
  thread_ = std::thread([this] { Loop(); });
}

HostSampler::~HostSampler() {
  {
    MutexLock lk(&mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

HostCounters HostSampler::Read() const {
  HostCounters c = ReadHostCounters(opt_.sources, UnixMs(), SteadySeconds());
  for (NicCounters& n : c.nics) {
    if (auto it = opt_.link_speeds_mbps.find(n.name); it != opt_.link_speeds_mbps.end()) n.speed_mbps = it->second;
  }
  return c;
}

void HostSampler::Loop() {
  auto next = std::chrono::steady_clock::now();
  const double tick_s = std::chrono::duration<double>(opt_.tick).count();
  // The first rates 0.1 s after the start, not a tick: a scrape soon after an agent starts (or a short job's
  // phase) already finds every dlio_host_* family.
  auto wait = std::min<std::chrono::milliseconds>(opt_.tick, std::chrono::milliseconds(100));
  for (;;) {
    HostCounters c = Read();
    const double cpu = ThreadCpuSeconds();
    MutexLock lk(&mu_);
    if (last_) latest_ = DiffHost(*last_, c, ticks_per_second_);
    sampler_cpu_s_ = cpu;
    // One reading for every phase being recorded, each at its own interval. Half a tick early counts as due: the
    // series keeps its interval instead of drifting a tick late each time.
    for (auto& [id, rec] : recordings_) {
      const double interval_s = std::chrono::duration<double>(rec.interval).count();
      if (c.steady_s - rec.last.steady_s >= interval_s - tick_s / 2) {
        rec.series.push_back(DiffHost(rec.last, c, ticks_per_second_));
        rec.last = c;
      }
    }
    last_ = std::move(c);
    next += wait;
    wait = opt_.tick;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + opt_.tick;  // fell behind (a stopped process, a loaded host): no burst to catch up
    if (cv_.WaitUntil(&lk, next, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; })) return;
  }
}

HostSampler::PhaseId HostSampler::BeginPhase(std::chrono::milliseconds interval) {
  HostCounters c = Read();
  MutexLock lk(&mu_);
  Recording& rec = recordings_[++last_id_];
  rec.interval = std::max(interval, opt_.tick);
  rec.start = c;
  rec.last = std::move(c);
  return last_id_;
}

HostTelemetry HostSampler::EndPhase(PhaseId id) {
  HostCounters c = Read();
  MutexLock lk(&mu_);
  HostTelemetry t;
  auto it = recordings_.find(id);
  if (it == recordings_.end()) return t;
  Recording& rec = it->second;
  if (c.steady_s - rec.last.steady_s >= kMinCutSeconds) rec.series.push_back(DiffHost(rec.last, c, ticks_per_second_));
  t.series = std::move(rec.series);
  t.phase = DiffHost(rec.start, c, ticks_per_second_);
  recordings_.erase(it);
  return t;
}

std::optional<HostSample> HostSampler::Latest() const {
  MutexLock lk(&mu_);
  return latest_;
}

double HostSampler::SamplerCpuSeconds() const {
  MutexLock lk(&mu_);
  return sampler_cpu_s_;
}

std::vector<prometheus::MetricFamily> HostSampler::Collect() const {
  std::optional<HostSample> s;
  std::optional<HostCounters> last;
  double cpu = 0;
  {
    MutexLock lk(&mu_);
    s = latest_;
    last = last_;
    cpu = sampler_cpu_s_;
  }
  std::vector<prometheus::MetricFamily> out;
  const MetricLabels agent{{"agent", opt_.agent}};
  auto own = MetricFamily("dlio_host_sampler_cpu_seconds_total",
                          "CPU time used by the agent's host telemetry sampler thread.", MetricType::Counter);
  AddSample(own, agent, cpu);
  out.push_back(std::move(own));
  if (!s || !last) return out;
  AppendCpuFamilies(agent, *s, &out);
  AppendDeviceFamilies(agent, *s, &out);
  auto rd = MetricFamily("dlio_host_process_storage_read_bytes_total",
                         "Bytes the agent process caused to be read from block devices (/proc/self/io read_bytes: "
                         "what did not come from the page cache).",
                         MetricType::Counter);
  AddSample(rd, agent, static_cast<double>(last->io.read_bytes));
  out.push_back(std::move(rd));
  auto rc =
      MetricFamily("dlio_host_process_read_call_bytes_total",
                   "Bytes returned by the agent process's read calls of any file or socket (/proc/self/io rchar).",
                   MetricType::Counter);
  AddSample(rc, agent, static_cast<double>(last->io.rchar));
  out.push_back(std::move(rc));
  return out;
}

}  // namespace dlio
