#include "base/host_facts.h"

#include <openssl/evp.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "base/build_info.h"

namespace dlio {

std::string ToolVersion() { return DLIO_VERSION; }
std::string ToolCommit() { return DLIO_GIT_COMMIT; }

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr) != 1) return "";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) absl::StrAppend(&hex, absl::StrFormat("%02x", md[i]));
  return hex;
}

std::string FsTypeName(int64_t f_type) {
  // Magic numbers from linux/magic.h and statfs(2).
  static const std::map<int64_t, const char*> kNames = {
      {0xEF53, "ext2/ext3/ext4"}, {0x58465342, "xfs"},      {0x9123683E, "btrfs"},   {0x01021994, "tmpfs"},
      {0x6969, "nfs"},            {0xFF534D42, "cifs"},     {0xFE534D42, "smb2"},    {0x0BD00BD0, "lustre"},
      {0x47504653, "gpfs"},       {0x794C7630, "overlayfs"}, {0x2FC12FC1, "zfs"},    {0x65735546, "fuse"},
      {0x00C36400, "ceph"},       {0x5346544E, "ntfs"},     {0x4D44, "vfat"},        {0x858458F6, "ramfs"},
      {0x19830326, "beegfs"},     {0xAAD7AAEA, "panfs"},    {0x73717368, "squashfs"}, {0xF2F52010, "f2fs"},
      {0x9FA0, "proc"},           {0x62656572, "sysfs"},    {0x01021997, "v9fs"},    {0x6A656A63, "fakeowner"},
  };
  if (auto it = kNames.find(f_type & 0xFFFFFFFF); it != kNames.end()) return it->second;
  return absl::StrFormat("0x%x", static_cast<uint64_t>(f_type) & 0xFFFFFFFFu);
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

namespace {

// The cgroup memory limit of this process when it is below `mem_total` (v2 memory.max, v1 memory.limit_in_bytes,
// as a container sees its own cgroup at /sys/fs/cgroup); 0 when unlimited ("max", or v1's huge default) or
// unreadable.
uint64_t CgroupMemoryLimit(uint64_t mem_total) {
  for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::string v = ReadLine(f);
    if (v.empty() || v == "max") continue;
    const uint64_t limit = std::strtoull(v.c_str(), nullptr, 10);
    if (limit > 0 && (mem_total == 0 || limit < mem_total)) return limit;
  }
  return 0;
}

// The NICs of /sys/class/net but loopback and bridges, sorted by name (a container's veth end is kept: it is all a
// pod sees; speed is -1 where the driver reports none).
std::vector<NicInfo> ReadNics() {
  namespace fs = std::filesystem;
  std::vector<NicInfo> nics;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/sys/class/net", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "lo" || fs::exists(it->path() / "bridge", ec)) continue;
    NicInfo n;
    n.name = name;
    const std::string speed = ReadLine((it->path() / "speed").string());  // EINVAL (empty) when unknown
    if (!speed.empty() && speed[0] != '-') n.speed_mbps = std::strtoll(speed.c_str(), nullptr, 10);
    n.mtu = std::strtoll(ReadLine((it->path() / "mtu").string()).c_str(), nullptr, 10);
    n.state = ReadLine((it->path() / "operstate").string());
    nics.push_back(n);
  }
  std::sort(nics.begin(), nics.end(), [](const NicInfo& a, const NicInfo& b) { return a.name < b.name; });
  return nics;
}

}  // namespace

HostProvenance CollectHostProvenance(const std::string& data_root) {
  HostProvenance p;
  struct utsname u {};
  if (uname(&u) == 0) p.kernel = absl::StrCat(u.sysname, " ", u.release, " ", u.version, " ", u.machine);
  // "key   : value" -> {key, value}, both trimmed; false for a line without a colon.
  auto split = [](const std::string& line, std::string* key, std::string* value) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return false;
    *key = std::string(absl::StripAsciiWhitespace(line.substr(0, colon)));
    *value = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    return !key->empty();
  };
  p.cpu_model = "unknown";
  std::ifstream cpu("/proc/cpuinfo");
  std::string key, value;
  for (std::string line; std::getline(cpu, line);) {
    if (!split(line, &key, &value)) continue;
    if (key == "processor") {
      p.cpuinfo.clear();  // a new processor block: the last one is kept
      continue;
    }
    if (key == "model name" && p.cpu_model == "unknown") p.cpu_model = value;
    p.cpuinfo[key] = value;
  }
  std::ifstream mem("/proc/meminfo");
  for (std::string line; std::getline(mem, line);) {
    if (!split(line, &key, &value)) continue;
    p.meminfo[key] = value;
    if (key == "MemTotal") p.memory_bytes = std::strtoull(value.c_str(), nullptr, 10) * 1024;  // kB (KiB)
  }
  p.cgroup_memory_limit_bytes = CgroupMemoryLimit(p.memory_bytes);
  p.nics = ReadNics();
  struct statfs sf {};
  if (!data_root.empty() && statfs(data_root.c_str(), &sf) == 0) {
    p.data_root_fs = FsTypeName(static_cast<int64_t>(sf.f_type));
  } else {
    p.data_root_fs = "unknown";
  }
  return p;
}

