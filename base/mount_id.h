// The identity of the file system holding a path, as MLPerf Storage v3.0's fs-separation probe compares it across
// hosts (mlperf/fs_separation.h; Rules.md 3.4.2/4.4.2): each agent reports its --data-root's (Hello.data_root_mount),
// the client probes the results folder's, and the two are compared even when they are on different machines.
//
// Contract:
//  - ProbeMount(path): for `path`, or its nearest existing ancestor when it does not exist yet: st_dev as
//    "major:minor", statfs f_fsid as 16 hex digits, and from /proc/self/mountinfo the mount holding it (the mount of
//    that device with the longest mount point that is a prefix of the canonical path): its mount point, source
//    ("server:/export", "/dev/nvme0n1p2", "tmpfs") and type ("nfs4", "ext4"). `error` is set when nothing answers;
//    fields /proc does not give stay empty.
//  - IsNetworkFs(type): a file system a network server provides (nfs, nfs4, cifs, smb3, ceph, lustre, gpfs, beegfs,
//    glusterfs, 9p, fuse.*): its st_dev is a local number, so two hosts' mounts are compared by source.
//  - SameFileSystem(a, a_host, b, b_host): network file systems by source (the same export seen from two hosts is
//    one file system), local ones by device on one host; local ones on two hosts are two file systems.
// Thread-safety: free functions, no shared state (they read /proc and the file system).
#pragma once

#include <string>

namespace dlio {

struct MountId {
  std::string probed;       // the path (or nearest existing ancestor) that was stat'ed
  std::string mount_point;  // the mount holding it
  std::string source;       // that mount's source
  std::string fs_type;      // that mount's type, as mountinfo names it
  std::string device;       // st_dev, "major:minor"
  std::string fsid;         // statfs f_fsid, hex
  std::string error;        // non-empty when nothing could be probed
};

MountId ProbeMount(const std::string& path);

bool IsNetworkFs(const std::string& fs_type);

bool SameFileSystem(const MountId& a, const std::string& a_host, const MountId& b, const std::string& b_host);

}  // namespace dlio
