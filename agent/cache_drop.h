// Per-epoch page-cache drop and device accounting (dlio_ext.evict_cache, applied by --mlperf as MLPerf Storage v3.0's
// DLIO fork does: the cache dropped before every training epoch, so no epoch is served from memory).
//
// Contract:
//  - ChooseCacheDrop(): "drop_caches" when this process can write /proc/sys/vm/drop_caches (root, a writable /proc),
//    else "fadvise" (the job's files evicted one by one with posix_fadvise POSIX_FADV_DONTNEED).
//  - DropPageCache(): sync(2), then "3" written to /proc/sys/vm/drop_caches (page cache, dentries and inodes of the
//    whole host, as the v3 fork's `drop_caches`); an error names the file.
//  - DeviceOfFd() / DeviceReadBytes(): the block device a file system lives on (st_dev's major:minor) and the bytes
//    it has delivered since boot (/proc/diskstats "sectors read" x 512, a partition's own line when the data sits on
//    one; read with base/host_stats.h's ParseDiskstats, the one parser of that file). nullopt when there is no
//    block device (tmpfs, overlay, NFS: major 0) or it has no line. The counter is the device's, so other readers
//    of the same device add to it: a lower bound of nothing, an upper bound of what the job read; an epoch served
//    from the page cache shows as ~0.
// Thread-safety: free functions, no shared state; DropPageCache affects the whole host.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace dlio {

inline constexpr char kDropCachesMethod[] = "drop_caches";
inline constexpr char kFadviseMethod[] = "fadvise";

// kDropCachesMethod when `drop_caches_path` can be opened for writing, else kFadviseMethod.
std::string ChooseCacheDrop(const std::string& drop_caches_path = "/proc/sys/vm/drop_caches");

// sync(), then writes "3" to `drop_caches_path`.
absl::Status DropPageCache(const std::string& drop_caches_path = "/proc/sys/vm/drop_caches");

// The device (st_dev) of the file system holding the open file or folder `fd`; nullopt if fstat fails.
std::optional<dev_t> DeviceOfFd(int fd);

// Bytes the block device `dev` has delivered, from `diskstats` (its "sectors read" field x 512); nullopt when `dev`
// is no block device (major 0) or the file has no line for it.
std::optional<uint64_t> DeviceReadBytes(dev_t dev, const std::string& diskstats = "/proc/diskstats");

}  // namespace dlio
