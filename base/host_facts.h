// Host facts: what this process can learn about the machine it runs on and the tool that runs (provenance in
// results, RAM for --explain): tool version and commit, sha256, uname, CPU, memory, the cgroup limit, NICs and the
// data root's file-system type; and the facts of a run, recorded at a job's start and end (RunHostFacts: sysctl,
// the masked environment, drives, mounts, the distribution).
// Contract: CollectHostProvenance(), LocalMemoryBytes(), ReadDrives(), ReadSysctl() and CollectRunHostFacts() read
// /proc, /sys, /etc and statfs(2); the rest are pure.
// Thread-safety: all functions may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

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
// The first line of a small file (/proc, /sys), surrounding whitespace stripped; empty when it cannot be read.
std::string ReadLine(const std::string& path);

// MemTotal of /proc/meminfo in bytes; 0 when unreadable.
uint64_t LocalMemoryBytes();

}  // namespace dlio

namespace dlio {

// ---------------------------------------------------------------------------------------------------------------
// Run host facts (issue 25 item 2; docs/results.md "Host facts"): what an agent records of its host at the start
// and at the end of every job, beyond the provenance above: the sysctl values that shape storage and network I/O
// (kHostSysctlKeys), the environment with secrets masked (IsSecretVariable), the drives of /sys/block, the mounts
// of /proc/self/mountinfo with the data root's named, and the distribution (/etc/os-release).
// The parsers are pure functions over one file's text; CollectRunHostFacts() reads the files below HostFactRoots.

// The sysctl keys recorded, in /proc/sys order (documented in docs/results.md). Only settings: no counter that
// moves on its own (fs.file-nr, fs.dentry-state), so a change between start and end is somebody's change.
extern const std::vector<std::string> kHostSysctlKeys;

// A drive of /sys/block (whole devices only: partitions are not listed there; loop, ram and zram devices are left
// out; device-mapper and md devices are kept, marked by `kind`).
struct DriveInfo {
  std::string name;          // "nvme0n1", "sda", "vda"
  std::string kind;          // "disk", "device-mapper", "md"
  std::string vendor;        // device/vendor ("ATA", "" for NVMe and virtio)
  std::string model;         // device/model, trimmed ("" when unreadable)
  uint64_t size_bytes = 0;   // `size` (512-byte sectors) x 512
  int rotational = -1;       // queue/rotational: 1 spinning, 0 solid state, -1 unreadable
  std::string transport;     // "nvme", "sata", "sas", "scsi", "virtio", "usb", "mmc", "xen", "" when unknown
};

// One line of /proc/self/mountinfo.
struct MountInfo {
  std::string mount_point;   // octal escapes (\040 for a space) decoded
  std::string fs_type;       // "ext4", "tmpfs", "nfs4", "fuse.ceph-fuse"
  std::string source;        // "/dev/nvme0n1p2", "server:/export", "tmpfs"
};

struct RunHostFacts {
  std::string hostname;
  HostProvenance provenance;                         // kernel, CPU, memory, NICs, data root's file-system type
  std::map<std::string, std::string> os_release;    // /etc/os-release: NAME, VERSION_ID, PRETTY_NAME, ...
  std::map<std::string, std::string> sysctl;        // of kHostSysctlKeys, those this kernel has
  std::map<std::string, std::string> environment;   // the agent's environment, secrets as kMasked
  std::vector<DriveInfo> drives;
  std::vector<MountInfo> mounts;
  std::string data_root;                            // as given
  std::string data_root_mount;                      // the mount point holding it ("" when none matched)
};

inline constexpr char kMasked[] = "***";

// A variable whose value is not recorded: its name (any case) contains KEY, SECRET, TOKEN, PASSWORD, PASSWD,
// CREDENTIAL, AUTH or PRIVATE, or starts with AWS_.
bool IsSecretVariable(absl::string_view name);
// `environ`-style "NAME=value" entries as a map, every secret's value kMasked and the password of a URL's
// user-info ("https://user:pw@host" -> "https://user:***@host") masked in any other value.
std::map<std::string, std::string> MaskedEnvironment(const std::vector<std::string>& entries);

// /proc/self/mountinfo: every line with its "-" separator; malformed lines are skipped.
std::vector<MountInfo> ParseMountinfo(absl::string_view text);
// The mount point of the longest mount that holds `path` (an absolute, normalised path); "" when none does.
std::string MountPointOf(const std::vector<MountInfo>& mounts, const std::string& path);
// /etc/os-release "KEY=value" lines, quotes removed; comments and blank lines skipped.
std::map<std::string, std::string> ParseOsRelease(absl::string_view text);
// A /proc/sys value as one line: its runs of whitespace (tcp_rmem's tabs) as single spaces, trimmed.
std::string NormalizeSysctlValue(absl::string_view text);

// Where CollectRunHostFacts looks (tests: a captured folder).
struct HostFactRoots {
  std::string proc_sys = "/proc/sys";
  std::string sys_block = "/sys/block";
  std::string mountinfo = "/proc/self/mountinfo";
  std::string os_release = "/etc/os-release";
};
// The drives below `sys_block`, sorted by name.
std::vector<DriveInfo> ReadDrives(const std::string& sys_block);
// The values of kHostSysctlKeys below `proc_sys` ("vm.swappiness" -> <proc_sys>/vm/swappiness); missing ones left out.
std::map<std::string, std::string> ReadSysctl(const std::string& proc_sys);
// Everything above, of this host and process, `environ` as the environment.
RunHostFacts CollectRunHostFacts(const std::string& data_root, const HostFactRoots& roots = {});

}  // namespace dlio
