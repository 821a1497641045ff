#include "base/host_stats.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dlio {

namespace {

std::vector<absl::string_view> Fields(absl::string_view line) {
  return absl::StrSplit(line, ' ', absl::SkipWhitespace());
}

uint64_t U64(absl::string_view s) {
  uint64_t v = 0;
  return absl::SimpleAtoi(s, &v) ? v : 0;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// b - a, 0 when the counter went backwards (reset).
uint64_t Delta(uint64_t a, uint64_t b) { return b >= a ? b - a : 0; }

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

absl::StatusOr<std::vector<CpuTimes>> ParseProcStat(absl::string_view text) {
  std::vector<CpuTimes> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "cpu")) continue;
    const std::vector<absl::string_view> f = Fields(line);
    if (f.size() < 5) continue;
    const bool all = f[0] == "cpu";
    if (all != out.empty()) continue;  // the aggregate first, then the cores
    CpuTimes t;
    uint64_t* slots[] = {&t.user, &t.nice, &t.system, &t.idle, &t.iowait, &t.irq, &t.softirq, &t.steal};
    for (size_t i = 0; i < 8 && i + 1 < f.size(); ++i) *slots[i] = U64(f[i + 1]);
    out.push_back(t);
  }
  if (out.empty()) return absl::InvalidArgumentError("/proc/stat: no \"cpu\" line");
  return out;
}

absl::StatusOr<uint64_t> ParseSelfStatCpuTicks(absl::string_view text) {
  const size_t close = text.rfind(')');
  if (close == absl::string_view::npos) return absl::InvalidArgumentError("/proc/self/stat: no \")\" after comm");
  // After ")": state is field 3, utime field 14, stime field 15 (proc(5)).
  const std::vector<absl::string_view> f = Fields(text.substr(close + 1));
  if (f.size() < 13) return absl::InvalidArgumentError("/proc/self/stat: fewer than 15 fields");
  return U64(f[11]) + U64(f[12]);
}

absl::StatusOr<MemCounters> ParseMeminfo(absl::string_view text) {
  MemCounters m;
  bool total = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const std::vector<absl::string_view> f = Fields(line);
    if (f.size() < 2) continue;
    const uint64_t bytes = U64(f[1]) * (f.size() > 2 && f[2] == "kB" ? 1024 : 1);
    if (f[0] == "MemTotal:") {
      m.total = bytes;
      total = true;
    } else if (f[0] == "MemAvailable:") {
      m.available = bytes;
    } else if (f[0] == "Cached:") {
      m.page_cache = bytes;
    } else if (f[0] == "Dirty:") {
      m.dirty = bytes;
    }
  }
  if (!total) return absl::InvalidArgumentError("/proc/meminfo: no MemTotal line");
  return m;
}

std::vector<DiskCounters> ParseDiskstats(absl::string_view text, const std::vector<std::string>& devices) {
  std::vector<DiskCounters> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const std::vector<absl::string_view> f = Fields(line);
    if (f.size() < 14) continue;
    if (!devices.empty() && std::find(devices.begin(), devices.end(), f[2]) == devices.end()) continue;
    DiskCounters d;
    d.name = std::string(f[2]);
    d.major = static_cast<unsigned>(U64(f[0]));
    d.minor = static_cast<unsigned>(U64(f[1]));
    d.reads = U64(f[3]);
    d.read_sectors = U64(f[5]);
    d.writes = U64(f[7]);
    d.write_sectors = U64(f[9]);
    d.in_flight = U64(f[11]);
    d.io_ms = U64(f[12]);
    out.push_back(std::move(d));
  }
  return out;
}

SelfIo ParseSelfIo(absl::string_view text) {
  SelfIo io;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const std::vector<absl::string_view> f = Fields(line);
    if (f.size() < 2) continue;
    if (f[0] == "rchar:") io.rchar = U64(f[1]);
    if (f[0] == "read_bytes:") io.read_bytes = U64(f[1]);
  }
  return io;
}

double ParseCpuQuotaCores(absl::string_view text) {
  const std::vector<absl::string_view> f = Fields(absl::StripAsciiWhitespace(text));
  if (f.size() < 2 || f[0] == "max") return 0;
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(f[0], &quota) || !absl::SimpleAtod(f[1], &period) || quota <= 0 || period <= 0) return 0;
  return quota / period;
}

