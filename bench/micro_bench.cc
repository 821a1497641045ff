// dlio-bench-micro: Google Benchmark microbenchmarks of the hot pieces (issue 5, item 6).
//  - TFRecord framing + CRC: CRC32C of a resnet50-sized record (ISA-L), writing framed records (Generate: the
//    tf.train.Example framing and both masked CRCs per record), and cutting records out of a stream (Next()).
//    The files live in /dev/shm so the kernel copy is the only I/O cost.
//  - Random bytes for generation (the Rng every format's Generate() fills samples with).
//  - NPY header parsing (the reader's own parser) on numpy's header for an unet3d-like sample.
//  - Latency histogram: Record(), IoStats::AddOp() (what the read path calls per op), and merging two histograms.
//  - Epoch plan for 10 M samples with file and sample shuffle: Make() plus the rank's sample list (world 1), with
//    the plan's heap bytes as counters (target: < 1 s and < 200 MB).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "plan/epoch_plan.h"
#include "results/io_stats.h"
#include "results/latency_histogram.h"
#include "readers/format.h"
#include "storage/io_util.h"
#include "readers/npz.h"
#include "readers/tfrecord.h"

namespace dlio {
namespace {

constexpr int64_t kResnetSide = 338;  // floor(sqrt(114660.07)): a 114,244-byte image, DLIO's resnet50 record

std::string ScratchDir() {
  static const std::string dir = [] {
    std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string d = base + "/dlio-bench-micro-" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    std::atexit([] { std::filesystem::remove_all(ScratchDir()); });
    return d;
  }();
  return dir;
}

void BM_Crc32cRecord(benchmark::State& state) {
  std::vector<uint8_t> rec(kResnetSide * kResnetSide, 0x5a);
  uint32_t c = 0;
  for (auto _ : state) {
    c ^= Crc32c(rec.data(), rec.size());
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * rec.size()));
}
BENCHMARK(BM_Crc32cRecord);

std::unique_ptr<Format> Tfrecord(int64_t records) {
  FormatOptions o;
  o.samples_per_file = records;
  o.sample_dims = {kResnetSide, kResnetSide};
  return std::move(*MakeFormat("tfrecord", o));
}

void BM_TfrecordWriteFramedRecords(benchmark::State& state) {
  constexpr int64_t kRecords = 64;
  auto f = Tfrecord(kRecords);
  const std::string path = ScratchDir() + "/w.tfrecord";
  IoStats stats;
  for (auto _ : state) {
    if (!f->Generate(path, 1, stats).ok()) state.SkipWithError("generate failed");
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
  state.SetBytesProcessed(static_cast<int64_t>(stats.Snapshot().bytes));
}
BENCHMARK(BM_TfrecordWriteFramedRecords)->Unit(benchmark::kMillisecond);

void BM_TfrecordStreamRecords(benchmark::State& state) {
  constexpr int64_t kRecords = 64;
  auto f = Tfrecord(kRecords);
  const std::string path = ScratchDir() + "/r.tfrecord";
  IoStats stats;
  if (!f->Generate(path, 2, stats).ok()) state.SkipWithError("generate failed");
  std::unique_ptr<StreamReader> r = f->NewStreamReader();
  stats.Reset();
  for (auto _ : state) {
    if (!r->Open(path, stats).ok()) state.SkipWithError("open failed");
    while (*r->Next(stats)) {
    }
    r->Close();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
  state.SetBytesProcessed(static_cast<int64_t>(stats.Snapshot().bytes));
}
BENCHMARK(BM_TfrecordStreamRecords)->Unit(benchmark::kMicrosecond);

// Random sample bytes for generation (storage/io_util.h Rng), into an 8 MiB buffer.
void BM_RandomBytes(benchmark::State& state) {
  std::vector<uint8_t> buf(size_t{8} << 20);
  internal::Rng rng(1);
  for (auto _ : state) {
    rng.Fill(buf.data(), buf.size());
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buf.size()));
}
BENCHMARK(BM_RandomBytes)->Unit(benchmark::kMicrosecond);

void BM_NpyHeaderParse(benchmark::State& state) {
  const std::string hdr = NpyHeader("|u1", {2896, 2896, 1});  // unet3d-like 8 MiB sample
  const std::string path = "x.npz";
  internal::NpyArray info;
  for (auto _ : state) {
    absl::Status s = internal::ParseNpy(reinterpret_cast<const uint8_t*>(hdr.data()), hdr.size(), path, "x.npy", &info);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(info);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NpyHeaderParse);

void BM_HistogramRecord(benchmark::State& state) {
  LatencyHistogram h;
  uint64_t ns = 1234;
  for (auto _ : state) {
    h.Record(ns);
    ns = ns * 6364136223846793005ULL + 1442695040888963407ULL;  // spread over all buckets
    ns >>= 24;
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HistogramRecord);

void BM_IoStatsAddOp(benchmark::State& state) {
  IoStats s;
  uint64_t ns = 50000;
  for (auto _ : state) {
    s.AddOp(262144, ns);
    ns += 97;
  }
  benchmark::DoNotOptimize(s.Snapshot().ops);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IoStatsAddOp);

void BM_HistogramMerge(benchmark::State& state) {
  LatencyHistogram a, b;
  for (uint64_t i = 1; i < 100000; i += 7) b.Record(i * 1000);
  for (auto _ : state) {
    a += b;
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HistogramMerge);

size_t PeakRssBytes() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<size_t>(ru.ru_maxrss) * 1024;
}

// 10 M samples: 10,000 files x 1,000 samples, file and sample shuffle, batch 32, world 1 (the whole epoch is
// this rank's list), index mode.
void BM_EpochPlan10M(benchmark::State& state) {
  PlanParams p;
  p.num_files = 10000;
  p.samples_per_file = 1000;
  p.batch = 32;
  p.world = 1;
  p.file_shuffle = ShuffleMode::kSeed;
  p.sample_shuffle = ShuffleMode::kSeed;
  const size_t rss0 = PeakRssBytes();
  size_t plan_bytes = 0, list_bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, 1);
    if (!plan.ok()) {
      state.SkipWithError("plan failed");
      break;
    }
    std::vector<SampleRef> mine = plan->RankSamples(0);
    plan_bytes = plan->MemoryBytes();
    list_bytes = mine.capacity() * sizeof(SampleRef);
    benchmark::DoNotOptimize(mine.data());
  }
  state.counters["samples"] = static_cast<double>(p.num_files * p.samples_per_file);
  state.counters["plan_MB"] = static_cast<double>(plan_bytes) / 1e6;
  state.counters["rank_list_MB"] = static_cast<double>(list_bytes) / 1e6;
  state.counters["total_MB"] = static_cast<double>(plan_bytes + list_bytes) / 1e6;
  state.counters["peak_rss_growth_MB"] = static_cast<double>(PeakRssBytes() - rss0) / 1e6;
}
BENCHMARK(BM_EpochPlan10M)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace dlio

BENCHMARK_MAIN();
