#include "results/limit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dlio {

namespace {

using nlohmann::json;

const AgentInfo* AgentOf(const JobResult& job, int rank) {
  for (const AgentInfo& a : job.agents) {
    if (rank >= a.first_rank && rank < a.first_rank + a.ranks) return &a;
  }
  return nullptr;
}

std::string Pct(double share) { return absl::StrFormat("%.0f %%", share * 100); }

std::string Bytes(double b) {
  if (b >= 1e9) return absl::StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.1f MB", b / 1e6);
  return absl::StrFormat("%.0f kB", b / 1e3);
}

std::string Speed(int64_t mbps) {
  return mbps >= 1000 && mbps % 1000 == 0 ? absl::StrCat(mbps / 1000, " Gb/s") : absl::StrCat(mbps, " Mb/s");
}

// "agents' CPU 23 %, NIC 12 % of 25 Gb/s" (the NIC left out when no interface has a known speed); an agent process
// held to fewer cores than its host has: "agents' CPU 100 % (of the 0.03 cores an agent may use)".
std::string HostPart(const LimitFigures& f) {
  const bool process = f.process_cpu_percent_of_cores > f.cpu_busy_percent;
  std::string s = absl::StrFormat("agents' CPU %.0f %%", std::max(f.cpu_busy_percent, f.process_cpu_percent_of_cores));
  if (process && f.process_cpu_limit_cores > 0) {
    absl::StrAppend(&s, absl::StrFormat(" (of the %.3g cores an agent may use)", f.process_cpu_limit_cores));
  }
  if (f.nic_percent >= 0)
    absl::StrAppend(&s, absl::StrFormat(", NIC %.0f %% of ", f.nic_percent), Speed(f.nic_speed_mbps));
  return s;
}

// "read p99 38 ms (x6 of the first epoch)"; empty without reads.
std::string LatencyPart(const LimitFigures& f) {
  if (!f.read_p99_s) return "";
  std::string s = absl::StrFormat("read p99 %.3g ms", *f.read_p99_s * 1e3);
  if (f.first_epoch_read_p99_s && *f.first_epoch_read_p99_s > 0 && *f.read_p99_s != *f.first_epoch_read_p99_s) {
    absl::StrAppend(&s, absl::StrFormat(" (x%.2g of the first epoch)", *f.read_p99_s / *f.first_epoch_read_p99_s));
  }
  return s;
}

std::string Join(std::vector<std::string> parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    absl::StrAppend(&out, out.empty() ? "" : "; ", p);
  }
  return out;
}

std::string WaitPart(const LimitFigures& f) {
  return absl::StrCat("ranks waited ", Pct(f.batch_wait_share), " of each step for data");
}

json Evidence(const LimitFigures& f) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"batch_wait_share", f.batch_wait_share},
          {"barrier_wait_share", f.barrier_share},
          {"batch_wait_p99_seconds", opt(f.batch_wait_p99_s)},
          {"read_p99_seconds", opt(f.read_p99_s)},
          {"first_epoch_read_p99_seconds", opt(f.first_epoch_read_p99_s)},
          {"host_telemetry", f.host_known},
          {"cpu_busy_percent", f.host_known ? json(f.cpu_busy_percent) : json(nullptr)},
          {"process_cpu_percent_of_cores", f.host_known ? json(f.process_cpu_percent_of_cores) : json(nullptr)},
          {"process_share_of_busy_cpu", f.host_known ? json(f.process_share_of_busy) : json(nullptr)},
          {"nic_utilisation_percent", f.nic_percent >= 0 ? json(f.nic_percent) : json(nullptr)},
          {"nic_speed_mbps", f.nic_speed_mbps > 0 ? json(f.nic_speed_mbps) : json(nullptr)},
          {"read_bytes", f.asked_bytes},
          {"storage_delivered_bytes", f.delivered_known ? json(f.delivered_bytes) : json(nullptr)}};
}

}  // namespace

const char* LimitClassName(LimitClass c) {
  switch (c) {
    case LimitClass::kNone: return "none";
    case LimitClass::kStorage: return "storage";
    case LimitClass::kClientCpu: return "client CPU";
    case LimitClass::kNetwork: return "network";
    case LimitClass::kPageCache: return "page cache";
    case LimitClass::kHarness: return "harness";
    case LimitClass::kUndetermined: break;
  }
  return "undetermined";
}

