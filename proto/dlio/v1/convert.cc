#include "dlio/v1/convert.h"

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
  return out;
}

}  // namespace dlio
