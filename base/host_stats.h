// Host statistics: the kernel's cumulative counters of CPU, memory, block devices, network interfaces and this
// process's own CPU and I/O, and the rates between two readings (one HostSample per interval).
//
// Parsers are pure functions over the text of one file each, unit-tested with captured text:
//   /proc/stat            per core user, nice, system, idle, iowait, irq, softirq, steal (clock ticks)
//   /proc/self/stat       utime + stime of this process (clock ticks, fields 14 and 15 after the ")" of comm)
//   /proc/meminfo         MemTotal, MemAvailable, Cached (the page cache), Dirty (kB in the file, bytes here)
//   /proc/diskstats       per device: reads, sectors read, writes, sectors written, I/O in flight, ms doing I/O
//                         (sectors are 512 bytes whatever the device's block size: Documentation/admin-guide/iostats)
//   /proc/self/io         rchar (bytes the process asked read() for) and read_bytes (bytes it caused to be fetched
//                         from the block layer: what did not come from the page cache)
//   /sys/class/net/<nic>/statistics/{rx,tx}_{bytes,packets} and speed (Mb/s; -1 or unreadable: unknown)
// ReadHostCounters() reads those files below a root (tests point it at a folder of captured files) and DiffHost()
// turns two readings into rates. DataRootDevices() names the block devices under a path.
// Units: bytes, bytes/s, operations/s, and percentages of the whole host's CPU time (0-100) or of one core for the
// process; time as Unix milliseconds (system clock) and steady seconds.
// Thread-safety: pure functions, and readers of files that share nothing.
#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace dlio {

// One line of /proc/stat, in clock ticks (USER_HZ).
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};
// [0] = the "cpu" line (all cores), then "cpuN" in the file's order. Error when the "cpu" line is missing.
absl::StatusOr<std::vector<CpuTimes>> ParseProcStat(absl::string_view text);
// utime + stime of /proc/<pid>/stat (a comm with spaces or parentheses is skipped to its last ")").
absl::StatusOr<uint64_t> ParseSelfStatCpuTicks(absl::string_view text);

struct MemCounters {
  uint64_t total = 0, available = 0, page_cache = 0, dirty = 0;  // bytes
};
// Error when MemTotal is missing; other missing lines read 0.
absl::StatusOr<MemCounters> ParseMeminfo(absl::string_view text);

struct DiskCounters {
  std::string name;  // "vda", "nvme0n1"
  uint64_t reads = 0, read_sectors = 0, writes = 0, write_sectors = 0, in_flight = 0, io_ms = 0;
  unsigned major = 0, minor = 0;  // the device number (a partition has its own line and number)
};
// The lines of the named devices (all lines when `devices` is empty), in the file's order. The one parser of
// /proc/diskstats: the host sampler's rates and the per-epoch device bytes of the cache drop (agent/cache_drop.h)
// both read it.
std::vector<DiskCounters> ParseDiskstats(absl::string_view text, const std::vector<std::string>& devices);

struct SelfIo {
  uint64_t rchar = 0, read_bytes = 0;
};
// Missing lines read 0 (a kernel without task I/O accounting has none).
SelfIo ParseSelfIo(absl::string_view text);

struct NicCounters {
  std::string name;
  uint64_t rx_bytes = 0, tx_bytes = 0, rx_packets = 0, tx_packets = 0;
  int64_t speed_mbps = -1;  // -1: the driver does not say (virtual interfaces)
};

// A cgroup CPU quota as cores: v2 cpu.max ("50000 100000" -> 0.5; "max 100000" -> 0 = none), or v1's
// cpu.cfs_quota_us and cpu.cfs_period_us given as "<quota> <period>" (a quota of -1 = none).
double ParseCpuQuotaCores(absl::string_view text);
// The cores this process may use: its CPU affinity, lowered to its cgroup's CPU quota where one is set (the v2
// cpu.max of the cgroup /proc/self/cgroup names, or the v1 cpu controller's quota), read below `cgroup_root`.
double CpuLimitCores(const std::string& cgroup_root = "/sys/fs/cgroup");

// One reading of every counter.
struct HostCounters {
  int64_t unix_ms = 0;       // system clock, when read
  double steady_s = 0;       // steady clock, when read (rates use it)
  std::vector<CpuTimes> cpu; // [0] = all cores
  uint64_t process_cpu_ticks = 0;
  MemCounters mem;
  std::vector<DiskCounters> disks;
  std::vector<NicCounters> nics;
  SelfIo io;
  double cpu_limit_cores = 0;  // CpuLimitCores() (0 = not read)
};

struct DiskRate {
  std::string name;
  double read_bytes_per_s = 0, write_bytes_per_s = 0, read_iops = 0, write_iops = 0;
  uint64_t in_flight = 0;     // at the end of the interval (the queue depth)
  double busy_percent = 0;    // share of the interval the device had I/O in flight
};
struct NicRate {
  std::string name;
  double rx_bytes_per_s = 0, tx_bytes_per_s = 0, rx_packets_per_s = 0, tx_packets_per_s = 0;
  int64_t speed_mbps = -1;
  // max(rx, tx) over the link speed, in percent; -1 when the speed is unknown.
  double utilisation_percent = -1;
};

// The host over one interval: the rates between two HostCounters, and the memory at the interval's end.
struct HostSample {
  int64_t unix_ms = 0;        // end of the interval (system clock)
  double seconds = 0;         // length of the interval (steady clock)
  // Shares of all cores' time, in percent (they add up to ~100 with nice, irq and softirq left in `busy`).
  double cpu_user = 0, cpu_system = 0, cpu_iowait = 0, cpu_steal = 0, cpu_idle = 0;
  double cpu_busy = 0;        // 100 - idle - iowait: every core's time not idle
  std::vector<double> core_busy;  // per core, percent
  double process_cpu = 0;     // this process, percent of one core (200 = two cores busy)
  int cores = 0;
  double cpu_limit_cores = 0;  // the cores the process may use (affinity, cgroup quota); 0 = unknown
  MemCounters mem;
  std::vector<DiskRate> disks;
  std::vector<NicRate> nics;
  uint64_t process_rchar = 0;       // bytes this process's read calls returned in the interval
  uint64_t process_read_bytes = 0;  // of which the block layer fetched (not from the page cache)
};

// Rates from `a` to `b` (b read after a); counters that went backwards (a device or interface that came and went)
// read 0. `ticks_per_second` is sysconf(_SC_CLK_TCK).
HostSample DiffHost(const HostCounters& a, const HostCounters& b, int64_t ticks_per_second);

// Where ReadHostCounters looks: "/proc" and "/sys/class/net" on a real host, a captured folder in tests.
struct HostSources {
  std::string proc = "/proc";
  std::string self = "/proc/self";
  std::string net = "/sys/class/net";
  std::vector<std::string> devices;  // block devices to read (DataRootDevices); empty: none
  std::string cgroup = "/sys/fs/cgroup";
};
// Reads every file once (a file that cannot be read leaves its part empty: a host without /sys/class/net still
// reports CPU). `unix_ms` and `steady_s` are the caller's clocks. Loopback ("lo") is left out.
HostCounters ReadHostCounters(const HostSources& src, int64_t unix_ms, double steady_s);

// The whole-disk block devices that hold `path`: its file system's device (stat st_dev, /sys/dev/block/M:m; a
// partition counts as its disk; device-mapper and md devices as themselves). When the path's device is not a block
// device (overlay, tmpfs, NFS), every whole disk of /proc/diskstats except loop, ram and zram devices.
std::vector<std::string> DataRootDevices(const std::string& path);

}  // namespace dlio
