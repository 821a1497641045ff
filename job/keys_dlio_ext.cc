// The rows of the key table (key_table.h) for dlio_ext, this project's own keys (DLIO does not know them).
#include "absl/strings/str_cat.h"
#include "base/bandwidth_limiter.h"
#include "job/key_table.h"

namespace dlio::workload_internal {

namespace {

// Data table: dlio_ext's rows of how agents meet and move data (the step barrier, parquet, S3 endpoints and
// requests in flight, telemetry), in the order of the section's docs.
void AddDlioExtTransportKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "dlio_ext.barrier", KeyStatus::kImplemented,
      "how the per-step barrier of a job over several agents meets: announce (the default: each agent announces "
      "its step when its ranks' compute starts, with the compute end it drew; the coordinator releases every "
      "agent at the slowest compute end, so the harness's round trip hides under the compute) or after_compute "
      "(each agent arrives after its ranks' compute and waits for the coordinator's release, as DLIO's "
      "comm.barrier(); docs/architecture.md, Step barrier)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"announce", "after_compute"}, {}, "step barrier", &s.barrier);
      },
      [](const WorkloadSpec& s) { return Quote(s.barrier); }));
  v.push_back(IntKey("dlio_ext.barrier_tree_min_agents", &WorkloadSpec::barrier_tree_min_agents, 2, 1000000,
                     "the step barrier goes through a relay tree for a job over at least this many agents (the "
                     "agents are grouped dlio_ext.barrier_fanout to a relay agent, and the relays again, until at most "
                     "dlio_ext.barrier_fanout relays are under the coordinator), a flat star below; 33: the star up "
                     "to 32 agents, where bench/RESULTS.md's barrier simulation finds the tree no faster "
                     "(docs/architecture.md, Step barrier)"));
  v.push_back(IntKey("dlio_ext.barrier_fanout", &WorkloadSpec::barrier_fanout, 2, 4096,
                     "agents per relay of the step barrier's relay tree (the relay included); 16: within 0.05-0.25 "
                     "ms of the best release latency from 256 to 10,000 agents in bench/RESULTS.md's barrier "
                     "simulation, the coordinator's CPU per step bounded by it"));
  AddParquetExtKeys(v);
  v.push_back(Custom(
      "dlio_ext.s3_endpoint_policy", KeyStatus::kImplemented,
      "s3 with several endpoints (storage.storage_options.endpoint_url as a list, or the agents' S3_ENDPOINT_URIS): "
      "round_robin puts rank r on endpoint r % n (the MLCommons fork's default); per_agent puts every rank of agent "
      "a on endpoint a % n; per_request sends each request of a client to the next endpoint. Whatever the policy, "
      "an attempt that fails with attempts left goes to the next endpoint (a failover, counted; "
      "docs/object-storage.md)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"round_robin", "per_agent", "per_request"}, {}, "endpoint policy",
                           &s.s3_endpoint_policy);
      },
      [](const WorkloadSpec& s) { return Quote(s.s3_endpoint_policy); }));
  v.push_back(IntKey("dlio_ext.telemetry_interval", &WorkloadSpec::telemetry_interval, 1, 3600,
                     "seconds between the lines of each agent's host telemetry series (<agent>_host.jsonl in the "
                     "results: CPU, memory, disks, network; 10 as MLPerf Storage v3 records them); the agents "
                     "sample every second for /metrics whatever it is"));
  v.push_back(IntKey("dlio_ext.s3_requests_in_flight", &WorkloadSpec::s3_requests_in_flight, 1, 64,
                     "whole-object GETs each loader thread keeps in flight over s3 (npz, npy, csv, jpeg, png: the "
                     "objects its next samples read, asked for ahead over one libcurl multi handle with kept-alive "
                     "connections; delivered in the plan's order); 1 = one GET at a time. 8 reached the reference "
                     "client's rate for 100 KiB objects on the suite's RGW (docs/object-storage.md#concurrency)"));
}

}  // namespace

