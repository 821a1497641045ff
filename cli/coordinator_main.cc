// dlio-coordinator: serve (the coordinator service), the client verbs (submit, status, list, cancel, results), run
// (the embedded default), report and the mlperf helpers. Every verb is a row of kVerbs below: main builds the command
// line from it and dispatches to the verb that was parsed, and scripts/gen-cli-docs.sh documents the verbs it lists
// (`dlio-coordinator --list-verbs`).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/address.h"
#include "cli/cli_parse.h"
#include "cli/job_flags.h"
#include "results/results.h"
#include "base/scheduling.h"
#include "base/signals.h"
#include "cli/transport_cli.h"
#include "client/client.h"
#include "coordinator/coordinator_server.h"
#include "client/baseline.h"
#include "client/local_fleet.h"
#include "client/ramp.h"
#include "client/scenario.h"
#include "mlperf/verbs.h"
#include "mlperf/submission.h"
#include "report/report.h"
#include "spdlog/spdlog.h"

namespace {

using dlio::cli::AddClientOptions;
using dlio::cli::AddOverrideOptions;
using dlio::cli::DefaultCoordinator;
using dlio::cli::kJobHelp;
using dlio::cli::MergeOverrides;
using dlio::cli::MlperfFlags;

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

bool IsLoopback(const std::string& listen) {
  if (listen.rfind("unix:", 0) == 0) return true;
  std::string host = listen.substr(0, listen.rfind(':'));
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// One verb of dlio-coordinator: its options live in it (bound to its CLI::App), Run() acts once they are parsed.
class Verb {
 public:
  virtual ~Verb() = default;
  virtual int Run() = 0;
};

// --- serve -----------------------------------------------------------------------------------------------------

class ServeVerb : public Verb {
 public:
  explicit ServeVerb(CLI::App* serve) {
    serve->add_option("--listen", listen_,
                      "Address HOST:PORT to serve gRPC on (default 127.0.0.1:7543; 0.0.0.0:7543 with --token-file; "
                      "port 0 picks a free port)");
    serve->add_option("--metrics-listen", o_.metrics_listen,
                      "Serve the coordinator's Prometheus /metrics on HOST:PORT");
    serve->add_option("--results-dir", o_.results_dir,
                      "Folder the coordinator writes result files to (<dir>/<job-id>/)")
        ->default_val("results");
    serve->add_option("--targets-file", o_.targets_file,
                      "Keep a Prometheus file_sd JSON file of the attached agents' /metrics endpoints at PATH");
    serve->add_option("--port-file", port_file_,
                      "Once the server listens, write its gRPC port (one line) to PATH (temporary name, then rename: "
                      "a script waits for the file, then reads it; removed at shutdown). With --listen HOST:0, how a "
                      "launcher learns the port");
    serve->add_option("--store", o_.store,
                      "SQLite job store: jobs survive a restart (queued ones run later, a running one is marked "
                      "interrupted); default: jobs live in memory only");
    serve->add_option("--keep-jobs", keep_jobs_,
                      "Finished jobs to keep, the N that ended last (queued and running jobs are always kept): an "
                      "older one leaves list, status and the --store when a job ends and at start; its result folder "
                      "stays")
        ->default_val(1000)
        ->check(CLI::Range(size_t{1}, size_t{10000000}).description(""));
    serve->add_option("--token-file", tls_.token_file,
                      "Require this token (one line in the file) from every agent and client");
    serve->add_option("--tls-cert", tls_.tls_cert, "Serve TLS with this certificate (PEM); needs --tls-key");
    serve->add_option("--tls-key", tls_.tls_key, "Private key (PEM) of --tls-cert");
    serve->add_option("--tls-ca", tls_.tls_ca,
                      "Mutual TLS: require client certificates signed by this CA (PEM)");
    serve->add_option("--heartbeat-interval", heartbeat_s_, "Seconds between the heartbeats agents must send")
        ->default_val(1)
        ->check(CLI::Range(0.05, 60.0).description(""))
        ->check(kFinite);
    serve->add_option("--lease", lease_s_,
                      "Seconds without a message after which an agent is dropped and its job fails (>= 2 heartbeats)")
        ->default_val(8)
        ->check(CLI::Range(0.1, 3600.0).description(""))
        ->check(kFinite);
    serve->add_option("--barrier-timeout", barrier_timeout_s_,
                      "Seconds without a released step barrier after which a training phase fails (0 = none)")
        ->default_val(300)
        ->check(CLI::Range(0.0, 604800.0).description(""))
        ->check(kFinite);
  }

  int Run() override {
    absl::StatusOr<dlio::Transport> transport = dlio::LoadTransport(tls_, /*server=*/true);
    // The key and certificates checked before listening: gRPC's own failure would read "cannot listen ... in use".
    const absl::Status tls_ok = transport.ok() ? dlio::CheckTlsFiles(tls_, *transport) : transport.status();
    if (!tls_ok.ok()) {
      std::cerr << "dlio-coordinator serve: " << tls_ok.message() << "\n";
      return 2;
    }
    if (listen_.empty()) listen_ = transport->token.empty() ? "127.0.0.1:7543" : "0.0.0.0:7543";
    // A busy port said in one line before gRPC or CivetServer log their own words about it.
    for (const auto& [flag, address] :
         {std::pair{"--listen", listen_}, std::pair{"--metrics-listen", o_.metrics_listen}}) {
      if (absl::Status s = dlio::CheckCanListen(flag, address); !s.ok()) {
        std::cerr << "dlio-coordinator serve: " << s.message() << "\n";
        return 2;
      }
    }
    WarnAboutExposure(*transport);
    o_.listen = listen_;
    o_.transport = *transport;
    o_.core.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(heartbeat_s_ * 1000));
    o_.core.lease = std::chrono::milliseconds(static_cast<int64_t>(lease_s_ * 1000));
    o_.core.barrier_timeout = std::chrono::milliseconds(static_cast<int64_t>(barrier_timeout_s_ * 1000));
    o_.core.keep_jobs = keep_jobs_;
    // Signals are handled by a thread of their own, started before gRPC starts its threads (they inherit the mask).
    dlio::OnTerminationSignal([](int) {
      if (dlio::CoordinatorServer* s = g_server.load()) {
        s->Shutdown();
      } else {
        g_stop_early = true;
      }
    });
    auto server = dlio::CoordinatorServer::Start(o_);
    if (!server.ok()) {
      std::cerr << "dlio-coordinator serve: " << server.status().message() << "\n";
      return 2;
    }
    dlio::CoordinatorServer* srv = server->get();
    g_server = srv;
    if (g_stop_early) srv->Shutdown();
    if (!port_file_.empty()) {
      if (absl::Status s = dlio::WriteFileAtomic(port_file_, absl::StrCat(srv->port(), "\n")); !s.ok()) {
        std::cerr << "dlio-coordinator serve: --port-file: " << s.message() << "\n";
        srv->Shutdown();
        srv->Wait();
        return 2;
      }
    }
    spdlog::info("coordinator listening on {} (port {}){}{}{}", listen_, srv->port(),
                 transport->tls() ? (transport->ca_pem.empty() ? ", TLS" : ", mutual TLS") : "",
                 o_.store.empty() ? "" : fmt::format(", job store {}", o_.store),
                 srv->metrics_port() ? fmt::format(", metrics on port {}", srv->metrics_port()) : "");
    srv->Wait();
    if (!port_file_.empty()) {
      std::error_code ignored;  // best effort: a launcher that reads a stale file finds nobody listening
      std::filesystem::remove(port_file_, ignored);
    }
    return 0;
  }

 private:
  // Warnings for a coordinator reachable from the network without a token or TLS, or with a readable token file.
  void WarnAboutExposure(const dlio::Transport& transport) const {
    if (!IsLoopback(listen_)) {
      if (transport.token.empty()) {
        spdlog::warn("serving on {} without --token-file: anyone who can reach this port can run jobs and write files "
                     "under every agent's data root; pass --token-file (and --tls-cert/--tls-key), or listen on "
                     "127.0.0.1", listen_);
      } else if (!transport.tls()) {
        spdlog::warn("serving on {} without TLS: the token crosses the network in clear text; pass --tls-cert and "
                     "--tls-key", listen_);
      }
    }
    if (!tls_.token_file.empty()) {
      struct stat st {};
      if (stat(tls_.token_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
        spdlog::warn("--token-file '{}' is readable by other users (chmod 600 it)", tls_.token_file);
      }
    }
  }

  std::string listen_, port_file_;
  dlio::CoordinatorServer::Options o_;
  dlio::TransportFiles tls_;
  double heartbeat_s_ = 1, lease_s_ = 8, barrier_timeout_s_ = 300;
  size_t keep_jobs_ = 1000;  // --keep-jobs (Coordinator::Options::keep_jobs)
};

// --- submit and run: one job (or the MLPerf modes), loaded once --------------------------------------------------

class JobVerb : public Verb {
 protected:
  // The options submit and run share; the trace option sits between MLPerf's and the overrides on run.
  void AddSharedOptions(CLI::App* sub) {
    dlio::cli::AddPlanOptions(sub, &opt_);
    dlio::cli::AddMlperfOptions(sub, &mlperf_);
    dlio::cli::AddBaselineOptions(sub, &mlperf_, &opt_, /*flag=*/true);
  }

  // Overrides merged, then --explain (exit), the job loaded (exit 2 on bad input) and the signal handler; nullopt
  // when the job should be driven. The job file is read and parsed here, once per command: job_ is what --explain,
  // the pre-run checks and the submission all see.
  std::optional<int> Prepare(const dlio::LocalFleetShape* local) {
    MergeOverrides(&opt_.overrides, trailing_, set_);
    const bool one_job_mode = mlperf_.mlperf || mlperf_.datagen || mlperf_.find_max || !mlperf_.ramp_text.empty();
    auto sc = dlio::LoadScenarioCommand(opt_, one_job_mode);  // a scenario file: client/scenario.h
    if (!sc.ok()) return dlio::ReportFailure(sc.status(), std::cerr);
    if (scenario_ = *std::move(sc); scenario_) return OnSignalCancel(), std::nullopt;
    if (mlperf_.baseline && one_job_mode) {
      std::cerr << "--baseline: cannot be combined with --mlperf, --mlperf-datagen, --find-max-accelerators or "
                   "--ramp\n";
      return 2;
    }
    if (!mlperf_.ramp_text.empty()) {
      // Checked here rather than by CLI11's excludes, whose "Excludes: ..." in --help crowds the descriptions out.
      if (mlperf_.mlperf || mlperf_.datagen || mlperf_.find_max) {
        std::cerr << "--ramp: cannot be combined with --mlperf, --mlperf-datagen or --find-max-accelerators\n";
        return 2;
      }
      absl::StatusOr<dlio::RampSpec> ramp = dlio::ParseRamp(mlperf_.ramp_text);
      if (!ramp.ok()) return dlio::ReportFailure(ramp.status(), std::cerr);
      mlperf_.ramp = *std::move(ramp);
    }
    if (opt_.explain) {
      if (local != nullptr && (local->agents < 1 || local->accelerators < 1)) {
        std::cerr << (local->agents < 1 ? "--local-agents" : "--accelerators") << ": must be >= 1\n";
        return 2;
      }
      absl::StatusOr<dlio::LoadedJob> job = dlio::LoadSubmission(opt_, /*plan_only=*/true);
      if (!job.ok()) return dlio::ReportFailure(job.status(), std::cerr);
      return dlio::ExplainJobPlan(opt_, *job, local, std::cout);
    }
    // Bad input is reported before anything starts or is written.
    absl::StatusOr<dlio::LoadedJob> job = dlio::LoadSubmission(opt_, /*plan_only=*/false);
    if (!job.ok()) return dlio::ReportFailure(job.status(), std::cerr);
    dlio::RenderWarnings(*job, std::cerr);
    job_ = *std::move(job);
    OnSignalCancel();
    if (mlperf_.datagen && (mlperf_.mlperf || mlperf_.find_max)) {
      std::cerr << "--mlperf-datagen: runs alone (not with --mlperf or --find-max-accelerators)\n";
      return 2;
    }
    return std::nullopt;
  }

  // First signal: cancel the job (and, for run, stop the local agents in order). Second: leave at once.
  static void OnSignalCancel() {
    dlio::OnTerminationSignal([](int) {
      if (!g_cancel.exchange(true)) return;
      std::cerr << "\nsecond interrupt: exiting without waiting for the job to stop\n";
      if (dlio::LocalFleet* f = g_fleet.load()) f->Kill();
      std::_Exit(130);
    });
  }

  // One job, the 5-run MLPerf mode, the accelerator search or a scenario, all of job_ (Prepare made it).
  int Drive(const dlio::SubmitOptions& o) {
    if (scenario_) return dlio::RunScenario(o, *scenario_, mlperf_.baseline, std::cout, std::cerr, &g_cancel);
    if (mlperf_.baseline) {
      return dlio::RunBaseline(o, *job_, mlperf_.baseline_threads, std::cout, std::cerr, &g_cancel);
    }
    if (mlperf_.mlperf) return dlio::RunMlperf(o, *job_, mlperf_.run, std::cout, std::cerr, &g_cancel);
    if (mlperf_.datagen) return dlio::RunMlperfDatagen(o, *job_, mlperf_.run, std::cout, std::cerr, &g_cancel);
    if (mlperf_.find_max) return dlio::FindMaxAccelerators(o, *job_, mlperf_.find, std::cout, std::cerr, &g_cancel);
    if (mlperf_.ramp) return dlio::RunRamp(o, *job_, *mlperf_.ramp, std::cout, std::cerr, &g_cancel);
    return dlio::SubmitAndWait(o, *job_, std::cout, std::cerr, &g_cancel);
  }

  dlio::SubmitOptions opt_;
  std::optional<dlio::LoadedJob> job_;  // the command's job, loaded once by Prepare()
  std::optional<dlio::LoadedScenario> scenario_;  // or its scenario file's members (--baseline: alone first)
  std::vector<std::string> trailing_, set_;
  MlperfFlags mlperf_;
};

class SubmitVerb : public JobVerb {
 public:
  explicit SubmitVerb(CLI::App* submit) {
    submit->add_option("job", opt_.job_path, kJobHelp)->required();
    submit->add_option("--agents", opt_.agents, "Number of agents to use (0 = every attached agent)")->default_val(0);
    submit->add_option("--accelerators-per-agent", opt_.accelerators_per_agent,
                       "Accelerators (ranks) every agent runs (0 = what the agents offer, which must be equal)")
        ->default_val(0);
    submit->add_option("--wait-for-agents", opt_.wait_for_agents_s,
                       "Seconds to wait for enough agents to attach before the job fails (0 = fail at once)")
        ->default_val(0)
        ->check(CLI::Range(0, 86400));
    submit->add_option("--barrier-timeout", opt_.barrier_timeout_s,
                       "This job's barrier timeout in seconds (0 = the coordinator's --barrier-timeout)")
        ->default_val(0)
        ->check(CLI::Range(0.0, 604800.0));
    submit->add_option("--agent-names", opt_.agent_names,
                       "Run on exactly these agents, in rank order (comma-separated names; default: any free ones)")
        ->delimiter(',');
    submit->add_flag("--share-agents", opt_.share_agents,
                     "Run beside other --share-agents jobs on the same agents, on disjoint accelerators (default: "
                     "the job's agents run no other job)");
    submit->add_option("--output", opt_.output_dir,
                       "Write the result files received from the coordinator into DIR (default: the job's "
                       "output.folder; if neither is set they stay in the coordinator's results folder)");
    submit->add_flag("--detach", opt_.detach, "Print the job id and return at once (follow it with status)");
    submit->add_option("--trace", opt_.trace_path,
                       "Record open/read/wait/compute/barrier events per rank and loader thread and write the merged "
                       "Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE (sets dlio_ext.trace)");
    AddClientOptions(submit, &opt_.client);
    AddSharedOptions(submit);
    AddOverrideOptions(submit, &trailing_, &set_);
  }

  int Run() override {
    if (std::optional<int> rc = DefaultCoordinator(&opt_.client)) return *rc;
    if (std::optional<int> rc = Prepare(nullptr)) return *rc;
    return Drive(opt_);
  }
};

class RunVerb : public JobVerb {
 public:
  explicit RunVerb(CLI::App* run) {
    run->add_option("job", opt_.job_path, kJobHelp)->required();
    run->add_option("--local-agents", local_agents_, "Number of local agent processes")
        ->default_val(1)
        ->check(CLI::Range(1, 1024).description(""));
    run->add_option("--accelerators", accelerators_, "Emulated accelerators (ranks) per agent")
        ->default_val(1)
        ->check(CLI::Range(1, 4096).description(""));
    run->add_option("--wait-for-agents", wait_s_, "Seconds the local agents get to attach before the run fails")
        ->default_val(30)
        ->check(CLI::Range(1, 86400));
    run->add_option("--data-root", data_root_,
                    "Data root shared by the local agents; relative data_folder paths resolve under it")
        ->default_val(".");
    run->add_option("--results-dir", results_dir_,
                    "Folder the embedded coordinator writes results to (<dir>/<job-id>/)")
        ->default_val("results");
    run->add_option("--output", opt_.output_dir, "Also write the result files into DIR (default: the job's "
                                                 "output.folder, if set)");
    run->add_option("--metrics-listen", metrics_listen_, "Serve the embedded coordinator's /metrics on HOST:PORT");
    run->add_option("--host-memory", host_memory_,
                    "DRAM the local agents report for this host (dlio-agent --host-memory; KB/MB/GB: powers of 1000, "
                    "KiB/MiB/GiB: of 1024); default: what they read")
        ->transform(dlio::SizeInBytes(dlio::kMaxHostMemoryBytes, "1 PiB").description(""))
        ->type_name("BYTES");
    run->add_flag("--json", opt_.client.json, "Print one JSON document on stdout (for scripts) instead of text");
    AddSharedOptions(run);
    run->add_option("--trace", opt_.trace_path,
                    "Record open/read/wait/compute/barrier events per rank and loader thread and write the merged "
                    "Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE (sets dlio_ext.trace)");
    AddOverrideOptions(run, &trailing_, &set_);
  }

  int Run() override {
    const dlio::LocalFleetShape shape{local_agents_, accelerators_, host_memory_};
    if (std::optional<int> rc = Prepare(&shape)) return *rc;
    if (local_agents_ < 1 || accelerators_ < 1) {
      std::cerr << (local_agents_ < 1 ? "--local-agents" : "--accelerators") << ": must be >= 1\n";
      return 2;
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(data_root_, ec)) {
      std::cerr << "--data-root: '" << data_root_ << "' is not a directory\n";
      return 2;
    }
    if (absl::Status s = dlio::CheckCanListen("--metrics-listen", metrics_listen_); !s.ok()) {
      std::cerr << "dlio-coordinator run: " << s.message() << "\n";
      return 2;
    }
    // What the job's values make impossible on this fleet, before any agent starts (the accelerator search's
    // trials each have their own world: the coordinator checks every one when it places it).
    if (!mlperf_.find_max && !mlperf_.ramp && !mlperf_.baseline && !scenario_) {
      if (absl::Status s = dlio::CheckPreRun(*job_, dlio::JobWorld{local_agents_, accelerators_}); !s.ok()) {
        return dlio::ReportFailure(s, std::cerr);
      }
    }
    return RunOnLocalFleet();
  }

 private:
  // Starts the local fleet, drives the job on it and stops it.
  int RunOnLocalFleet() {
    dlio::LocalFleet::Options fo;
    fo.agents = local_agents_;
    // A ramp's points each ask for their count: the local fleet offers the largest.
    const bool ramp_agents = mlperf_.ramp && mlperf_.ramp->axis == "agents";
    if (ramp_agents) fo.agents = std::max(local_agents_, mlperf_.ramp->max());
    // The accelerator search submits each trial with --accelerators-per-agent N: the agents offer the bound.
    fo.accelerators = mlperf_.find_max ? std::max(accelerators_, mlperf_.find.max_accelerators) : accelerators_;
    if (mlperf_.ramp && !ramp_agents) fo.accelerators = std::max(accelerators_, mlperf_.ramp->max());
    if (scenario_) scenario_->GrowLocalFleet(&fo.agents, &fo.accelerators);
    fo.data_root = data_root_;
    mlperf_.run.data_root = data_root_;  // the fs-separation probe of --mlperf looks for the data there
    fo.results_dir = results_dir_;
    fo.metrics_listen = metrics_listen_;
    fo.attach_timeout_s = wait_s_;
    fo.host_memory_bytes = host_memory_;
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
      opt_.client.coordinator = (*fleet)->address();
      opt_.client.connect_timeout_s = 10;
      opt_.where_results_live = results_dir_;
      opt_.wait_for_agents_s = wait_s_;
      rc = Drive(opt_);
    }
    g_fleet = nullptr;
    fleet->reset();
    return rc;
  }

  int local_agents_ = 1, accelerators_ = 1, wait_s_ = 30;
  uint64_t host_memory_ = 0;
  std::string data_root_ = ".", results_dir_ = "results", metrics_listen_;
};

// baseline JOB: `submit JOB --baseline` (client/baseline.h) with only the options the plain reader uses.
class BaselineVerb : public JobVerb {
 public:
  explicit BaselineVerb(CLI::App* sub) {
    mlperf_.baseline = true;
    sub->add_option("job", opt_.job_path, kJobHelp)->required();
    sub->add_option("--agents", opt_.agents, "Number of agents to use (0 = every attached agent)")->default_val(0);
    sub->add_option("--wait-for-agents", opt_.wait_for_agents_s,
                    "Seconds to wait for enough agents to attach before the job fails (0 = fail at once)")
        ->default_val(0)
        ->check(CLI::Range(0, 86400));
    sub->add_option("--output", opt_.output_dir,
                    "Write baseline.json into DIR and the plain reader's result files into DIR/baseline/ (default: "
                    "the job's output.folder, else ./baseline)");
    dlio::cli::AddBaselineOptions(sub, &mlperf_, &opt_, /*flag=*/false);
    AddClientOptions(sub, &opt_.client);
    AddOverrideOptions(sub, &trailing_, &set_);
  }
  int Run() override {
    if (std::optional<int> rc = DefaultCoordinator(&opt_.client)) return *rc;
    if (std::optional<int> rc = Prepare(nullptr)) return *rc;
    return Drive(opt_);
  }
};

// --- status, list, cancel, results -------------------------------------------------------------------------------

// A client verb on one job (status, cancel, results): `act` runs it with the parsed options.
class ClientVerb : public Verb {
 public:
  using Act = int (*)(const dlio::ClientOptions&, const std::string& job_id, const std::string& output);
  ClientVerb(CLI::App* sub, bool takes_job, Act act) : act_(act) {
    if (takes_job) sub->add_option("job", job_id_, "Job id")->required();
    output_option_ = sub;
  }
  // results --output DIR (added before the client options, as `results --help` lists it).
  void AddOutputOption() {
    output_option_->add_option("--output", output_, "Write the job's result files (partial ones too) into DIR");
  }
  void AddClient() { AddClientOptions(output_option_, &copt_); }
  int Run() override {
    if (std::optional<int> rc = DefaultCoordinator(&copt_)) return *rc;
    return act_(copt_, job_id_, output_);
  }

