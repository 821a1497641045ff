#include "agent/cache_drop.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/host_stats.h"

namespace dlio {

std::string ChooseCacheDrop(const std::string& drop_caches_path) {
  const int fd = ::open(drop_caches_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return kFadviseMethod;
  ::close(fd);
  return kDropCachesMethod;
}

absl::Status DropPageCache(const std::string& drop_caches_path) {
  ::sync();  // dirty pages cannot be dropped: written first, as `sync; echo 3 > drop_caches` does
  const int fd = ::open(drop_caches_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("dlio_ext.evict_cache: open '", drop_caches_path, "' for writing: ", std::strerror(errno)));
  }
  const ssize_t n = ::write(fd, "3", 1);
  const int err = errno;
  ::close(fd);
  if (n != 1) {
    return absl::InternalError(
        absl::StrCat("dlio_ext.evict_cache: write '3' to '", drop_caches_path, "': ", std::strerror(err)));
  }
  return absl::OkStatus();
}

std::optional<dev_t> DeviceOfFd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return st.st_dev;
}

std::optional<uint64_t> DeviceReadBytes(dev_t dev, const std::string& diskstats) {
  if (major(dev) == 0) return std::nullopt;  // tmpfs, overlay, NFS, btrfs subvolumes: no block device of their own
  std::ifstream in(diskstats);
  std::ostringstream text;
  text << in.rdbuf();
  for (const DiskCounters& d : ParseDiskstats(text.str(), {})) {
    if (d.major == major(dev) && d.minor == minor(dev)) return d.read_sectors * 512;  // 512 B whatever the device
  }
  return std::nullopt;
}

}  // namespace dlio
