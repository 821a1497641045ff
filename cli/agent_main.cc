// dlio-agent: one per node. Attaches to the coordinator, generates its share of the dataset and emulates training
// I/O for its local ranks.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/address.h"
#include "cli/cli_parse.h"
#include "agent/agent_server.h"
#include "agent/identity.h"
#include "base/scheduling.h"
#include "base/signals.h"
#include "cli/transport_cli.h"
#include "spdlog/spdlog.h"

namespace {

// The agent's command line.
struct AgentFlags {
  dlio::AgentServer::Options opt;
  double reconnect_window_s = 30;
  std::string name, node_name;
  dlio::TransportFiles tls;
  dlio::RelayTlsFiles relay_tls;
  std::string log_level = "info";
  std::vector<std::string> link_speeds;  // --link-speed IFACE=MBPS, parsed by LinkSpeeds
};

// --link-speed IFACE=MBPS (repeatable): the interface must exist on this host (a typo would leave the network rule
// without its speed, silently); one line naming the flag and the value otherwise.
absl::StatusOr<std::map<std::string, int64_t>> LinkSpeeds(const std::vector<std::string>& values) {
  std::map<std::string, int64_t> out;
  for (const std::string& v : values) {
    const size_t eq = v.find('=');
    int64_t mbps = 0;
    if (eq == std::string::npos || eq == 0 || !absl::SimpleAtoi(v.substr(eq + 1), &mbps) || mbps < 1 ||
        mbps > 100'000'000) {
      return absl::InvalidArgumentError(absl::StrCat("--link-speed: '", v, "': expected IFACE=MBPS, an interface "
                                                     "and its link speed in Mb/s (1..100000000), e.g. veth0=10000"));
    }
    const std::string iface = v.substr(0, eq);
    std::error_code ec;
    if (!std::filesystem::exists("/sys/class/net/" + iface, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--link-speed: '", v, "': no interface '", iface, "' on this host (see /sys/class/net)"));
    }
    out[iface] = mbps;
  }
  return out;
}

void AddAgentOptions(CLI::App* app, AgentFlags* f) {
  app->add_option("--coordinator", f->opt.coordinator, "Coordinator address HOST:PORT")
      ->required()
      ->check(dlio::CoordinatorAddress());
  app->add_option("--data-root", f->opt.data_root,
                  "Directory every data path is confined to; relative dataset.data_folder paths resolve under it, "
                  "absolute ones must lie inside it")
      ->required();
  app->add_option("--name", f->name,
                  "Agent name, unique in the fleet (default: SLURMD_NODENAME[-SLURM_LOCALID], else POD_NAME, else the "
                  "host name)");
  app->add_option("--node-name", f->node_name,
                  "Node this agent runs on; num_hosts counts distinct ones (default: SLURMD_NODENAME, else NODE_NAME, "
                  "else the host name)");
  app->add_option("--accelerators", f->opt.accelerators, "Number of emulated accelerators (local ranks) on this node")
      ->default_val(1)
      ->check(CLI::Range(1, 4096));
  app->add_option("--metrics-listen", f->opt.metrics_listen,
                  "Serve Prometheus /metrics on HOST:PORT (port 0 picks a free port); empty = no endpoint");
  app->add_option("--relay-listen", f->opt.relay_listen,
                  "Listen for the step barrier's relay tree on HOST:PORT (port 0 picks a free port, announced at "
                  "attach; a wildcard host is the address the coordinator sees); empty = never relay (jobs over this "
                  "agent keep the flat star; docs/fleet.md); under TLS (--tls-ca) only with --relay-tls-cert")
      ->default_val("0.0.0.0:0");
  app->add_option("--relay-tls-cert", f->relay_tls.cert,
                  "Certificate (PEM) the relay listener serves TLS with, signed by the CA of the fleet's --tls-ca; "
                  "needs --tls-ca. Without it an agent with TLS offers no relay listener");
  app->add_option("--relay-tls-key", f->relay_tls.key, "Private key (PEM) of --relay-tls-cert");
  app->add_option("--relay-tls-name", f->relay_tls.name,
                  "Name --relay-tls-cert holds, announced at attach: members expect it in the relay's certificate "
                  "(default: this host's name)");
  app->add_option("--reconnect-window", f->reconnect_window_s,
                  "Seconds to keep retrying (with backoff) while the coordinator is unreachable, then give up (exit 3, "
                  "one line naming the coordinator and the cause)")
      ->default_val(30)
      ->check(CLI::Range(0.0, 86400.0));
  app->add_option("--s3-credentials", f->opt.s3_credentials_file,
                  "Object storage: file of KEY=VALUE lines (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                  "AWS_ENDPOINT_URL, AWS_REGION) used where an s3 job's storage_options leave them out; default: the AWS_* environment");
  app->add_option("--s3-allow-endpoint", f->opt.s3_allow_endpoints,
                  "Object storage: an endpoint http(s)://host[:port] this agent may reach besides its own "
                  "AWS_ENDPOINT_URL, with its own credentials too (repeatable, or a comma list). Given, no other "
                  "endpoint is reached whoever's keys the job brings; not given, a job naming another endpoint must "
                  "bring its own access_key_id and secret_access_key")
      ->delimiter(',')
      ->type_name("URL");
  dlio::AddClientTransportOptions(app, &f->tls, "when attaching");
  app->add_option("--log-level", f->log_level, "Log level: trace, debug, info, warn, error, critical or off")
      ->default_val("info");
  app->add_option("--host-memory", f->opt.host_memory_bytes,
                  "DRAM of this host node in bytes (KB/MB/GB: powers of 1000, KiB/MiB/GiB: of 1024), reported instead "
                  "of MemTotal or the cgroup limit: for a VM or container whose limit the agent cannot see, and "
                  "scaled-down MLPerf rehearsals. MLPerf's datasize uses it; results record it as declared")
      ->transform(dlio::SizeInBytes(dlio::kMaxHostMemoryBytes, "1 PiB").description(""))
      ->type_name("BYTES");
  app->add_option("--link-speed", f->link_speeds,
                  "Link speed of a network interface whose driver reports none or not the real one (a veth pair, a "
                  "virtual NIC, a link shaped by tc), IFACE=MBPS in Mb/s, e.g. veth0=10000 (repeatable): the "
                  "limit's network rule and the NIC utilisation of host telemetry use it instead")
      ->type_name("IFACE=MBPS");
  app->add_option("--protocol-version", f->opt.protocol_version,
                  "Protocol version to announce (testing only; default: this build's)")
      ->group("");  // hidden
}

// Logging, identity and transport from the flags, then the agent until it is told to stop.
int RunAgent(AgentFlags& f) {
  const auto level = spdlog::level::from_str(f.log_level);
  if (level == spdlog::level::off && f.log_level != "off") {
    std::cerr << "--log-level: '" << f.log_level << "' is not one of trace, debug, info, warn, error, critical, off\n";
    return 2;
  }
  spdlog::set_level(level);
  absl::StatusOr<std::map<std::string, int64_t>> speeds = LinkSpeeds(f.link_speeds);
  if (!speeds.ok()) {
    std::cerr << speeds.status().message() << "\n";
    return 2;
  }
  f.opt.link_speeds_mbps = *std::move(speeds);
  // A busy port said in one line (before any log line) rather than by CivetServer in its own words.
  if (absl::Status s = dlio::CheckCanListen("--metrics-listen", f.opt.metrics_listen); !s.ok()) {
    std::cerr << "dlio-agent: " << s.message() << "\n";
    return 2;
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  f.opt.hostname = host;
  const dlio::AgentIdentity id =
      dlio::ResolveIdentity(f.name, f.node_name, [](const char* k) { return std::getenv(k); }, f.opt.hostname);
  f.opt.name = id.name;
  f.opt.node_name = id.node;
  spdlog::info("agent name '{}' (from {}), node '{}'", f.opt.name, id.name_source, f.opt.node_name);
  absl::StatusOr<dlio::Transport> transport = dlio::LoadTransport(f.tls, /*server=*/false);
  const absl::Status tls_ok = transport.ok() ? dlio::CheckTlsFiles(f.tls, *transport) : transport.status();
  if (!tls_ok.ok()) {
    std::cerr << "dlio-agent: " << tls_ok.message() << "\n";
    return 2;
  }
  f.opt.transport = *transport;
  absl::StatusOr<dlio::RelayTls> relay_tls = dlio::LoadRelayTls(f.relay_tls, f.tls, f.opt.hostname);
  if (!relay_tls.ok()) {
    std::cerr << "dlio-agent: " << relay_tls.status().message() << "\n";
    return 2;
  }
  if (relay_tls->on()) {
    if (const std::string problem = dlio::CertificateNameProblem(relay_tls->cert_pem, relay_tls->name);
        !problem.empty()) {
      spdlog::warn("agent '{}': --relay-tls-cert '{}': {} (--relay-tls-name): members will refuse this relay and "
                   "fail jobs it relays", f.opt.name, f.relay_tls.cert, problem);
    }
  }
  f.opt.relay_tls = *std::move(relay_tls);
  f.opt.reconnect_window = std::chrono::milliseconds(static_cast<int64_t>(f.reconnect_window_s * 1000));

  auto server = dlio::AgentServer::Start(f.opt);
  if (!server.ok()) {
    std::cerr << "dlio-agent: " << server.status().message() << "\n";
    return 2;
  }
  dlio::AgentServer* srv = server->get();
  dlio::OnTerminationSignal([srv](int) { srv->Shutdown(); });
  if ((*server)->metrics_port() != 0) spdlog::info("metrics on port {}", (*server)->metrics_port());
  absl::Status s = (*server)->Run();
  if (!s.ok()) {
    std::cerr << "dlio-agent: " << s.message() << "\n";
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dlio::RequestShortSlices();  // before any thread exists: gRPC's and the step threads inherit it (scheduling.h)
  dlio::SkipMutexDeadlockDetection();
  CLI::App app{"dlio-agent: emulates deep-learning training I/O on this node for a dlio-coordinator.\n"
               "Attaches to the coordinator, runs the phases it is given (generate, train epochs) for its local ranks\n"
               "(one per emulated accelerator), streams results back and serves live Prometheus metrics.",
               "dlio-agent"};
  app.get_formatter()->column_width(52);
  dlio::AddVersionFlag(app);
  AgentFlags flags;
  AddAgentOptions(&app, &flags);
  if (std::optional<int> rc = dlio::ParseCommandLine(app, argc, argv, std::cerr)) return *rc;
  return RunAgent(flags);
}
