#include "base/mount_id.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace dlio {
namespace {

TEST(MountId, TheRootIsItsOwnMountWithADeviceAndASource) {
  const MountId m = ProbeMount("/");
  EXPECT_TRUE(m.error.empty()) << m.error;
  EXPECT_EQ(m.mount_point, "/");
  EXPECT_FALSE(m.device.empty());
  EXPECT_FALSE(m.source.empty());
  EXPECT_FALSE(m.fs_type.empty());
  EXPECT_EQ(m.fsid.size(), 16u);
}

TEST(MountId, APathNotYetMadeIsProbedAtItsNearestExistingAncestor) {
  const std::string tmp = std::filesystem::temp_directory_path().string();
  const MountId m = ProbeMount(tmp + "/dlio-not-there-" + std::to_string(::getpid()) + "/a/b");
  EXPECT_EQ(m.probed, std::filesystem::weakly_canonical(tmp).string());
  EXPECT_EQ(m.device, ProbeMount(tmp).device);
}

TEST(MountId, SharedMemoryIsItsOwnMount) {
  std::error_code ec;
  if (!std::filesystem::is_directory("/dev/shm", ec)) GTEST_SKIP() << "no /dev/shm";
  const MountId m = ProbeMount("/dev/shm");
  EXPECT_EQ(m.mount_point, "/dev/shm");
  EXPECT_EQ(m.fs_type, "tmpfs");
  EXPECT_FALSE(SameFileSystem(m, "h", ProbeMount("/"), "h"));
  EXPECT_TRUE(SameFileSystem(m, "h", ProbeMount("/dev/shm/"), "h"));
}

// Network file systems by their source (one export seen from two hosts), local ones by device on one host.
TEST(MountId, NetworkFileSystemsAreComparedBySourceLocalOnesByDeviceOnOneHost) {
  const MountId nfs_a{"/mnt/a", "/mnt/a", "srv:/export", "nfs4", "0:51", "", ""};
  const MountId nfs_b{"/data", "/data", "srv:/export", "nfs4", "0:77", "", ""};
  const MountId nfs_other{"/data", "/data", "srv:/other", "nfs4", "0:51", "", ""};
  const MountId ext4{"/", "/", "/dev/sda1", "ext4", "8:1", "", ""};
  EXPECT_TRUE(SameFileSystem(nfs_a, "host1", nfs_b, "host2"));
  EXPECT_FALSE(SameFileSystem(nfs_a, "host1", nfs_other, "host1"));
  EXPECT_FALSE(SameFileSystem(nfs_a, "host1", ext4, "host1"));
  EXPECT_TRUE(SameFileSystem(ext4, "host1", ext4, "host1"));
  EXPECT_FALSE(SameFileSystem(ext4, "host1", ext4, "host2"));  // two machines' local disks
  EXPECT_TRUE(IsNetworkFs("fuse.s3fs"));
  EXPECT_FALSE(IsNetworkFs("xfs"));
}

}  // namespace
}  // namespace dlio
