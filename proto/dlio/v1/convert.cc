#include "dlio/v1/convert.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace dlio {

void ToProto(const LatencyHistogram& h, v1::Histogram* out) {
  out->clear_buckets();
  for (int i = 0; i < LatencyHistogram::kNumBuckets; ++i) out->add_buckets(h.bucket(i));
  out->set_sum_ns(h.sum_ns());
  out->set_count(h.count());
}

LatencyHistogram FromProto(const v1::Histogram& h) {
  LatencyHistogram out;
  const int n = std::min<int>(h.buckets_size(), LatencyHistogram::kNumBuckets);
  for (int i = 0; i < n; ++i) out.set_bucket(i, h.buckets(i));
  out.set_totals(h.sum_ns(), h.count());
  return out;
}

void ToProto(const RankEpochResult& r, v1::RankResult* out) {
  out->set_rank(r.rank);
  out->set_epoch(r.epoch);
  out->set_start_unix_us(r.start_unix_us);
  out->set_end_unix_us(r.end_unix_us);
  for (const BlockTimings& b : r.blocks) {
    v1::BlockTimings* pb = out->add_blocks();
    pb->set_block(b.block);
    pb->set_start_unix_us(b.start_unix_us);
    pb->set_end_unix_us(b.end_unix_us);
    pb->set_duration_s(b.duration_s);
    *pb->mutable_load_s() = {b.load.begin(), b.load.end()};
    *pb->mutable_proc_s() = {b.proc.begin(), b.proc.end()};
    *pb->mutable_compute_s() = {b.compute.begin(), b.compute.end()};
    *pb->mutable_barrier_s() = {b.barrier.begin(), b.barrier.end()};
  }
  out->set_bytes(r.io.bytes);
  out->set_ops(r.io.ops);
  out->set_samples(r.io.samples);
  out->set_files(r.io.files);
  ToProto(r.io.latency, out->mutable_io_latency());
  out->set_dropped_samples(r.dropped_samples);
  for (const RankCheckpointResult& c : r.checkpoints) {
    v1::CheckpointTiming* pc = out->add_checkpoints();
    pc->set_index(static_cast<uint32_t>(c.index));
    pc->set_load(c.load);
    pc->set_epoch(static_cast<uint32_t>(c.epoch));
    pc->set_start_unix_us(c.start_unix_us);
    pc->set_end_unix_us(c.end_unix_us);
    pc->set_duration_s(c.duration_s);
    pc->set_bytes(c.bytes);
  }
  if (!r.trace_events.empty()) out->set_trace_events(r.trace_events);
  out->set_trace_dropped(r.trace_dropped);
  if (!r.cache_drop.empty()) out->set_cache_drop(r.cache_drop);
  if (r.device_read_bytes >= 0) out->set_device_read_bytes(r.device_read_bytes);
  for (int i = 0; i < kS3OpCount; ++i) {
    const S3OpSnapshot& o = r.s3.ops[static_cast<size_t>(i)];
    if (o.requests == 0) continue;
    v1::S3OpResult* p = out->add_s3_ops();
    p->set_operation(S3OpName(static_cast<S3Op>(i)));
    p->set_requests(o.requests);
    p->set_bytes(o.bytes);
    p->set_retries(o.retries);
    for (uint64_t e : o.errors) p->add_errors(e);
    ToProto(o.latency, p->mutable_latency());
  }
  for (const S3EndpointSnapshot& e : r.s3.endpoints) {
    if (e.requests == 0) continue;
    v1::S3EndpointResult* p = out->add_s3_endpoints();
    p->set_endpoint(e.endpoint);
    p->set_requests(e.requests);
    p->set_bytes(e.bytes);
    p->set_errors(e.errors);
    p->set_failovers(e.failovers);
    ToProto(e.latency, p->mutable_latency());
  }
  if (!r.host.empty()) out->set_host_telemetry(HostTelemetryText(r.host));
  out->set_host_facts(r.host_facts);
  if (!r.listing.split.empty()) ToProto(r.listing, out->mutable_listing());
}

