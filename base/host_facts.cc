#include "base/host_facts.h"

#include <openssl/evp.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

namespace {

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

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

}  // namespace dlio
