#include "agent/metrics.h"

#include <algorithm>

#include "agent/loader.h"
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
  std::lock_guard<std::mutex> lk(mu);
  live = l;
  live_eval = eval;
}

void RankMetrics::DetachLoader() {
  std::lock_guard<std::mutex> lk(mu);
  if (live != nullptr) (live_eval ? retired_eval : retired) += live->Snapshot();
  live = nullptr;
  live_eval = false;
}

void RankMetrics::RecordCheckpoint(bool load, uint64_t duration_ns, uint64_t bytes) {
  std::lock_guard<std::mutex> lk(mu);
  (load ? checkpoint_load : checkpoint_save).Record(duration_ns);
  (load ? checkpoint_load_bytes : checkpoint_save_bytes) += bytes;
}

void RankMetrics::AddWritten(const IoSnapshot& s) {
  std::lock_guard<std::mutex> lk(mu);
  written += s;
}

void RankMetrics::RecordStep(uint64_t batch_wait_ns, uint64_t step_ns, uint64_t barrier_ns) {
  std::lock_guard<std::mutex> lk(mu);
  batch_wait.Record(batch_wait_ns);
  step_time.Record(step_ns);
  barrier_wait.Record(barrier_ns);
}

std::shared_ptr<RankMetrics> AgentMetrics::Rank(const std::string& job_id, int rank) {
  std::lock_guard<std::mutex> lk(mu_);
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

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

}  // namespace

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() const {
  using prometheus::MetricType;
  // HELP texts are copied verbatim into docs/metrics.md (a test compares them).
  auto read_bytes = Family("dlio_read_bytes_total", "Bytes returned by read calls on data files.", MetricType::Counter);
  auto read_ops = Family("dlio_read_ops_total", "Read calls issued on data files.", MetricType::Counter);
  auto samples = Family("dlio_samples_total", "Samples delivered by the loader.", MetricType::Counter);
  auto latency = Family("dlio_read_latency_seconds", "Latency of read calls on data files.", MetricType::Histogram);
  auto written = Family("dlio_write_bytes_total", "Bytes written while generating the dataset.", MetricType::Counter);
  auto steps = Family("dlio_steps_total", "Training steps completed.", MetricType::Counter);
  auto epoch = Family("dlio_epoch", "Current (or last) training epoch, 1-based.", MetricType::Gauge);
  auto au = Family("dlio_accelerator_utilization_ratio",
                   "Accelerator utilisation of the running block: compute time over wall time (DLIO's AU / 100).",
                   MetricType::Gauge);
  auto au_target = Family("dlio_accelerator_utilization_target_ratio",
                          "The job's expected accelerator utilisation (metric.au).", MetricType::Gauge);
  auto batch_wait = Family("dlio_batch_wait_seconds", "Time a training step waited for its batch.",
                           MetricType::Histogram);
  auto step_time = Family("dlio_step_duration_seconds",
                          "Duration of a training step: batch wait, compute and step barrier.", MetricType::Histogram);
  auto barrier = Family("dlio_barrier_wait_seconds", "Time a training step spent in the step barrier.",
                        MetricType::Histogram);
  auto checkpoint = Family("dlio_checkpoint_duration_seconds",
                           "Duration of a checkpoint save or load by the rank (label operation).",
                           MetricType::Histogram);
  auto checkpoint_bytes = Family("dlio_checkpoint_bytes_total",
                                 "Bytes of checkpoint files written (save) or read (load) by the rank.",
                                 MetricType::Counter);
  auto queue = Family("dlio_prefetch_queue_depth", "Finished batches waiting in the rank's prefetch queue.",
                      MetricType::Gauge);
  auto phase = Family("dlio_phase", "Phase the rank is in (label phase); always 1.", MetricType::Gauge);
  auto steps_done = Family("dlio_steps_completed",
                           "Training steps completed, stamped with the agent's time of the last one.", MetricType::Gauge);
  auto demand = Family("dlio_read_demand_bytes_per_second",
                       "Read bandwidth the rank needs to keep AU at 100 % while it trains (0 in other phases).",
                       MetricType::Gauge);

  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [job_id, job] : jobs_) {
    for (const auto& [rank, rm] : job.ranks) {
      IoSnapshot io, ev, wr;
      LatencyHistogram bw, st, bar, cp_save, cp_load;
      uint64_t save_bytes = 0, load_bytes = 0;
      int64_t depth = 0;
      {
        std::lock_guard<std::mutex> rl(rm->mu);
        io = rm->retired;
        ev = rm->retired_eval;
        if (rm->live != nullptr) {
          (rm->live_eval ? ev : io) += rm->live->Snapshot();
          depth = rm->live->QueueDepth();
        }
        wr = rm->written;
        bw = rm->batch_wait;
        st = rm->step_time;
        bar = rm->barrier_wait;
        cp_save = rm->checkpoint_save;
        cp_load = rm->checkpoint_load;
        save_bytes = rm->checkpoint_save_bytes;
        load_bytes = rm->checkpoint_load_bytes;
      }
      const std::vector<prometheus::ClientMetric::Label> labels = {
          {"agent", agent_}, {"job_id", job_id}, {"rank", std::to_string(rank)}};
      auto with = [&](const char* name, const std::string& value) {
        auto l = labels;
        l.push_back({name, value});
        return l;
      };
      auto add = [](prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> l, double v) {
        prometheus::ClientMetric m;
        m.label = std::move(l);
        if (f.type == MetricType::Counter) m.counter.value = v; else m.gauge.value = v;
        f.metric.push_back(std::move(m));
      };
      auto add_histogram = [&](prometheus::MetricFamily& f, const LatencyHistogram& h,
                               std::vector<prometheus::ClientMetric::Label> l) {
        prometheus::ClientMetric m;
        m.label = std::move(l);
        m.histogram = ToPrometheusHistogram(h);
        f.metric.push_back(std::move(m));
      };
      add(read_bytes, with("phase", "train"), static_cast<double>(io.bytes));
      add(read_ops, with("phase", "train"), static_cast<double>(io.ops));
      add(samples, with("phase", "train"), static_cast<double>(io.samples));
      // Evaluation series appear once the rank has evaluated (no empty eval series on training-only jobs).
      if (ev.ops > 0 || ev.samples > 0 || ev.files > 0) {
        add(read_bytes, with("phase", "eval"), static_cast<double>(ev.bytes));
        add(read_ops, with("phase", "eval"), static_cast<double>(ev.ops));
        add(samples, with("phase", "eval"), static_cast<double>(ev.samples));
      }
      add(checkpoint_bytes, with("operation", "save"), static_cast<double>(save_bytes));
      add(checkpoint_bytes, with("operation", "load"), static_cast<double>(load_bytes));
      add(written, with("phase", "generate"), static_cast<double>(wr.bytes));
      add(steps, labels, static_cast<double>(rm->steps.load()));
      add(epoch, labels, rm->epoch.load());
      add(au, labels, rm->au_ratio.load());
      add(au_target, labels, rm->au_target_ratio.load());
      add(queue, labels, static_cast<double>(depth));
      add(phase, with("phase", RankPhaseName(static_cast<RankPhase>(rm->phase.load()))), 1);
      // The agent's own step time, not the scrape's: Prometheus compares ranks of different scrapes correctly.
      if (const int64_t ts = rm->last_step_unix_ms.load(); ts > 0) {
        add(steps_done, labels, static_cast<double>(rm->steps.load()));
        steps_done.metric.back().timestamp_ms = ts;
      }
      // Once the rank trained with a bounded demand: that demand while it trains, 0 in any other phase.
      if (const double d = rm->demand_bytes_per_second.load(); d > 0) {
        add(demand, labels, rm->phase.load() == static_cast<int>(RankPhase::kTrain) ? d : 0.0);
      }
      LatencyHistogram reads = io.latency;
      reads += ev.latency;
      add_histogram(latency, reads, labels);
      add_histogram(batch_wait, bw, labels);
      add_histogram(step_time, st, labels);
      add_histogram(barrier, bar, labels);
      add_histogram(checkpoint, cp_save, with("operation", "save"));
      add_histogram(checkpoint, cp_load, with("operation", "load"));
    }
  }
  auto stale = Family("dlio_stale_barrier_releases_total",
                      "Barrier releases dropped because they were for another job or phase than the running one.",
                      MetricType::Counter);
  prometheus::ClientMetric sm;
  sm.label = {{"agent", agent_}};
  sm.counter.value = static_cast<double>(stale_releases_.load(std::memory_order_relaxed));
  stale.metric.push_back(std::move(sm));
  std::vector<prometheus::MetricFamily> out = {read_bytes, read_ops,   samples,          latency, written, steps,
                                               epoch,      au,         au_target,        batch_wait, step_time,
                                               barrier,    checkpoint, checkpoint_bytes, queue,   phase, steps_done,
                                               demand,     stale};
  AppendS3Families(agent_, S3Metrics::Global().Snapshot(), &out);
  return out;
}