 private:
  Act act_;
  CLI::App* output_option_;
  dlio::ClientOptions copt_;
  std::string job_id_, output_;
};

std::unique_ptr<Verb> MakeClientVerb(CLI::App* sub, bool takes_job, bool output, ClientVerb::Act act) {
  auto v = std::make_unique<ClientVerb>(sub, takes_job, act);
  if (output) v->AddOutputOption();
  v->AddClient();
  return v;
}

// list [--limit N]: the newest jobs, fetched a page at a time, and the attached agents.
class ListVerb : public Verb {
 public:
  explicit ListVerb(CLI::App* sub) {
    sub->add_option("--limit", limit_, "Show the newest N jobs, newest first (0 = every job the coordinator keeps)")
        ->default_val(dlio::kListDefaultLimit)
        ->check(CLI::Range(size_t{0}, size_t{10000000}).description(""));
    AddClientOptions(sub, &copt_);
  }
  int Run() override {
    if (std::optional<int> rc = DefaultCoordinator(&copt_)) return *rc;
    return dlio::ListJobs(copt_, limit_, std::cout, std::cerr);
  }

 private:
  dlio::ClientOptions copt_;
  size_t limit_ = dlio::kListDefaultLimit;
};

// --- report and the mlperf helpers ------------------------------------------------------------------------------

class ReportVerb : public Verb {
 public:
  explicit ReportVerb(CLI::App* report) {
    report->add_option("results", dirs_, "Result folder(s) (<results-dir>/<job-id> or submit --output DIR); "
                                         "two are compared side by side")
        ->required()
        ->expected(1, 2);
    report->add_option("-o,--output", out_, "HTML file to write")->default_val("report.html");
  }
  int Run() override { return dlio::WriteReportFile(dirs_, out_, std::cout, std::cerr); }