Limit ClassifyLimit(const LimitFigures& f) {
  Limit l;
  l.evidence = Evidence(f);
  const std::string host = f.host_known ? HostPart(f) : "no host telemetry from every agent";
  auto say = [&](LimitClass c, std::vector<std::string> parts) {
    l.cls = c;
    l.line = absl::StrCat(LimitClassName(c), ": ", Join(std::move(parts)));
    return l;
  };
  if (!f.timed) return say(LimitClass::kUndetermined, {"no training step was timed"});
  const double served = f.asked_bytes > 0 ? 1.0 - f.delivered_bytes / static_cast<double>(f.asked_bytes) : 0.0;
  if (f.delivered_known && f.asked_bytes >= kPageCacheMinBytes &&
      f.delivered_bytes < kPageCacheDeliveredShare * static_cast<double>(f.asked_bytes)) {
    return say(LimitClass::kPageCache,
               {absl::StrCat(Pct(std::clamp(served, 0.0, 1.0)), " of the ", Bytes(static_cast<double>(f.asked_bytes)),
                             " read came from memory (the storage delivered ", Bytes(f.delivered_bytes),
                             "): the run did not measure the storage"),
                WaitPart(f)});
  }
  const bool cpu =
      f.host_known && (f.process_cpu_percent_of_cores >= kBusyPercent ||
                       (f.cpu_busy_percent >= kBusyPercent && f.process_share_of_busy >= kAgentShareOfBusy));
  const bool nic = f.host_known && f.nic_percent >= kBusyPercent;
  if (f.passed) {
    return say(LimitClass::kNone, {absl::StrCat("target met; ", WaitPart(f), ", barrier ", Pct(f.barrier_share)),
                                   f.host_known ? host : "", LatencyPart(f)});
  }
  if (f.batch_wait_share < kHarnessBatchWaitShare && f.barrier_share >= kHarnessBarrierShare) {
    return say(LimitClass::kHarness,
               {absl::StrCat("ranks waited ", Pct(f.barrier_share), " of each step at the step barrier and ",
                             Pct(f.batch_wait_share), " for data (the fleet's coordination, not I/O)"),
                f.host_known ? host : ""});
  }
  if (f.batch_wait_share >= kWaitShare && nic) return say(LimitClass::kNetwork, {WaitPart(f), host, LatencyPart(f)});
  if (f.batch_wait_share >= kWaitShare && cpu) return say(LimitClass::kClientCpu, {WaitPart(f), host, LatencyPart(f)});
  if (f.batch_wait_share >= kWaitShare && f.host_known) {
    return say(LimitClass::kStorage, {WaitPart(f), host, LatencyPart(f)});
  }
  return say(LimitClass::kUndetermined,
             {absl::StrCat(WaitPart(f), ", barrier ", Pct(f.barrier_share)), host, LatencyPart(f)});
}