RankEpochResult FromProto(const v1::RankResult& r) {
  RankEpochResult out;
  out.rank = static_cast<int>(r.rank());
  out.epoch = static_cast<int>(r.epoch());
  out.start_unix_us = r.start_unix_us();
  out.end_unix_us = r.end_unix_us();
  for (const v1::BlockTimings& pb : r.blocks()) {
    BlockTimings b;
    b.block = static_cast<int>(pb.block());
    b.start_unix_us = pb.start_unix_us();
    b.end_unix_us = pb.end_unix_us();
    b.duration_s = pb.duration_s();
    b.load.assign(pb.load_s().begin(), pb.load_s().end());
    b.proc.assign(pb.proc_s().begin(), pb.proc_s().end());
    b.compute.assign(pb.compute_s().begin(), pb.compute_s().end());
    b.barrier.assign(pb.barrier_s().begin(), pb.barrier_s().end());
    out.blocks.push_back(std::move(b));
  }
  out.io.bytes = r.bytes();
  out.io.ops = r.ops();
  out.io.samples = r.samples();
  out.io.files = r.files();
  out.io.latency = FromProto(r.io_latency());
  out.dropped_samples = r.dropped_samples();
  for (const v1::CheckpointTiming& c : r.checkpoints()) {
    RankCheckpointResult rc;
    rc.rank = out.rank;
    rc.index = static_cast<int>(c.index());
    rc.load = c.load();
    rc.epoch = static_cast<int>(c.epoch());
    rc.start_unix_us = c.start_unix_us();
    rc.end_unix_us = c.end_unix_us();
    rc.duration_s = c.duration_s();
    rc.bytes = c.bytes();
    out.checkpoints.push_back(rc);
  }
  out.trace_events = r.trace_events();
  out.trace_dropped = r.trace_dropped();
  out.cache_drop = r.cache_drop();
  out.device_read_bytes = r.has_device_read_bytes() ? r.device_read_bytes() : -1;
  out.host_facts = r.host_facts();
  if (r.has_listing()) out.listing = FromProto(r.listing());
  for (const v1::S3OpResult& p : r.s3_ops()) {
    for (int i = 0; i < kS3OpCount; ++i) {
      if (p.operation() != S3OpName(static_cast<S3Op>(i))) continue;  // unknown operations are dropped
      S3OpSnapshot& o = out.s3.ops[static_cast<size_t>(i)];
      o.requests = p.requests();
      o.bytes = p.bytes();
      o.retries = p.retries();
      for (int k = 0; k < kS3StatusSlots && k < p.errors_size(); ++k) o.errors[static_cast<size_t>(k)] = p.errors(k);
      o.latency = FromProto(p.latency());
    }
  }
  for (const v1::S3EndpointResult& p : r.s3_endpoints()) {
    S3EndpointSnapshot& e = out.s3.Endpoint(p.endpoint());
    e.requests = p.requests();
    e.bytes = p.bytes();
    e.errors = p.errors();
    e.failovers = p.failovers();
    e.latency = FromProto(p.latency());
  }
  // Malformed telemetry (a newer or broken agent) is left out: the phase's results stand without it.
  if (absl::StatusOr<HostTelemetry> host = ParseHostTelemetry(r.host_telemetry()); host.ok()) out.host = *std::move(host);
  return out;
}

namespace {

template <typename Setter>
void SetIf(const std::optional<double>& v, Setter set) {
  if (v) set(*v);
}

// An unsigned wire number as a signed C++ one, saturating.
template <typename To, typename From>
To Saturated(From v) {
  return v > static_cast<std::make_unsigned_t<To>>(std::numeric_limits<To>::max()) ? std::numeric_limits<To>::max()
                                                                                 : static_cast<To>(v);
}

}  // namespace

void ToProto(const EpochMetric& m, v1::EpochRow* out) {
  out->set_epoch(static_cast<uint32_t>(m.epoch));
  SetIf(m.au_percent, [&](double x) { out->set_au_percent(x); });
  SetIf(m.samples_per_second, [&](double x) { out->set_samples_per_second(x); });
  SetIf(m.mib_per_second, [&](double x) { out->set_mib_per_second(x); });
  SetIf(m.actual_mb_per_second, [&](double x) { out->set_actual_mb_per_second(x); });
  SetIf(m.au_min_rank, [&](double x) { out->set_au_min_rank_percent(x); });
}

EpochMetric FromProto(const v1::EpochRow& r) {
  EpochMetric m;
  m.epoch = static_cast<int>(r.epoch());
  if (r.has_au_percent()) m.au_percent = r.au_percent();
  if (r.has_samples_per_second()) m.samples_per_second = r.samples_per_second();
  if (r.has_mib_per_second()) m.mib_per_second = r.mib_per_second();
  if (r.has_actual_mb_per_second()) m.actual_mb_per_second = r.actual_mb_per_second();
  if (r.has_au_min_rank_percent()) m.au_min_rank = r.au_min_rank_percent();
  return m;
}