 private:
  std::vector<std::string> dirs_;
  std::string out_ = "report.html";
};

class DatasizeVerb : public Verb {
 public:
  explicit DatasizeVerb(CLI::App* datasize) {
    datasize->add_option("--workload", o_.workload,
                         "MLPerf workload: v3.0 unet3d, retinanet, resnet50, cosmoflow, dlrm, flux; v2.0 unet3d, "
                         "resnet50, cosmoflow");
    datasize->add_option("--mlperf-version", o_.mlperf_version, "The round whose workloads are known: v3.0 or v2.0")
        ->default_val("v3.0");
    datasize->add_option("--job", o_.job_path,
                         "Take batch size, record length and samples per file from this workload file instead");
    datasize->add_option("--accelerators", o_.accelerators, "Simulated accelerators per host")->required();
    datasize->add_option("--hosts", o_.hosts, "Number of hosts (every host runs the same number)")->default_val(1);
    datasize->add_option("--host-memory-gib", o_.host_memory_gib, "RAM of one host in GiB")->required();
    datasize->add_flag("--json", o_.json, "Print one JSON document on stdout");
    AddOverrideOptions(datasize, &trailing_, &set_);
  }
  int Run() override {
    MergeOverrides(&o_.overrides, trailing_, set_);
    return dlio::MlperfDatasize(o_, std::cout, std::cerr);
  }

