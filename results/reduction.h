// The one reduction of a JobResult that Aggregator's figures and documents share (results.h): every epoch reduced
// over its ranks with DLIO's formulas, the fleet summary, and the per-epoch extras summary.json lists beside DLIO's
// keys; and the steps per epoch and per evaluation the metric windows use. Internal to the results room:
// formulas.cc computes it, results.cc writes it into the result files.
//
// Thread-safety: plain values and pure functions of the job.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "results/results.h"

namespace dlio::results_internal {

// Everything the documents need, computed once by the one merge path.
struct Computed {
  FleetSummary fleet;
  MetricWindow window;
  struct EpochExtra {
    std::optional<double> au_min_rank, au_max_rank;
    double timed_seconds = 0;    // max over ranks
    double duration_seconds = 0; // max over ranks
    int ranks = 0;
  };
  std::vector<EpochExtra> extra;  // parallel to fleet.epochs
};

// Training epochs and evaluations of `job` reduced over ranks, then over epochs (results.h states the formulas).
Computed Compute(const JobResult& job);

// Steps per epoch as DLIO counts them (its self.steps): the plan's, else the most any rank recorded.
int64_t EpochSteps(const JobResult& job);
// Steps per evaluation: the plan's, else the most any rank recorded in an evaluation.
int64_t EvalSteps(const JobResult& job);

}  // namespace dlio::results_internal