void AppendS3Families(const std::string& agent, const S3Snapshot& s3, std::vector<prometheus::MetricFamily>* out) {
  using prometheus::MetricType;
  if (s3.total_requests() == 0) return;  // an agent that never used object storage exports no S3 series
  // HELP texts are copied verbatim into docs/metrics.md (a test compares them).
  auto requests = Family("dlio_s3_requests_total", "S3 requests sent by the agent, retries included (label operation).",
                         MetricType::Counter);
  auto bytes = Family("dlio_s3_bytes_total",
                      "Payload bytes received (get, get_range, list) or sent (put, multipart_part) by S3 requests.",
                      MetricType::Counter);
  auto retries = Family("dlio_s3_retries_total",
                        "S3 requests retried after a 5xx, SlowDown, timeout or connection error.", MetricType::Counter);
  auto errors = Family("dlio_s3_errors_total",
                       "Failed S3 requests by HTTP status (label status; none = no HTTP answer).", MetricType::Counter);
  auto latency = Family("dlio_s3_request_duration_seconds", "Duration of one S3 request (label operation).",
                        MetricType::Histogram);
  for (int i = 0; i < kS3OpCount; ++i) {
    const S3OpSnapshot& o = s3.ops[static_cast<size_t>(i)];
    if (o.requests == 0) continue;
    const std::vector<prometheus::ClientMetric::Label> l = {{"agent", agent},
                                                            {"operation", S3OpName(static_cast<S3Op>(i))}};
    prometheus::ClientMetric m;
    m.label = l;
    m.counter.value = static_cast<double>(o.requests);
    requests.metric.push_back(m);
    m.counter.value = static_cast<double>(o.bytes);
    bytes.metric.push_back(m);
    m.counter.value = static_cast<double>(o.retries);
    retries.metric.push_back(m);
    for (int k = 0; k < kS3StatusSlots; ++k) {
      if (o.errors[static_cast<size_t>(k)] == 0) continue;
      prometheus::ClientMetric e;
      e.label = l;
      e.label.push_back({"status", S3StatusLabel(k)});
      e.counter.value = static_cast<double>(o.errors[static_cast<size_t>(k)]);
      errors.metric.push_back(std::move(e));
    }
    prometheus::ClientMetric h;
    h.label = l;
    h.histogram = ToPrometheusHistogram(o.latency);
    latency.metric.push_back(std::move(h));
  }
  out->push_back(std::move(requests));
  out->push_back(std::move(bytes));
  out->push_back(std::move(retries));
  out->push_back(std::move(errors));
  out->push_back(std::move(latency));
}

}  // namespace dlio