 private:
  dlio::DatasizeCliOptions o_;
  std::vector<std::string> trailing_, set_;
};

class ClassifyVerb : public Verb {
 public:
  explicit ClassifyVerb(CLI::App* classify) {
    classify->add_option("job", o_.job_path, "MLPerf workload YAML file (model.name picks the baseline)")
        ->required();
    classify->add_option("--workload", o_.workload, "Baseline workload (default: from model.name)");
    classify->add_option("--accelerator-type", o_.accelerator_type,
                         "Reference file to judge against: v3.0 b200, mi355 (CLOSED/OPEN), a100, h100 (WHATIF); "
                         "v2.0 a100, h100 (<workload>_<type>.yaml as shipped; default: the job file's name, else the "
                         "closest reference)");
    classify->add_option("--mlperf-version", o_.mlperf_version,
                         "The round whose references and classes judge: v3.0 (closed, open, whatif) or v2.0 (closed, "
                         "open)")
        ->default_val("v3.0");
    classify->add_flag("--allow-invalid-params", o_.allow_invalid_params,
                       "v3.0: keys outside the CLOSED and OPEN lists make the run OPEN (WHATIF on a whatif workload or "
                       "accelerator) instead of INVALID, as mlpstorage's -aip");
    classify->add_option("--accelerators", o_.accelerators,
                         "Accelerators per host: with --host-memory-gib, num_files_train is checked against datasize")
        ->default_val(0);
    classify->add_option("--hosts", o_.hosts, "Number of hosts")->default_val(1);
    classify->add_option("--host-memory-gib", o_.host_memory_gib, "RAM of one host in GiB")->default_val(0);
    classify->add_option("--mlperf-references", o_.references_dir,
                         "Judge against the reference workloads in DIR instead of the shipped ones");
    classify->add_flag("--json", o_.json, "Print one JSON document on stdout");
    AddOverrideOptions(classify, &trailing_, &set_);
  }
  int Run() override {
    MergeOverrides(&o_.overrides, trailing_, set_);
    return dlio::MlperfClassify(o_, std::cout, std::cerr);
  }

