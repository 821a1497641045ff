#include "base/mount_id.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dlio {
namespace {

// mountinfo escapes blanks, tabs, newlines and backslashes as \ooo (proc(5)).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.find_first_not_of("01234567") == std::string::npos) {
        out.push_back(static_cast<char>(std::stoi(oct, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool UnderMount(const std::string& path, const std::string& mount) {
  if (mount == "/") return true;
  return path == mount || absl::StartsWith(path, mount + "/");
}

// The mount of device `dev` with the longest mount point prefixing `path`, from /proc/self/mountinfo.
void FindMount(const std::string& path, const std::string& dev, MountId* m) {
  std::ifstream in("/proc/self/mountinfo");
  size_t best = 0;
  for (std::string line; std::getline(in, line);) {
    // "36 35 98:0 /root /mnt/point rw,noatime shared:1 - ext4 /dev/sda1 rw": fields, then " - ", type, source.
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream pre(line.substr(0, dash)), post(line.substr(dash + 3));
    std::string id, parent, majmin, root, point, type, source;
    if (!(pre >> id >> parent >> majmin >> root >> point) || !(post >> type >> source)) continue;
    point = Unescape(point);
    if (majmin != dev || !UnderMount(path, point) || point.size() < best) continue;
    best = point.size();
    m->mount_point = point;
    m->fs_type = type;
    m->source = Unescape(source);
  }
}

}  // namespace

MountId ProbeMount(const std::string& path) {
  MountId m;
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(path.empty() ? "." : path, ec);
  if (ec) at = path;
  struct stat st {};
  while (::stat(at.c_str(), &st) != 0) {  // the nearest existing ancestor: a folder the run will create
    if (!at.has_parent_path() || at.parent_path() == at) {
      m.error = absl::StrCat("stat '", path, "': ", std::strerror(errno));
      return m;
    }
    at = at.parent_path();
  }
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(at, ec);
  m.probed = (ec ? at : canonical).string();
  m.device = absl::StrCat(major(st.st_dev), ":", minor(st.st_dev));
  struct statfs sf {};
  if (::statfs(at.c_str(), &sf) == 0) {
    uint32_t v[2];
    static_assert(sizeof(v) == sizeof(sf.f_fsid), "f_fsid is two 32-bit words");
    std::memcpy(v, &sf.f_fsid, sizeof(v));
    m.fsid = absl::StrFormat("%08x%08x", v[0], v[1]);
  }
  FindMount(m.probed, m.device, &m);
  return m;
}

bool IsNetworkFs(const std::string& t) {
  for (const char* n : {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "lustre", "gpfs", "beegfs", "glusterfs", "9p",
                        "afs", "panfs", "virtiofs"}) {
    if (t == n) return true;
  }
  return absl::StartsWith(t, "fuse.");
}

bool SameFileSystem(const MountId& a, const std::string& a_host, const MountId& b, const std::string& b_host) {
  const bool na = IsNetworkFs(a.fs_type), nb = IsNetworkFs(b.fs_type);
  if (na || nb) return na && nb && !a.source.empty() && a.source == b.source;
  return a_host == b_host && !a.device.empty() && a.device == b.device;
}

}  // namespace dlio
