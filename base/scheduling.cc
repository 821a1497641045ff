#include "base/scheduling.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "absl/synchronization/mutex.h"

namespace dlio {
namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER1); glibc has no wrapper.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // SCHED_OTHER on EEVDF: the requested slice in ns (clamped to 0.1 .. 100 ms)
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

void RequestSlice(uint64_t ns) {
  static const bool off = [] {
    const char* e = std::getenv("DLIO_SCHED_HINTS");
    return e != nullptr && std::string_view(e) == "0";
  }();
  if (off) return;
  // Only plain SCHED_OTHER threads: anyone who chose another policy (batch, idle, real-time) keeps it.
  if (sched_getscheduler(0) != SCHED_OTHER) return;
  SchedAttr a{};
  a.size = sizeof a;
  a.sched_policy = SCHED_OTHER;
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);  // per thread on Linux; keep it (sched_setattr sets it too)
  if (errno != 0) return;
  a.sched_nice = nice;
  a.sched_runtime = ns;
  syscall(SYS_sched_setattr, 0, &a, 0);  // best effort (see the header)
}

// 0.1 ms: the shortest slice the kernel accepts. 3 ms: measured in bench/ against the default (0.75 ms scaled by
// the CPU count) and 10 ms; 3 ms read fastest.
constexpr uint64_t kShortSliceNs = 100'000;
constexpr uint64_t kBulkSliceNs = 3'000'000;

}  // namespace

void RequestShortSlices() { RequestSlice(kShortSliceNs); }
void RequestBulkSlices() { RequestSlice(kBulkSliceNs); }

void SkipMutexDeadlockDetection() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }

}  // namespace dlio