 private:
  dlio::ClassifyCliOptions o_;
  std::vector<std::string> trailing_, set_;
};

// mlperf report and mlperf check: the submission of a results tree.
class SubmissionVerb : public Verb {
 public:
  using Act = int (*)(const dlio::SubmissionOptions&, std::ostream&, std::ostream&);
  SubmissionVerb(CLI::App* sub, Act act, bool report = false) : act_(act) {
    sub->add_option("results", o_.root, "The results tree (--mlperf-results-dir of run/submit --mlperf)")
        ->required();
    sub->add_option("--mlperf-references", o_.references_dir,
                    "Judge against the reference workloads in DIR instead of the shipped ones");
    sub->add_flag("--json", o_.json, "Print one JSON document on stdout");
    if (report) {  // the v3.0 submission tree (docs/mlperf.md)
      sub->add_option("--mlperf-version", o_.mlperf_version, "v3.0: also write the v3.0 submission tree and "
                      "systems/<system>.yaml into --submission-dir; v2.0: the v2.0 files only")
          ->default_val("v3.0")->check(CLI::IsMember({"v3.0", "v2.0"}));
      sub->add_option("--submission-dir", o_.submission_dir, "Where the v3.0 tree goes (default <results>/submission)");
      sub->add_option("--org", o_.org, "The submitting organisation: the tree's <org> folder")->default_val("my-org");
      sub->add_option("--system", o_.system, "The system name: the tree's <system> (default: the runs' first host)");
    }
  }
  int Run() override { return act_(o_, std::cout, std::cerr); }

