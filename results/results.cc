// The result files (results.h): summary.json, <rank>_output.json and <rank>_per_epoch_stats.json in DLIO's layout
// with our keys beside DLIO's, the provenance of the figures, and the atomic writes and timestamps they use. The
// figures themselves come from formulas.cc (reduction.h).
#include "results/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "base/atomic_file.h"
#include "base/host_facts.h"
#include "fmt/format.h"
#include "results/host_facts_json.h"
#include "results/reduction.h"
#include "results/limit.h"
#include "results/verdict.h"

namespace dlio {
namespace {

using results_internal::Computed;
using results_internal::Compute;
using results_internal::EpochSteps;
using results_internal::EvalSteps;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A figure as JSON: the number, or null when it is not measured.
nlohmann::json Num(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string Duration2(int64_t start_us, int64_t end_us) {
  // DLIO writes per-epoch and per-block durations as '{:.2f}' strings.
  return fmt::format("{:.2f}", static_cast<double>(end_us - start_us) / 1e6);
}

// Latency percentiles of a merged histogram, in seconds (bucket upper bounds; null past the last bucket).
nlohmann::json LatencyJson(const LatencyHistogram& h) {
  nlohmann::json j;
  j["count"] = h.count();
  j["mean"] = h.count() == 0 ? 0.0 : static_cast<double>(h.sum_ns()) / static_cast<double>(h.count()) / 1e9;
  const std::pair<const char*, double> qs[] = {{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p999", 0.999}};
  for (const auto& [name, q] : qs) {
    const uint64_t ns = h.QuantileNs(q);
    if (ns == std::numeric_limits<uint64_t>::max()) {
      j[name] = nullptr;
    } else {
      j[name] = static_cast<double>(ns) / 1e9;
    }
  }
  return j;
}

// The merged histogram itself, for CDFs (dlio-coordinator report): the non-empty buckets of LatencyHistogram's
// layout as upper bounds in seconds (null for the open last bucket) and counts, in increasing order.
nlohmann::json HistogramJson(const LatencyHistogram& h) {
  nlohmann::json bounds = nlohmann::json::array(), counts = nlohmann::json::array();
  for (int i = 0; i < LatencyHistogram::kNumBuckets; ++i) {
    if (h.bucket(i) == 0) continue;
    const uint64_t ub = LatencyHistogram::UpperBoundNs(i);
    if (ub == std::numeric_limits<uint64_t>::max()) {
      bounds.push_back(nullptr);
    } else {
      bounds.push_back(static_cast<double>(ub) / 1e9);
    }
    counts.push_back(h.bucket(i));
  }
  return {{"upper_bounds_seconds", bounds}, {"counts", counts}, {"count", h.count()},
          {"sum_seconds", static_cast<double>(h.sum_ns()) / 1e9}};
}

nlohmann::json IoJson(const IoSnapshot& io) {
  return {{"bytes", io.bytes}, {"ops", io.ops}, {"samples", io.samples}, {"files", io.files}};
}

std::string BlockKey(int block) { return fmt::format("block{}", block); }

struct Host {
  std::string hostname;
  double memory_gb = 0;
  int cpu_count = 0;
  int ranks = 0;
};

// Distinct hosts in rank order; DLIO reports host lists per node. O(agents log agents): a fleet of thousands of
// nodes is listed in milliseconds.
std::vector<Host> Hosts(const JobResult& job) {
  std::vector<const AgentInfo*> agents;
  for (const AgentInfo& a : job.agents) agents.push_back(&a);
  std::stable_sort(agents.begin(), agents.end(),
                   [](const AgentInfo* a, const AgentInfo* b) { return a->first_rank < b->first_rank; });
  std::vector<Host> hosts;
  std::map<std::string_view, size_t> index;  // hostname -> its entry in hosts
  for (const AgentInfo* a : agents) {
    const auto [it, added] = index.emplace(a->hostname, hosts.size());
    if (added) {
      hosts.push_back(Host{a->hostname, a->memory_gb, a->cpu_count, a->ranks});
    } else {
      hosts[it->second].ranks += a->ranks;
    }
  }
  return hosts;
}

const AgentInfo* AgentOfRank(const JobResult& job, int rank) {
  for (const AgentInfo& a : job.agents) {
    if (rank >= a.first_rank && rank < a.first_rank + a.ranks) return &a;
  }
  return nullptr;
}

// DLIO's data_size_per_host_GB: ranks per node * samples // world * record length, in GiB, for rank 0's node.
double DataSizePerHostGb(const JobResult& job) {
  int64_t per_node = job.world;
  if (const AgentInfo* a = AgentOfRank(job, 0); a != nullptr) {
    per_node = 0;
    for (const AgentInfo& b : job.agents) {
      if (b.hostname == a->hostname) per_node += b.ranks;
    }
  }
  const int64_t samples = per_node * job.spec.num_samples_per_file * job.spec.num_files_train / std::max(1, job.world);
  return static_cast<double>(samples) * job.spec.record_length_bytes / kGiB;
}

// DLIO's host_processor_name, host_cpuinfo and host_meminfo of an agent's host (empty from agents that sent none).
void AddHostInfo(const AgentInfo* a, nlohmann::json* j) {
  (*j)["host_processor_name"] = a != nullptr ? a->processor_name : "";
  (*j)["host_cpuinfo"] = a != nullptr ? nlohmann::json(a->cpuinfo) : nlohmann::json::object();
  (*j)["host_meminfo"] = a != nullptr ? nlohmann::json(a->meminfo) : nlohmann::json::object();
}

// One rank's results by epoch (O(results), so writing every rank's files stays linear in ranks x results).
std::map<int, const RankEpochResult*> EpochsOfRank(const JobResult& job, int rank) {
  std::map<int, const RankEpochResult*> by;
  for (const RankEpochResult& r : job.train) {
    if (r.rank == rank) by[r.epoch] = &r;
  }
  return by;
}

}  // namespace

Aggregator::Aggregator(const JobResult& job) : job_(job), data_gb_(DataSizePerHostGb(job)) {}

FleetSummary Aggregator::Summarize() const { return Compute(job_).fleet; }

static nlohmann::json NicsJson(const std::vector<NicInfo>& nics) {
  nlohmann::json j = nlohmann::json::array();
  for (const NicInfo& n : nics) {
    j.push_back({{"name", n.name},
                 {"speed_mbps", n.speed_mbps >= 0 ? nlohmann::json(n.speed_mbps) : nlohmann::json(nullptr)},
                 {"mtu", n.mtu},
                 {"state", n.state}});
  }
  return j;
}

// dlio_ext.provenance: what produced these figures (docs/results.md, docs/mlperf.md).
static nlohmann::json ProvenanceJson(const JobResult& job) {
  const std::string yaml = ToYaml(job.spec);
  nlohmann::json hosts = nlohmann::json::array();
  for (const AgentInfo& a : job.agents) {
    hosts.push_back({{"agent", a.name},
                     {"hostname", a.hostname},
                     {"kernel", a.kernel},
                     {"cpu_model", a.cpu_model},
                     {"cpu_count", a.cpu_count},
                     {"memory_bytes", static_cast<uint64_t>(a.memory_gb * 1024.0 * 1024.0 * 1024.0 + 0.5)},
                     {"memory_source", a.memory_source},
                     {"nics", NicsJson(a.nics)},
                     {"data_root_fs", a.data_root_fs},
                     {"data_root_mount", {{"mount_point", a.data_root_mount.mount_point},
                                          {"source", a.data_root_mount.source},
                                          {"fs_type", a.data_root_mount.fs_type},
                                          {"device", a.data_root_mount.device},
                                          {"fsid", a.data_root_mount.fsid}}}});
  }
  return {{"tool", "dlio-cpp"},
          {"version", ToolVersion()},
          {"git_commit", ToolCommit()},
          {"job_yaml", yaml},
          {"job_sha256", Sha256Hex(yaml)},
          {"agents", hosts}};
}

namespace {

// summary.json's dlio_ext.s3: per operation, every phase of the job (docs/object-storage.md, docs/metrics.md).
nlohmann::json S3Json(const S3Snapshot& snapshot) {
  nlohmann::json s3 = nlohmann::json::object();
  for (int i = 0; i < kS3OpCount; ++i) {
    const S3OpSnapshot& o = snapshot.ops[static_cast<size_t>(i)];
    if (o.requests == 0) continue;
    nlohmann::json errors = nlohmann::json::object();
    for (int k = 0; k < kS3StatusSlots; ++k) {
      if (o.errors[static_cast<size_t>(k)] > 0) errors[S3StatusLabel(k)] = o.errors[static_cast<size_t>(k)];
    }
    s3[S3OpName(static_cast<S3Op>(i))] = {{"requests", o.requests},
                                          {"bytes", o.bytes},
                                          {"retries", o.retries},
                                          {"errors_by_status", errors},
                                          {"latency_seconds", LatencyJson(o.latency)}};
  }
  return s3;
}

// summary.json's dlio_ext.s3_endpoints: per endpoint, every operation and phase of the job (docs/object-storage.md).
nlohmann::json S3EndpointsJson(const S3Snapshot& snapshot) {
  nlohmann::json out = nlohmann::json::object();
  for (const S3EndpointSnapshot& e : snapshot.endpoints) {
    out[e.endpoint] = {{"requests", e.requests},
                       {"bytes", e.bytes},
                       {"errors", e.errors},
                       {"failovers", e.failovers},
                       {"latency_seconds", LatencyJson(e.latency)}};
  }
  return out;
}

// dlio_ext.s3 (per operation), and with any per-endpoint figure dlio_ext.s3_endpoints and s3_failovers.
void AddS3Summary(const S3Snapshot& s3, nlohmann::json* ext) {
  if (s3.total_requests() > 0) (*ext)["s3"] = S3Json(s3);
  if (!s3.endpoints.empty()) {
    (*ext)["s3_endpoints"] = S3EndpointsJson(s3);
    (*ext)["s3_failovers"] = s3.total_failovers();
  }
}

// dlio_ext.listing: per split listed once for the job (issue 27 item 3), what the listing cost and its compact form.
void AddListingSummary(const std::vector<SplitListing>& listings, nlohmann::json* ext) {
  if (listings.empty()) return;
  nlohmann::json out = nlohmann::json::object();
  for (const SplitListing& l : listings) {
    out[l.split] = {{"seconds", l.seconds},
                    {"requests", l.requests},
                    {"names", l.count},
                    // per-agent: names too many to share (agent/split_listing.h); every agent listed them itself
                    {"form", l.pattern ? "pattern" : l.names_zstd.empty() && l.count > 0 ? "per-agent" : "names"},
                    {"agent", l.agent}};
  }
  (*ext)["listing"] = out;
}

// dlio_ext.evict_cache in summary.json's train_epochs: per epoch how the agents cleared the page cache ("drop_caches",
// "fadvise", "mixed" when they differ; absent when none did) and the bytes the data roots' devices delivered during
// the epoch (each host counted once: its agents share its devices; null when some host measured nothing).
void AddCacheDrop(const JobResult& job, nlohmann::json* epochs) {
  for (nlohmann::json& e : *epochs) {
    const int epoch = e["epoch"].get<int>();
    std::string method;
    std::map<std::string, int64_t> per_host;  // hostname -> its device bytes (-1: not measured)
    for (const RankEpochResult& r : job.train) {
      if (r.epoch != epoch || r.cache_drop.empty()) continue;
      method = method.empty() || method == r.cache_drop ? r.cache_drop : "mixed";
      const AgentInfo* a = AgentOfRank(job, r.rank);
      const std::string host = a != nullptr ? a->hostname : std::to_string(r.rank);
      auto [it, fresh] = per_host.emplace(host, r.device_read_bytes);
      if (!fresh) it->second = std::max(it->second, r.device_read_bytes);
    }
    if (method.empty()) continue;
    nlohmann::json bytes = 0;
    for (const auto& [host, b] : per_host) {
      if (b < 0) {
        bytes = nullptr;
        break;
      }
      bytes = bytes.get<int64_t>() + b;
    }
    e["cache_drop"] = method;
    e["device_read_bytes"] = bytes;
  }
}

// summary.json's training figures: DLIO's metric keys, then ours per epoch.
void AddTrainSummary(const JobResult& job, const Computed& c, nlohmann::json* j, nlohmann::json* metric,
                     nlohmann::json* ext) {
  const FleetSummary& s = c.fleet;
  (*j)["epochs"] = s.epochs.size();
  nlohmann::json au = nlohmann::json::array(), tp = nlohmann::json::array();
  for (const EpochMetric& m : s.epochs) {
    au.push_back(Num(m.au_percent));
    tp.push_back(Num(m.samples_per_second));
  }
  (*metric)["train_au_percentage"] = au;
  (*metric)["train_au_mean_percentage"] = Num(s.au_mean);
  (*metric)["train_au_stdev_percentage"] = Num(s.au_stdev);
  (*metric)["train_au_meet_expectation"] = !s.au_mean ? "not measured" : s.au_meets_expectation ? "success" : "fail";
  (*metric)["train_throughput_samples_per_second"] = tp;
  (*metric)["train_throughput_mean_samples_per_second"] = Num(s.throughput_mean);
  (*metric)["train_throughput_stdev_samples_per_second"] = Num(s.throughput_stdev);
  (*metric)["train_io_mean_MB_per_second"] = Num(s.io_mean_mib);
  (*metric)["train_io_stdev_MB_per_second"] = Num(s.io_stdev_mib);
  (*metric)["train_read_bytes"] = s.read_bytes;
  (*metric)["train_io_actual_mean_MB_per_second"] = Num(s.actual_mb_mean);
  (*metric)["train_dropped_samples_per_epoch"] = s.dropped_samples;

  (*ext)["epoch_steps"] = c.window.epoch_steps;
  nlohmann::json epochs = nlohmann::json::array();
  for (size_t i = 0; i < s.epochs.size(); ++i) {
    const EpochMetric& m = s.epochs[i];
    const Computed::EpochExtra& x = c.extra[i];
    epochs.push_back({{"epoch", m.epoch},
                      {"ranks", x.ranks},
                      {"au_percentage", Num(m.au_percent)},
                      {"au_min_rank_percentage", Num(x.au_min_rank)},
                      {"au_max_rank_percentage", Num(x.au_max_rank)},
                      {"throughput_samples_per_second", Num(m.samples_per_second)},
                      {"io_MiB_per_second", Num(m.mib_per_second)},
                      {"timed_seconds", x.timed_seconds},
                      {"read_bytes", m.read_bytes},
                      {"io_actual_MB_per_second", Num(m.actual_mb_per_second)},
                      {"dropped_samples", m.dropped_samples}});
  }
  AddCacheDrop(job, &epochs);
  (*ext)["train_epochs"] = epochs;
  (*ext)["train_io"] = IoJson(s.io);
  (*ext)["train_read_latency_seconds"] = LatencyJson(s.io.latency);
  (*ext)["train_read_latency_histogram"] = HistogramJson(s.io.latency);
}

// summary.json's evaluation figures.
void AddEvalSummary(const FleetSummary& s, nlohmann::json* metric, nlohmann::json* ext) {
  nlohmann::json au = nlohmann::json::array(), tp = nlohmann::json::array();
  for (const EpochMetric& m : s.eval) {
    au.push_back(Num(m.au_percent));
    tp.push_back(Num(m.samples_per_second));
  }
  (*metric)["eval_au_percentage"] = au;
  (*metric)["eval_au_mean_percentage"] = Num(s.eval_au_mean);
  (*metric)["eval_au_meet_expectation"] =
      !s.eval_au_mean ? "not measured" : s.eval_au_meets_expectation ? "success" : "fail";
  (*metric)["eval_au_stdev_percentage"] = Num(s.eval_au_stdev);
  (*metric)["eval_throughput_samples_per_second"] = tp;
  (*metric)["eval_throughput_mean_samples_per_second"] = Num(s.eval_throughput_mean);
  (*metric)["eval_throughput_stdev_samples_per_second"] = Num(s.eval_throughput_stdev);
  (*metric)["eval_io_mean_MB_per_second"] = Num(s.eval_io_mean_mib);
  (*metric)["eval_io_stdev_MB_per_second"] = Num(s.eval_io_stdev_mib);
  (*metric)["eval_read_bytes"] = s.eval_io.bytes;
  (*ext)["eval_io"] = IoJson(s.eval_io);
  (*ext)["eval_read_latency_seconds"] = LatencyJson(s.eval_io.latency);
}

}  // namespace

// dlio_ext.host_facts_changed: one line per agent whose host changed between the job's start and end (its
// <agent>_host_facts.json says what); absent when none did.
static void AddHostFactsChanges(const JobResult& job, nlohmann::json* ext) {
  for (const auto& [agent, facts] : job.host_facts) {
    const std::string changed = HostFactsFileJson(agent, facts).value("changed", "");
    if (!changed.empty()) (*ext)["host_facts_changed"][agent] = changed;
  }
}

nlohmann::json Aggregator::SummaryJson() const {
  const Computed c = Compute(job_);
  const FleetSummary& s = c.fleet;
  const std::vector<Host> hosts = Hosts(job_);
  const double data_gb = data_gb_;
  nlohmann::json j;
  j["start"] = FormatTimestamp(job_.start_unix_us);
  j["end"] = FormatTimestamp(job_.end_unix_us);
  j["num_accelerators"] = job_.world;
  j["num_hosts"] = hosts.size();
  const AgentInfo* rank0 = AgentOfRank(job_, 0);
  j["hostname"] = rank0 != nullptr ? rank0->hostname : (hosts.empty() ? "" : hosts[0].hostname);
  j["num_files_train"] = job_.spec.num_files_train;
  j["num_files_eval"] = job_.spec.num_files_eval;
  j["num_samples_per_file"] = job_.spec.num_samples_per_file;
  nlohmann::json cpus = nlohmann::json::array(), mem = nlohmann::json::array(), caching = nlohmann::json::array();
  for (const Host& h : hosts) {
    cpus.push_back(h.cpu_count);
    mem.push_back(h.memory_gb);
    caching.push_back(h.memory_gb <= data_gb ? 0 : 1);  // DLIO: 1 = the data could fit in the page cache
  }
  j["host_cpu_count"] = cpus;
  j["host_memory_GB"] = mem;
  AddHostInfo(rank0, &j);
  j["potential_caching"] = caching;
  j["data_size_per_host_GB"] = data_gb;
  nlohmann::json metric = nlohmann::json::object();
  nlohmann::json ext;
  ext["job_id"] = job_.job_id;
  if (!job_.job_state.empty()) ext["job_state"] = job_.job_state;
  ext["world_size"] = job_.world;
  nlohmann::json agents = nlohmann::json::array();
  for (const AgentInfo& a : job_.agents) {
    agents.push_back({{"name", a.name},
                      {"hostname", a.hostname},
                      {"first_rank", a.first_rank},
                      {"ranks", a.ranks},
                      {"cpu_count", a.cpu_count},
                      {"memory_GB", a.memory_gb}});
  }
  ext["agents"] = agents;
  ext["provenance"] = ProvenanceJson(job_);
  if (job_.spec.generate_data) {
    const IoSnapshot& g = job_.generate_io;
    const double secs = job_.generate_seconds;
    ext["generate"] = {{"io", IoJson(g)},
                       {"seconds", secs},
                       {"MB_per_second", secs > 0 ? static_cast<double>(g.bytes) / secs / 1e6 : 0.0},
                       {"write_latency_seconds", LatencyJson(g.latency)}};
  }
  AddS3Summary(job_.s3, &ext);
  AddListingSummary(job_.listings, &ext);
  if (job_.spec.train) AddTrainSummary(job_, c, &j, &metric, &ext);
  AddHostAndEpochLimits(job_, &ext);
  AddHostFactsChanges(job_, &ext);
  if (!s.eval.empty()) AddEvalSummary(s, &metric, &ext);
  const std::vector<CheckpointMetric> checkpoints = ComputeCheckpoints(job_.checkpoints);
  AddCheckpointSummary(checkpoints, &metric);
  if (!checkpoints.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const CheckpointMetric& c : checkpoints) {
      list.push_back({{"operation", c.load ? "load" : "save"},
                      {"index", c.index},
                      {"bytes", c.bytes},
                      {"rank0_duration_seconds", c.rank0_duration_s},
                      {"rank0_GiB_per_second", c.rank0_gib_per_second},
                      {"max_duration_seconds", c.max_duration_s},
                      {"min_GiB_per_second", c.min_gib_per_second}});
    }
    ext["checkpoints"] = list;
  }
  nlohmann::json not_measured = nlohmann::json::object();
  if (!s.au_not_measured.empty()) not_measured["train_au"] = s.au_not_measured;
  if (!s.throughput_not_measured.empty()) not_measured["train_throughput"] = s.throughput_not_measured;
  if (!not_measured.empty()) ext["not_measured"] = not_measured;
  ext["verdict"] = VerdictJson(JudgeJobAndLimit(job_, s, job_.job_state));
  j["metric"] = metric;
  j["dlio_ext"] = ext;
  return j;
}

nlohmann::json Aggregator::RankOutputJson(int rank) const {
  const MetricWindow window = TrainWindow(job_.spec, EpochSteps(job_));
  const double data_gb = data_gb_;
  nlohmann::json j = nlohmann::json::object();
  if (const AgentInfo* a = AgentOfRank(job_, rank); a != nullptr) {
    j["hostname"] = a->hostname;
    j["host_memory_GB"] = a->memory_gb;
    j["host_cpu_count"] = a->cpu_count;
    j["potential_caching"] = data_gb <= a->memory_gb ? 1 : 0;
    AddHostInfo(a, &j);
  }
  for (const auto& [epoch, result] : EpochsOfRank(job_, rank)) {
    const RankEpochResult& r = *result;
    nlohmann::json e;
    e["start"] = FormatTimestamp(r.start_unix_us);
    e["end"] = FormatTimestamp(r.end_unix_us);
    nlohmann::json load = nlohmann::json::object(), proc = nlohmann::json::object(),
                   compute = nlohmann::json::object(), au = nlohmann::json::object(),
                   tp = nlohmann::json::object(), barrier = nlohmann::json::object();
    for (const BlockTimings& b : r.blocks) {
      const std::string key = BlockKey(b.block);
      const BlockMetric bm = ComputeTrainBlock(b.proc, b.compute, b.duration_s, window);
      load[key] = b.load;
      proc[key] = b.proc;
      compute[key] = b.compute;
      au[key] = Num(bm.au_percent);
      tp[key] = Num(bm.samples_per_second);
      barrier[key] = b.barrier;
    }
    e["load"] = load;
    e["proc"] = proc;
    e["compute"] = compute;
    e["au"] = au;
    e["throughput"] = tp;
    // Ours: per-step barrier wait (inside DLIO's proc-to-next-load gap), and the rank's measured I/O.
    e["barrier"] = barrier;
    e["dlio_ext"] = {{"io", IoJson(r.io)},
                     {"read_latency_seconds", LatencyJson(r.io.latency)},
                     {"dropped_samples", r.dropped_samples}};
    j[std::to_string(epoch)] = e;
  }
  const MetricWindow ew = EvalWindow(job_.spec, EvalSteps(job_));
  for (const RankEpochResult& r : job_.eval) {
    if (r.rank != rank || r.blocks.empty()) continue;
    const BlockTimings& b = r.blocks[0];
    const BlockMetric bm = ComputeEvalBlock(b.proc, b.compute, b.duration_s, ew);
    nlohmann::json& e = j[std::to_string(r.epoch)];
    e["load"]["eval"] = b.load;
    e["proc"]["eval"] = b.proc;
    e["compute"]["eval"] = b.compute;
    e["au"]["eval"] = Num(bm.au_percent);
    e["throughput"]["eval"] = Num(bm.samples_per_second);
  }
  return j;
}

nlohmann::json Aggregator::RankPerEpochStatsJson(int rank) const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [epoch, result] : EpochsOfRank(job_, rank)) {
    const RankEpochResult& r = *result;
    nlohmann::json e;
    e["start"] = FormatTimestamp(r.start_unix_us);
    e["end"] = FormatTimestamp(r.end_unix_us);
    e["duration"] = Duration2(r.start_unix_us, r.end_unix_us);
    for (const BlockTimings& b : r.blocks) {
      e[BlockKey(b.block)] = {{"start", FormatTimestamp(b.start_unix_us)},
                              {"end", FormatTimestamp(b.end_unix_us)},
                              {"duration", Duration2(b.start_unix_us, b.end_unix_us)}};
    }
    j[std::to_string(epoch)] = e;
  }
  for (const RankEpochResult& r : job_.eval) {
    if (r.rank != rank || r.blocks.empty()) continue;
    const BlockTimings& b = r.blocks[0];
    j[std::to_string(r.epoch)]["eval"] = {{"start", FormatTimestamp(b.start_unix_us)},
                                           {"end", FormatTimestamp(b.end_unix_us)},
                                           {"duration", Duration2(b.start_unix_us, b.end_unix_us)}};
  }
  if (!job_.checkpoints.empty()) {
    std::map<std::pair<bool, int>, uint64_t> fleet_bytes;
    for (const CheckpointMetric& m : ComputeCheckpoints(job_.checkpoints)) fleet_bytes[{m.load, m.index}] = m.bytes;
    for (const RankCheckpointResult& c : job_.checkpoints) {
      if (c.rank != rank) continue;
      const double gib = static_cast<double>(fleet_bytes[{c.load, c.index}]) / static_cast<double>(uint64_t{1} << 30);
      j[std::to_string(c.epoch)][fmt::format("{}_ckpt{}", c.load ? "load" : "save", c.index)] = {
          {"start", FormatTimestamp(c.start_unix_us)},
          {"end", FormatTimestamp(c.end_unix_us)},
          {"duration", c.duration_s},
          {"throughput", c.duration_s > 0 ? gib / c.duration_s : 0.0},
          {"bytes", c.bytes}};  // ours: this rank's own share (per-host and per-rank MLPerf figures)
    }
  }
  return j;
}

absl::Status WriteResultFiles(const ConfinedDir& dir, const JobResult& job) {
  const Aggregator agg(job);
  if (absl::Status s = WriteFileAtomic(dir, "summary.json", agg.SummaryJson().dump(4) + "\n"); !s.ok()) return s;
  std::set<int> ranks;
  for (int r = 0; r < job.world; ++r) ranks.insert(r);
  for (const RankEpochResult& r : job.train) ranks.insert(r.rank);
  for (int r : ranks) {
    if (absl::Status s = WriteFileAtomic(dir, fmt::format("{}_output.json", r), agg.RankOutputJson(r).dump(4) + "\n");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = WriteFileAtomic(dir, fmt::format("{}_per_epoch_stats.json", r),
                                         agg.RankPerEpochStatsJson(r).dump(4) + "\n");
        !s.ok()) {
      return s;
    }
  }
  for (const auto& [agent, lines] : job.host_series) {
    if (absl::Status s = WriteFileAtomic(dir, HostSeriesFileName(agent), HostSeriesText(agent, lines)); !s.ok()) {
      return s;
    }
  }
  for (const auto& [agent, facts] : job.host_facts) {
    if (absl::Status s = WriteFileAtomic(dir, HostFactsFileName(agent), HostFactsFileJson(agent, facts).dump(2) + "\n");
        !s.ok()) {
      return s;
    }
  }
  return WriteFileAtomic(dir, "job.yaml", ToYaml(job.spec));
}

std::string HostSeriesFileName(const std::string& agent) {
  std::string name = agent;
  for (char& c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  if (name.empty() || name[0] == '.') name = "_" + name;
  return name + "_host.jsonl";
}

std::string HostFactsFileName(const std::string& agent) {
  const std::string series = HostSeriesFileName(agent);
  return series.substr(0, series.size() - std::string("_host.jsonl").size()) + "_host_facts.json";
}

std::string HostSeriesText(const std::string& agent, const std::vector<HostLine>& lines) {
  std::string out;
  for (const HostLine& l : lines) {
    nlohmann::json j = HostSampleJson(l.sample);
    j["agent"] = agent;
    j["phase"] = l.phase_id;
    out += j.dump() + "\n";
  }
  return out;
}

absl::Status WriteFileAtomic(const std::string& path, const std::string& content) {
  // The caller's own path (links in it are followed): its folder is opened once, and the file is written
  // relative to it (base/atomic_file.h).
  const std::filesystem::path target(path);
  const std::string parent = target.has_parent_path() ? target.parent_path().string() : ".";
  const int dir = ::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return ErrnoStatus(errno, fmt::format("{}: cannot write", path));
  absl::Status s = WriteFileAtomicAt(dir, target.filename().string(), content, path);
  ::close(dir);
  return s;
}

std::string FormatTimestamp(int64_t unix_us) {
  int64_t secs = unix_us / 1000000;
  int64_t micros = unix_us % 1000000;
  if (micros < 0) {
    micros += 1000000;
    secs -= 1;
  }
  const auto t = static_cast<time_t>(secs);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}", std::string_view(buf, n), micros);
}

absl::StatusOr<int64_t> ParseTimestamp(const std::string& text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        fmt::format("'{}': not a timestamp like 2026-11-22T02:03:49.804834 (local time)", text));
  };
  int year, mon, day, hour, min, sec, used = 0;
  char sep = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &year, &mon, &day, &sep, &hour, &min, &sec, &used) != 7 ||
      (sep != 'T' && sep != ' ')) {
    return bad();
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 ||
      sec > 60) {
    return bad();
  }
  auto i = static_cast<size_t>(used);
  int64_t micros = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    int digits = 0;
    int64_t scale = 100000;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (digits < 6) {
        micros += (text[i] - '0') * scale;
        scale /= 10;
      }
      ++digits;
      ++i;
    }
    if (digits == 0 || digits > 9) return bad();
  }
  if (i != text.size()) return bad();
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;  // local time, DST as the zone says
  const time_t t = std::mktime(&tm);
  if (t == static_cast<time_t>(-1)) return bad();
  return static_cast<int64_t>(t) * 1000000 + micros;
}

}  // namespace dlio
