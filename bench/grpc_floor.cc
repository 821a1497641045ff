// dlio-bench-grpc-floor: what one gRPC message in and one out cost a server on this machine, with no work of its own.
//
// The floor under the coordinator's per-agent-step cost (issue 14): a step is one message in per agent (its barrier
// arrival) and one out (its release). This tool runs the same shape with nothing else: a child process serves a
// generic echo on gRPC's callback API (one bidi reactor per stream, one read or one write in flight, the bytes sent
// back as received), and this process opens N streams, each on a TCP connection of its own (as N agents would),
// and runs R rounds: one 64-byte message written on every stream, then the wait for every echo (a barrier). It
// prints the server's CPU (utime + stime of /proc/PID/stat) per stream-round over the rounds after a warm-up, the
// client's own, and the round time p50/p99. Everything is loopback, so, as for the coordinator, the sender's
// sendmsg also runs the receiving socket's TCP processing.
//
// A benchmark, not a test: it exits 0 once every round completed, 1 otherwise.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace {

constexpr char kMethod[] = "/dlio.bench.Floor/Echo";

// utime + stime of a process, seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // fields after the command name: state is field 3, utime 14, stime 15
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
  if (f.size() < 13) return 0;
  return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// --- the server (child process) -------------------------------------------------------------------------------

class EchoReactor : public grpc::ServerGenericBidiReactor {
 public:
  EchoReactor() { StartRead(&buf_); }
  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    StartWrite(&buf_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::CANCELLED);
    StartRead(&buf_);
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer buf_;
};

class EchoService : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    return new EchoReactor;
  }
};

// Serves until killed; writes its port to `port_fd` once listening.
[[noreturn]] void Serve(int port_fd, bool bdp_probe) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  EchoService service;
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, bdp_probe ? 1 : 0);
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) _exit(1);
  if (write(port_fd, &port, sizeof port) != sizeof port) _exit(1);
  close(port_fd);
  server->Wait();
  _exit(0);
}

// --- the client (this process) --------------------------------------------------------------------------------

// Counts the echoes of the current round.
struct Round {
  std::mutex mu;
  std::condition_variable cv;
  size_t arrived = 0, failed = 0, done = 0;
  void Count(size_t* what) {
    std::lock_guard<std::mutex> lk(mu);
    ++*what;
    cv.notify_all();
  }
};

class EchoStream : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  EchoStream(const std::string& address, Round* round, bool client_bdp_probe) : round_(round) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, client_bdp_probe ? 1 : 0);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a TCP connection of its own, as an agent on a node has
    channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    stub_ = std::make_unique<grpc::GenericStub>(channel_);
    const std::string payload(64, 'x');  // about a BarrierArrive: job, phase and step ids
    grpc::Slice slice(payload);
    out_ = grpc::ByteBuffer(&slice, 1);
    stub_->PrepareBidiStreamingCall(&context_, kMethod, grpc::StubOptions(), this);
    StartCall();
  }
  void Send() { StartWrite(&out_); }
  void Close() { StartWritesDone(); }
  void OnWriteDone(bool ok) override {
    if (!ok) return round_->Count(&round_->failed);
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override { round_->Count(ok ? &round_->arrived : &round_->failed); }
  void OnDone(const grpc::Status&) override { round_->Count(&round_->done); }

 private:
  Round* round_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> stub_;
  grpc::ClientContext context_;
  grpc::ByteBuffer out_, in_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"What one gRPC message in and one out cost a server on this machine (the floor under the "
               "coordinator's per-agent-step cost)"};
  int streams = 1024, rounds = 200, warmup = 20;
  app.add_option("--streams", streams, "streams, each on a TCP connection of its own")->check(CLI::Range(1, 8192));
  app.add_option("--rounds", rounds, "measured rounds (one message out and its echo per stream)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", warmup, "rounds before the measurement")->check(CLI::Range(0, 1000000));
  bool bdp_probe = true;
  bool client_bdp_probe = true;
  app.add_option("--bdp-probe", bdp_probe, "the server's HTTP/2 BDP probing (gRPC's default: on)");
  app.add_option("--client-bdp-probe", client_bdp_probe, "the clients' HTTP/2 BDP probing (gRPC's default: on)");
  CLI11_PARSE(app, argc, argv);

  int fds[2];
  if (pipe(fds) != 0) return 1;
  const pid_t server = fork();  // before this process touches gRPC
  if (server < 0) return 1;
  if (server == 0) {
    close(fds[0]);
    Serve(fds[1], bdp_probe);
  }
  close(fds[1]);
  int port = 0;
  const bool listening = read(fds[0], &port, sizeof port) == sizeof port;
  close(fds[0]);
  auto stop_server = [&] {
    kill(server, SIGKILL);
    waitpid(server, nullptr, 0);
  };
  if (!listening) {
    std::fprintf(stderr, "dlio-bench-grpc-floor: the server did not start\n");
    stop_server();
    return 1;
  }

  Round round;
  std::vector<std::unique_ptr<EchoStream>> all;
  for (int i = 0; i < streams; ++i)
    all.push_back(std::make_unique<EchoStream>("127.0.0.1:" + std::to_string(port), &round, client_bdp_probe));

  std::vector<double> round_ms;
  double server_cpu0 = 0, client_cpu0 = 0;
  bool ok = true;
  for (int r = 0; r < warmup + rounds && ok; ++r) {
    if (r == warmup) {
      server_cpu0 = CpuSeconds(server);
      client_cpu0 = CpuSeconds(getpid());
    }
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lk(round.mu);
      round.arrived = 0;
    }
    for (auto& s : all) s->Send();
    std::unique_lock<std::mutex> lk(round.mu);
    ok = round.cv.wait_for(lk, std::chrono::seconds(60), [&] {
      return round.arrived == all.size() || round.failed > 0;
    }) && round.failed == 0;
    if (r >= warmup)
      round_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double server_cpu = CpuSeconds(server) - server_cpu0, client_cpu = CpuSeconds(getpid()) - client_cpu0;
  for (auto& s : all) s->Close();
  {
    std::unique_lock<std::mutex> lk(round.mu);
    round.cv.wait_for(lk, std::chrono::seconds(30), [&] { return round.done == all.size(); });
  }
  stop_server();
  if (!ok) {
    std::fprintf(stderr, "dlio-bench-grpc-floor: a round did not complete (%zu failed streams)\n", round.failed);
    return 1;
  }
  const double per = static_cast<double>(streams) * rounds;
  std::printf("streams %d, rounds %d (after %d warm-up)\n", streams, rounds, warmup);
  std::printf("server CPU per stream-round (one message in, one out): %.1f us\n", server_cpu / per * 1e6);
  std::printf("client CPU per stream-round: %.1f us\n", client_cpu / per * 1e6);
  std::printf("round time p50 / p99: %.2f / %.2f ms\n", Percentile(round_ms, 0.5), Percentile(round_ms, 0.99));
  return 0;
}