double CpuLimitCores(const std::string& cgroup_root) {
  cpu_set_t set;
  CPU_ZERO(&set);
  double cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
  // /proc/self/cgroup: "0::/path" (v2), "N:cpu,cpuacct:/path" (v1).
  for (absl::string_view line : absl::StrSplit(ReadText("/proc/self/cgroup"), '\n')) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    double quota = 0;
    if (f[0] == "0" && f[1].empty()) {
      quota = ParseCpuQuotaCores(ReadText(absl::StrCat(cgroup_root, f[2], "/cpu.max")));
    } else if (absl::StrContains(absl::StrCat(",", f[1], ","), ",cpu,")) {
      for (const char* dir : {"/cpu", "/cpu,cpuacct"}) {
        const std::string base = absl::StrCat(cgroup_root, dir, f[2] == "/" ? "" : f[2]);
        const std::string q = std::string(absl::StripAsciiWhitespace(ReadText(base + "/cpu.cfs_quota_us")));
        if (q.empty()) continue;
        quota = ParseCpuQuotaCores(absl::StrCat(q, " ", ReadText(base + "/cpu.cfs_period_us")));
        break;
      }
    }
    if (quota > 0 && (cores <= 0 || quota < cores)) cores = quota;
  }
  return cores;
}

HostSample DiffHost(const HostCounters& a, const HostCounters& b, int64_t ticks_per_second) {
  HostSample s;
  s.unix_ms = b.unix_ms;
  s.seconds = std::max(0.0, b.steady_s - a.steady_s);
  s.mem = b.mem;
  if (!a.cpu.empty() && a.cpu.size() == b.cpu.size()) {
    const CpuTimes& x = a.cpu[0];
    const CpuTimes& y = b.cpu[0];
    const uint64_t total = Delta(x.Total(), y.Total());
    s.cpu_user = Percent(Delta(x.user, y.user) + Delta(x.nice, y.nice), total);
    s.cpu_system = Percent(Delta(x.system, y.system) + Delta(x.irq, y.irq) + Delta(x.softirq, y.softirq), total);
    s.cpu_iowait = Percent(Delta(x.iowait, y.iowait), total);
    s.cpu_steal = Percent(Delta(x.steal, y.steal), total);
    s.cpu_idle = Percent(Delta(x.idle, y.idle), total);
    s.cpu_busy = total == 0 ? 0.0 : std::max(0.0, 100.0 - s.cpu_idle - s.cpu_iowait);
    for (size_t i = 1; i < b.cpu.size(); ++i) {
      const uint64_t t = Delta(a.cpu[i].Total(), b.cpu[i].Total());
      const uint64_t idle = Delta(a.cpu[i].idle, b.cpu[i].idle) + Delta(a.cpu[i].iowait, b.cpu[i].iowait);
      s.core_busy.push_back(t == 0 ? 0.0 : 100.0 - Percent(idle, t));
    }
  }
  s.cores = static_cast<int>(s.core_busy.size());
  s.cpu_limit_cores = b.cpu_limit_cores;
  if (s.seconds > 0 && ticks_per_second > 0) {
    s.process_cpu = 100.0 * static_cast<double>(Delta(a.process_cpu_ticks, b.process_cpu_ticks)) /
                    static_cast<double>(ticks_per_second) / s.seconds;
  }
  const double secs = s.seconds > 0 ? s.seconds : 1.0;
  for (const DiskCounters& y : b.disks) {
    auto x = std::find_if(a.disks.begin(), a.disks.end(), [&](const DiskCounters& d) { return d.name == y.name; });
    if (x == a.disks.end()) continue;
    DiskRate r;
    r.name = y.name;
    r.read_bytes_per_s = 512.0 * static_cast<double>(Delta(x->read_sectors, y.read_sectors)) / secs;
    r.write_bytes_per_s = 512.0 * static_cast<double>(Delta(x->write_sectors, y.write_sectors)) / secs;
    r.read_iops = static_cast<double>(Delta(x->reads, y.reads)) / secs;
    r.write_iops = static_cast<double>(Delta(x->writes, y.writes)) / secs;
    r.in_flight = y.in_flight;
    r.busy_percent = std::min(100.0, static_cast<double>(Delta(x->io_ms, y.io_ms)) / 10.0 / secs);
    s.disks.push_back(std::move(r));
  }
  for (const NicCounters& y : b.nics) {
    auto x = std::find_if(a.nics.begin(), a.nics.end(), [&](const NicCounters& n) { return n.name == y.name; });
    if (x == a.nics.end()) continue;
    NicRate r;
    r.name = y.name;
    r.rx_bytes_per_s = static_cast<double>(Delta(x->rx_bytes, y.rx_bytes)) / secs;
    r.tx_bytes_per_s = static_cast<double>(Delta(x->tx_bytes, y.tx_bytes)) / secs;
    r.rx_packets_per_s = static_cast<double>(Delta(x->rx_packets, y.rx_packets)) / secs;
    r.tx_packets_per_s = static_cast<double>(Delta(x->tx_packets, y.tx_packets)) / secs;
    r.speed_mbps = y.speed_mbps;
    if (y.speed_mbps > 0) {
      r.utilisation_percent =
          100.0 * std::max(r.rx_bytes_per_s, r.tx_bytes_per_s) * 8.0 / (static_cast<double>(y.speed_mbps) * 1e6);
    }
    s.nics.push_back(std::move(r));
  }
  s.process_rchar = Delta(a.io.rchar, b.io.rchar);
  s.process_read_bytes = Delta(a.io.read_bytes, b.io.read_bytes);
  return s;
}

