// dlio-coordinator: serve (the coordinator service), submit (the client), run (the embedded default).
#include <atomic>
#include <filesystem>
#include <iostream>

#include "CLI/CLI.hpp"
#include "common/scheduling.h"
#include "common/signals.h"
#include "coordinator/client.h"
#include "coordinator/coordinator_server.h"
#include "coordinator/local_fleet.h"
#include "spdlog/spdlog.h"

namespace {

std::atomic<bool> g_cancel{false};

// Overrides come as trailing arguments in DLIO's form (++workload.dataset.num_files_train=8) or with --set.
void AddOverrideOptions(CLI::App* sub, std::vector<std::string>* trailing, std::vector<std::string>* set) {
  sub->add_option("overrides", *trailing,
                  "Workload overrides in DLIO's form, e.g. ++workload.dataset.num_files_train=8");
  sub->add_option("--set", *set, "Workload override in short form KEY=VALUE, e.g. --set dataset.num_files_train=8 "
                                 "(repeatable)");
}

}  // namespace

int main(int argc, char** argv) {
  dlio::RequestShortSlices();  // control path only: answer barriers promptly on a busy host (common/scheduling.h)
  CLI::App app{"dlio-coordinator: a distributed deep-learning I/O benchmark (DLIO workloads, no MPI).\n"
               "  serve   run the coordinator service that agents attach to\n"
               "  submit  submit a DLIO workload file to a coordinator, wait, print and fetch the results\n"
               "  run     the embedded default: a coordinator plus local agent processes on this machine",
               "dlio-coordinator"};
  app.require_subcommand(1);
  // Wide enough that every option's description starts on its own line (docs/cli.md is generated from this).
  app.get_formatter()->column_width(52);

  // serve
  CLI::App* serve = app.add_subcommand("serve", "Run the coordinator service; agents attach, jobs run one at a time");
  std::string listen = "127.0.0.1:7543", serve_metrics, results_dir = "results";
  serve->add_option("--listen", listen, "Address HOST:PORT to serve gRPC on (port 0 picks a free port)")
      ->default_val("127.0.0.1:7543");
  serve->add_option("--metrics-listen", serve_metrics, "Serve the coordinator's Prometheus /metrics on HOST:PORT");
  serve->add_option("--results-dir", results_dir, "Folder the coordinator writes result files to (<dir>/<job-id>/)")
      ->default_val("results");

  // submit
  CLI::App* submit = app.add_subcommand("submit", "Submit a DLIO workload file, show progress, print the results");
  dlio::SubmitOptions sopt;
  std::vector<std::string> s_trailing, s_set;
  submit->add_option("job", sopt.job_path, "DLIO workload YAML file")->required();
  submit->add_option("--coordinator", sopt.coordinator, "Coordinator address HOST:PORT")->required();
  submit->add_option("--agents", sopt.agents, "Number of agents to use (0 = every attached agent)")->default_val(0);
  submit->add_option("--wait-for-agents", sopt.wait_for_agents_s,
                     "Seconds to wait for enough agents to attach before the job fails (0 = fail at once)")
      ->default_val(0)
      ->check(CLI::Range(0, 86400));
  submit->add_option("--output", sopt.output_dir,
                     "Write the result files received from the coordinator into DIR (default: the job's "
                     "output.folder; if neither is set they stay in the coordinator's results folder)");
  AddOverrideOptions(submit, &s_trailing, &s_set);

  // run
  CLI::App* run = app.add_subcommand("run", "Embedded default: coordinator + N local dlio-agent processes, one job");
  dlio::SubmitOptions ropt;
  std::vector<std::string> r_trailing, r_set;
  int local_agents = 1, accelerators = 1;
  std::string data_root = ".", run_results = "results", run_metrics;
  run->add_option("job", ropt.job_path, "DLIO workload YAML file")->required();
  run->add_option("--local-agents", local_agents, "Number of local agent processes")->default_val(1);
  run->add_option("--accelerators", accelerators, "Emulated accelerators (ranks) per agent")->default_val(1);
  run->add_option("--data-root", data_root,
                  "Data root shared by the local agents; relative data_folder paths resolve under it")
      ->default_val(".");
  run->add_option("--results-dir", run_results, "Folder the embedded coordinator writes results to (<dir>/<job-id>/)")
      ->default_val("results");
  run->add_option("--output", ropt.output_dir, "Also write the result files into DIR (default: the job's "
                                               "output.folder, if set)");
  run->add_option("--metrics-listen", run_metrics, "Serve the embedded coordinator's /metrics on HOST:PORT");
  AddOverrideOptions(run, &r_trailing, &r_set);

  CLI11_PARSE(app, argc, argv);

  if (*serve) {
    dlio::CoordinatorServer::Options o;
    o.listen = listen;
    o.metrics_listen = serve_metrics;
    o.results_dir = results_dir;
    auto server = dlio::CoordinatorServer::Start(o);
    if (!server.ok()) {
      std::cerr << "dlio-coordinator serve: " << server.status().message() << "\n";
      return 2;
    }
    dlio::CoordinatorServer* srv = server->get();
    dlio::OnTerminationSignal([srv](int) { srv->Shutdown(); });
    spdlog::info("coordinator listening on port {}{}", srv->port(),
                 srv->metrics_port() ? fmt::format(", metrics on port {}", srv->metrics_port()) : "");
    srv->Wait();
    return 0;
  }

  dlio::SubmitOptions& opt = *submit ? sopt : ropt;
  for (auto& o : *submit ? s_trailing : r_trailing) opt.overrides.push_back(o);
  for (auto& o : *submit ? s_set : r_set) opt.overrides.push_back(o);
  // Bad input is reported before anything starts or is written.
  if (int rc = dlio::ValidateJob(opt, std::cerr); rc != 0) return rc;
  dlio::OnTerminationSignal([](int) { g_cancel = true; });

  if (*submit) return dlio::SubmitAndWait(opt, std::cout, std::cerr, &g_cancel);

  if (local_agents < 1 || accelerators < 1) {
    std::cerr << (local_agents < 1 ? "--local-agents" : "--accelerators") << ": must be >= 1\n";
    return 2;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(data_root, ec)) {
    std::cerr << "--data-root: '" << data_root << "' is not a directory\n";
    return 2;
  }
  dlio::LocalFleet::Options fo;
  fo.agents = local_agents;
  fo.accelerators = accelerators;
  fo.data_root = data_root;
  fo.results_dir = run_results;
  fo.metrics_listen = run_metrics;
  // The client's progress lines are the user interface of `run`; the embedded coordinator logs only problems.
  spdlog::set_level(spdlog::level::warn);
  auto fleet = dlio::LocalFleet::Start(fo);
  if (!fleet.ok()) {
    std::cerr << "dlio-coordinator run: " << fleet.status().message() << "\n";
    return 3;
  }
  opt.coordinator = (*fleet)->address();
  opt.where_results_live = run_results;
  const int rc = dlio::SubmitAndWait(opt, std::cout, std::cerr, &g_cancel);
  fleet->reset();
  return rc;
}
