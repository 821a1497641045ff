#include "cli/job_flags.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/address.h"
#include "cli/transport_cli.h"
#include "client/baseline.h"

namespace dlio::cli {

const char* const kJobHelp =
    "DLIO workload YAML file, or a shipped workload by name as DLIO takes it: workload=NAME or NAME (e.g. "
    "workload=unet3d_h100; from PREFIX/share/dlio/configs/workloads), or a scenario file (top-level scenario:, "
    "docs/scenarios.md)";

void AddPlanOptions(CLI::App* sub, SubmitOptions* o) {
  sub->add_flag("--strict", o->strict,
                "Refuse keys where DLIO behaves differently (each 'warning:' line becomes an error, exit 2)");
  sub->add_flag("--explain", o->explain,
                "Print the derived plan (what this fleet would refuse first, then steps, bytes per rank, demand per "
                "accelerator, dataset vs RAM, checkpoint bytes per rank, policy of every key set) and exit, 2 if a "
                "run would be refused; runs and writes nothing (with --json: JSON)");
}

void AddOverrideOptions(CLI::App* sub, std::vector<std::string>* trailing, std::vector<std::string>* set) {
  sub->add_option("overrides", *trailing,
                  "Workload overrides in DLIO's form, e.g. ++workload.dataset.num_files_train=8");
  sub->add_option("--set", *set, "Workload override in short form KEY=VALUE, e.g. --set dataset.num_files_train=8 "
                                 "(repeatable)");
}

void AddClientOptions(CLI::App* sub, ClientOptions* o) {
  o->coordinator.clear();  // filled after parsing: --coordinator, else $DLIO_COORDINATOR, else the default
  sub->add_option("--coordinator", o->coordinator,
                  "Coordinator address HOST:PORT (default: $DLIO_COORDINATOR, else 127.0.0.1:7543)")
      ->check(CoordinatorAddress());
  AddClientTransportOptions(sub, &o->transport, "with every call");
  sub->add_option("--connect-timeout", o->connect_timeout_s,
                  "Seconds a connection to the coordinator may take to complete (an address that answers nothing)")
      ->default_val(10)
      ->check(CLI::Range(1, 3600));
  sub->add_option("--wait-for-coordinator", o->wait_for_coordinator_s,
                  "Seconds to keep retrying while nothing listens at --coordinator (connection refused), e.g. while "
                  "it starts; 0 = fail at once")
      ->default_val(0)
      ->check(CLI::Range(0, 86400));
  sub->add_flag("--json", o->json, "Print one JSON document on stdout (for scripts) instead of text");
}

void AddMlperfOptions(CLI::App* sub, MlperfFlags* f) {
  sub->add_flag("--mlperf", f->mlperf,
                "MLPerf Storage mode: a warm-up run then --mlperf-runs runs with the seed changed per run; prints each "
                "run's AU and throughput, their mean, the AU threshold and 5 % replication verdicts, and writes "
                "MLPerf's results layout");
  sub->add_option("--mlperf-runs", f->run.runs, "Timed runs of --mlperf after the warm-up")
      ->default_val(5)
      ->check(CLI::Range(1, 100).description(""));
  sub->add_option("--mlperf-results-dir", f->run.results_dir,
                  "Root of the MLPerf results tree of --mlperf and --mlperf-datagen (<dir>/training/<model>/run/"
                  "<datetime>/, <dir>/checkpointing/<model>/<datetime>/; docs/mlperf.md)")
      ->default_val("mlperf-results");
  sub->add_flag("--mlperf-datagen", f->datagen,
                "MLPerf's datagen step: generate datasize's count of files for the attached agents (their nodes and "
                "memory) into the dataset, recorded under <mlperf-results-dir>/training/<model>/datagen/; --mlperf "
                "then reads that count");
  sub->add_option("--mlperf-references", f->run.references_dir,
                  "Judge runs against the reference workloads in DIR (named as the shipped ones of --mlperf-version, "
                  "e.g. unet3d_b200.yaml, llama3_8b.yaml) instead of the shipped set: scaled-down rehearsals");
  sub->add_option("--accelerator-type", f->run.accelerator_type,
                  "The accelerator a checkpointing --mlperf set emulates (b200, mi355, a100, h100): its memory x the "
                  "ranks must hold the checkpoint (Rules.md 4.3.4)")
      ->check(CLI::IsMember({"b200", "mi355", "a100", "h100"}));
  sub->add_option("--mlperf-version", f->run.mlperf_version, "The round --mlperf and --mlperf-datagen classify the "
                  "runs by (its references and classes), recorded in every run folder: v3.0 or v2.0")
      ->default_val("v3.0")->check(CLI::IsMember({"v3.0", "v2.0"}));
  sub->add_flag("--find-max-accelerators", f->find_max,
                "Search (real runs, exponential then binary) for the largest accelerators per agent that keeps AU at "
                "or above the workload's threshold; prints every trial and the maximum");
  sub->add_option("--max-accelerators", f->find.max_accelerators,
                  "Upper bound of --find-max-accelerators (per agent; submit: at most what the agents offer)")
      ->default_val(16)
      ->check(CLI::Range(1, 4096).description(""));
  sub->get_option("--mlperf")->excludes(sub->get_option("--find-max-accelerators"));
  sub->add_option("--ramp", f->ramp_text,
                  "Run the job once per point (accelerators=1,2,4,8: accelerators per agent; agents=1,2,4: agents), "
                  "on the same dataset, into <output>/<axis>-<n>/; prints the curve (AU, samples/s, MB/s, batch "
                  "wait, limit, verdict) with the knee and writes ramp.json beside the points; not with --mlperf, "
                  "--mlperf-datagen or --find-max-accelerators")
      ->type_name("AXIS=N,...");
}

std::optional<int> DefaultCoordinator(ClientOptions* o) {
  if (!o->coordinator.empty()) return std::nullopt;
  const char* env = std::getenv("DLIO_COORDINATOR");
  o->coordinator = env != nullptr && *env != '\0' ? env : "127.0.0.1:7543";
  if (absl::Status s = CheckCoordinatorAddress("$DLIO_COORDINATOR", o->coordinator); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  return std::nullopt;
}

void MergeOverrides(std::vector<std::string>* out, const std::vector<std::string>& trailing,
                    const std::vector<std::string>& set) {
  out->insert(out->end(), trailing.begin(), trailing.end());
  out->insert(out->end(), set.begin(), set.end());
}

void AddBaselineOptions(CLI::App* sub, MlperfFlags* f, SubmitOptions* o, bool flag) {
  if (flag) {
    sub->add_flag("--baseline", f->baseline,
                  "With a job: instead of it, measure what the storage gives a plain reader of its dataset (in "
                  "order, one file per batch, no compute, --baseline-threads per agent; S3: the plain GET rate) and "
                  "write baseline.json into the output folder (docs/results.md). With a scenario file: run each "
                  "member alone first (same placement), then all together, and report the interference "
                  "(docs/scenarios.md)");
  }
  sub->add_option("--baseline-threads", f->baseline_threads, "Loader threads per agent of the plain reader")
      ->default_val(kBaselineDefaultThreads)
      ->check(CLI::Range(1, static_cast<int>(kMaxReadThreads)).description(""));
  if (flag) {
    sub->add_option("--baseline-file", o->baseline_file,
                    "The baseline.json the limit line cites (default: baseline.json in the output folder or its "
                    "parent, when it measured this job's dataset)");
  }
}

}  // namespace dlio::cli
