#include "agent/cache_drop.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace dlio {
namespace {

std::string TempFile(const std::string& content) {
  char name[] = "/tmp/dlio_cache_drop_XXXXXX";
  const int fd = ::mkstemp(name);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::close(fd);
  return name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CacheDrop, DropCachesWhenTheControlFileIsWritableElseFadvise) {
  const std::string control = TempFile("");
  EXPECT_EQ(ChooseCacheDrop(control), kDropCachesMethod);
  EXPECT_EQ(ChooseCacheDrop("/nonexistent/drop_caches"), kFadviseMethod);
  // What the kernel is told: "3" (page cache, dentries and inodes).
  ASSERT_TRUE(DropPageCache(control).ok());
  EXPECT_EQ(Slurp(control), "3");
  const absl::Status s = DropPageCache("/nonexistent/drop_caches");
  EXPECT_NE(s.message().find("dlio_ext.evict_cache: open '/nonexistent/drop_caches' for writing"),
            std::string::npos)
      << s.message();
  std::filesystem::remove(control);
}

TEST(CacheDrop, DeviceReadBytesIsTheDevicesSectorsReadTimes512) {
  const std::string stats = TempFile(
      "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
      " 254       0 vda 994064 27362 90549090 6210970 1274247 365891 436087312 1957171 0 444192 8304737\n"
      " 254       1 vda1 10 0 64 1 0 0 0 0 0 1 1\n");
  auto bytes = DeviceReadBytes(makedev(254, 0), stats);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(*bytes, 90549090ull * 512);
  bytes = DeviceReadBytes(makedev(254, 1), stats);  // a partition has its own line
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(*bytes, 64u * 512);
  EXPECT_FALSE(DeviceReadBytes(makedev(8, 0), stats).has_value());   // no line for the device
  EXPECT_FALSE(DeviceReadBytes(makedev(0, 45), stats).has_value());  // tmpfs, overlay: no block device
  std::filesystem::remove(stats);
}

TEST(CacheDrop, DeviceOfFdIsTheFilesStDev) {
  const int fd = ::open("/", O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::stat("/", &st), 0);
  ASSERT_TRUE(DeviceOfFd(fd).has_value());
  EXPECT_EQ(*DeviceOfFd(fd), st.st_dev);
  ::close(fd);
  EXPECT_FALSE(DeviceOfFd(-1).has_value());
}

}  // namespace
}  // namespace dlio
