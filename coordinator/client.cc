#include "coordinator/client.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/results.h"
#include "common/workload_spec.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace dlio {

namespace fs = std::filesystem;

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the job file (", std::strerror(errno), ")"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  return absl::StrFormat("%.1f %s", b, units[u]);
}

void PrintTable(const v1::JobEvent& e, std::ostream& out) {
  out << absl::StrFormat("\n%-7s %10s %14s %14s %16s\n", "epoch", "AU (%)", "samples/s", "MB/s (MiB)",
                         "actual MB/s");
  for (const v1::EpochRow& r : e.epochs()) {
    out << absl::StrFormat("%-7d %10.2f %14.2f %14.2f %16.2f\n", r.epoch(), r.au_percent(), r.samples_per_second(),
                           r.mib_per_second(), r.actual_mb_per_second());
  }
  const v1::EpochRow& m = e.mean();
  out << absl::StrFormat("%-7s %10.2f %14.2f %14.2f %16.2f\n", "mean", m.au_percent(), m.samples_per_second(),
                         m.mib_per_second(), m.actual_mb_per_second());
  out << "(MB/s (MiB) is DLIO's figure: samples/s x nominal record size in MiB; actual MB/s is measured bytes read, "
         "10^6)\n";
}

}  // namespace

int ValidateJob(const SubmitOptions& opt, std::ostream& err, bool warn) {
  absl::StatusOr<std::string> text = ReadFile(opt.job_path);
  if (!text.ok()) {
    err << text.status().message() << "\n";
    return 2;
  }
  std::vector<std::string> warnings;
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(*text, opt.overrides, opt.job_path, &warnings);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return 2;
  }
  if (warn) {
    for (const std::string& w : warnings) err << "warning: " << w << "\n";
  }
  if (opt.agents < 0) {
    err << "--agents: must be >= 0, got " << opt.agents << "\n";
    return 2;
  }
  return 0;
}

int SubmitAndWait(const SubmitOptions& opt, std::ostream& out, std::ostream& err, const std::atomic<bool>* cancel) {
  if (int rc = ValidateJob(opt, err, /*warn=*/false); rc != 0) return rc;
  const std::string text = *ReadFile(opt.job_path);
  const WorkloadSpec spec = *LoadWorkload(text, opt.overrides, opt.job_path);

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel(opt.coordinator, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    err << "--coordinator: cannot reach the coordinator at " << opt.coordinator << "\n";
    return 3;
  }
  auto stub = v1::Coordinator::NewStub(channel);

  v1::SubmitRequest req;
  req.set_workload_yaml(text);
  for (const auto& o : opt.overrides) req.add_overrides(o);
  req.set_agents(static_cast<uint32_t>(opt.agents));
  req.set_source_name(opt.job_path);
  req.set_wait_for_agents_s(static_cast<uint32_t>(std::max(0, opt.wait_for_agents_s)));
  v1::SubmitResponse resp;
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub->Submit(&ctx, req, &resp);
    if (!s.ok()) {
      err << s.error_message() << "\n";
      return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? 2 : 3;
    }
  }
  const std::string job_id = resp.job_id();
  out << "job " << job_id << " submitted to " << opt.coordinator << "\n" << std::flush;

  // Watch in this thread; a helper thread turns a signal into a Cancel RPC.
  grpc::ClientContext wctx;
  std::atomic<bool> finished{false};
  std::thread canceller([&] {
    while (!finished) {
      if (cancel && *cancel) {
        grpc::ClientContext cctx;
        v1::CancelRequest creq;
        creq.set_job_id(job_id);
        v1::CancelResponse cresp;
        stub->Cancel(&cctx, creq, &cresp);
        err << "cancelling job " << job_id << "\n";
        return;
      }
      // 100 ms: how fast Ctrl-C turns into a cancel; cheap polling of a flag.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  v1::WatchRequest wreq;
  wreq.set_job_id(job_id);
  auto reader = stub->Watch(&wctx, wreq);
  v1::JobEvent e, last;
  bool got_final = false;
  const bool tty = isatty(STDOUT_FILENO);
  while (reader->Read(&e)) {
    if (!e.message().empty()) {
      if (tty) out << "\r\033[K";
      out << e.message() << "\n";
    } else if (e.total() > 0) {
      const std::string line = absl::StrFormat("[%s] %d/%d %s, %d samples, %s", e.phase_id(), e.done(), e.total(),
                                               e.phase_id() == "generate" ? "files" : "steps", e.samples(),
                                               HumanBytes(static_cast<double>(e.bytes())));
      if (tty) out << "\r\033[K" << line << std::flush;
      else out << line << "\n";
    }
    out << std::flush;
    if (e.final()) {
      last = e;
      got_final = true;
      break;
    }
  }
  finished = true;
  canceller.join();
  reader->Finish();
  if (!got_final) {
    err << "lost the coordinator at " << opt.coordinator << " while watching job " << job_id << "\n";
    return 3;
  }
  if (last.state() != v1::JOB_STATE_SUCCEEDED) return 1;
  if (last.epochs_size() > 0) PrintTable(last, out);

  const std::string output = !opt.output_dir.empty() ? opt.output_dir : spec.output_folder;
  if (output.empty()) {
    if (!opt.where_results_live.empty()) out << "results: " << opt.where_results_live << "/" << job_id << "\n";
    return 0;
  }
  grpc::ClientContext rctx;
  v1::GetResultsRequest rreq;
  rreq.set_job_id(job_id);
  auto files = stub->GetResults(&rctx, rreq);
  v1::ResultFile f;
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec) {
    err << "--output: cannot create '" << output << "': " << ec.message() << "\n";
    return 1;
  }
  int n = 0;
  while (files->Read(&f)) {
    if (f.name().empty() || f.name().find('/') != std::string::npos || f.name().find("..") != std::string::npos) {
      continue;  // never write outside the output folder, whatever the server sends
    }
    if (absl::Status s = WriteFileAtomic((fs::path(output) / f.name()).string(), f.content()); !s.ok()) {
      err << s.message() << "\n";
      return 1;
    }
    ++n;
  }
  grpc::Status fs_status = files->Finish();
  if (!fs_status.ok()) {
    err << "fetching results of job " << job_id << ": " << fs_status.error_message() << "\n";
    return 1;
  }
  out << "results: " << n << " files in " << output << "\n";
  return 0;
}

}  // namespace dlio