void ToProto(const Verdict& v, v1::Verdict* out) {
  switch (v.status) {
    case VerdictStatus::kPass: out->set_status(v1::VERDICT_STATUS_PASS); break;
    case VerdictStatus::kFail: out->set_status(v1::VERDICT_STATUS_FAIL); break;
    case VerdictStatus::kNotMeasured: out->set_status(v1::VERDICT_STATUS_NOT_MEASURED); break;
    case VerdictStatus::kNotApplicable: out->set_status(v1::VERDICT_STATUS_NOT_APPLICABLE); break;
    case VerdictStatus::kIncomplete: out->set_status(v1::VERDICT_STATUS_INCOMPLETE); break;
  }
  SetIf(v.au_percent, [&](double x) { out->set_au_percent(x); });
  SetIf(v.au_min_rank_percent, [&](double x) { out->set_au_min_rank_percent(x); });
  SetIf(v.au_stdev_percent, [&](double x) { out->set_au_stdev_percent(x); });
  out->set_target_percent(v.target_percent);
  out->set_epochs_measured(static_cast<uint32_t>(v.epochs_measured));
  out->set_reason(v.reason);
  out->set_limit_class(v.limit_class);
  out->set_limit_line(v.limit_line);
  if (!v.limit_evidence.is_null()) out->set_limit_evidence_json(v.limit_evidence.dump());
}

Verdict FromProto(const v1::Verdict& v) {
  Verdict out;
  switch (v.status()) {
    case v1::VERDICT_STATUS_PASS: out.status = VerdictStatus::kPass; break;
    case v1::VERDICT_STATUS_FAIL: out.status = VerdictStatus::kFail; break;
    case v1::VERDICT_STATUS_NOT_MEASURED: out.status = VerdictStatus::kNotMeasured; break;
    case v1::VERDICT_STATUS_NOT_APPLICABLE: out.status = VerdictStatus::kNotApplicable; break;
    default: out.status = VerdictStatus::kIncomplete; break;
  }
  if (v.has_au_percent()) out.au_percent = v.au_percent();
  if (v.has_au_min_rank_percent()) out.au_min_rank_percent = v.au_min_rank_percent();
  if (v.has_au_stdev_percent()) out.au_stdev_percent = v.au_stdev_percent();
  out.target_percent = v.target_percent();
  out.epochs_measured = static_cast<int>(v.epochs_measured());
  out.reason = v.reason();
  if (v.status() == v1::VERDICT_STATUS_UNSPECIFIED && out.reason.empty()) out.reason = "no verdict";
  out.limit_class = v.limit_class();
  out.limit_line = v.limit_line();
  if (!v.limit_evidence_json().empty()) {
    out.limit_evidence = nlohmann::json::parse(v.limit_evidence_json(), nullptr, /*allow_exceptions=*/false);
    if (out.limit_evidence.is_discarded()) out.limit_evidence = nlohmann::json::object();
  }
  return out;
}

v1::PhaseKind ToProto(PhaseKind k) {
  switch (k) {
    case PhaseKind::kGenerate: return v1::PHASE_KIND_GENERATE;
    case PhaseKind::kTrainEpoch: return v1::PHASE_KIND_TRAIN_EPOCH;
    case PhaseKind::kEval: return v1::PHASE_KIND_EVAL;
    case PhaseKind::kCheckpoint: return v1::PHASE_KIND_CHECKPOINT;
    case PhaseKind::kList: return v1::PHASE_KIND_LIST;
  }
  return v1::PHASE_KIND_TRAIN_EPOCH;
}

PhaseKind FromProto(v1::PhaseKind k) {
  switch (k) {
    case v1::PHASE_KIND_GENERATE: return PhaseKind::kGenerate;
    case v1::PHASE_KIND_EVAL: return PhaseKind::kEval;
    case v1::PHASE_KIND_CHECKPOINT: return PhaseKind::kCheckpoint;
    case v1::PHASE_KIND_LIST: return PhaseKind::kList;
    default: return PhaseKind::kTrainEpoch;
  }
}

void ToProto(const SplitListing& l, v1::SplitListing* out) {
  out->set_split(l.split);
  out->set_pattern(l.pattern);
  out->set_count(static_cast<uint64_t>(std::max<int64_t>(0, l.count)));
  out->set_file_prefix(l.file_prefix);
  out->set_subfolders(static_cast<uint64_t>(std::max<int64_t>(0, l.subfolders)));
  out->set_ext(l.ext);
  out->set_names_zstd(l.names_zstd);
  out->set_note(l.note);
  out->set_seconds(l.seconds);
  out->set_requests(l.requests);
  out->set_agent(l.agent);
}

