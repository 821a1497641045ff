// Conversions between the wire types (dlio.v1) and our own types, in one place for both facades.
// Only AgentServer, CoordinatorServer and the client include this header.
#pragma once

#include "common/results.h"
#include "common/verdict.h"
#include "dlio/v1/coordinator.pb.h"

namespace dlio {

// Bumped whenever the wire contract changes incompatibly within dlio.v1; checked at attach. Version 2: agents
// rely on the heartbeat echo and the lease in Welcome. Version 3: PHASE_KIND_CHECKPOINT and step-based checkpoints
// inside training phases (an older agent would run a checkpoint phase as a training epoch, and number barriers by
// step only).
inline constexpr uint32_t kProtocolVersion = 3;

void ToProto(const LatencyHistogram& h, v1::Histogram* out);
LatencyHistogram FromProto(const v1::Histogram& h);
void ToProto(const RankEpochResult& r, v1::RankResult* out);
RankEpochResult FromProto(const v1::RankResult& r);
// Figures that are not measured (nullopt) are absent fields on the wire.
void ToProto(const EpochMetric& m, v1::EpochRow* out);
EpochMetric FromProto(const v1::EpochRow& r);
void ToProto(const Verdict& v, v1::Verdict* out);
Verdict FromProto(const v1::Verdict& v);

}  // namespace dlio
