// The flags dlio-coordinator's job verbs share (submit, run, baseline) and the client options of every client verb:
// what each flag sets, its help text (docs/cli.md is generated from it) and its checks. coordinator_main.cc binds
// them to each verb's CLI::App; nothing here runs a job.
// Thread-safety: called by main's thread while the command line is built and parsed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "client/ramp.h"
#include "mlperf/verbs.h"

namespace dlio::cli {

// The job argument of submit, run and baseline (client/workload_lookup.h).
extern const char* const kJobHelp;

// --strict and --explain, the same on submit and run.
void AddPlanOptions(CLI::App* sub, SubmitOptions* o);
// Overrides come as trailing arguments in DLIO's form (++workload.dataset.num_files_train=8) or with --set.
void AddOverrideOptions(CLI::App* sub, std::vector<std::string>* trailing, std::vector<std::string>* set);
// How every client verb reaches the coordinator.
void AddClientOptions(CLI::App* sub, ClientOptions* o);

// MLPerf mode options shared by submit and run (docs/mlperf.md), the ramp, and the storage baseline
// (client/baseline.h).
struct MlperfFlags {
  bool mlperf = false;
  bool datagen = false;
  bool find_max = false;
  std::string ramp_text;                 // --ramp AXIS=N1,N2,... (client/ramp.h), parsed by Prepare
  std::optional<RampSpec> ramp;
  MlperfRunOptions run;
  FindMaxOptions find;
  bool baseline = false;                 // --baseline (run, submit) or the `baseline` verb
  int baseline_threads = 16;             // --baseline-threads
};
void AddMlperfOptions(CLI::App* sub, MlperfFlags* f);
// --baseline (when `flag`: run and submit; the `baseline` verb is the flag set), --baseline-threads, and
// --baseline-file (the baseline the limit line cites).
void AddBaselineOptions(CLI::App* sub, MlperfFlags* f, SubmitOptions* o, bool flag);

// The address of every client verb when --coordinator is not given: $DLIO_COORDINATOR, else the default.
// $DLIO_COORDINATOR is held to --coordinator's form: nullopt, or exit 2 after one line naming it.
std::optional<int> DefaultCoordinator(ClientOptions* o);
// Appends the trailing overrides and the --set ones, in that order.
void MergeOverrides(std::vector<std::string>* out, const std::vector<std::string>& trailing,
                    const std::vector<std::string>& set);

}  // namespace dlio::cli