LimitFigures LimitFiguresOf(const JobResult& job, bool passed, int epoch) {
  LimitFigures f;
  f.passed = passed;
  double wait = 0, barrier = 0, step = 0;
  std::vector<double> waits;                             // every timed step's batch wait
  std::map<int, LatencyHistogram> latency;               // per epoch, merged over ranks
  std::map<std::string, std::vector<HostSample>> hosts;  // per agent, the training epochs' whole-phase samples
  uint64_t s3_bytes = 0;
  for (const RankEpochResult& r : job.train) {
    if (epoch > 0 && r.epoch != epoch) continue;
    for (const BlockTimings& b : r.blocks) {
      // The block's first step left out (its loader warming up), as DLIO's AU leaves it out.
      for (size_t i = b.proc.size() > 1 ? 1 : 0; i < b.proc.size(); ++i) {
        const double br = i < b.barrier.size() ? b.barrier[i] : 0.0;
        const double w = i < b.load.size() ? b.load[i] : 0.0;
        wait += w;
        waits.push_back(w);
        barrier += br;
        step += b.proc[i] + br;
      }
    }
    latency[r.epoch] += r.io.latency;
    f.asked_bytes += r.io.bytes;
    s3_bytes += r.s3.ops[static_cast<size_t>(S3Op::kGet)].bytes + r.s3.ops[static_cast<size_t>(S3Op::kGetRange)].bytes;
    if (r.host.phase) {
      if (const AgentInfo* a = AgentOf(job, r.rank); a != nullptr) hosts[a->name].push_back(*r.host.phase);
    }
  }
  f.timed = step > 0;
  if (f.timed) {
    f.batch_wait_share = wait / step;
    f.barrier_share = barrier / step;
  }
  if (!waits.empty()) {
    // Nearest rank: the smallest wait with at least 99 % of the steps at or below it.
    const size_t k = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(waits.size()))) - 1;
    std::nth_element(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(k), waits.end());
    f.batch_wait_p99_s = waits[k];
  }
  for (const auto& [epoch, h] : latency) {
    if (h.count() == 0) continue;
    const double p99 = static_cast<double>(h.QuantileNs(0.99)) / 1e9;
    if (!f.first_epoch_read_p99_s) f.first_epoch_read_p99_s = p99;
    f.read_p99_s = std::max(f.read_p99_s.value_or(0.0), p99);
  }
  f.host_known = !job.agents.empty() && hosts.size() == job.agents.size();
  double storage_bytes = 0;
  for (const auto& [agent, phases] : hosts) {
    const std::optional<HostSummary> h = SummarizeHost(phases);
    if (!h) continue;
    if (h->cpu_busy_mean >= f.cpu_busy_percent) {
      f.cpu_busy_percent = h->cpu_busy_mean;
      const double busy_cores = h->cpu_busy_mean / 100 * h->cores;
      f.process_share_of_busy = busy_cores > 0 ? std::min(1.0, h->process_cpu_mean / 100 / busy_cores) : 0.0;
    }
    const double may_use = h->cpu_limit_cores > 0 ? h->cpu_limit_cores : h->cores;
    // At most 100 %: a cgroup's quota lets a burst run over it within a period.
    if (const double p = may_use > 0 ? std::min(100.0, h->process_cpu_mean / may_use) : 0.0;
        p > f.process_cpu_percent_of_cores) {
      f.process_cpu_percent_of_cores = p;
      f.process_cpu_limit_cores = may_use < h->cores ? may_use : 0.0;
    }
    if (h->nic_utilisation_max > f.nic_percent) {
      f.nic_percent = h->nic_utilisation_max;
      f.nic_speed_mbps = h->nic_speed_mbps;
    }
    // The agent process's own block-layer reads; the devices' (which count every process of the host) only when the
    // kernel counted none for the process (no task I/O accounting, or a file system that does not account).
    storage_bytes +=
        h->process_storage_read_bytes > 0 ? static_cast<double>(h->process_storage_read_bytes) : h->disk_read_bytes;
  }
  f.delivered_known = f.host_known || s3_bytes > 0;
  f.delivered_bytes = storage_bytes + static_cast<double>(s3_bytes);
  return f;
}

json LimitJson(const Limit& l) {
  return {{"class", LimitClassName(l.cls)}, {"line", l.line}, {"evidence", l.evidence}};
}

void AddLimit(const JobResult& job, Verdict* v) {
  if (job.train.empty()) return;
  const Limit l = ClassifyLimit(LimitFiguresOf(job, v->status == VerdictStatus::kPass));
  v->limit_class = LimitClassName(l.cls);
  v->limit_line = l.line;
  v->limit_evidence = l.evidence;
}

void AddEpochLimits(const JobResult& job, json* train_epochs) {
  if (!train_epochs->is_array()) return;
  std::vector<Limit> limits;
  bool differ = false;
  for (const json& e : *train_epochs) {
    const json au = e.value("au_percentage", json());
    const bool passed = au.is_number() && au.get<double>() >= job.spec.au_threshold * 100;
    limits.push_back(ClassifyLimit(LimitFiguresOf(job, passed, e.value("epoch", 0))));
    differ = differ || limits.back().cls != limits.front().cls;
  }
  if (!differ) return;
  for (size_t i = 0; i < limits.size(); ++i) {
    (*train_epochs)[i]["limit"] = {{"class", LimitClassName(limits[i].cls)}, {"line", limits[i].line}};
  }
}

Verdict JudgeJobAndLimit(const JobResult& job, const FleetSummary& s, std::string_view job_state) {
  Verdict v = JudgeJob(s, job.spec, job_state);
  AddLimit(job, &v);
  return v;
}

json HostSummariesJson(const JobResult& job) {
  std::map<std::string, std::vector<HostSample>> hosts;
  for (const RankEpochResult& r : job.train) {
    if (!r.host.phase) continue;
    if (const AgentInfo* a = AgentOf(job, r.rank); a != nullptr) hosts[a->name].push_back(*r.host.phase);
  }
  json out = json::object();
  for (const auto& [agent, phases] : hosts) {
    if (std::optional<HostSummary> h = SummarizeHost(phases); h) out[agent] = HostSummaryJson(*h);
  }
  return out;
}

void AddHostAndEpochLimits(const JobResult& job, json* ext) {
  if (json host = HostSummariesJson(job); !host.empty()) (*ext)["host"] = std::move(host);
  if (ext->contains("train_epochs")) AddEpochLimits(job, &(*ext)["train_epochs"]);
}

}  // namespace dlio