 private:
  Act act_;
  dlio::SubmissionOptions o_;
};

// --- the table of verbs -----------------------------------------------------------------------------------------

struct VerbRow {
  const char* path;     // as typed after dlio-coordinator: "serve", "mlperf datasize" (a child of the row "mlperf")
  const char* summary;  // top-level verbs: the line of `dlio-coordinator --help`
  const char* help;     // the verb's own --help headline
  // Makes the verb's options on its CLI::App; null for a group of verbs (mlperf), which only holds its children.
  std::unique_ptr<Verb> (*make)(CLI::App* sub);
};

template <typename V>
std::unique_ptr<Verb> Make(CLI::App* sub) {
  return std::make_unique<V>(sub);
}

// Every verb, in the order of `--help` and docs/cli.md.
const VerbRow kVerbs[] = {
    {"serve", "run the coordinator service that agents attach to",
     "Run the coordinator service; agents attach, jobs run side by side when the fleet has room", Make<ServeVerb>},
    {"submit", "submit a DLIO workload file to a coordinator, follow it, print and fetch the results",
     "Submit a DLIO workload file, follow it, print the results", Make<SubmitVerb>},
    {"status", "show one job", "Show one job: state, agents, phase progress, epochs, results",
     [](CLI::App* sub) {
       return MakeClientVerb(sub, true, false, [](const dlio::ClientOptions& c, const std::string& job,
                                                  const std::string&) {
         return dlio::ShowStatus(c, job, std::cout, std::cerr);
       });
     }},
    {"list", "list the newest jobs and the attached agents",
     "List the newest jobs the coordinator keeps (newest first) and the attached agents", Make<ListVerb>},
    {"cancel", "cancel a queued or running job",
     "Cancel a queued or running job; its agents stop within 2 s (exit 1 naming the agents that did not confirm "
     "the stop, or when the job has not ended after 10 s)",
     [](CLI::App* sub) {
       return MakeClientVerb(sub, true, false, [](const dlio::ClientOptions& c, const std::string& job,
                                                  const std::string&) {
         return dlio::CancelJob(c, job, std::cout, std::cerr);
       });
     }},
    {"results", "print or fetch a job's result files", "Print a job's result table and files, or fetch them",
     [](CLI::App* sub) {
       return MakeClientVerb(sub, true, true, [](const dlio::ClientOptions& c, const std::string& job,
                                                 const std::string& output) {
         return dlio::FetchResults(c, job, output, std::cout, std::cerr);
       });
     }},
    {"run", "the embedded default: a coordinator plus local agent processes on this machine",
     "Embedded default: coordinator + N local dlio-agent processes, one job", Make<RunVerb>},
    {"baseline", "measure what the storage gives a plain reader of a job's dataset (baseline.json)",
     "Measure on the attached agents what the storage gives a plain reader of the job's dataset (no DL semantics, "
     "many threads per agent; S3: the plain GET rate) and write baseline.json, which later runs cite in their limit "
     "line (run JOB --baseline does the same on the local fleet)",
     Make<BaselineVerb>},
    {"report", "write a self-contained HTML report of a result folder (two: side by side)",
     "Write a self-contained HTML report of a result folder, or compare two", Make<ReportVerb>},
    {"mlperf",
     "MLPerf Storage helpers: datasize, classify, report, check (the data generation and the\n"
     "           5-run mode are run/submit --mlperf-datagen and --mlperf)",
     "MLPerf Storage helpers: datasize, CLOSED/OPEN classification, the submission report and its check", nullptr},
    {"mlperf datasize", "", "Files needed so the dataset is >= 5x the hosts' RAM and >= 500 steps per accelerator",
     Make<DatasizeVerb>},
    {"mlperf classify", "",
     "CLOSED, OPEN or INVALID of what would run (the file as it is plus its overrides) against the shipped reference "
     "workload, with the reason per differing key (exit 5 when INVALID)",
     Make<ClassifyVerb>},
    {"mlperf report", "",
     "Turn a results tree into a submission: results.csv, one score per workload (the 5-run mean and the "
     "replication check) in mlperf_storage_report.json, a pre-filled system description, and (v3.0) the tree "
     "<closed|open>/<org>/results/<system>/... with systems/<system>.yaml",
     [](CLI::App* sub) -> std::unique_ptr<Verb> {
       return std::make_unique<SubmissionVerb>(sub, dlio::MlperfReport, true);
     }},
    {"mlperf check", "",
     "Validate a results tree before submission: required files, the class of every run, the 5-run, datasize, AU, "
     "checkpoint and cache rules, the system description; one line per failure naming the file and the rule (exit 5 "
     "when refused)",
     [](CLI::App* sub) -> std::unique_ptr<Verb> { return std::make_unique<SubmissionVerb>(sub, dlio::MlperfCheck); }},
};

// The top-level --help: one line per top-level verb, then the exit statuses.
std::string Usage() {
  std::string usage = "dlio-coordinator: a distributed deep-learning I/O benchmark (DLIO workloads, no MPI).\n";
  for (const VerbRow& v : kVerbs) {
    if (std::string(v.path).find(' ') == std::string::npos) usage += fmt::format("  {:<8} {}\n", v.path, v.summary);
  }
  return usage + dlio::kExitStatusHelp;
}

}  // namespace