uint64_t LocalMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib >> unit) {
    if (name == "MemTotal:") return kib * 1024;
  }
  return 0;
}

// Data table: the sysctl keys of a run's host facts (docs/results.md "Host facts"), by subsystem.
const std::vector<std::string> kHostSysctlKeys = {
    // Page cache and write-back: how much dirty data waits, for how long, and what the kernel keeps cached.
    "vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_bytes", "vm.dirty_background_bytes",
    "vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs", "vm.swappiness", "vm.vfs_cache_pressure",
    "vm.min_free_kbytes", "vm.zone_reclaim_mode", "vm.overcommit_memory", "vm.overcommit_ratio", "vm.max_map_count",
    "vm.nr_hugepages", "vm.page-cluster", "vm.watermark_scale_factor",
    // Socket buffers and queues: what a NIC at line rate needs.
    "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
    "net.core.optmem_max", "net.core.netdev_max_backlog", "net.core.somaxconn", "net.core.busy_poll",
    "net.core.busy_read", "net.core.default_qdisc",
    // TCP (object storage, NFS over TCP).
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mem", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_sack", "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_moderate_rcvbuf",
    "net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_tw_reuse", "net.ipv4.tcp_keepalive_time",
    "net.ipv4.ip_local_port_range",
    // File handles and asynchronous I/O.
    "fs.file-max", "fs.nr_open", "fs.aio-max-nr", "fs.pipe-max-size", "fs.inotify.max_user_watches",
    "fs.inotify.max_user_instances",
    // Scheduling and NUMA.
    "kernel.numa_balancing", "kernel.sched_autogroup_enabled", "kernel.pid_max", "kernel.threads-max",
    // NFS clients: RPC slots per transport.
    "sunrpc.tcp_slot_table_entries", "sunrpc.tcp_max_slot_table_entries", "sunrpc.udp_slot_table_entries",
};

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string DecodeOctal(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && absl::ascii_isdigit(s[i + 1]) &&
        absl::ascii_isdigit(s[i + 2]) && absl::ascii_isdigit(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// "https://user:pw@host/..." -> "https://user:***@host/..."; other values unchanged.
std::string MaskUrlPassword(const std::string& v) {
  const size_t scheme = v.find("://");
  if (scheme == std::string::npos) return v;
  const size_t at = v.find('@', scheme + 3);
  const size_t slash = v.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return v;
  const size_t colon = v.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return v;
  return absl::StrCat(v.substr(0, colon + 1), kMasked, v.substr(at));
}

// The transport of a /sys/block device from its name and where its sysfs folder resolves to.
std::string TransportOf(const std::string& name, const std::string& device_path) {
  if (absl::StartsWith(name, "nvme")) return "nvme";
  if (absl::StartsWith(name, "vd") || absl::StrContains(device_path, "/virtio")) return "virtio";
  if (absl::StartsWith(name, "xvd") || absl::StrContains(device_path, "/xen")) return "xen";
  if (absl::StartsWith(name, "mmcblk") || absl::StrContains(device_path, "/mmc")) return "mmc";
  if (absl::StrContains(device_path, "/usb")) return "usb";
  if (absl::StrContains(device_path, "/ata")) return "sata";
  if (absl::StrContains(device_path, "/end_device-") || absl::StrContains(device_path, "/sas_")) return "sas";
  if (absl::StrContains(device_path, "/target")) return "scsi";
  return "";
}

}  // namespace

bool IsSecretVariable(absl::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(name);
  // AWS_* is masked whole (credentials, session tokens, profiles, config paths) except what says where the store
  // is and never authenticates: a system description needs the region and the endpoint (a password in an
  // endpoint's URL is still masked below, as in any URL).
  const bool aws_location =
      upper == "AWS_REGION" || upper == "AWS_DEFAULT_REGION" || absl::StartsWith(upper, "AWS_ENDPOINT_URL");
  if (absl::StartsWith(upper, "AWS_") && !aws_location) return true;
  for (const char* w : {"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"}) {
    if (absl::StrContains(upper, w)) return true;
  }
  return false;
}

std::map<std::string, std::string> MaskedEnvironment(const std::vector<std::string>& entries) {
  std::map<std::string, std::string> out;
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = e.substr(0, eq);
    out[name] = IsSecretVariable(name) ? std::string(kMasked) : MaskUrlPassword(e.substr(eq + 1));
  }
  return out;
}

