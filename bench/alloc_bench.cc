// dlio-bench-alloc: heap allocations per sample on the steady-state read path (the agent's Loader and the format
// readers, every engine), measured with a counting allocator.
//
// Method (the buffer pool of storage/storage.h is switched off, so set-up is the same in every run): the project's
// counting allocator (base/alloc_counter.h, every thread counted). Each configuration runs the Loader for S steps and then for 2S steps on the same
// files; everything that does not depend on the number of samples (threads, queues, ring set-up, buffers growing
// to the largest file, libhdf5's first-use initialisation) is the same in both runs, so
//   allocations per sample = (A(2S) - A(S)) / (S x batch).
// "ours" counts operator new (our code, absl and libstdc++ allocate through it) plus our own aligned_alloc;
// "library" is every other malloc-family call (libhdf5 is C and calls malloc itself).
// Output: one line per configuration, `alloc <format> <engine> ours_per_sample=<x> library_per_sample=<y>`.
// --check: exit 1 unless ours_per_sample is 0 everywhere (a deterministic check, used by CTest).
// --s3 ENVFILE: the S3 read path instead (storage.storage_type: s3): AWS_* settings from ENVFILE (the env file of
// scripts/ceph-rgw.sh), objects generated into the bucket dlio-bench-alloc, the same measurement per format;
// "library" then holds libcurl's own allocations (it copies the URL and range strings per request).
// Usage: dlio-bench-alloc [--check] [--s3 ENVFILE] [DIR]   (DIR: scratch folder for the small datasets; default: a
// temp dir)
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fstream>

#include "agent/loader.h"
#include "base/alloc_counter.h"
#include "plan/epoch_plan.h"
#include "readers/format.h"
#include "storage/s3/client.h"

namespace dlio {
namespace {

std::shared_ptr<const S3Config> g_s3;  // --s3: the bucket every configuration reads from

struct Config {
  const char* format;
  IoEngine engine;
  int64_t files, nspf, dim, batch, threads;
  bool trace = false;   // --trace on: every loader thread records into its TraceBuffer
  bool memory = false;  // reader.read_type: memory
};

struct Counts {
  uint64_t ours = 0, library = 0;
};

bool Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "dlio-bench-alloc: %s: %s\n", what.c_str(), std::string(s.message()).c_str());
  return false;
}

// Runs the loader for `steps` steps and returns the allocations counted while it ran (start to destruction).
bool RunLoader(const LoaderConfig& cfg, PlanParams params, int64_t steps, Counts* out) {
  if (params.mode == AccessMode::kStream) params.max_steps = steps;  // the stream plan reads `steps` batches' records
  absl::StatusOr<EpochPlan> plan = EpochPlan::Make(params, 1);
  if (!plan.ok()) return Fail("plan", plan.status());
  std::atomic<bool> cancel{false};
  StreamAssignment stream;
  const bool streaming = params.mode == AccessMode::kStream;
  if (streaming) stream = plan->RankStream(0);
  testing::GlobalAllocationCounter allocs;
  {
    std::unique_ptr<Loader> loader = streaming ? Loader::StartStream(cfg, std::move(stream), steps, &cancel)
                                               : Loader::StartIndex(cfg, *plan, 0, steps, &cancel);
    for (int64_t s = 0; s < steps; ++s) {
      if (absl::Status st = loader->Next(); !st.ok()) {
        return Fail("loader", st);
      }
    }
  }
  out->ours = allocs.counts().ours();
  out->library = allocs.counts().library;
  return true;
}

bool Measure(const std::string& dir, const Config& c, bool* ours_zero) {
  FormatOptions o;
  o.samples_per_file = c.nspf;
  o.sample_dims = {c.dim, c.dim};
  o.io_engine = c.engine;
  if (c.engine == IoEngine::kS3) o.s3 = g_s3;
  o.read_in_memory = c.memory;
  o.transfer_size = 65536;
  if (std::string(c.format) == "hdf5") o.hdf5_chunk_dims = {1, c.dim, c.dim};
  absl::StatusOr<std::unique_ptr<Format>> f = MakeFormat(c.format, o);
  if (!f.ok()) return Fail("format", f.status());
  LoaderConfig cfg;
  cfg.format = f->get();
  cfg.batch = c.batch;
  cfg.threads = c.threads;
  cfg.prefetch = 2;
  // Tracing: preallocated buffers, as the PhaseRunner makes them (small enough that the cap is reached: dropping
  // must not allocate either).
  std::vector<std::unique_ptr<TraceBuffer>> trace;
  if (c.trace) {
    for (int64_t t = 0; t < c.threads; ++t) {
      trace.push_back(TraceBuffer::Make(LoaderTrackId(0, static_cast<int>(t)), 4096));
      cfg.trace.push_back(trace.back().get());
    }
  }
  IoStats gen;
  for (int64_t i = 0; i < c.files; ++i) {
    const std::string path = c.engine == IoEngine::kS3 ? std::string(c.format) + "/" +
                                                             DataFileName("img", i, c.files, (*f)->extension())
                                                       : dir + "/" + DataFileName("img", i, c.files, (*f)->extension());
    if (c.engine == IoEngine::kS3 || !std::filesystem::exists(path)) {
      if (absl::Status s = (*f)->Generate(path, static_cast<uint64_t>(i), gen); !s.ok()) return Fail("generate", s);
    }
    cfg.files.push_back(path);
  }
  PlanParams p;
  p.num_files = c.files;
  p.samples_per_file = c.nspf;
  p.batch = c.batch;
  p.read_threads = c.threads;
  p.sample_shuffle = ShuffleMode::kSeed;
  p.mode = (*f)->streaming() ? AccessMode::kStream : AccessMode::kIndex;
  absl::StatusOr<int64_t> max_steps = EpochPlan::Steps(p);
  if (!max_steps.ok()) return Fail("plan", max_steps.status());
  const int64_t s = *max_steps / 2;
  Counts warm, a, b;
  if (!RunLoader(cfg, p, s, &warm) || !RunLoader(cfg, p, s, &a) || !RunLoader(cfg, p, 2 * s, &b)) return false;
  const double samples = static_cast<double>(s * c.batch);
  const double ours = (static_cast<double>(b.ours) - static_cast<double>(a.ours)) / samples;
  const double lib = (static_cast<double>(b.library) - static_cast<double>(a.library)) / samples;
  std::printf("alloc %s %s%s%s ours_per_sample=%.3f library_per_sample=%.3f samples=%.0f\n", c.format,
              IoEngineName(c.engine), c.trace ? " trace" : "", c.memory ? " memory" : "", ours, lib, samples);
  if (b.ours != a.ours) *ours_zero = false;
  return true;
}

}  // namespace
}  // namespace dlio

