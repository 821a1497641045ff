// dlio-bench-hdf5-engines: the hdf5 reader's two engines side by side (issue 31; dlio_ext.hdf5_engine), samples per
// CPU-second of one loader thread reading DLIO's on_demand pattern (every sample opens its file) from the page
// cache, so the CPU per sample is the engine's own: libhdf5 (H5Fopen + H5Dread per sample through our driver) and
// replay (the recorded reads issued again without libhdf5, hdf5_replay.h).
//
// It generates FILES files of SAMPLES samples of DIMS (uint8, chunked with CHUNK and filtered with COMPRESSION
// when given) into WORK (kept: generated once), warms the page cache with one pass, then runs ROUNDS rounds of both
// engines in alternating order over every sample in a shuffled order (a fresh reader per round, as the Loader makes
// per epoch). Per engine the medians: samples per CPU-second (getrusage, the whole process), bytes read per sample
// and, for replay, the share of CPU spent decompressing chunks (measured apart). It also checks that both engines
// read the same bytes and deliver the same samples. Prints one JSON line per engine and one with the ratio.
// Usage: dlio-bench-hdf5-engines WORK [--files N] [--samples N] [--dims A,B] [--chunk 1,A,B] [--compression gzip]
//                                     [--rounds N]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/process_cpu.h"
#include "readers/format.h"
#include "readers/hdf5_replay.h"

namespace {

using dlio::bench::ProcessCpuSeconds;

int Die(const std::string& what) {
  std::fprintf(stderr, "dlio-bench-hdf5-engines: %s\n", what.c_str());
  return 1;
}

std::vector<int64_t> Ints(const char* s) {
  std::vector<int64_t> v;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    v.push_back(std::strtoll(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p != '\0') break;
  }
  return v;
}

struct Run {
  double cpu = 0, wall = 0, decode = 0;
  uint64_t samples = 0, bytes = 0, checksum = 0;
};

// One round: a fresh reader of the engine over `order`.
Run OneRound(const dlio::Format& format, const std::vector<std::pair<std::string, uint32_t>>& order) {
  auto reader = format.NewSampleReader();
  dlio::IoStats stats;
  Run r;
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = ProcessCpuSeconds();
  for (const auto& [path, i] : order) {
    auto n = reader->ReadSample(path, i, stats);
    if (!n.ok()) {
      std::fprintf(stderr, "dlio-bench-hdf5-engines: %s\n", std::string(n.status().message()).c_str());
      std::exit(1);
    }
    r.checksum += static_cast<unsigned char>(reader->last_sample()[*n / 2]);
  }
  r.cpu = ProcessCpuSeconds() - c0;
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.samples = order.size();
  r.bytes = stats.Snapshot().bytes;
  r.decode = static_cast<double>(dlio::hdf5_internal::ReplayCountersOf(*reader).decode_ns) / 1e9;
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Die("usage: dlio-bench-hdf5-engines WORK [--files N] [--samples N] [--dims A,B] ...");
  const std::string work = argv[1];
  dlio::FormatOptions o;
  int64_t files = 4, rounds = 3;
  o.samples_per_file = 2048;
  o.sample_dims = {256, 256};  // 64 KiB uint8 samples (the measure)
  for (int a = 2; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--files") files = std::atoll(argv[a + 1]);
    else if (k == "--samples") o.samples_per_file = std::atoll(argv[a + 1]);
    else if (k == "--dims") o.sample_dims = Ints(argv[a + 1]);
    else if (k == "--chunk") o.hdf5_chunk_dims = Ints(argv[a + 1]);
    else if (k == "--compression") o.compression = argv[a + 1];
    else if (k == "--rounds") rounds = std::atoll(argv[a + 1]);
    else return Die("unknown option " + k + " (--files, --samples, --dims, --chunk, --compression, --rounds)");
  }
  std::filesystem::create_directories(work);
  o.hdf5_replay = false;
  auto lib = dlio::MakeFormat("hdf5", o);
  if (!lib.ok()) return Die(std::string(lib.status().message()));
  o.hdf5_replay = true;
  auto replay = dlio::MakeFormat("hdf5", o);
  std::vector<std::pair<std::string, uint32_t>> order;
  for (int64_t f = 0; f < files; ++f) {
    const std::string path = work + "/" + dlio::DataFileName("img", f, files, "hdf5");
    if (!std::filesystem::exists(path)) {
      dlio::IoStats st;
      if (absl::Status s = (*lib)->Generate(path + ".tmp", static_cast<uint64_t>(f), st); !s.ok()) {
        return Die(std::string(s.message()));
      }
      std::filesystem::rename(path + ".tmp", path);
    }
    for (int64_t i = 0; i < o.samples_per_file; ++i) order.emplace_back(path, static_cast<uint32_t>(i));
  }
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  OneRound(**lib, order);  // warms the page cache
  std::vector<Run> runs[2];
  for (int64_t r = 0; r < rounds; ++r) {
    for (int e : r % 2 == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0}) {
      runs[e].push_back(OneRound(e == 0 ? **lib : **replay, order));
    }
  }
  double rate[2];
  for (int e = 0; e < 2; ++e) {
    std::vector<double> sps, decode, wall;
    for (const Run& r : runs[e]) {
      sps.push_back(static_cast<double>(r.samples) / r.cpu);
      decode.push_back(r.decode / r.cpu);
      wall.push_back(static_cast<double>(r.samples) / r.wall);
    }
    rate[e] = Median(sps);
    std::printf("{\"engine\":\"%s\",\"samples\":%llu,\"bytes_per_sample\":%.1f,\"samples_per_cpu_second\":%.0f,"
                "\"samples_per_second\":%.0f,\"decode_share_of_cpu\":%.3f}\n",
                e == 0 ? "libhdf5" : "replay", static_cast<unsigned long long>(runs[e][0].samples),
                static_cast<double>(runs[e][0].bytes) / static_cast<double>(runs[e][0].samples), rate[e], Median(wall),
                Median(decode));
  }
  if (runs[0][0].bytes != runs[1][0].bytes || runs[0][0].checksum != runs[1][0].checksum) {
    return Die("the engines read different bytes or delivered different samples");
  }
  std::printf("{\"replay_over_libhdf5\":%.2f}\n", rate[1] / rate[0]);
  return 0;
}
