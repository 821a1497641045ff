// Conversions between the wire types (dlio.v1) and our own types, in one place for both facades.
// Only the gRPC layer includes it (the agent's session and server, the coordinator's server, dispatch and client, and
// their tests and fuzz target); the cores (common/, the coordinator core, the agent's phase runner) never do.
#pragma once

#include <vector>

#include "job/phase.h"
#include "results/results.h"
#include "results/verdict.h"
#include "dlio/v1/coordinator.pb.h"

namespace dlio {

// Bumped whenever the wire contract changes incompatibly within dlio.v1; checked at attach. Version 2: agents
// rely on the heartbeat echo and the lease in Welcome. Version 3: PHASE_KIND_CHECKPOINT and step-based checkpoints
// inside training phases (an older agent would run a checkpoint phase as a training epoch, and number barriers by
// step only). Version 4: Error.code is the ErrorCode enum (field 220), no longer a string (field 1). Version 5: the
// announce step barrier (an older agent arrives after its compute, without compute_left, and ignores the release's
// timing), PHASE_KIND_LIST with the shared listing in RunPhase, and the recursive relay tree (an older agent made a
// relay of relays would relay one level only, and the step barrier would wait for its timeout).
inline constexpr uint32_t kProtocolVersion = 5;

// The largest message a coordinator (and an agent) accepts. Small, so that nobody can make the coordinator buffer
// large messages (memory exhaustion); the client RPCs need far less (a job file is at most 1 MiB, common/
// workload_spec.h) and agents cut their phase results into parts of kPhaseDonePartBytes (SplitPhaseDone).
inline constexpr int kMaxReceiveMessageBytes = 8 << 20;
// The budget of one PhaseDone part: half the limit leaves room for the message framing and one cut's overshoot.
inline constexpr size_t kPhaseDonePartBytes = size_t{4} << 20;

void ToProto(const LatencyHistogram& h, v1::Histogram* out);
LatencyHistogram FromProto(const v1::Histogram& h);
void ToProto(const RankEpochResult& r, v1::RankResult* out);
RankEpochResult FromProto(const v1::RankResult& r);
// Figures that are not measured (nullopt) are absent fields on the wire.
void ToProto(const EpochMetric& m, v1::EpochRow* out);
EpochMetric FromProto(const v1::EpochRow& r);
void ToProto(const Verdict& v, v1::Verdict* out);
Verdict FromProto(const v1::Verdict& v);
// A phase order is the RunPhase message. PHASE_KIND_UNSPECIFIED (and a kind this build does not know) reads as a
// training epoch, as it always has; numbers beyond the C++ field's range read as its maximum.
v1::PhaseKind ToProto(PhaseKind k);
PhaseKind FromProto(v1::PhaseKind k);
// A split's listing (issue 27 item 3): in a RunPhase of its split and in the listing phase's RankResult.
void ToProto(const SplitListing& l, v1::SplitListing* out);
SplitListing FromProto(const v1::SplitListing& l);
void ToProto(const PhaseOrder& o, v1::RunPhase* out);
PhaseOrder FromProto(const v1::RunPhase& r);

// Cuts `done` into parts of at most about `budget` bytes each (PhaseDone.more on all but the last): whole rank
// results while they fit, and a rank result larger than the budget as a head (everything but its per-step values,
// trace bytes and host telemetry) plus continuations (RankResult.continuation). One part, `done` itself, when it
// fits.
std::vector<v1::PhaseDone> SplitPhaseDone(const v1::PhaseDone& done, size_t budget = kPhaseDonePartBytes);
// Adds the rank results of one part to `into`, merging continuations into the rank they continue (per-step values
// appended to the block of the same number, trace bytes and host telemetry samples appended). False when a continuation names a rank with no
// head yet (a malformed part).
bool MergePhaseDonePart(const v1::PhaseDone& part, std::vector<RankEpochResult>* into);

}  // namespace dlio
