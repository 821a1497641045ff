// Scheduler hints: short time slices for the control path, long ones for bulk work.
//
// An agent runs two kinds of threads on the same cores: bulk threads (loader threads copying file data, generation
// workers) that would use every cycle, and control threads (a rank's step thread, which waits for a batch and then
// for the step barrier, and gRPC's threads, which carry the barrier) that run for microseconds at a time. With
// equal slices a woken control thread often waited for a bulk thread's slice to end (step-barrier waits of up to
// 13 ms with four loader threads on two cores), stalling every step of the pipeline. Linux's EEVDF scheduler
// (kernel >= 6.12) takes a per-thread slice request (sched_attr.sched_runtime for SCHED_OTHER): a thread asking for
// short slices gets an earlier deadline and may preempt on wake-up, while every thread keeps its CPU share (weights
// and nice values are untouched). In bench/ this raised the agent's tfrecord read rate ~10 % and its io_uring npz
// rate ~5 % (medians of alternating runs on the 2-core bench machine). The coordinator is control path only and
// asks for short slices for all its threads, so that it answers a step barrier promptly on a busy host (the
// embedded `run`, or a coordinator sharing a node).
// Best effort: on older kernels, or where the call is refused, nothing changes and nothing is reported.
// DLIO_SCHED_HINTS=0 in the environment switches both off (for comparisons).
// Thread-safety: each call affects the calling thread only (and, for slices, the threads it creates afterwards,
// which inherit them).
#pragma once

namespace dlio {

// Short slices (0.1 ms, the kernel's minimum) for the calling thread and every thread it creates afterwards. The
// agent and the coordinator call it first thing in main(), so gRPC's threads and the step threads inherit it.
void RequestShortSlices();
// Long slices (3 ms) for the calling thread: bulk work that is happy to be preempted by the control path and loses
// cache contents at every switch. Loader threads and generation workers call it when they start.
void RequestBulkSlices();

// Process-wide: switches off abseil's mutex deadlock detection (Debian's abseil is built with it on). gRPC takes an
// absl::Mutex for every call operation, and the detection keeps a lock graph updated on each acquisition: ~10 % of a
// coordinator's CPU with 1,024 agents (perf, issue 14). Our own locks are dlio::Mutex (base/mutex.h), checked at
// build time (clang -Wthread-safety). Called first thing in main() by the coordinator and the agent.
void SkipMutexDeadlockDetection();

}  // namespace dlio