// Data table: the dlio_ext section.
void AddDlioExtKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "dlio_ext.io_engine", KeyStatus::kImplemented,
      "how npz, npy, csv, jpeg, png and tfrecord files are read: posix (pread), odirect (O_DIRECT, 4 KiB-aligned, "
      "whole files rounded up as DLIO's O_DIRECT readers do), io_uring (several reads in flight), mmap (the file "
      "mapped, reads copied out of it: page faults do the I/O); hdf5 reads go "
      "through libhdf5 and indexed_binary with pread (posix only; docs/io.md)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"posix", "odirect", "io_uring", "mmap"}, {}, "I/O engine", &s.io_engine);
      },
      [](const WorkloadSpec& s) { return Quote(s.io_engine); }));
  v.push_back(Custom(
      "dlio_ext.hdf5_engine", KeyStatus::kImplemented,
      "how hdf5 samples are read: replay (the default: libhdf5 reads a file's first samples and records its reads; "
      "later samples of the file issue the same reads, the sample's data substituted, without libhdf5) or libhdf5 "
      "(libhdf5 opens the file and reads every sample). Both issue the same reads; replay falls back to libhdf5 for "
      "layouts it cannot prove (docs/io.md)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"replay", "libhdf5"}, {}, "HDF5 engine", &s.hdf5_engine);
      },
      [](const WorkloadSpec& s) { return Quote(s.hdf5_engine); }));
  // A per-agent byte-rate cap (base/bandwidth_limiter.h): a number of bytes/s or one with a unit.
  auto rate_key = [](const char* path, int64_t WorkloadSpec::*field, std::string note) {
    return Custom(
        path, KeyStatus::kImplemented,
        note + " (0 = none; else at least 1 byte/s): a number of bytes/s or one with a unit (KB, MB, GB powers of 1000; KiB, MiB, GiB "
               "powers of 1024; optional /s), e.g. 200MiB/s. Shared by every rank of the agent (docs/mlperf.md); "
               "emulates a slower device",
        [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          if (!n.IsScalar()) return MustBe(p, "a rate in bytes per second (e.g. 200MiB/s)", n);
          absl::StatusOr<double> r = ParseByteRate(n.Scalar());
          if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ": ", r.status().message()));
          if (*r > kMaxBandwidth) {
            return MustBe(p, fmt::format("a rate of at most {} bytes/s (1 PB/s)", FormatDouble(kMaxBandwidth)), n);
          }
          // Stored in whole bytes/s: a cap below 1 B/s would become 0, which means no cap at all.
          if (*r > 0 && *r < kMinBandwidth) {
            return MustBe(p, "0 (no cap) or a rate of at least 1 byte/s (e.g. 200MiB/s)", n);
          }
          s.*field = static_cast<int64_t>(*r);
          return absl::OkStatus();
        },
        [field](const WorkloadSpec& s) { return std::to_string(s.*field); });
  };
  v.push_back(rate_key("dlio_ext.read_bandwidth_limit", &WorkloadSpec::read_bandwidth_limit,
                       "per-agent cap on the bytes the agent's loader threads read per second"));

  v.push_back(BoolKey("dlio_ext.checkpoint_evict_cache", &WorkloadSpec::checkpoint_evict_cache,
                      "before each checkpoint load, flush and evict the files' pages from the page cache "
                      "(posix_fadvise DONTNEED), so loads read the storage, as MLPerf's rules require between "
                      "write and read"));
  v.push_back(rate_key("dlio_ext.checkpoint_bandwidth_limit", &WorkloadSpec::checkpoint_bandwidth_limit,
                       "per-agent cap on the bytes the agent's ranks write and read per second in checkpoint saves "
                       "and loads (makes small checkpoint rehearsals repeatable)"));
  v.push_back(BoolKey("dlio_ext.trace", &WorkloadSpec::trace,
                      "record open, read, wait, compute and barrier events per rank and loader thread into a Chrome "
                      "trace (trace.json in the results; `--trace FILE` sets it); off costs one branch per event"));
  v.push_back(IntKey("dlio_ext.trace_events_per_thread", &WorkloadSpec::trace_events_per_thread, 1, 1 << 20,
                     "trace events kept per thread and phase (32 bytes each, preallocated); the rest are counted as "
                     "dropped"));
  v.push_back(Custom(
      "dlio_ext.evict_cache", KeyStatus::kImplemented,
      "page-cache hygiene as MLPerf requires: before_training evicts every data file of this agent's ranks "
      "(posix_fadvise DONTNEED) after generation, before epoch 1; every_epoch before every training epoch (as "
      "MLPerf Storage v3.0 does; --mlperf sets it); none. As root the agent also drops the whole page cache "
      "(/proc/sys/vm/drop_caches); summary.json records per epoch which it did and the bytes the data root's "
      "device delivered (docs/mlperf.md)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"none", "before_training", "every_epoch"}, {}, "cache eviction", &s.evict_cache);
      },
      [](const WorkloadSpec& s) { return Quote(s.evict_cache); }));
  AddDlioExtTransportKeys(v);
}

}  // namespace dlio::workload_internal
