// The run host facts' parsers (base/host_facts.h) over captured text and a captured /sys/block and /proc/sys.
#include "base/host_facts.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::Pair;

// Captured from a Debian 12 VM (a container's overlay root, a bind mount with a space, an NFS mount).
constexpr char kMountinfo[] =
    "24 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n"
    "25 24 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 24 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64\n"
    "41 24 254:17 /data /mnt/my\\040data rw,noatime - xfs /dev/vdb rw,attr2,inode64\n"
    "52 41 0:53 / /mnt/my\\040data/nfs rw,relatime shared:30 master:2 - nfs4 server:/export rw,vers=4.2\n"
    "garbage line\n";

TEST(HostFacts, ParsesMountinfoDecodingEscapesAndOptionalFields) {
  const std::vector<MountInfo> m = ParseMountinfo(kMountinfo);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].mount_point, "/");
  EXPECT_EQ(m[0].fs_type, "ext4");
  EXPECT_EQ(m[0].source, "/dev/vda1");
  EXPECT_EQ(m[3].mount_point, "/mnt/my data");
  EXPECT_EQ(m[3].fs_type, "xfs");
  EXPECT_EQ(m[4].mount_point, "/mnt/my data/nfs");  // two optional fields before "-"
  EXPECT_EQ(m[4].fs_type, "nfs4");
  EXPECT_EQ(m[4].source, "server:/export");
}

TEST(HostFacts, NamesTheMountHoldingAPath) {
  const std::vector<MountInfo> m = ParseMountinfo(kMountinfo);
  EXPECT_EQ(MountPointOf(m, "/mnt/my data/nfs/train"), "/mnt/my data/nfs");
  EXPECT_EQ(MountPointOf(m, "/mnt/my data/x"), "/mnt/my data");
  EXPECT_EQ(MountPointOf(m, "/mnt/my datax"), "/");  // a prefix of a name is no parent folder
  EXPECT_EQ(MountPointOf(m, "/dev/shm"), "/dev/shm");
  EXPECT_EQ(MountPointOf({}, "/x"), "");
}

TEST(HostFacts, MasksSecretsInTheEnvironment) {
  const std::map<std::string, std::string> env = MaskedEnvironment(
      {"PATH=/usr/bin", "AWS_REGION=us-east-1", "AWS_SECRET_ACCESS_KEY=abc", "MY_API_KEY=k", "GITHUB_TOKEN=t",
       "DB_PASSWORD=p", "s3_credentials=c", "http_proxy=http://user:pw@proxy:3128/", "NOEQUALS", "=x",
       "EMPTY=", "URL=https://host/a@b"});
  EXPECT_THAT(env, ElementsAre(Pair("AWS_REGION", "us-east-1"), Pair("AWS_SECRET_ACCESS_KEY", "***"),
                               Pair("DB_PASSWORD", "***"), Pair("EMPTY", ""), Pair("GITHUB_TOKEN", "***"),
                               Pair("MY_API_KEY", "***"), Pair("PATH", "/usr/bin"),
                               Pair("URL", "https://host/a@b"), Pair("http_proxy", "http://user:***@proxy:3128/"),
                               Pair("s3_credentials", "***")));
  EXPECT_TRUE(IsSecretVariable("aws_profile"));
  EXPECT_TRUE(IsSecretVariable("AWS_SESSION_TOKEN"));
  EXPECT_TRUE(IsSecretVariable("AWS_REGION_KEY"));  // not the region: a name that merely starts like it
  EXPECT_FALSE(IsSecretVariable("AWS_DEFAULT_REGION"));
  EXPECT_FALSE(IsSecretVariable("AWS_ENDPOINT_URL_S3"));
  EXPECT_TRUE(IsSecretVariable("AWS_ENDPOINT_URL_TOKEN"));  // the word rules still apply to them
  EXPECT_TRUE(IsSecretVariable("SSH_AUTH_SOCK"));
  EXPECT_FALSE(IsSecretVariable("HOME"));
}