HostCounters ReadHostCounters(const HostSources& src, int64_t unix_ms, double steady_s) {
  HostCounters c;
  c.unix_ms = unix_ms;
  c.steady_s = steady_s;
  if (absl::StatusOr<std::vector<CpuTimes>> cpu = ParseProcStat(ReadText(src.proc + "/stat")); cpu.ok()) {
    c.cpu = *std::move(cpu);
  }
  if (absl::StatusOr<uint64_t> t = ParseSelfStatCpuTicks(ReadText(src.self + "/stat")); t.ok()) {
    c.process_cpu_ticks = *t;
  }
  if (absl::StatusOr<MemCounters> m = ParseMeminfo(ReadText(src.proc + "/meminfo")); m.ok()) c.mem = *m;
  if (!src.devices.empty()) c.disks = ParseDiskstats(ReadText(src.proc + "/diskstats"), src.devices);
  c.io = ParseSelfIo(ReadText(src.self + "/io"));
  c.cpu_limit_cores = CpuLimitCores(src.cgroup);
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(src.net, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (name == "lo") continue;
    const std::string dir = absl::StrCat(src.net, "/", name);
    NicCounters n;
    n.name = name;
    n.rx_bytes = U64(absl::StripAsciiWhitespace(ReadText(dir + "/statistics/rx_bytes")));
    n.tx_bytes = U64(absl::StripAsciiWhitespace(ReadText(dir + "/statistics/tx_bytes")));
    n.rx_packets = U64(absl::StripAsciiWhitespace(ReadText(dir + "/statistics/rx_packets")));
    n.tx_packets = U64(absl::StripAsciiWhitespace(ReadText(dir + "/statistics/tx_packets")));
    int64_t speed = -1;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadText(dir + "/speed")), &speed) || speed <= 0) speed = -1;
    n.speed_mbps = speed;
    c.nics.push_back(std::move(n));
  }
  return c;
}

std::vector<std::string> DataRootDevices(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && major(st.st_dev) != 0) {
    const std::string link = absl::StrCat("/sys/dev/block/", major(st.st_dev), ":", minor(st.st_dev));
    std::error_code ec;
    const std::filesystem::path dev = std::filesystem::canonical(link, ec);
    if (!ec) {
      // A partition's folder sits inside its disk's (.../block/sda/sda1) and holds a "partition" file.
      const bool partition = std::filesystem::exists(dev / "partition", ec);
      return {partition ? dev.parent_path().filename().string() : dev.filename().string()};
    }
  }
  std::vector<std::string> out;
  for (const DiskCounters& d : ParseDiskstats(ReadText("/proc/diskstats"), {})) {
    if (absl::StartsWith(d.name, "loop") || absl::StartsWith(d.name, "ram") || absl::StartsWith(d.name, "zram")) {
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::exists(absl::StrCat("/sys/block/", d.name), ec)) continue;  // partitions are not there
    out.push_back(d.name);
  }
  return out;
}

}  // namespace dlio
