// Host facts: what this process can learn about the machine it runs on and the tool that runs (provenance in
// results, RAM for --explain): tool version and commit, sha256, uname, CPU, memory, the cgroup limit, NICs and the
// data root's file-system type.
// Contract: CollectHostProvenance() and LocalMemoryBytes() read /proc, /sys and statfs(2); the rest are pure.
// Thread-safety: all functions may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dlio {

// Provenance.
std::string ToolVersion();  // project version from CMake ("0.1.0")
std::string ToolCommit();   // git commit at configure time ("unknown" outside a git checkout), "+dirty" if modified
std::string Sha256Hex(std::string_view data);

// A network interface as /sys/class/net shows it (loopback and virtual bridges left out).
struct NicInfo {
  std::string name;          // "eth0"
  int64_t speed_mbps = -1;   // /sys/class/net/<nic>/speed; -1 when the driver does not say (virtual NICs)
  int64_t mtu = 0;
  std::string state;         // operstate: "up", "down", "unknown"
};

struct HostProvenance {
  std::string kernel;        // uname: "Linux 6.1.0-18-amd64 #1 SMP ... x86_64"
  std::string cpu_model;     // /proc/cpuinfo "model name" (first), else "unknown"
  uint64_t memory_bytes = 0; // /proc/meminfo MemTotal
  // The memory limit of this process's cgroup (v2 memory.max, v1 memory.limit_in_bytes) when one is set below
  // MemTotal: a container's DRAM, which MLPerf counts as the host node's ("the maximum DRAM available to any host
  // node"); 0 = none.
  uint64_t cgroup_memory_limit_bytes = 0;
  std::vector<NicInfo> nics;
  std::string data_root_fs;  // statfs(data_root).f_type as a name ("ext4", "xfs", "tmpfs", "nfs", "0x..." if unknown)
  // DLIO's host_cpuinfo: the "key: value" lines of the last processor block of /proc/cpuinfo ("processor" left
  // out, as DLIO shows it); host_meminfo: every /proc/meminfo line, the value as written ("24684084 kB").
  std::map<std::string, std::string> cpuinfo, meminfo;
};
HostProvenance CollectHostProvenance(const std::string& data_root);
// statfs f_type magic -> name; unknown values as "0x<hex>".
std::string FsTypeName(int64_t f_type);

// MemTotal of /proc/meminfo in bytes; 0 when unreadable.
uint64_t LocalMemoryBytes();

}  // namespace dlio
