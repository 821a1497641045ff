// dlio-coordinator: serve (the coordinator service), the client verbs (submit, status, list, cancel, results) and
// run (the embedded default).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/cli_parse.h"
#include "common/results.h"
#include "common/scheduling.h"
#include "common/signals.h"
#include "coordinator/client.h"
#include "coordinator/coordinator_server.h"
#include "coordinator/local_fleet.h"
#include "coordinator/mlperf_cli.h"
#include "coordinator/mlperf_submission.h"
#include "coordinator/report.h"
#include "spdlog/spdlog.h"

namespace {

std::atomic<bool> g_cancel{false};
std::atomic<dlio::LocalFleet*> g_fleet{nullptr};
std::atomic<dlio::CoordinatorServer*> g_server{nullptr};
std::atomic<bool> g_stop_early{false};

// CLI::Range lets NaN through (every comparison with it is false): the timing options must also be finite.
const CLI::Validator kFinite(
    [](std::string& in) {
      char* end = nullptr;
      const double v = std::strtod(in.c_str(), &end);
      return std::isfinite(v) ? std::string() : std::string("must be a finite number, got " + in);
    },
    "");

// Overrides come as trailing arguments in DLIO's form (++workload.dataset.num_files_train=8) or with --set.
// --strict and --explain, the same on submit and run.
void AddPlanOptions(CLI::App* sub, dlio::SubmitOptions* o) {
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

// How every client verb reaches the coordinator.
void AddClientOptions(CLI::App* sub, dlio::ClientOptions* o) {
  o->coordinator.clear();  // filled after parsing: --coordinator, else $DLIO_COORDINATOR, else the default
  sub->add_option("--coordinator", o->coordinator,
                  "Coordinator address HOST:PORT (default: $DLIO_COORDINATOR, else 127.0.0.1:7543)");
  sub->add_option("--token-file", o->transport.token_file,
                  "File holding the coordinator's token (sent with every call)");
  sub->add_option("--tls-ca", o->transport.tls_ca,
                  "Use TLS, trusting the coordinator's certificate if this CA (PEM) signed it");
  sub->add_option("--tls-cert", o->transport.tls_cert, "Client certificate (PEM) for a mutual-TLS coordinator");
  sub->add_option("--tls-key", o->transport.tls_key, "Private key (PEM) of --tls-cert");
  sub->add_option("--tls-server-name", o->transport.tls_server_name,
                  "Name expected in the coordinator's certificate (default: the host of --coordinator)");
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

// MLPerf mode options shared by submit and run (docs/mlperf.md).
struct MlperfFlags {
  bool mlperf = false;
  bool datagen = false;
  bool find_max = false;
  dlio::MlperfRunOptions run;
  dlio::FindMaxOptions find;
};
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
                  "Judge runs against the reference workloads in DIR (named as the shipped ones, e.g. "
                  "unet3d_h100.yaml, llama3_8b.yaml) instead of the shipped MLPerf v2.0 set: scaled-down rehearsals");
  sub->add_flag("--find-max-accelerators", f->find_max,
                "Search (real runs, exponential then binary) for the largest accelerators per agent that keeps AU at "
                "or above the workload's threshold; prints every trial and the maximum");
  sub->add_option("--max-accelerators", f->find.max_accelerators,
                  "Upper bound of --find-max-accelerators (per agent; submit: at most what the agents offer)")
      ->default_val(16)
      ->check(CLI::Range(1, 4096).description(""));
  sub->get_option("--mlperf")->excludes(sub->get_option("--find-max-accelerators"));
}

bool IsLoopback(const std::string& listen) {
  if (listen.rfind("unix:", 0) == 0) return true;
  std::string host = listen.substr(0, listen.rfind(':'));
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  dlio::RequestShortSlices();  // control path only: answer barriers promptly on a busy host (common/scheduling.h)
  CLI::App app{std::string("dlio-coordinator: a distributed deep-learning I/O benchmark (DLIO workloads, no MPI).\n"
                           "  serve    run the coordinator service that agents attach to\n"
               "  submit   submit a DLIO workload file to a coordinator, follow it, print and fetch the results\n"
               "  status   show one job\n"
               "  list     list every job and the attached agents\n"
               "  cancel   cancel a queued or running job\n"
               "  results  print or fetch a job's result files\n"
               "  run      the embedded default: a coordinator plus local agent processes on this machine\n"
               "  report   write a self-contained HTML report of a result folder (two: side by side)\n"
               "  mlperf   MLPerf Storage helpers: datasize, classify, report, check (the data generation and the\n"
               "           5-run mode are run/submit --mlperf-datagen and --mlperf)\n") +
                   dlio::kExitStatusHelp,
               "dlio-coordinator"};
  app.require_subcommand(1);
  // Wide enough that every option's description starts on its own line (docs/cli.md is generated from this).
  app.get_formatter()->column_width(52);

  // serve
  CLI::App* serve = app.add_subcommand("serve", "Run the coordinator service; agents attach, jobs run one at a time");
  std::string listen, serve_metrics, results_dir = "results", store;
  dlio::TransportFiles serve_tls;
  double heartbeat_s = 1, lease_s = 8, barrier_timeout_s = 300;
  serve->add_option("--listen", listen,
                    "Address HOST:PORT to serve gRPC on (default 127.0.0.1:7543; 0.0.0.0:7543 with --token-file; "
                    "port 0 picks a free port)");
  serve->add_option("--metrics-listen", serve_metrics, "Serve the coordinator's Prometheus /metrics on HOST:PORT");
  serve->add_option("--results-dir", results_dir, "Folder the coordinator writes result files to (<dir>/<job-id>/)")
      ->default_val("results");
  std::string targets_file;
  serve->add_option("--targets-file", targets_file,
                    "Keep a Prometheus file_sd JSON file of the attached agents' /metrics endpoints at PATH");
  std::string port_file;
  serve->add_option("--port-file", port_file,
                    "Once the server listens, write its gRPC port (one line) to PATH (temporary name, then rename: "
                    "a script waits for the file, then reads it; removed at shutdown). With --listen HOST:0, how a "
                    "launcher learns the port");
  serve->add_option("--store", store,
                    "SQLite job store: jobs survive a restart (queued ones run later, a running one is marked "
                    "interrupted); default: jobs live in memory only");
  serve->add_option("--token-file", serve_tls.token_file,
                    "Require this token (one line in the file) from every agent and client");
  serve->add_option("--tls-cert", serve_tls.tls_cert, "Serve TLS with this certificate (PEM); needs --tls-key");
  serve->add_option("--tls-key", serve_tls.tls_key, "Private key (PEM) of --tls-cert");
  serve->add_option("--tls-ca", serve_tls.tls_ca,
                    "Mutual TLS: require client certificates signed by this CA (PEM)");
  serve->add_option("--heartbeat-interval", heartbeat_s, "Seconds between the heartbeats agents must send")
      ->default_val(1)
      ->check(CLI::Range(0.05, 60.0).description(""))
      ->check(kFinite);
  serve->add_option("--lease", lease_s,
                    "Seconds without a message after which an agent is dropped and its job fails (>= 2 heartbeats)")
      ->default_val(8)
      ->check(CLI::Range(0.1, 3600.0).description(""))
      ->check(kFinite);
  serve->add_option("--barrier-timeout", barrier_timeout_s,
                    "Seconds without a released step barrier after which a training phase fails (0 = none)")
      ->default_val(300)
      ->check(CLI::Range(0.0, 604800.0).description(""))
      ->check(kFinite);

  // submit
  CLI::App* submit = app.add_subcommand("submit", "Submit a DLIO workload file, follow it, print the results");
  dlio::SubmitOptions sopt;
  std::vector<std::string> s_trailing, s_set;
  submit->add_option("job", sopt.job_path, "DLIO workload YAML file")->required();
  submit->add_option("--agents", sopt.agents, "Number of agents to use (0 = every attached agent)")->default_val(0);
  submit->add_option("--accelerators-per-agent", sopt.accelerators_per_agent,
                     "Accelerators (ranks) every agent runs (0 = what the agents offer, which must be equal)")
      ->default_val(0);
  submit->add_option("--wait-for-agents", sopt.wait_for_agents_s,
                     "Seconds to wait for enough agents to attach before the job fails (0 = fail at once)")
      ->default_val(0)
      ->check(CLI::Range(0, 86400));
  submit->add_option("--barrier-timeout", sopt.barrier_timeout_s,
                     "This job's barrier timeout in seconds (0 = the coordinator's --barrier-timeout)")
      ->default_val(0)
      ->check(CLI::Range(0.0, 604800.0));
  submit->add_option("--output", sopt.output_dir,
                     "Write the result files received from the coordinator into DIR (default: the job's "
                     "output.folder; if neither is set they stay in the coordinator's results folder)");
  submit->add_flag("--detach", sopt.detach, "Print the job id and return at once (follow it with status)");
  submit->add_option("--trace", sopt.trace_path,
                     "Record open/read/wait/compute/barrier events per rank and loader thread and write the merged "
                     "Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE (sets dlio_ext.trace)");
  AddClientOptions(submit, &sopt.client);
  AddPlanOptions(submit, &sopt);
  MlperfFlags s_mlperf;
  AddMlperfOptions(submit, &s_mlperf);
  AddOverrideOptions(submit, &s_trailing, &s_set);

  // status, list, cancel, results
  dlio::ClientOptions copt;
  std::string job_id, results_output;
  CLI::App* status = app.add_subcommand("status", "Show one job: state, agents, phase progress, epochs, results");
  status->add_option("job", job_id, "Job id")->required();
  AddClientOptions(status, &copt);
  CLI::App* list = app.add_subcommand("list", "List every job the coordinator knows and the attached agents");
  AddClientOptions(list, &copt);
  CLI::App* cancel = app.add_subcommand("cancel", "Cancel a queued or running job; its agents stop within 2 s");
  cancel->add_option("job", job_id, "Job id")->required();
  AddClientOptions(cancel, &copt);
  CLI::App* results = app.add_subcommand("results", "Print a job's result table and files, or fetch them");
  results->add_option("job", job_id, "Job id")->required();
  results->add_option("--output", results_output, "Write the job's result files (partial ones too) into DIR");
  AddClientOptions(results, &copt);

  // run
  CLI::App* run = app.add_subcommand("run", "Embedded default: coordinator + N local dlio-agent processes, one job");
  dlio::SubmitOptions ropt;
  std::vector<std::string> r_trailing, r_set;
  int local_agents = 1, accelerators = 1, run_wait = 30;
  std::string data_root = ".", run_results = "results", run_metrics;
  run->add_option("job", ropt.job_path, "DLIO workload YAML file")->required();
  run->add_option("--local-agents", local_agents, "Number of local agent processes")
      ->default_val(1)
      ->check(CLI::Range(1, 1024).description(""));
  run->add_option("--accelerators", accelerators, "Emulated accelerators (ranks) per agent")
      ->default_val(1)
      ->check(CLI::Range(1, 4096).description(""));
  run->add_option("--wait-for-agents", run_wait, "Seconds the local agents get to attach before the run fails")
      ->default_val(30)
      ->check(CLI::Range(1, 86400));
  run->add_option("--data-root", data_root,
                  "Data root shared by the local agents; relative data_folder paths resolve under it")
      ->default_val(".");
  run->add_option("--results-dir", run_results, "Folder the embedded coordinator writes results to (<dir>/<job-id>/)")
      ->default_val("results");
  run->add_option("--output", ropt.output_dir, "Also write the result files into DIR (default: the job's "
                                               "output.folder, if set)");
  run->add_option("--metrics-listen", run_metrics, "Serve the embedded coordinator's /metrics on HOST:PORT");
  uint64_t run_host_memory = 0;
  run->add_option("--host-memory", run_host_memory,
                  "DRAM the local agents report for this host (dlio-agent --host-memory; KB/MB/GB: powers of 1000, "
                  "KiB/MiB/GiB: of 1024); default: what they read")
      ->transform(CLI::AsSizeValue(true).description(""))
      ->type_name("BYTES");
  run->add_flag("--json", ropt.client.json, "Print one JSON document on stdout (for scripts) instead of text");
  AddPlanOptions(run, &ropt);
  MlperfFlags r_mlperf;
  AddMlperfOptions(run, &r_mlperf);
  run->add_option("--trace", ropt.trace_path,
                  "Record open/read/wait/compute/barrier events per rank and loader thread and write the merged "
                  "Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE (sets dlio_ext.trace)");
  AddOverrideOptions(run, &r_trailing, &r_set);

  // mlperf datasize | classify
  CLI::App* mlperf = app.add_subcommand(
      "mlperf", "MLPerf Storage helpers: datasize, CLOSED/OPEN classification, the submission report and its check");
  mlperf->require_subcommand(1);
  dlio::DatasizeCliOptions dsopt;
  std::vector<std::string> ds_trailing, ds_set;
  CLI::App* datasize = mlperf->add_subcommand(
      "datasize", "Files needed so the dataset is >= 5x the hosts' RAM and >= 500 steps per accelerator");
  datasize->add_option("--workload", dsopt.workload, "MLPerf workload: unet3d, resnet50 or cosmoflow");
  datasize->add_option("--job", dsopt.job_path,
                       "Take batch size, record length and samples per file from this workload file instead");
  datasize->add_option("--accelerators", dsopt.accelerators, "Simulated accelerators per host")->required();
  datasize->add_option("--hosts", dsopt.hosts, "Number of hosts (every host runs the same number)")->default_val(1);
  datasize->add_option("--host-memory-gib", dsopt.host_memory_gib, "RAM of one host in GiB")->required();
  datasize->add_flag("--json", dsopt.json, "Print one JSON document on stdout");
  AddOverrideOptions(datasize, &ds_trailing, &ds_set);
  dlio::ClassifyCliOptions clopt;
  std::vector<std::string> cl_trailing, cl_set;
  CLI::App* classify = mlperf->add_subcommand(
      "classify", "CLOSED, OPEN or INVALID of what would run (the file as it is plus its overrides) against the "
                  "shipped reference workload, with the reason per differing key (exit 5 when INVALID)");
  classify->add_option("job", clopt.job_path, "MLPerf workload YAML file (model.name picks the baseline)")
      ->required();
  classify->add_option("--workload", clopt.workload, "Baseline workload (default: from model.name)");
  classify->add_option("--accelerator-type", clopt.accelerator_type,
                       "Reference file to judge against: a100 or h100 (configs/workloads/<workload>_<type>.yaml as "
                       "shipped; default: the job file's name, else the closest reference)")
      ->check(CLI::IsMember({"a100", "h100"}));
  classify->add_option("--accelerators", clopt.accelerators,
                       "Accelerators per host: with --host-memory-gib, num_files_train is checked against datasize")
      ->default_val(0);
  classify->add_option("--hosts", clopt.hosts, "Number of hosts")->default_val(1);
  classify->add_option("--host-memory-gib", clopt.host_memory_gib, "RAM of one host in GiB")->default_val(0);
  classify->add_option("--mlperf-references", clopt.references_dir,
                       "Judge against the reference workloads in DIR instead of the shipped ones");
  classify->add_flag("--json", clopt.json, "Print one JSON document on stdout");
  AddOverrideOptions(classify, &cl_trailing, &cl_set);
  dlio::SubmissionOptions subopt;
  CLI::App* mreport = mlperf->add_subcommand(
      "report", "Turn a results tree into a submission: results.csv, one score per workload (the 5-run mean and the "
                "replication check) in mlperf_storage_report.json, and a pre-filled system_description.yaml");
  CLI::App* mcheck = mlperf->add_subcommand(
      "check", "Validate a results tree before submission: required files, the class of every run, the 5-run, "
               "datasize, AU, checkpoint and cache rules, the system description; one line per failure naming the "
               "file and the rule (exit 5 when refused)");
  for (CLI::App* sub : {mreport, mcheck}) {
    sub->add_option("results", subopt.root, "The results tree (--mlperf-results-dir of run/submit --mlperf)")
        ->required();
    sub->add_option("--mlperf-references", subopt.references_dir,
                    "Judge against the reference workloads in DIR instead of the shipped ones");
    sub->add_flag("--json", subopt.json, "Print one JSON document on stdout");
  }

  // report
  CLI::App* report = app.add_subcommand("report", "Write a self-contained HTML report of a result folder, or compare two");
  std::vector<std::string> report_dirs;
  std::string report_out = "report.html";
  report->add_option("results", report_dirs, "Result folder(s) (<results-dir>/<job-id> or submit --output DIR); "
                                             "two are compared side by side")
      ->required()
      ->expected(1, 2);
  report->add_option("-o,--output", report_out, "HTML file to write")->default_val("report.html");

  if (std::optional<int> rc = dlio::ParseCommandLine(app, argc, argv, std::cerr)) return *rc;
  for (dlio::ClientOptions* o : {&copt, &sopt.client}) {
    if (o->coordinator.empty()) {
      const char* env = std::getenv("DLIO_COORDINATOR");
      o->coordinator = env != nullptr && *env != '\0' ? env : "127.0.0.1:7543";
    }
  }

  if (*report) return dlio::WriteReportFile(report_dirs, report_out, std::cout, std::cerr);
  if (*datasize) {
    for (auto* v : {&ds_trailing, &ds_set}) dsopt.overrides.insert(dsopt.overrides.end(), v->begin(), v->end());
    return dlio::MlperfDatasize(dsopt, std::cout, std::cerr);
  }
  if (*mreport) return dlio::MlperfReport(subopt, std::cout, std::cerr);
  if (*mcheck) return dlio::MlperfCheck(subopt, std::cout, std::cerr);
  if (*classify) {
    for (auto* v : {&cl_trailing, &cl_set}) clopt.overrides.insert(clopt.overrides.end(), v->begin(), v->end());
    return dlio::MlperfClassify(clopt, std::cout, std::cerr);
  }

  if (*serve) {
    absl::StatusOr<dlio::Transport> transport = dlio::LoadTransport(serve_tls, /*server=*/true);
    if (!transport.ok()) {
      std::cerr << "dlio-coordinator serve: " << transport.status().message() << "\n";
      return 2;
    }
    if (listen.empty()) listen = transport->token.empty() ? "127.0.0.1:7543" : "0.0.0.0:7543";
    if (!IsLoopback(listen)) {
      if (transport->token.empty()) {
        spdlog::warn("serving on {} without --token-file: anyone who can reach this port can run jobs and write files "
                     "under every agent's data root; pass --token-file (and --tls-cert/--tls-key), or listen on "
                     "127.0.0.1", listen);
      } else if (!transport->tls()) {
        spdlog::warn("serving on {} without TLS: the token crosses the network in clear text; pass --tls-cert and "
                     "--tls-key", listen);
      }
    }
    if (!serve_tls.token_file.empty()) {
      struct stat st {};
      if (stat(serve_tls.token_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
        spdlog::warn("--token-file '{}' is readable by other users (chmod 600 it)", serve_tls.token_file);
      }
    }
    dlio::CoordinatorServer::Options o;
    o.listen = listen;
    o.metrics_listen = serve_metrics;
    o.results_dir = results_dir;
    o.targets_file = targets_file;
    o.store = store;
    o.transport = *transport;
    o.core.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(heartbeat_s * 1000));
    o.core.lease = std::chrono::milliseconds(static_cast<int64_t>(lease_s * 1000));
    o.core.barrier_timeout = std::chrono::milliseconds(static_cast<int64_t>(barrier_timeout_s * 1000));
    // Signals are handled by a thread of their own, started before gRPC starts its threads (they inherit the mask).
    dlio::OnTerminationSignal([](int) {
      if (dlio::CoordinatorServer* s = g_server.load()) {
        s->Shutdown();
      } else {
        g_stop_early = true;
      }
    });
    auto server = dlio::CoordinatorServer::Start(o);
    if (!server.ok()) {
      std::cerr << "dlio-coordinator serve: " << server.status().message() << "\n";
      return 2;
    }
    dlio::CoordinatorServer* srv = server->get();
    g_server = srv;
    if (g_stop_early) srv->Shutdown();
    if (!port_file.empty()) {
      if (absl::Status s = dlio::WriteFileAtomic(port_file, absl::StrCat(srv->port(), "\n")); !s.ok()) {
        std::cerr << "dlio-coordinator serve: --port-file: " << s.message() << "\n";
        srv->Shutdown();
        srv->Wait();
        return 2;
      }
    }
    spdlog::info("coordinator listening on {} (port {}){}{}{}", listen, srv->port(),
                 transport->tls() ? (transport->ca_pem.empty() ? ", TLS" : ", mutual TLS") : "",
                 store.empty() ? "" : fmt::format(", job store {}", store),
                 srv->metrics_port() ? fmt::format(", metrics on port {}", srv->metrics_port()) : "");
    srv->Wait();
    if (!port_file.empty()) {
      std::error_code ignored;  // best effort: a launcher that reads a stale file finds nobody listening
      std::filesystem::remove(port_file, ignored);
    }
    return 0;
  }

  if (*status) return dlio::ShowStatus(copt, job_id, std::cout, std::cerr);
  if (*list) return dlio::ListJobs(copt, std::cout, std::cerr);
  if (*cancel) return dlio::CancelJob(copt, job_id, std::cout, std::cerr);
  if (*results) return dlio::FetchResults(copt, job_id, results_output, std::cout, std::cerr);

  dlio::SubmitOptions& opt = *submit ? sopt : ropt;
  for (auto& o : *submit ? s_trailing : r_trailing) opt.overrides.push_back(o);
  for (auto& o : *submit ? s_set : r_set) opt.overrides.push_back(o);
  if (opt.explain) {
    if (*run && (local_agents < 1 || accelerators < 1)) {
      std::cerr << (local_agents < 1 ? "--local-agents" : "--accelerators") << ": must be >= 1\n";
      return 2;
    }
    const dlio::LocalFleetShape shape{local_agents, accelerators, run_host_memory};
    return dlio::ExplainJobPlan(opt, *run ? &shape : nullptr, std::cout, std::cerr);
  }
  // Bad input is reported before anything starts or is written.
  if (int rc = dlio::ValidateJob(opt, std::cerr); rc != 0) return rc;
  // First signal: cancel the job (and, for run, stop the local agents in order). Second: leave at once.
  dlio::OnTerminationSignal([](int) {
    if (!g_cancel.exchange(true)) return;
    std::cerr << "\nsecond interrupt: exiting without waiting for the job to stop\n";
    if (dlio::LocalFleet* f = g_fleet.load()) f->Kill();
    std::_Exit(130);
  });

  MlperfFlags& mf = *submit ? s_mlperf : r_mlperf;
  if (mf.datagen && (mf.mlperf || mf.find_max)) {
    std::cerr << "--mlperf-datagen: runs alone (not with --mlperf or --find-max-accelerators)\n";
    return 2;
  }
  // One job, the 5-run MLPerf mode, or the accelerator search: all go through SubmitAndWait.
  auto drive = [&](const dlio::SubmitOptions& o) {
    if (mf.mlperf) return dlio::RunMlperf(o, mf.run, std::cout, std::cerr, &g_cancel);
    if (mf.datagen) return dlio::RunMlperfDatagen(o, mf.run, std::cout, std::cerr, &g_cancel);
    if (mf.find_max) return dlio::FindMaxAccelerators(o, mf.find, std::cout, std::cerr, &g_cancel);
    return dlio::SubmitAndWait(o, std::cout, std::cerr, &g_cancel);
  };
  if (*submit) return drive(opt);

  if (local_agents < 1 || accelerators < 1) {
    std::cerr << (local_agents < 1 ? "--local-agents" : "--accelerators") << ": must be >= 1\n";
    return 2;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(data_root, ec)) {
    std::cerr << "--data-root: '" << data_root << "' is not a directory\n";
    return 2;
  }
  // What the job's values make impossible on this fleet, before any agent starts (the accelerator search's trials
  // each have their own world: the coordinator checks every one when it places it).
  if (!mf.find_max) {
    if (int rc = dlio::CheckPreRun(opt, dlio::JobWorld{local_agents, accelerators}, std::cerr); rc != 0) return rc;
  }
  dlio::LocalFleet::Options fo;
  fo.agents = local_agents;
  // The accelerator search submits each trial with --accelerators-per-agent N: the agents offer the bound.
  fo.accelerators = mf.find_max ? std::max(accelerators, mf.find.max_accelerators) : accelerators;
  fo.data_root = data_root;
  fo.results_dir = run_results;
  fo.metrics_listen = run_metrics;
  fo.attach_timeout_s = run_wait;
  fo.host_memory_bytes = run_host_memory;
  // The client's progress lines are the user interface of `run`; the embedded coordinator logs only problems.
  spdlog::set_level(spdlog::level::warn);
  auto fleet = dlio::LocalFleet::Start(fo);
  if (!fleet.ok()) {
    std::cerr << "dlio-coordinator run: " << fleet.status().message() << "\n";
    return 3;
  }
  g_fleet = fleet->get();
  int rc = 130;
  if (g_cancel) {
    std::cerr << "interrupted before the job was submitted\n";
  } else {
    opt.client.coordinator = (*fleet)->address();
    opt.client.connect_timeout_s = 10;
    opt.where_results_live = run_results;
    opt.wait_for_agents_s = run_wait;
    rc = drive(opt);
  }
  g_fleet = nullptr;
  fleet->reset();
  return rc;
}