SplitListing FromProto(const v1::SplitListing& l) {
  SplitListing out;
  out.split = l.split();
  out.pattern = l.pattern();
  out.count = Saturated<int64_t>(l.count());
  out.file_prefix = l.file_prefix();
  out.subfolders = Saturated<int64_t>(l.subfolders());
  out.ext = l.ext();
  out.names_zstd = l.names_zstd();
  out.note = l.note();
  out.seconds = l.seconds();
  out.requests = l.requests();
  out.agent = l.agent();
  return out;
}

void ToProto(const PhaseOrder& o, v1::RunPhase* out) {
  out->set_job_id(o.job_id);
  out->set_phase_id(o.phase_id);
  out->set_kind(ToProto(o.kind));
  out->set_workload_yaml(o.workload_yaml);
  out->set_s3_secret_access_key(o.s3_secret_access_key);
  out->set_world_size(static_cast<uint32_t>(o.world));
  out->set_first_rank(static_cast<uint32_t>(o.first_rank));
  out->set_local_ranks(static_cast<uint32_t>(o.local_ranks));
  out->set_epoch(static_cast<uint32_t>(o.epoch));
  out->set_num_agents(static_cast<uint32_t>(o.num_agents));
  out->set_agent_index(static_cast<uint32_t>(o.agent_index));
  out->set_checkpoint_load(o.checkpoint_load);
  out->set_checkpoint_index(static_cast<uint32_t>(o.checkpoint_index));
  out->set_checkpoint_step(static_cast<uint64_t>(o.checkpoint_step));
  out->set_share_agent(o.share_agent);
  if (!o.barrier_relay.empty()) {
    v1::BarrierTree* t = out->mutable_barrier_tree();
    t->set_relay(o.barrier_relay);
    t->set_relay_endpoint(o.barrier_relay_endpoint);
    t->set_relay_tls_name(o.barrier_relay_tls_name);
    for (const std::string& g : o.barrier_group) t->add_group(g);
    for (const std::vector<std::string>& u : o.barrier_upper) {
      v1::BarrierGroup* g = t->add_upper();
      for (const std::string& m : u) g->add_members(m);
    }
  }
  out->set_list_split(o.list_split);
  if (!o.listing.split.empty()) ToProto(o.listing, out->mutable_listing());
}

PhaseOrder FromProto(const v1::RunPhase& r) {
  PhaseOrder o;
  o.job_id = r.job_id();
  o.phase_id = r.phase_id();
  o.kind = FromProto(r.kind());
  o.workload_yaml = r.workload_yaml();
  o.s3_secret_access_key = r.s3_secret_access_key();
  o.world = Saturated<int>(r.world_size());
  o.first_rank = Saturated<int>(r.first_rank());
  o.local_ranks = Saturated<int>(r.local_ranks());
  o.epoch = Saturated<int>(r.epoch());
  o.num_agents = Saturated<int>(r.num_agents());
  o.agent_index = Saturated<int>(r.agent_index());
  o.checkpoint_load = r.checkpoint_load();
  o.checkpoint_index = Saturated<int>(r.checkpoint_index());
  o.checkpoint_step = Saturated<int64_t>(r.checkpoint_step());
  o.share_agent = r.share_agent();
  o.barrier_relay = r.barrier_tree().relay();
  o.barrier_relay_endpoint = r.barrier_tree().relay_endpoint();
  o.barrier_relay_tls_name = r.barrier_tree().relay_tls_name();
  o.barrier_group.assign(r.barrier_tree().group().begin(), r.barrier_tree().group().end());
  for (const v1::BarrierGroup& g : r.barrier_tree().upper()) {
    o.barrier_upper.emplace_back(g.members().begin(), g.members().end());
  }
  o.list_split = r.list_split();
  if (r.has_listing()) o.listing = FromProto(r.listing());
  return o;
}

namespace {

// A rank result's host telemetry series as continuations of about `piece_bytes` of JSON each (the whole-phase
// sample in the first); none when the telemetry does not parse (it is then left out, as FromProto would).
std::vector<v1::RankResult> HostPieces(const v1::RankResult& r, size_t piece_bytes) {
  std::vector<v1::RankResult> out;
  absl::StatusOr<HostTelemetry> t = ParseHostTelemetry(r.host_telemetry());
  if (!t.ok() || t->empty()) return out;
  HostTelemetry piece;
  piece.phase = t->phase;
  size_t bytes = 0;
  auto emit = [&] {
    v1::RankResult c;
    c.set_rank(r.rank());
    c.set_continuation(true);
    c.set_host_telemetry(HostTelemetryText(piece));
    out.push_back(std::move(c));
    piece = HostTelemetry();
    bytes = 0;
  };
  for (HostSample& s : t->series) {
    bytes += HostSampleJson(s).dump().size();
    piece.series.push_back(std::move(s));
    if (bytes >= piece_bytes) emit();
  }
  if (!piece.empty()) emit();
  return out;
}

}  // namespace