TEST(HostFacts, ParsesOsReleaseAndSysctlValues) {
  const std::map<std::string, std::string> os = ParseOsRelease(
      "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME='Debian GNU/Linux'\nVERSION_ID=\"12\"\n"
      "# comment\n\nID=debian\n");
  EXPECT_THAT(os, ElementsAre(Pair("ID", "debian"), Pair("NAME", "Debian GNU/Linux"),
                              Pair("PRETTY_NAME", "Debian GNU/Linux 12 (bookworm)"), Pair("VERSION_ID", "12")));
  EXPECT_EQ(NormalizeSysctlValue("4096\t131072\t6291456\n"), "4096 131072 6291456");
  EXPECT_EQ(NormalizeSysctlValue("60\n"), "60");
}

// A captured /proc/sys and /sys/block: the listed keys read (tabs made spaces), missing ones left out; whole disks
// with their model, size, rotation and transport, loop and ram devices left out, device-mapper marked.
TEST(HostFacts, ReadsSysctlAndDrivesBelowACapturedRoot) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("host_facts_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto put = [&](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  put(dir / "sys/vm/swappiness", "60\n");
  put(dir / "sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
  put(dir / "sys/fs/file-nr", "1 0 9\n");  // a counter: not in the list
  const std::map<std::string, std::string> sysctl = ReadSysctl((dir / "sys").string());
  EXPECT_THAT(sysctl, ElementsAre(Pair("net.ipv4.tcp_rmem", "4096 131072 6291456"), Pair("vm.swappiness", "60")));

  put(dir / "block/nvme0n1/device/model", "Samsung SSD 980 PRO 1TB                 \n");
  put(dir / "block/nvme0n1/size", "1953525168\n");
  put(dir / "block/nvme0n1/queue/rotational", "0\n");
  put(dir / "block/sda/device/vendor", "ATA     \n");
  put(dir / "block/sda/device/model", "ST4000NM0035\n");
  put(dir / "block/sda/size", "7814037168\n");
  put(dir / "block/sda/queue/rotational", "1\n");
  put(dir / "block/vdb/size", "2097152\n");
  put(dir / "block/dm-0/size", "100\n");
  put(dir / "block/loop0/size", "0\n");
  put(dir / "block/ram0/size", "0\n");
  const std::vector<DriveInfo> d = ReadDrives((dir / "block").string());
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].name, "dm-0");
  EXPECT_EQ(d[0].kind, "device-mapper");
  EXPECT_EQ(d[1].name, "nvme0n1");
  EXPECT_EQ(d[1].model, "Samsung SSD 980 PRO 1TB");
  EXPECT_EQ(d[1].size_bytes, 1953525168ull * 512);
  EXPECT_EQ(d[1].rotational, 0);
  EXPECT_EQ(d[1].transport, "nvme");
  EXPECT_EQ(d[2].name, "sda");
  EXPECT_EQ(d[2].vendor, "ATA");
  EXPECT_EQ(d[2].rotational, 1);
  EXPECT_EQ(d[3].name, "vdb");
  EXPECT_EQ(d[3].transport, "virtio");
  EXPECT_EQ(d[3].rotational, -1);
  fs::remove_all(dir);
}

// The collector over this host: the data root's mount named, the environment masked.
TEST(HostFacts, CollectsThisHost) {
  ::setenv("DLIO_TEST_SECRET_TOKEN", "do-not-record", 1);
  const RunHostFacts f = CollectRunHostFacts("/tmp");
  ::unsetenv("DLIO_TEST_SECRET_TOKEN");
  EXPECT_FALSE(f.hostname.empty());
  EXPECT_FALSE(f.mounts.empty());
  EXPECT_FALSE(f.data_root_mount.empty());
  ASSERT_EQ(f.environment.count("DLIO_TEST_SECRET_TOKEN"), 1u);
  EXPECT_EQ(f.environment.at("DLIO_TEST_SECRET_TOKEN"), "***");
}

}  // namespace
}  // namespace dlio
