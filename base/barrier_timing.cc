#include "base/barrier_timing.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dlio::barrier_timing {

namespace {

// The hop file's descriptor, opened at the first call: -1 when DLIO_BARRIER_HOPS is unset or the file cannot be
// opened (profiling is best effort: a run never fails for it).
int HopFd() {
  static const int fd = [] {
    const char* dir = std::getenv("DLIO_BARRIER_HOPS");
    if (dir == nullptr || *dir == '\0') return -1;
    const std::string path = std::string(dir) + "/" + std::to_string(getpid()) + ".hops";
    return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }();
  return fd;
}

}  // namespace

int64_t SteadyNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

bool HopsOn() { return HopFd() >= 0; }

void Hop(std::string_view hop, uint64_t step, int64_t ns, std::string_view who) {
  const int fd = HopFd();
  if (fd < 0) return;
  char line[192];
  const int n = std::snprintf(line, sizeof line, "%.*s %llu %lld %.*s\n", static_cast<int>(hop.size()), hop.data(),
                              static_cast<unsigned long long>(step), static_cast<long long>(ns),
                              static_cast<int>(std::min<size_t>(who.size(), 96)), who.data());
  if (n > 0) (void)!write(fd, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
}

}  // namespace dlio::barrier_timing