std::vector<v1::PhaseDone> SplitPhaseDone(const v1::PhaseDone& done, size_t budget) {
  if (done.ByteSizeLong() <= budget) return {done};
  std::vector<v1::PhaseDone> parts;
  v1::PhaseDone cur;
  auto flush = [&] {
    if (cur.ranks_size() == 0) return;
    parts.push_back(std::move(cur));
    cur = v1::PhaseDone();
  };
  auto add = [&](const v1::RankResult& r) {
    if (cur.ranks_size() > 0 && cur.ByteSizeLong() + r.ByteSizeLong() > budget) flush();
    *cur.add_ranks() = r;
  };
  // Per-step values per piece: four doubles a step (8 bytes each, packed), half the budget a piece.
  const size_t steps_per_piece = std::max<size_t>(1, budget / 2 / 32);
  const size_t trace_per_piece = std::max<size_t>(32, budget / 2 / 32 * 32);  // whole 32-byte events
  for (const v1::RankResult& r : done.ranks()) {
    if (r.ByteSizeLong() <= budget) {
      add(r);
      continue;
    }
    v1::RankResult head = r;
    head.clear_trace_events();
    head.clear_host_telemetry();
    for (v1::BlockTimings& b : *head.mutable_blocks()) {
      b.clear_load_s();
      b.clear_proc_s();
      b.clear_compute_s();
      b.clear_barrier_s();
    }
    add(head);
    for (const v1::BlockTimings& b : r.blocks()) {
      const size_t n = static_cast<size_t>(b.load_s_size());
      for (size_t from = 0; from < n; from += steps_per_piece) {
        const size_t to = std::min(n, from + steps_per_piece);
        v1::RankResult c;
        c.set_rank(r.rank());
        c.set_continuation(true);
        v1::BlockTimings* pb = c.add_blocks();
        pb->set_block(b.block());
        auto slice = [&](const google::protobuf::RepeatedField<double>& v, google::protobuf::RepeatedField<double>* o) {
          for (size_t i = from; i < to && i < static_cast<size_t>(v.size()); ++i) o->Add(v.Get(static_cast<int>(i)));
        };
        slice(b.load_s(), pb->mutable_load_s());
        slice(b.proc_s(), pb->mutable_proc_s());
        slice(b.compute_s(), pb->mutable_compute_s());
        slice(b.barrier_s(), pb->mutable_barrier_s());
        add(c);
      }
    }
    for (size_t from = 0; from < r.trace_events().size(); from += trace_per_piece) {
      v1::RankResult c;
      c.set_rank(r.rank());
      c.set_continuation(true);
      c.set_trace_events(r.trace_events().substr(from, trace_per_piece));
      add(c);
    }
    for (const v1::RankResult& c : HostPieces(r, budget / 2)) add(c);
  }
  flush();
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i].set_job_id(done.job_id());
    parts[i].set_phase_id(done.phase_id());
    parts[i].set_more(i + 1 < parts.size());
  }
  return parts;
}

bool MergePhaseDonePart(const v1::PhaseDone& part, std::vector<RankEpochResult>* into) {
  for (const v1::RankResult& r : part.ranks()) {
    if (!r.continuation()) {
      into->push_back(FromProto(r));
      continue;
    }
    auto it = std::find_if(into->rbegin(), into->rend(),
                           [&](const RankEpochResult& x) { return x.rank == static_cast<int>(r.rank()); });
    if (it == into->rend()) return false;
    it->trace_events += r.trace_events();
    if (absl::StatusOr<HostTelemetry> host = ParseHostTelemetry(r.host_telemetry()); host.ok() && !host->empty()) {
      for (HostSample& s : host->series) it->host.series.push_back(std::move(s));
      if (host->phase) it->host.phase = host->phase;
    }
    for (const v1::BlockTimings& pb : r.blocks()) {
      auto b = std::find_if(it->blocks.begin(), it->blocks.end(),
                            [&](const BlockTimings& x) { return x.block == static_cast<int>(pb.block()); });
      if (b == it->blocks.end()) return false;
      b->load.insert(b->load.end(), pb.load_s().begin(), pb.load_s().end());
      b->proc.insert(b->proc.end(), pb.proc_s().begin(), pb.proc_s().end());
      b->compute.insert(b->compute.end(), pb.compute_s().begin(), pb.compute_s().end());
      b->barrier.insert(b->barrier.end(), pb.barrier_s().begin(), pb.barrier_s().end());
    }
  }
  return true;
}

}  // namespace dlio
