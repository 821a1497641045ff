// The CPU time (user + system) this process has used so far, from getrusage(RUSAGE_SELF): the benchmarks' measure of
// CPU per sample. Thread-safe (a system call); includes every thread of the process.
#pragma once

#include <sys/resource.h>

namespace dlio::bench {

inline double ProcessCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace dlio::bench