int main(int argc, char** argv) {
  bool check = false;
  std::string dir, s3_env;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) {
      check = true;
    } else if (std::strcmp(argv[i], "--s3") == 0 && i + 1 < argc) {
      s3_env = argv[++i];
    } else {
      dir = argv[i];
    }
  }
  // No buffer pool (storage/storage.h): otherwise a loader thread that starts late may or may not find the buffer
  // of one that already finished, and the set-up allocations would differ from run to run by one.
  ::setenv("DLIO_BUFFER_POOL_BYTES", "0", 1);
  bool temp = false;
  if (dir.empty()) {
    char tmpl[] = "/tmp/dlio-bench-alloc.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return 2;
    dir = tmpl;
    temp = true;
  }
  using dlio::IoEngine;
  const dlio::Config configs[] = {
      {"npz", IoEngine::kPosix, 64, 1, 128, 4, 2},       {"npz", IoEngine::kODirect, 64, 1, 128, 4, 2},
      {"npz", IoEngine::kIoUring, 64, 1, 128, 4, 2},     {"tfrecord", IoEngine::kPosix, 8, 64, 100, 16, 2},
      {"tfrecord", IoEngine::kODirect, 8, 64, 100, 16, 2}, {"tfrecord", IoEngine::kIoUring, 8, 64, 100, 16, 2},
      {"hdf5", IoEngine::kPosix, 4, 256, 64, 8, 2},
      {"npy", IoEngine::kPosix, 64, 1, 128, 4, 2},       {"npy", IoEngine::kIoUring, 64, 1, 128, 4, 2},
      {"csv", IoEngine::kODirect, 32, 2, 32, 4, 2},      {"png", IoEngine::kPosix, 32, 1, 64, 4, 2},
      {"npz", IoEngine::kPosix, 16, 8, 64, 4, 2, false, true},
      {"npz", IoEngine::kPosix, 64, 1, 128, 4, 2, true}, {"tfrecord", IoEngine::kPosix, 8, 64, 100, 16, 2, true},
  };
  const dlio::Config s3_configs[] = {
      {"npz", IoEngine::kS3, 32, 1, 128, 4, 2},      {"npy", IoEngine::kS3, 32, 1, 128, 4, 2},
      {"tfrecord", IoEngine::kS3, 4, 64, 100, 16, 2}, {"indexed_binary", IoEngine::kS3, 4, 64, 64, 8, 2},
      {"hdf5", IoEngine::kS3, 4, 64, 64, 8, 2},       {"npz", IoEngine::kS3, 32, 1, 128, 4, 2, true},
  };
  bool ok = true, ours_zero = true;
  if (!s3_env.empty()) {
    auto c = std::make_shared<dlio::S3Config>();
    std::ifstream in(s3_env);
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
      if (k == "AWS_ENDPOINT_URL") c->endpoint = v;
      if (k == "AWS_ACCESS_KEY_ID") c->access_key_id = v;
      if (k == "AWS_SECRET_ACCESS_KEY") c->secret_access_key = dlio::S3Secret(v);
      if (k == "AWS_REGION") c->region = v;
    }
    c->bucket = "dlio-bench-alloc";
    dlio::g_s3 = c;
    if (absl::Status s = dlio::S3Client(c).CreateBucket(); !s.ok()) {
      std::fprintf(stderr, "dlio-bench-alloc: %s\n", std::string(s.message()).c_str());
      return 2;
    }
    for (const dlio::Config& cfg : s3_configs) ok = dlio::Measure(dir, cfg, &ours_zero) && ok;
    if (temp) std::filesystem::remove_all(dir);
    if (!ok) return 2;
    if (check && !ours_zero) {
      std::fprintf(stderr, "dlio-bench-alloc: our code allocates on the steady-state S3 read path (see above)\n");
      return 1;
    }
    return 0;
  }
  for (const dlio::Config& c : configs) {
    const std::string sub = dir + "/" + c.format;
    std::filesystem::create_directories(sub);
    ok = dlio::Measure(sub, c, &ours_zero) && ok;
  }
  if (temp) std::filesystem::remove_all(dir);
  if (!ok) return 2;
  if (check && !ours_zero) {
    std::fprintf(stderr, "dlio-bench-alloc: our code allocates on the steady-state read path (see above)\n");
    return 1;
  }
  return 0;
}
