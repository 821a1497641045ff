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
  const unsigned want_major = major(dev), want_minor = minor(dev);
  if (want_major == 0) return std::nullopt;  // tmpfs, overlay, NFS, btrfs subvolumes: no block device of their own
  std::ifstream in(diskstats);
  std::string line;
  while (std::getline(in, line)) {
    // major minor name reads reads_merged sectors_read ... (Documentation/admin-guide/iostats.rst)
    std::istringstream fields(line);
    unsigned maj = 0, min = 0;
    std::string name;
    uint64_t reads = 0, merged = 0, sectors = 0;
    if (!(fields >> maj >> min >> name >> reads >> merged >> sectors)) continue;
    if (maj == want_major && min == want_minor) return sectors * 512;  // diskstats sectors are 512 B whatever the device
  }
  return std::nullopt;
}

}  // namespace dlio
