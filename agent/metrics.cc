#include "agent/metrics.h"

#include <algorithm>
#include <limits>

#include "agent/loader.h"
#include "results/prometheus_family.h"
#include "prometheus/metric_family.h"

namespace dlio {

const char* RankPhaseName(RankPhase p) {
  switch (p) {
    case RankPhase::kIdle: return "idle";
    case RankPhase::kGenerate: return "generate";
    case RankPhase::kTrain: return "train";
    case RankPhase::kEval: return "eval";
    case RankPhase::kCheckpoint: return "checkpoint";
  }
  return "idle";
}

void RankMetrics::AttachLoader(const Loader* l, bool eval) {
  MutexLock lk(&mu);
  live = l;
  live_eval = eval;
}

void RankMetrics::DetachLoader() {
  MutexLock lk(&mu);
  if (live != nullptr) (live_eval ? retired_eval : retired) += live->Snapshot();
  live = nullptr;
  live_eval = false;
}

void RankMetrics::RecordCheckpoint(bool load, uint64_t duration_ns, uint64_t bytes) {
  MutexLock lk(&mu);
  (load ? checkpoint_load : checkpoint_save).Record(duration_ns);
  (load ? checkpoint_load_bytes : checkpoint_save_bytes) += bytes;
}

void RankMetrics::AddWritten(const IoSnapshot& s) {
  MutexLock lk(&mu);
  written += s;
}

void RankMetrics::RecordStep(uint64_t batch_wait_ns, uint64_t step_ns, uint64_t barrier_ns) {
  MutexLock lk(&mu);
  batch_wait.Record(batch_wait_ns);
  step_time.Record(step_ns);
  barrier_wait.Record(barrier_ns);
}

std::shared_ptr<RankMetrics> AgentMetrics::Rank(const std::string& job_id, int rank) {
  MutexLock lk(&mu_);
  Job& job = jobs_[job_id];
  job.last_use = ++uses_;
  auto& slot = job.ranks[rank];
  if (!slot) slot = std::make_shared<RankMetrics>();
  std::shared_ptr<RankMetrics> r = slot;
  if (jobs_.size() > jobs_kept_) {
    auto oldest = std::min_element(jobs_.begin(), jobs_.end(),
                                   [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
    jobs_.erase(oldest);  // never job_id: it was used last
  }
  return r;
}

std::string AdvertisedMetricsEndpoint(const std::string& listen, int bound_port) {
  // civetweb also accepts a bare port ("9464"): all interfaces, like an empty host.
  const size_t colon = listen.rfind(':');
  const std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  return host + ":" + std::to_string(bound_port);
}

namespace {

// One rank's counters, copied under its lock so that the scrape builds series without holding it.
struct RankCopy {
  IoSnapshot io, eval, written;
  LatencyHistogram batch_wait, step_time, barrier, save, load;
  uint64_t save_bytes = 0, load_bytes = 0;
  int64_t depth = 0;
};

RankCopy CopyOf(RankMetrics& rm) {
  RankCopy c;
  MutexLock rl(&rm.mu);
  c.io = rm.retired;
  c.eval = rm.retired_eval;
  if (rm.live != nullptr) {
    (rm.live_eval ? c.eval : c.io) += rm.live->Snapshot();
    c.depth = rm.live->QueueDepth();
  }
  c.written = rm.written;
  c.batch_wait = rm.batch_wait;
  c.step_time = rm.step_time;
  c.barrier = rm.barrier_wait;
  c.save = rm.checkpoint_save;
  c.load = rm.checkpoint_load;
  c.save_bytes = rm.checkpoint_save_bytes;
  c.load_bytes = rm.checkpoint_load_bytes;
  return c;
}

// The per-rank families of an agent's scrape, filled rank by rank.
struct RankFamilies {
  using MetricType = prometheus::MetricType;
  prometheus::MetricFamily read_bytes =
      MetricFamily("dlio_read_bytes_total", "Bytes returned by read calls on data files.", MetricType::Counter);
  prometheus::MetricFamily read_ops =
      MetricFamily("dlio_read_ops_total", "Read calls issued on data files.", MetricType::Counter);
  prometheus::MetricFamily samples =
      MetricFamily("dlio_samples_total", "Samples delivered by the loader.", MetricType::Counter);
  prometheus::MetricFamily latency =
      MetricFamily("dlio_read_latency_seconds", "Latency of read calls on data files.", MetricType::Histogram);
  prometheus::MetricFamily written =
      MetricFamily("dlio_write_bytes_total", "Bytes written while generating the dataset.", MetricType::Counter);
  prometheus::MetricFamily steps = MetricFamily("dlio_steps_total", "Training steps completed.", MetricType::Counter);
  prometheus::MetricFamily epoch =
      MetricFamily("dlio_epoch", "Current (or last) training epoch, 1-based.", MetricType::Gauge);
  prometheus::MetricFamily au =
      MetricFamily("dlio_accelerator_utilization_ratio",
                   "Accelerator utilisation of the running block: compute time over wall time (DLIO's AU / 100).",
                   MetricType::Gauge);
  prometheus::MetricFamily au_target =
      MetricFamily("dlio_accelerator_utilization_target_ratio",
                   "The job's expected accelerator utilisation (metric.au).", MetricType::Gauge);
  prometheus::MetricFamily batch_wait =
      MetricFamily("dlio_batch_wait_seconds", "Time a training step waited for its batch.", MetricType::Histogram);
  prometheus::MetricFamily step_time =
      MetricFamily("dlio_step_duration_seconds", "Duration of a training step: batch wait, compute and step barrier.",
                   MetricType::Histogram);
  prometheus::MetricFamily barrier = MetricFamily(
      "dlio_barrier_wait_seconds", "Time a training step spent in the step barrier.", MetricType::Histogram);
  prometheus::MetricFamily checkpoint =
      MetricFamily("dlio_checkpoint_duration_seconds",
                   "Duration of a checkpoint save or load by the rank (label operation).", MetricType::Histogram);
  prometheus::MetricFamily checkpoint_bytes =
      MetricFamily("dlio_checkpoint_bytes_total",
                   "Bytes of checkpoint files written (save) or read (load) by the rank.", MetricType::Counter);
  prometheus::MetricFamily queue = MetricFamily(
      "dlio_prefetch_queue_depth", "Finished batches waiting in the rank's prefetch queue.", MetricType::Gauge);
  prometheus::MetricFamily phase =
      MetricFamily("dlio_phase", "Phase the rank is in (label phase); always 1.", MetricType::Gauge);
  prometheus::MetricFamily steps_done = MetricFamily(
      "dlio_steps_completed", "Training steps completed, stamped with the agent's time of the last one.",
      MetricType::Gauge);
  prometheus::MetricFamily demand = MetricFamily(
      "dlio_read_demand_bytes_per_second",
      "Read bandwidth the rank needs to keep AU at 100 % while it trains (0 in other phases).", MetricType::Gauge);

  // The series of one rank of one job.
  void Add(const std::string& agent, const std::string& job_id, int rank, const RankMetrics& rm, const RankCopy& c) {
    const IoSnapshot& io = c.io;
    const IoSnapshot& ev = c.eval;
    const MetricLabels labels = {{"agent", agent}, {"job_id", job_id}, {"rank", std::to_string(rank)}};
    auto with = [&](const char* name, const std::string& value) {
      auto l = labels;
      l.push_back({name, value});
      return l;
    };
    AddSample(read_bytes, with("phase", "train"), static_cast<double>(io.bytes));
    AddSample(read_ops, with("phase", "train"), static_cast<double>(io.ops));
    AddSample(samples, with("phase", "train"), static_cast<double>(io.samples));
    // Evaluation series appear once the rank has evaluated (no empty eval series on training-only jobs).
    if (ev.ops > 0 || ev.samples > 0 || ev.files > 0) {
      AddSample(read_bytes, with("phase", "eval"), static_cast<double>(ev.bytes));
      AddSample(read_ops, with("phase", "eval"), static_cast<double>(ev.ops));
      AddSample(samples, with("phase", "eval"), static_cast<double>(ev.samples));
    }
    AddSample(checkpoint_bytes, with("operation", "save"), static_cast<double>(c.save_bytes));
    AddSample(checkpoint_bytes, with("operation", "load"), static_cast<double>(c.load_bytes));
    AddSample(written, with("phase", "generate"), static_cast<double>(c.written.bytes));
    AddSample(steps, labels, static_cast<double>(rm.steps.load()));
    AddSample(epoch, labels, rm.epoch.load());
    AddSample(au, labels, rm.au_ratio.load());
    AddSample(au_target, labels, rm.au_target_ratio.load());
    AddSample(queue, labels, static_cast<double>(c.depth));
    AddSample(phase, with("phase", RankPhaseName(static_cast<RankPhase>(rm.phase.load()))), 1);
    // The agent's own step time, not the scrape's: Prometheus compares ranks of different scrapes correctly.
    if (const int64_t ts = rm.last_step_unix_ms.load(); ts > 0) {
      AddSample(steps_done, labels, static_cast<double>(rm.steps.load()));
      steps_done.metric.back().timestamp_ms = ts;
    }
    // Once the rank trained with a bounded demand: that demand while it trains, 0 in any other phase.
    if (const double d = rm.demand_bytes_per_second.load(); d > 0) {
      AddSample(demand, labels, rm.phase.load() == static_cast<int>(RankPhase::kTrain) ? d : 0.0);
    }
    LatencyHistogram reads = io.latency;
    reads += ev.latency;
    AddHistogram(latency, labels, reads);
    AddHistogram(batch_wait, labels, c.batch_wait);
    AddHistogram(step_time, labels, c.step_time);
    AddHistogram(barrier, labels, c.barrier);
    AddHistogram(checkpoint, with("operation", "save"), c.save);
    AddHistogram(checkpoint, with("operation", "load"), c.load);
  }

  // Every family, in the order of the scrape.
  std::vector<prometheus::MetricFamily> Take() {
    return {std::move(read_bytes), std::move(read_ops),
            std::move(samples),    std::move(latency),
            std::move(written),    std::move(steps),
            std::move(epoch),      std::move(au),
            std::move(au_target),  std::move(batch_wait),
            std::move(step_time),  std::move(barrier),
            std::move(checkpoint), std::move(checkpoint_bytes),
            std::move(queue),      std::move(phase),
            std::move(steps_done), std::move(demand)};
  }
};

}  // namespace

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() const {
  using prometheus::MetricType;
  RankFamilies families;
  {
    MutexLock lk(&mu_);
    for (const auto& [job_id, job] : jobs_) {
      for (const auto& [rank, rm] : job.ranks) families.Add(agent_, job_id, rank, *rm, CopyOf(*rm));
    }
  }
  auto stale = MetricFamily("dlio_stale_barrier_releases_total",
                            "Barrier releases dropped because they were for another job or phase than the running one.",
                            MetricType::Counter);
  AddSample(stale, {{"agent", agent_}}, static_cast<double>(stale_releases_.load(std::memory_order_relaxed)));
  std::vector<prometheus::MetricFamily> out = families.Take();
  out.push_back(std::move(stale));
  // Always exported, so a dashboard or the catalogue check sees the family; NaN (not measured) until the first
  // announce barrier: 0 is a measured bound (agents on the coordinator's clock place every end exactly).
  const auto seconds = [](int64_t ns) {
    return ns < 0 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(ns) * 1e-9;
  };
  auto bound = MetricFamily("dlio_barrier_error_bound_seconds",
                            "Largest bound on how early this agent ended a step of its latest training phase against "
                            "the slowest rank's compute end (announce barrier: how well the ends were placed, by the "
                            "agents' clock offsets or by the announce's receipt).",
                            MetricType::Gauge);
  AddSample(bound, {{"agent", agent_}}, seconds(barrier_error_bound_ns_.load(std::memory_order_relaxed)));
  out.push_back(std::move(bound));
  auto p50 = MetricFamily("dlio_barrier_error_bound_p50_seconds",
                          "Median over the steps of this agent's latest training phase of the bound on how early it "
                          "ended a step against the slowest rank's compute end (announce barrier).",
                          MetricType::Gauge);
  AddSample(p50, {{"agent", agent_}}, seconds(barrier_error_bound_p50_ns_.load(std::memory_order_relaxed)));
  out.push_back(std::move(p50));
  AppendS3Families(agent_, S3Metrics::Global().Snapshot(), &out);
  return out;
}

void AppendS3Families(const std::string& agent, const S3Snapshot& s3, std::vector<prometheus::MetricFamily>* out) {
  using prometheus::MetricType;
  if (s3.total_requests() == 0) return;  // an agent that never used object storage exports no S3 series
  // HELP texts are copied verbatim into docs/metrics.md (a test compares them).
  auto requests =
      MetricFamily("dlio_s3_requests_total", "S3 requests sent by the agent, retries included (label operation).",
                   MetricType::Counter);
  auto bytes =
      MetricFamily("dlio_s3_bytes_total",
                   "Payload bytes received (get, get_range, list) or sent (put, multipart_part) by S3 requests.",
                   MetricType::Counter);
  auto retries =
      MetricFamily("dlio_s3_retries_total", "S3 requests retried after a 5xx, SlowDown, timeout or connection error.",
                   MetricType::Counter);
  auto redirects = MetricFamily("dlio_s3_redirects_total",
                                "S3 redirects (301, 302, 307, 308) followed to the node the store named.",
                                MetricType::Counter);
  auto errors =
      MetricFamily("dlio_s3_errors_total", "Failed S3 requests by HTTP status (label status; none = no HTTP answer).",
                   MetricType::Counter);
  auto latency = MetricFamily("dlio_s3_request_duration_seconds", "Duration of one S3 request (label operation).",
                              MetricType::Histogram);
  for (int i = 0; i < kS3OpCount; ++i) {
    const S3OpSnapshot& o = s3.ops[static_cast<size_t>(i)];
    if (o.requests == 0) continue;
    const MetricLabels l = {{"agent", agent}, {"operation", S3OpName(static_cast<S3Op>(i))}};
    AddSample(requests, l, static_cast<double>(o.requests));
    AddSample(bytes, l, static_cast<double>(o.bytes));
    AddSample(retries, l, static_cast<double>(o.retries));
    AddSample(redirects, l, static_cast<double>(o.redirects));
    for (int k = 0; k < kS3StatusSlots; ++k) {
      if (o.errors[static_cast<size_t>(k)] == 0) continue;
      MetricLabels e = l;
      e.push_back({"status", S3StatusLabel(k)});
      AddSample(errors, std::move(e), static_cast<double>(o.errors[static_cast<size_t>(k)]));
    }
    AddHistogram(latency, l, o.latency);
  }
  out->push_back(std::move(requests));
  out->push_back(std::move(bytes));
  out->push_back(std::move(retries));
  out->push_back(std::move(redirects));
  out->push_back(std::move(errors));
  out->push_back(std::move(latency));
  AppendS3EndpointFamilies(agent, s3, out);
}

void AppendS3EndpointFamilies(const std::string& agent, const S3Snapshot& s3,
                              std::vector<prometheus::MetricFamily>* out) {
  using prometheus::MetricType;
  if (s3.endpoints.empty()) return;
  // HELP texts are copied verbatim into docs/metrics.md (a test compares them).
  auto requests = MetricFamily("dlio_s3_endpoint_requests_total",
                               "S3 requests sent to each endpoint of the store, retries included (label endpoint).",
                               MetricType::Counter);
  auto bytes = MetricFamily("dlio_s3_endpoint_bytes_total",
                            "Payload bytes of the successful S3 requests of each endpoint (label endpoint).",
                            MetricType::Counter);
  auto errors = MetricFamily("dlio_s3_endpoint_errors_total",
                             "Failed S3 requests of each endpoint, any status or none (label endpoint).",
                             MetricType::Counter);
  auto failovers = MetricFamily(
      "dlio_s3_endpoint_failovers_total",
      "S3 requests moved to the next endpoint after this one failed with attempts left (label endpoint).",
      MetricType::Counter);
  auto latency = MetricFamily("dlio_s3_endpoint_request_duration_seconds",
                              "Duration of one S3 request to each endpoint (label endpoint).", MetricType::Histogram);
  for (const S3EndpointSnapshot& e : s3.endpoints) {
    const MetricLabels l = {{"agent", agent}, {"endpoint", e.endpoint}};
    AddSample(requests, l, static_cast<double>(e.requests));
    AddSample(bytes, l, static_cast<double>(e.bytes));
    AddSample(errors, l, static_cast<double>(e.errors));
    AddSample(failovers, l, static_cast<double>(e.failovers));
    AddHistogram(latency, l, e.latency);
  }
  out->push_back(std::move(requests));
  out->push_back(std::move(bytes));
  out->push_back(std::move(errors));
  out->push_back(std::move(failovers));
  out->push_back(std::move(latency));
}

}  // namespace dlio