int main(int argc, char** argv) {
  dlio::RequestShortSlices();  // control path only: answer barriers promptly on a busy host (base/scheduling.h)
  dlio::SkipMutexDeadlockDetection();
  // For scripts/gen-cli-docs.sh: every verb path, one a line (not in --help: it is no user's verb).
  if (argc == 2 && std::string(argv[1]) == "--list-verbs") {
    for (const VerbRow& v : kVerbs) std::cout << v.path << "\n";
    return 0;
  }
  CLI::App app{Usage(), "dlio-coordinator"};
  app.require_subcommand(1);
  dlio::AddVersionFlag(app);
  // Wide enough that every option's description starts on its own line (docs/cli.md is generated from this).
  app.get_formatter()->column_width(52);
  // Each verb's CLI::App (a child's parent found by the first word of its path) and its options.
  std::vector<std::pair<CLI::App*, std::unique_ptr<Verb>>> verbs;
  for (const VerbRow& row : kVerbs) {
    const std::string path = row.path;
    const size_t space = path.find(' ');
    CLI::App* parent = space == std::string::npos ? &app : app.get_subcommand(path.substr(0, space));
    CLI::App* sub = parent->add_subcommand(path.substr(space == std::string::npos ? 0 : space + 1), row.help);
    if (row.make == nullptr) sub->require_subcommand(1);
    verbs.emplace_back(sub, row.make != nullptr ? row.make(sub) : nullptr);
  }
  if (std::optional<int> rc = dlio::ParseCommandLine(app, argc, argv, std::cerr)) return *rc;
  for (auto& [sub, verb] : verbs) {
    if (verb != nullptr && sub->parsed()) return verb->Run();
  }
  return 2;  // unreachable: ParseCommandLine requires one verb
}