std::vector<MountInfo> ParseMountinfo(absl::string_view text) {
  std::vector<MountInfo> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    // id parent major:minor root mount_point options [optional fields...] - fs_type source super_options
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash - f.begin() < 6 || f.end() - dash < 3) continue;
    out.push_back({DecodeOctal(f[4]), DecodeOctal(dash[1]), DecodeOctal(dash[2])});
  }
  return out;
}

std::string MountPointOf(const std::vector<MountInfo>& mounts, const std::string& path) {
  std::string best;
  bool found = false;
  for (const MountInfo& m : mounts) {
    const std::string& mp = m.mount_point;
    const bool holds = mp == "/" || path == mp || absl::StartsWith(path, mp + "/");
    if (holds && (!found || mp.size() >= best.size())) {  // the later of equal mounts is the one on top
      best = mp;
      found = true;
    }
  }
  return best;
}

std::map<std::string, std::string> ParseOsRelease(absl::string_view text) {
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    const size_t eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == absl::string_view::npos) continue;
    absl::string_view v = line.substr(eq + 1);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
    }
    out[std::string(line.substr(0, eq))] = std::string(v);
  }
  return out;
}

std::string NormalizeSysctlValue(absl::string_view text) {
  return absl::StrJoin(absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty()), " ");
}

std::vector<DriveInfo> ReadDrives(const std::string& sys_block) {
  namespace fs = std::filesystem;
  std::vector<DriveInfo> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(sys_block, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (absl::StartsWith(name, "loop") || absl::StartsWith(name, "ram") || absl::StartsWith(name, "zram")) continue;
    const std::string dir = it->path().string();
    DriveInfo d;
    d.name = name;
    d.kind = absl::StartsWith(name, "dm-") ? "device-mapper" : absl::StartsWith(name, "md") ? "md" : "disk";
    d.vendor = ReadLine(dir + "/device/vendor");
    d.model = ReadLine(dir + "/device/model");
    d.size_bytes = std::strtoull(ReadLine(dir + "/size").c_str(), nullptr, 10) * 512;  // 512-byte sectors always
    const std::string rot = ReadLine(dir + "/queue/rotational");
    d.rotational = rot == "1" ? 1 : rot == "0" ? 0 : -1;
    std::error_code cec;
    const fs::path real = fs::canonical(it->path(), cec);
    d.transport = d.kind == "disk" ? TransportOf(name, cec ? std::string() : real.string()) : "";
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const DriveInfo& a, const DriveInfo& b) { return a.name < b.name; });
  return out;
}

std::map<std::string, std::string> ReadSysctl(const std::string& proc_sys) {
  std::map<std::string, std::string> out;
  for (const std::string& key : kHostSysctlKeys) {
    std::string rel = key;
    std::replace(rel.begin(), rel.end(), '.', '/');
    std::ifstream in(proc_sys + "/" + rel);
    if (!in) continue;  // not in this kernel, or not visible in this container
    std::ostringstream ss;
    ss << in.rdbuf();
    out[key] = NormalizeSysctlValue(ss.str());
  }
  return out;
}

RunHostFacts CollectRunHostFacts(const std::string& data_root, const HostFactRoots& roots) {
  RunHostFacts f;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) f.hostname = host;
  f.provenance = CollectHostProvenance(data_root);
  f.os_release = ParseOsRelease(ReadAll(roots.os_release));
  f.sysctl = ReadSysctl(roots.proc_sys);
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  f.environment = MaskedEnvironment(env);
  f.drives = ReadDrives(roots.sys_block);
  f.mounts = ParseMountinfo(ReadAll(roots.mountinfo));
  f.data_root = data_root;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::weakly_canonical(std::filesystem::absolute(data_root, ec), ec);
  f.data_root_mount = MountPointOf(f.mounts, ec ? data_root : abs.string());
  return f;
}

}  // namespace dlio
