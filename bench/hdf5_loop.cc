// dlio-bench-hdf5-loop: the reference of bench case (c), a minimal loop over libhdf5's C API.
//
// It replays what the agent reads for an hdf5 job: the same files, the same samples in the same order (the
// agent's own EpochPlan, rank 0 of 1), the same thread count (read_threads; thread t takes batches t, t+T, ...
// as the Loader does), and per sample what DLIO's on_demand HDF5 reader does and real h5py code pays:
//   H5Fopen, H5Dopen2("records_0"), H5Dget_space, H5Sselect_hyperslab, H5Screate_simple, H5Dread, closes.
// It knows the sample shape from the job (no type or shape queries), and has no queue, batches or barrier: the
// libhdf5 cost alone. --keep-open opens every file once per thread instead (what the agent does not do).
// Prints one JSON line: {"bytes":B,"samples":N,"seconds":S,"cpu_seconds":C}.
// Usage: dlio-bench-hdf5-loop JOB.yaml DATA_ROOT EPOCHS [--keep-open]
#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "plan/epoch_plan.h"
#include "job/workload_spec.h"
#include "bench/process_cpu.h"
#include "readers/format.h"

namespace {

using dlio::bench::ProcessCpuSeconds;

int Die(const std::string& what) {
  std::fprintf(stderr, "dlio-bench-hdf5-loop: %s\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Die("usage: dlio-bench-hdf5-loop JOB.yaml DATA_ROOT EPOCHS [--keep-open]");
  const bool keep_open = argc > 4 && std::strcmp(argv[4], "--keep-open") == 0;
  absl::StatusOr<dlio::WorkloadSpec> spec = dlio::LoadWorkloadFile(argv[1], {});
  if (!spec.ok()) return Die(std::string(spec.status().message()));
  const int epochs = std::atoi(argv[3]);
  std::filesystem::path data = spec->data_folder;
  if (data.is_relative()) data = std::filesystem::path(argv[2]) / data;
  std::vector<std::string> files;
  for (int64_t i = 0; i < spec->num_files_train; ++i) {
    files.push_back((data / dlio::DataFileRelPath("train", spec->file_prefix, i, spec->num_files_train,
                                                  spec->num_subfolders_train, "hdf5"))
                        .string());
  }
  const hsize_t d = static_cast<hsize_t>(spec->SampleDim());
  const int64_t threads = std::max<int64_t>(1, spec->read_threads), batch = spec->batch_size;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);

  double seconds = 0;
  uint64_t samples = 0;
  std::atomic<bool> failed{false};
  const double cpu0 = ProcessCpuSeconds();
  for (int e = 1; e <= epochs; ++e) {
    absl::StatusOr<dlio::EpochPlan> plan = dlio::EpochPlan::Make(dlio::TrainPlanParams(*spec, 1), e);
    if (!plan.ok()) return Die(std::string(plan.status().message()));
    const std::vector<dlio::SampleRef> order = plan->RankSamples(0);
    const int64_t steps = plan->steps();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::vector<uint8_t> buf(d * d);
        std::map<uint32_t, std::pair<hid_t, hid_t>> open;  // --keep-open: file -> (file, dataset)
        for (int64_t k = t; k < steps; k += threads) {
          for (int64_t i = k * batch; i < (k + 1) * batch; ++i) {
            const dlio::SampleRef s = order[static_cast<size_t>(i)];
            hid_t f, ds;
            if (keep_open && open.count(s.file)) {
              std::tie(f, ds) = open[s.file];
            } else {
              f = H5Fopen(files[s.file].c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
              ds = H5Dopen2(f, "records_0", H5P_DEFAULT);
              if (keep_open) open[s.file] = {f, ds};
            }
            hid_t fs = H5Dget_space(ds);
            hsize_t start[3] = {s.sample, 0, 0}, count[3] = {1, d, d};
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
            hid_t ms = H5Screate_simple(3, count, nullptr);  // the selection's shape, as h5py does
            if (H5Dread(ds, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, buf.data()) < 0) failed = true;
            H5Sclose(ms);
            H5Sclose(fs);
            if (!keep_open) {
              H5Dclose(ds);
              H5Fclose(f);
            }
          }
        }
        for (auto& [id, h] : open) {
          H5Dclose(h.second);
          H5Fclose(h.first);
        }
      });
    }
    for (auto& th : pool) th.join();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples += static_cast<uint64_t>(steps * batch);
  }
  if (failed) return Die("an H5Dread failed");
  std::printf("{\"bytes\":%llu,\"samples\":%llu,\"seconds\":%.6f,\"cpu_seconds\":%.3f}\n",
              static_cast<unsigned long long>(samples * d * d), static_cast<unsigned long long>(samples), seconds,
              ProcessCpuSeconds() - cpu0);
  return 0;
}
