// libzip 1.7.3 (Debian 12) fills two static bitmasks on its first zip_open_from_source call without a lock
// (readers/npz.cc FillLibzipStatics). This binary catches the race deterministically: it replaces libzip's
// zip_source_make_command_bitmap (libzip calls it through its PLT between the two stores, so the executable's
// definition wins) with the same arithmetic that, on its first call for the write mask, waits 300 ms: the first
// generate thread then holds the window open while a second one opens its archive. Without FillLibzipStatics the
// second fails "libzip open: Read-only archive" (a clean-clone CI run lost two jobs to it); with it, it waits for
// the first and both files are written. Its own binary: the statics are filled once per process.
#include <unistd.h>
#include <zip.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <filesystem>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "readers/format.h"
#include "results/io_stats.h"

namespace {
std::atomic<bool> hold_first_write_mask{true};
std::atomic<bool> holding{false};
}  // namespace

// libzip's own: the bitmask of the commands given, up to a negative one.
extern "C" zip_int64_t zip_source_make_command_bitmap(zip_source_cmd_t cmd0, ...) {
  va_list ap;
  va_start(ap, cmd0);
  zip_int64_t bitmap = ZIP_SOURCE_MAKE_COMMAND_BITMASK(cmd0);
  for (int cmd = va_arg(ap, int); cmd >= 0; cmd = va_arg(ap, int)) bitmap |= ZIP_SOURCE_MAKE_COMMAND_BITMASK(cmd);
  va_end(ap);
  if (cmd0 == ZIP_SOURCE_BEGIN_WRITE && hold_first_write_mask.exchange(false)) {
    holding = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return bitmap;
}

namespace dlio {
namespace {

TEST(LibzipRace, TwoThreadsWritingTheirFirstNpzAtOnceBothSucceed) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlio-libzip-race-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  FormatOptions o;
  o.samples_per_file = 2;
  o.sample_dims = {64};
  auto f = MakeFormat("npz", o);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::Status first, second;
  std::thread a([&] {
    IoStats s;
    first = (*f)->Generate((dir / "a.npz").string(), 1, s);
  });
  while (!holding) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a is inside the window
  std::thread b([&] {
    IoStats s;
    second = (*f)->Generate((dir / "b.npz").string(), 2, s);
  });
  a.join();
  b.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_TRUE(second.ok()) << second;
  EXPECT_TRUE(std::filesystem::exists(dir / "a.npz"));
  EXPECT_TRUE(std::filesystem::exists(dir / "b.npz"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlio
