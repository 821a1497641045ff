#include "base/barrier_timing.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/host_facts.h"

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

std::string ClockDomain() {
  static const std::string domain = [] {
    if (const char* env = std::getenv("DLIO_CLOCK_DOMAIN"); env != nullptr) return std::string(env);
    const std::string id = ReadLine("/proc/sys/kernel/random/boot_id");
    if (id.empty()) return id;
    char ns[64];
    const ssize_t len = readlink("/proc/self/ns/time", ns, sizeof(ns) - 1);
    return id + "/" + (len > 0 ? std::string(ns, static_cast<size_t>(len)) : std::string("-"));
  }();
  return domain;
}

ClockRelation RelateClocks(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return ClockRelation::kUnrelated;
  if (a == b) return ClockRelation::kSame;
  const size_t sa = a.find('/'), sb = b.find('/');
  if (sa != std::string_view::npos && sb != std::string_view::npos && sa > 0 && a.substr(0, sa) == b.substr(0, sb)) {
    return ClockRelation::kSameBoot;
  }
  return ClockRelation::kUnrelated;
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
