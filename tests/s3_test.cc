// Object storage acceptance tests (issue 15) against a real Ceph RADOS Gateway: scripts/ceph-rgw.sh starts one
// cluster for all of them (the CTest fixture s3_gateway; its folder is $DLIO_S3_DIR, its AWS_* settings in
// $DLIO_S3_DIR/env). Real coordinator and agent processes; boto3 (python3-boto3) is the independent S3 client that
// uploads DLIO's own files and reads back what the agents write, checked with numpy/h5py (tests/python/).
// Each test uses buckets of its own, so the tests may run in parallel against the one gateway.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

class S3 : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(S3Gateway().empty()) << "no gateway: $DLIO_S3_DIR/env is missing (the s3_gateway fixture starts "
                                         "scripts/ceph-rgw.sh; install Ceph with scripts/setup.sh --test)";
  }
};

// A bucket of this test's own (tests/harness.h NewS3Bucket: names unique per process and call).
std::string NewBucket(const std::string& stem) {
  const std::string name = NewS3Bucket(stem);
  EXPECT_FALSE(name.empty()) << "mkbucket " << stem << " failed";
  return name;
}

json List(const std::string& bucket, const std::string& prefix) {
  CommandResult r = S3Tool({"list", bucket, prefix});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

int OpenUploads(const std::string& bucket) {
  CommandResult r = S3Tool({"uploads", bucket});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? std::stoi(r.out) : -1;
}

std::string Storage(const std::string& bucket) {
  return "storage:\n  storage_type: s3\n  storage_root: " + bucket + "\n";
}

CommandResult RunJob(const TempDir& dir, const std::string& job, const std::vector<std::string>& extra, int agents = 2) {
  std::vector<std::string> argv = {Bin("dlio-coordinator"), "run", job, "--local-agents", std::to_string(agents),
                                   "--data-root", dir.str(), "--results-dir", dir.str() + "/results", "--output",
                                   dir.str() + "/out"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv, seconds(240));
}

// The gateway's key pair as the job's own (overrides): what a job naming an endpoint other than the agents' own
// AWS_ENDPOINT_URL must bring (agent/object_store.h).
std::string JobKeyId() { return "storage.storage_options.access_key_id=" + S3Gateway().at("AWS_ACCESS_KEY_ID"); }
std::string JobSecret() {
  return "storage.storage_options.secret_access_key=" + S3Gateway().at("AWS_SECRET_ACCESS_KEY");
}

// A plain TCP socket listening on a loopback port of its own, standing for an endpoint nobody should reach: it
// accepts and records whatever connects (the request's head, up to 1 s of it) until destroyed.
class Trap {
 public:
  Trap() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 16) == 0 &&
          ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Trap() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  bool ok() const { return ok_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  // Everything the connections sent (their request heads).
  std::string seen() {
    std::lock_guard<std::mutex> l(mu_);
    return seen_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;  // 50 ms: how soon the destructor's stop is seen
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      ++connections_;
      std::string head;
      char buf[4096];
      pollfd cp{c, POLLIN, 0};
      while (head.find("\r\n\r\n") == std::string::npos && ::poll(&cp, 1, 1000) == 1) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      ::close(c);  // no answer: a client that got this far fails at once
      std::lock_guard<std::mutex> l(mu_);
      seen_ += head;
    }
  }
  int fd_ = -1;
  int port_ = 0;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::string seen_;  // guarded by mu_
  std::thread thread_;
};

// The check of check_formats.py for objects downloaded with boto3.
struct FormatCase {
  std::string format;
  int files, nspf, record;
};

std::string CaseName(const ::testing::TestParamInfo<FormatCase>& i) { return i.param.format; }
void PrintTo(const FormatCase& c, std::ostream* os) { *os << c.format; }

class S3Formats : public S3, public ::testing::WithParamInterface<FormatCase> {};

// Training on every format the S3 backend reads (whole-object GETs for npz, npy, csv, jpeg, png; ranged GETs for
// tfrecord, indexed_binary and hdf5 through our HDF5 driver), after the agents generated the dataset by PUT; boto3
// then downloads what the agents wrote and numpy/h5py/Pillow check it has DLIO's layout.
TEST_P(S3Formats, GeneratesByPutTrainsAndBoto3ReadsTheObjectsBack) {
  const FormatCase& c = GetParam();
  TempDir dir;
  const std::string bucket = NewBucket("fmt-" + std::string(c.format == "indexed_binary" ? "ib" : c.format));
  const std::string loader = c.format == "tfrecord" ? "tensorflow" : "pytorch";
  std::string job = Workload(c.format, c.files, c.nspf, c.record, 2, 0.001, 2, true, Storage(bucket));
  job = std::regex_replace(job, std::regex("data_loader: pytorch"), "data_loader: " + loader);
  job = std::regex_replace(job, std::regex("framework: pytorch"), "framework: " + loader);
  job = std::regex_replace(job, std::regex("data_folder: data"), "data_folder: s3://" + bucket + "/ds/" + c.format);
  WriteFile(dir.str() + "/job.yaml", job);
  CommandResult r = RunJob(dir, dir.str() + "/job.yaml", {});
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  // Nothing went to the local disk: no data folder under the data root.
  EXPECT_FALSE(fs::exists(dir.path() / "ds"));
  const json objects = List(bucket, "ds/" + c.format + "/train/");
  int data_objects = 0;
  for (const auto& [key, size] : objects.items()) data_objects += key.size() > c.format.size() &&
                                                                    key.substr(key.size() - c.format.size()) == c.format;
  EXPECT_EQ(data_objects, c.files) << objects.dump();
  EXPECT_EQ(OpenUploads(bucket), 0);
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  EXPECT_GT(summary["dlio_ext"]["train_io"]["bytes"].get<double>(), 0) << summary["dlio_ext"].dump();
  // The results carry the S3 requests per operation: PUTs of the generation, the listing, the reads.
  const json& s3 = summary["dlio_ext"]["s3"];
  EXPECT_GE(s3["put"]["requests"].get<int64_t>(), c.files) << s3.dump();
  EXPECT_GE(s3["list"]["requests"].get<int64_t>(), 1) << s3.dump();
  const bool ranged = c.format == "tfrecord" || c.format == "indexed_binary" || c.format == "hdf5";
  const json& reads = s3[ranged ? "get_range" : "get"];
  EXPECT_GT(reads["requests"].get<int64_t>(), 0) << s3.dump();
  EXPECT_GT(reads["bytes"].get<int64_t>(), 0) << s3.dump();
  EXPECT_GT(reads["latency_seconds"]["count"].get<int64_t>(), 0) << s3.dump();
  // Every byte counted: the job only trains, so the bytes read are exactly the bytes its GETs returned (hdf5: the
  // object's head and the ranged GETs libhdf5's reads became, through the driver it uses for files too).
  auto got = [&](const char* op) { return s3.contains(op) ? s3[op]["bytes"].get<uint64_t>() : 0u; };
  EXPECT_EQ(summary["metric"]["train_read_bytes"].get<uint64_t>(), got("get") + got("get_range")) << s3.dump();

  // boto3 + numpy/h5py/Pillow: the agents' objects have DLIO's layout.
  ASSERT_EQ(S3Tool({"download", bucket, "ds/" + c.format, dir.str() + "/down"}).exit_code, 0);
  const int d = static_cast<int>(std::sqrt(static_cast<double>(c.record)));
  std::vector<std::string> check = {"/usr/bin/python3", SourceDir() + "/tests/python/check_formats.py",
                                    dir.str() + "/down/train", "--format", c.format, "--dims",
                                    std::to_string(d) + "," + std::to_string(d)};
  if (c.format != "jpeg" && c.format != "png" && c.format != "tfrecord") {
    check.insert(check.end(), {"--samples", std::to_string(c.nspf)});
  }
  if (c.format == "tfrecord") check.insert(check.end(), {"--index-dir", dir.str() + "/down/index/train"});
  CommandResult v = RunCommand(check, seconds(120));
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

INSTANTIATE_TEST_SUITE_P(Every, S3Formats,
                         ::testing::Values(FormatCase{"npz", 4, 2, 65536}, FormatCase{"npy", 4, 2, 65536},
                                           FormatCase{"hdf5", 4, 4, 16384}, FormatCase{"tfrecord", 4, 8, 16384},
                                           FormatCase{"indexed_binary", 4, 4, 16384},
                                           FormatCase{"csv", 4, 2, 4096}, FormatCase{"jpeg", 8, 1, 16384},
                                           FormatCase{"png", 8, 1, 16384}),
                         CaseName);

// Objects boto3 uploaded from DLIO's own datasets (../shared/testdata/dlio-generated) are read by the agents with
// DLIO's own workload file of each case, only the storage keys added.
TEST_F(S3, AgentsReadDlioMadeDatasetsUploadedByBoto3) {
  const fs::path root = fs::path(TestDataDir()) / "dlio-generated";
  for (const char* name : {"npz", "npy", "hdf5", "hdf5_chunked_gzip", "csv", "png", "jpeg", "indexed_binary"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    std::string stem = name;
    std::replace(stem.begin(), stem.end(), '_', '-');  // S3 bucket names take no '_'
    const std::string bucket = NewBucket("dlio-" + stem);
    ASSERT_EQ(S3Tool({"upload", bucket, "cases/" + stem + "/train", (root / name / "train").string()}).exit_code, 0);
    CommandResult r = RunJob(dir, (root / name / "workload.yaml").string(),
                          {"storage.storage_type=s3", "storage.storage_root=" + bucket,
                           "dataset.data_folder=cases/" + stem, "workflow.generate_data=false",
                           "workflow.train=true", "train.epochs=1", "reader.batch_size=1",
                           "train.computation_time=0", "output.folder=null"},
                          1);
    ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    const json s = LoadJson(dir.str() + "/out/summary.json");
    const json& io = s["dlio_ext"]["train_io"];
    EXPECT_GT(io["samples"].get<double>(), 0) << io.dump();
    EXPECT_GT(io["bytes"].get<double>(), 0) << io.dump();
  }
}

uint64_t VmHwmKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

// The harness Fleet (a coordinator with a job store and /metrics, one agent with /metrics) for the agent's RSS, its
// scrape and its log.
struct S3Fleet {
  explicit S3Fleet(const TempDir& dir, const std::vector<std::string>& agent_extra = {})
      : metrics_port(FreePort()),
        coordinator_metrics_port(FreePort()),
        fleet(dir, {"--store", dir.str() + "/jobs.sqlite", "--metrics-listen",
                    "127.0.0.1:" + std::to_string(coordinator_metrics_port)}) {
    std::vector<std::string> flags = {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)};
    flags.insert(flags.end(), agent_extra.begin(), agent_extra.end());
    fleet.AddAgent("agent-0", flags);
  }
  CommandResult Submit(const std::string& job, const std::string& output, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"submit", job, "--agents", "1", "--output", output, "--wait-for-agents", "30"};
    args.insert(args.end(), extra.begin(), extra.end());
    return fleet.Client(args, seconds(240));
  }
  Process& agent() { return fleet.agent(0); }
  std::string Logs() const { return fleet.Logs(); }
  int metrics_port, coordinator_metrics_port;
  Fleet fleet;
};

// Checkpoints go to the bucket by multipart upload from the agent's bounded buffer and are read back with ranged
// GETs; the agent's memory does not grow with the checkpoint; no upload is left open.
TEST_F(S3, CheckpointsAreMultipartUploadsReadBackWithRangedGetsInBoundedMemory) {
  TempDir dir;
  S3Fleet fleet(dir);
  const std::string bucket = NewBucket("ckpt");
  constexpr int64_t kModel = int64_t{400} << 20;  // 400 MiB: 7 parts of the 64 MiB buffer
  WriteFile(dir.str() + "/job.yaml", "model:\n  name: ckpt\n  model_size_bytes: " + std::to_string(kModel) +
                                         "\nworkflow:\n  train: false\n  checkpoint: true\n" + Storage(bucket) +
                                         "checkpoint:\n  checkpoint_folder: s3://" + bucket +
                                         "/ckpt\n  num_checkpoints_write: 2\n  num_checkpoints_read: 2\n");
  CommandResult r = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out");
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  const json objects = List(bucket, "ckpt/");
  ASSERT_EQ(objects.size(), 2u) << objects.dump();
  for (const auto& [key, size] : objects.items()) EXPECT_EQ(size.get<int64_t>(), kModel) << key;
  EXPECT_EQ(OpenUploads(bucket), 0);
  const uint64_t peak = VmHwmKib(fleet.agent().pid());
  std::printf("s3 checkpoint %lld MiB x 2 saves + 2 loads: agent peak RSS %.1f MiB\n",
              static_cast<long long>(kModel >> 20), static_cast<double>(peak) / 1024);
  EXPECT_GT(peak, 0u);
  EXPECT_LT(peak, uint64_t{200} * 1024) << "KiB";  // the 64 MiB buffer and the process, not the 400 MiB file
  const std::string metrics = HttpGet(fleet.metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("dlio_s3_requests_total{agent=\"agent-0\",operation=\"multipart_part\"}"));
  EXPECT_THAT(metrics, HasSubstr("dlio_s3_requests_total{agent=\"agent-0\",operation=\"get_range\"}"));
}

// DLIO's three unet3d_*_s3.yaml run as shipped apart from the endpoint override (credentials from the environment)
// and a scaled-down dataset.
TEST_F(S3, DlioUnet3dS3WorkloadsRunWithEndpointOverride) {
  NewBucket("unet3d-probe");  // (the gateway answers)
  S3Tool({"mkbucket", "unet3d"});
  for (const char* file : {"unet3d_a100_s3.yaml", "unet3d_h100_s3.yaml", "unet3d_v100_s3.yaml"}) {
    SCOPED_TRACE(file);
    TempDir dir;
    CommandResult r =
        RunJob(dir, SourceDir() + "/tests/fixtures/dlio-workloads/" + file,
            {"++workload.storage.storage_options.endpoint_url=" + S3Gateway().at("AWS_ENDPOINT_URL"),
             "++workload.dataset.num_files_train=16", "++workload.dataset.record_length_bytes=262144",
             "++workload.train.epochs=1", "++workload.train.computation_time=0.01"},
            1);
    ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    const json s = LoadJson(dir.str() + "/out/summary.json");
    EXPECT_GT(s["dlio_ext"]["train_io"]["bytes"].get<double>(), 0);
  }
  EXPECT_EQ(List("unet3d", "data/unet3d/train/").size(), 32u);  // 16 npz and 16 npy objects
}

// MLPerf Storage v3's parquet workloads, scaled down, over the gateway: generation PUTs the files, training reads
// footers and column chunks by ranged GETs; a second epoch reads as much as the first (the footer and row groups
// once per epoch and reader).
TEST_F(S3, V3ParquetWorkloadsRunScaledDownOverRangedGets) {
  for (const char* file : {"configs/workloads/flux_b200.yaml", "configs/workloads/dlrm_b200.yaml",
                           "tests/fixtures/mlperf-v3/dlrm_mi355.yaml", "configs/workloads/dlrm_parquet_h100.yaml"}) {
    SCOPED_TRACE(file);
    const std::string bucket = NewBucket("parquet");
    TempDir dir;
    CommandResult r = RunJob(dir, SourceDir() + "/" + file,
                             {"++workload.storage.storage_type=s3", "++workload.storage.storage_root=" + bucket,
                              "++workload.workflow.generate_data=True", "++workload.dataset.num_files_train=4",
                              "++workload.dataset.num_samples_per_file=6", "++workload.dataset.parquet.row_group_size=4",
                              "++workload.dataset.compression=snappy", "++workload.reader.batch_size=3",
                              "++workload.reader.read_threads=2", "++workload.train.epochs=2",
                              "++workload.train.computation_time=0"},
                             1);
    ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    EXPECT_EQ(List(bucket, "data/").size(), 4u);
    const json s = LoadJson(dir.str() + "/out/summary.json");
    EXPECT_EQ(s["dlio_ext"]["train_io"]["samples"].get<uint64_t>(), 48u) << s.dump();
    EXPECT_GT(s["metric"]["train_read_bytes"].get<double>(), 0) << s.dump();
  }
}

// The gateway dies in the middle of an epoch: the job fails after s3_max_attempts attempts with one line naming the
// endpoint, the bucket, the object and the HTTP status (none: no answer), well within the retry schedule.
TEST_F(S3, GatewayKilledMidEpochFailsTheJobWithinMaxAttempts) {
  TempDir dir;
  const std::string bucket = NewBucket("kill");
  CommandResult extra =
      RunCommand({"bash", SourceDir() + "/scripts/ceph-rgw.sh", "extra-rgw", S3GatewayDir()}, seconds(90));
  ASSERT_EQ(extra.exit_code, 0) << extra.err;
  std::istringstream in(extra.out);
  pid_t pid = 0;
  std::string endpoint;
  in >> pid >> endpoint;
  ASSERT_GT(pid, 0);
  // The dataset through the main gateway, then training through the extra one.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 16, 1, 65536, 1, 0.25, 2, true, Storage(bucket)));
  ASSERT_PRED1(JobRan, RunJob(dir, dir.str() + "/job.yaml", {"train.epochs=1", "train.computation_time=0"}, 1).exit_code);
  std::thread killer([pid] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(pid, SIGTERM);  // exactly the gateway this test started (SIGTERM: see ceph-rgw.sh extra-rgw)
  });
  const auto t0 = std::chrono::steady_clock::now();
  // The extra gateway is not the agents' own endpoint: the job brings its own keys (docs/object-storage.md).
  CommandResult r = RunJob(dir, dir.str() + "/job.yaml",
                        {"workflow.generate_data=false", "storage.storage_options.endpoint_url=" + endpoint,
                         "storage.storage_options.s3_max_attempts=3", JobKeyId(), JobSecret()},
                        1);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  killer.join();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::regex line("s3 (GET|HEAD) endpoint " + endpoint + " bucket '" + bucket +
                        "' object 'data/train/img_[0-9]+_of_16\\.npz': no HTTP status \\(Couldn't connect to "
                        "server\\) after 3 attempts");
  EXPECT_TRUE(std::regex_search(r.err, line)) << r.err;
  EXPECT_LT(secs, 20.0) << "the failure took too long to surface";
}

// Wrong credentials, a missing bucket and a missing object: each its own one-line error.
TEST_F(S3, WrongCredentialsMissingBucketAndMissingObjectEachSayWhatIsWrong) {
  TempDir dir;
  const std::string bucket = NewBucket("errs");
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 2, 1, 4096, 1, 0, 1, true, Storage(bucket)));
  const std::string key_id = S3Gateway().at("AWS_ACCESS_KEY_ID");

  CommandResult creds = RunJob(dir, dir.str() + "/job.yaml", {"storage.storage_options.access_key_id=" + key_id,
                                                           "storage.storage_options.secret_access_key=wrong"}, 1);
  EXPECT_EQ(creds.exit_code, 1);
  EXPECT_THAT(creds.err, HasSubstr("bucket '" + bucket + "', access key id '" + key_id +
                                   "'): the credentials are not accepted"));
  EXPECT_THAT(creds.err, ::testing::Not(HasSubstr("wrong")));

  CommandResult nobucket = RunJob(dir, dir.str() + "/job.yaml", {"storage.storage_root=no-such-bucket-here"}, 1);
  EXPECT_EQ(nobucket.exit_code, 1);
  EXPECT_THAT(nobucket.err, HasSubstr("bucket 'no-such-bucket-here', access key id '" + key_id +
                                      "'): the bucket does not exist (storage.storage_root)"));

  // A checkpoint load of a checkpoint never written: its object does not exist.
  WriteFile(dir.str() + "/ckpt.yaml", "model:\n  name: c\nworkflow:\n  train: false\n  checkpoint: true\n" +
                                          Storage(bucket) + "checkpoint:\n  num_checkpoints_read: 1\n");
  CommandResult noobject = RunJob(dir, dir.str() + "/ckpt.yaml", {}, 1);
  EXPECT_EQ(noobject.exit_code, 1);
  EXPECT_THAT(noobject.err, HasSubstr("s3 HEAD endpoint " + S3Gateway().at("AWS_ENDPOINT_URL") + " bucket '" + bucket +
                                      "' object 'checkpoints/global_epoch1_step1/model_states-0.pt': HTTP 404: the "
                                      "object does not exist"));
}

// A gateway that dies during a multipart generation cannot be told to abort the uploads; the next generation of the
// same dataset aborts the ones under its own keys, so the bucket ends with whole objects and no open upload.
TEST_F(S3, NothingIsLeftHalfWrittenAfterAFailedMultipartGeneration) {
  TempDir dir;
  const std::string bucket = NewBucket("half");
  CommandResult extra =
      RunCommand({"bash", SourceDir() + "/scripts/ceph-rgw.sh", "extra-rgw", S3GatewayDir()}, seconds(90));
  ASSERT_EQ(extra.exit_code, 0) << extra.err;
  std::istringstream in(extra.out);
  pid_t pid = 0;
  std::string endpoint;
  in >> pid >> endpoint;
  // 24 MiB objects: multipart (8 MiB parts). The gateway dies after the first parts went up. 24 of them: the
  // generation lasts a few seconds, so the poll (a Python process per look, slow under load) sees an upload open
  // before it ends (with 8 the whole generation took 1 s and was missed once under the full suite's load).
  WriteFile(dir.str() + "/job.yaml", std::regex_replace(Workload("npy", 24, 1, 25165824, 1, 0, 1, true, Storage(bucket)),
                                                        std::regex("  train: true\n"), "  train: false\n"));
  // The gateway is frozen (SIGSTOP) while an upload is open, then killed outright (kill-rgw: SIGKILL): a SIGTERM let
  // it finish the requests in flight during its shutdown, and the upload the poll saw open could be completed
  // before the signal (1 run in 4 under load). An upload seen open once the gateway is frozen stays open.
  std::thread killer([&] {
    Eventually([&] {
      if (OpenUploads(bucket) == 0) return false;
      ::kill(pid, SIGSTOP);
      if (OpenUploads(bucket) > 0) return true;
      ::kill(pid, SIGCONT);
      return false;
    }, std::chrono::milliseconds(30000));
    CommandResult k = RunCommand({"bash", SourceDir() + "/scripts/ceph-rgw.sh", "kill-rgw", S3GatewayDir(),
                                  std::to_string(pid)}, seconds(60));
    EXPECT_EQ(k.exit_code, 0) << k.err;
  });
  CommandResult r = RunJob(dir, dir.str() + "/job.yaml",
                        {"storage.storage_options.endpoint_url=" + endpoint,
                         "storage.storage_options.s3_max_attempts=2", JobKeyId(), JobSecret()}, 1);
  killer.join();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The dead gateway could not be told to abort: the uploads in flight stay open (no object shows them).
  EXPECT_GT(OpenUploads(bucket), 0);
  // Objects are never half-written (an object appears whole at its PUT or completion); the next run cleans up.
  CommandResult again = RunJob(dir, dir.str() + "/job.yaml", {}, 1);
  ASSERT_PRED1(JobRan, again.exit_code) << again.out << again.err;
  EXPECT_EQ(OpenUploads(bucket), 0);
  const json objects = List(bucket, "data/train/");
  ASSERT_EQ(objects.size(), 24u) << objects.dump();
  for (const auto& [key, size] : objects.items()) EXPECT_GT(size.get<int64_t>(), 25000000) << key;
}

// A job that names an endpoint other than the agents' own and brings no keys of its own: every agent would sign with
// its own key and send it there. The agent refuses before connecting, naming itself, the rule, the endpoint and the
// flag that would allow it; the endpoint (a plain socket) sees no connection, let alone an Authorization header.
TEST_F(S3, AJobNamingAnotherEndpointWithoutItsOwnKeysIsRefusedBeforeAnyConnection) {
  Trap trap;
  ASSERT_TRUE(trap.ok());
  TempDir dir;
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 2, 1, 4096, 1, 0, 1, true, Storage("trap-bucket")));
  CommandResult r = RunJob(dir, dir.str() + "/job.yaml",
                           {"storage.storage_options.endpoint_url=" + trap.endpoint(),
                            "storage.storage_options.s3_max_attempts=1"}, 1);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("agent 'local-0' rank 0 job "));
  EXPECT_THAT(r.err, HasSubstr(": s3 endpoint " + trap.endpoint() + " is not this agent's own (AWS_ENDPOINT_URL " +
                               S3Gateway().at("AWS_ENDPOINT_URL") + "): an agent's own credentials go only to its own "
                               "endpoint or to one it allows; give the job its own "
                               "storage.storage_options.access_key_id and secret_access_key, or start the agent with "
                               "--s3-allow-endpoint " + trap.endpoint()));
  EXPECT_EQ(trap.connections(), 0) << trap.seen();
  EXPECT_THAT(trap.seen(), ::testing::Not(HasSubstr("Authorization")));
  EXPECT_THAT(trap.seen(), ::testing::Not(HasSubstr(S3Gateway().at("AWS_ACCESS_KEY_ID"))));
}

// --s3-allow-endpoint: the agent's own keys go to a listed endpoint (here the same gateway by another name: 127.1 is
// 127.0.0.1 to the resolver but another endpoint to the rule, which resolves no names; RGW answers "localhost" with
// 404), and an endpoint outside the list is refused even with the job's own keys, before any connection.
TEST_F(S3, AnAgentsAllowListLetsItsKeysGoThereAndIsAllItReaches) {
  const std::string own = S3Gateway().at("AWS_ENDPOINT_URL");  // http://127.0.0.1:PORT
  const std::string alias = std::regex_replace(own, std::regex("127\\.0\\.0\\.1"), "127.1");
  ASSERT_NE(alias, own);
  Trap trap;
  ASSERT_TRUE(trap.ok());
  TempDir dir;
  S3Fleet fleet(dir, {"--s3-allow-endpoint", alias});
  const std::string bucket = NewBucket("allow");
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 2, 1, 4096, 1, 0, 1, true,
                                              Storage(bucket) + "  storage_options:\n    endpoint_url: " + alias +
                                                  "\n"));
  CommandResult listed = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out");
  ASSERT_PRED1(JobRan, listed.exit_code) << listed.out << listed.err << fleet.Logs();
  EXPECT_EQ(List(bucket, "data/train/").size(), 2u);

  WriteFile(dir.str() + "/trap.yaml",
            Workload("npz", 2, 1, 4096, 1, 0, 1, true,
                     Storage(bucket) + "  storage_options:\n    endpoint_url: " + trap.endpoint() +
                         "\n    access_key_id: " + S3Gateway().at("AWS_ACCESS_KEY_ID") + "\n    secret_access_key: " +
                         S3Gateway().at("AWS_SECRET_ACCESS_KEY") + "\n    s3_max_attempts: 1\n"));
  CommandResult refused = fleet.Submit(dir.str() + "/trap.yaml", dir.str() + "/out-trap");
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const std::string all = refused.out + refused.err;
  EXPECT_THAT(all, HasSubstr("agent 'agent-0' rank 0 job "));
  EXPECT_THAT(all, HasSubstr(": s3 endpoint " + trap.endpoint() + " is neither this agent's own (AWS_ENDPOINT_URL " +
                             own + ") nor in its --s3-allow-endpoint list (" + alias + "): an agent with that list "
                             "reaches no other endpoint, whoever's keys the job brings; to allow it, start the agent "
                             "with --s3-allow-endpoint " + trap.endpoint()));
  EXPECT_EQ(trap.connections(), 0) << trap.seen();
}

// The secret given in the job file reaches the agents (the job succeeds with agents that have no secret of their
// own) and appears nowhere: logs, --explain, the job store, the result files, the trace, /metrics.
TEST_F(S3, SecretNeverAppearsInLogsJobStoreResultsTraceExplainOrMetrics) {
  TempDir dir;
  const std::string bucket = NewBucket("secret");
  const std::string secret = S3Gateway().at("AWS_SECRET_ACCESS_KEY");
  const std::string saved = secret;
  ::unsetenv("AWS_SECRET_ACCESS_KEY");  // the agent of this test has no secret of its own
  S3Fleet fleet(dir);
  ::setenv("AWS_SECRET_ACCESS_KEY", saved.c_str(), 1);
  WriteFile(dir.str() + "/job.yaml",
            Workload("npz", 4, 1, 16384, 1, 0, 1, true,
                     Storage(bucket) + "  storage_options:\n    access_key_id: " + S3Gateway().at("AWS_ACCESS_KEY_ID") +
                         "\n    secret_access_key: " + secret + "\n"));
  CommandResult r = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out", {"--trace", dir.str() + "/trace.json"});
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  CommandResult explain = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--explain"});
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("storage.storage_options.secret_access_key = '***'"));
  const std::string metrics = HttpGet(fleet.metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("dlio_s3_requests_total"));
  std::vector<std::pair<std::string, std::string>> seen = {
      {"client output", r.out + r.err}, {"explain", explain.out + explain.err}, {"metrics", metrics},
      {"logs", fleet.Logs()}};
  fleet.agent().Signal(SIGTERM);
  fleet.fleet.coordinator().Signal(SIGTERM);
  fleet.agent().Wait(std::chrono::seconds(10));
  fleet.fleet.coordinator().Wait(std::chrono::seconds(10));
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    if (!e.is_regular_file() || e.path().filename() == "job.yaml") continue;
    seen.emplace_back(e.path().string(), ReadFile(e.path().string()));
    ++files;
  }
  EXPECT_GT(files, 5);
  ASSERT_TRUE(fs::exists(dir.path() / "jobs.sqlite"));
  ASSERT_TRUE(fs::exists(dir.path() / "trace.json"));
  for (const auto& [where, text] : seen) EXPECT_EQ(text.find(secret), std::string::npos) << where;
}

// /metrics of an agent that read from S3: the S3 families per operation, promtool accepts the scrape, and the
// catalogue in docs/metrics.md matches it (the observe test's POSIX job cannot export these families).
TEST_F(S3, MetricsScrapeHasTheS3SeriesAndPassesPromtool) {
  TempDir dir;
  S3Fleet fleet(dir);
  const std::string bucket = NewBucket("metrics");
  WriteFile(dir.str() + "/job.yaml", Workload("tfrecord", 2, 8, 16384, 4, 0, 1, true, Storage(bucket)));
  std::string job = ReadFile(dir.str() + "/job.yaml");
  job = std::regex_replace(job, std::regex("pytorch"), "tensorflow");
  WriteFile(dir.str() + "/job.yaml", job);
  CommandResult r = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out");
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  const std::string metrics = HttpGet(fleet.metrics_port, "/metrics");
  for (const char* op : {"head", "get_range", "put", "list"}) {
    EXPECT_THAT(metrics, HasSubstr(std::string("dlio_s3_requests_total{agent=\"agent-0\",operation=\"") + op + "\"}"));
    EXPECT_THAT(metrics, HasSubstr(std::string("dlio_s3_request_duration_seconds_bucket{agent=\"agent-0\","
                                               "operation=\"") + op + "\""));
  }
  EXPECT_THAT(metrics, HasSubstr("dlio_s3_bytes_total{agent=\"agent-0\",operation=\"get_range\"}"));
  EXPECT_THAT(metrics, HasSubstr("dlio_s3_retries_total{agent=\"agent-0\",operation=\"get_range\"} 0"));
  WriteFile(dir.str() + "/metrics.txt", metrics);
  WriteFile(dir.str() + "/coordinator.txt", HttpGet(fleet.coordinator_metrics_port, "/metrics"));
  CommandResult promtool = RunCommand({"bash", "-c", "promtool check metrics < " + dir.str() + "/metrics.txt"});
  EXPECT_EQ(promtool.exit_code, 0) << promtool.out << promtool.err;
  // docs/metrics.md, S3 families included, against the live scrapes (names, types, HELP texts).
  CommandResult catalogue = RunCommand({"node", SourceDir() + "/tests/js/check_catalogue.mjs", SourceDir() +
                                        "/docs/metrics.md", dir.str() + "/metrics.txt", dir.str() + "/coordinator.txt"});
  EXPECT_EQ(catalogue.exit_code, 0) << catalogue.out << catalogue.err;
  CommandResult summary = RunCommand({"node", SourceDir() + "/tests/js/check_catalogue.mjs", "--summary",
                                      SourceDir() + "/README.md", dir.str() + "/metrics.txt",
                                      dir.str() + "/coordinator.txt"});
  EXPECT_EQ(summary.exit_code, 0) << summary.out << summary.err;
}

// --explain shows an S3 job's bucket and the bandwidth each accelerator demands, as for files.
TEST_F(S3, ExplainShowsTheBucketAndTheDemandPerAccelerator) {
  TempDir dir;
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 8, 1, 1048576, 2, 0.1, 1, false, Storage("some-bucket")));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--explain"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("storage: s3 bucket 'some-bucket', objects under s3://some-bucket/data/train/"));
  EXPECT_THAT(r.out, HasSubstr("demand per accelerator at 100% AU: 2.00 MiB per step / 0.1 s compute = 20.00 MiB/s"));
}

// A redirecting front, as AIStore's proxy is: every request (its body read when one is sent) is answered 307 with
// the same path and query on `target`, "Connection: close". Counts the requests it redirected.
class RedirectFront {
 public:
  explicit RedirectFront(std::string target) : target_(std::move(target)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 64) == 0 &&
          ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RedirectFront() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  bool ok() const { return ok_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int redirected() const { return redirected_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;  // 50 ms: how soon the destructor's stop is seen
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      Answer(c);
      ::close(c);
    }
  }
  void Answer(int c) {
    std::string in;
    char buf[65536];
    pollfd cp{c, POLLIN, 0};
    while (in.find("\r\n\r\n") == std::string::npos && ::poll(&cp, 1, 2000) == 1) {
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) return;
    std::smatch m;
    const std::string head = in.substr(0, end);
    // The body, unless the client waits for a 100 Continue (then the 307 tells it not to send it here).
    if (std::regex_search(head, m, std::regex("\r\ncontent-length: *([0-9]+)", std::regex::icase)) &&
        !std::regex_search(head, std::regex("\r\nexpect: *100-continue", std::regex::icase))) {
      size_t left = std::stoull(m[1]) - (in.size() - end - 4);
      while (left > 0 && ::poll(&cp, 1, 2000) == 1) {
        const ssize_t n = ::read(c, buf, std::min(sizeof buf, left));
        if (n <= 0) return;
        left -= static_cast<size_t>(n);
      }
    }
    const std::string target = head.substr(head.find(' ') + 1, head.find(' ', head.find(' ') + 1) - head.find(' ') - 1);
    const std::string answer = "HTTP/1.1 307 Temporary Redirect\r\nLocation: " + target_ + target +
                               "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    if (::write(c, answer.data(), answer.size()) == static_cast<ssize_t>(answer.size())) ++redirected_;
  }
  std::string target_;
  int fd_ = -1;
  int port_ = 0;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> redirected_{0};
  std::thread thread_;
};

// The value of a series in a scrape ("" = absent).
std::string Sample(const std::string& metrics, const std::string& series) {
  std::smatch m;
  const std::string escaped = std::regex_replace(series, std::regex(R"([{}\[\]().*+?^$|\\])"), R"(\$&)");
  const std::regex re("\n" + escaped + " ([0-9.e+]+)");
  return std::regex_search(metrics, m, re) ? m[1].str() : "";
}

// A job of `files` npz objects of 4 KiB in `bucket` whose endpoint is `front` (the redirect tests).
std::string JobThroughFront(const std::string& bucket, int files, const std::string& front) {
  return Workload("npz", files, 1, 4096, 1, 0, 1, true,
                  Storage(bucket) + "  storage_options:\n    endpoint_url: " + front + "\n");
}

// Issue 27 item 2: a job whose endpoint is a redirecting front (307 to the suite's RGW, as AIStore's proxy answers)
// generates and reads through it: every request follows the redirect, re-signed for the gateway, and succeeds; the
// redirects are counted per operation (every GET was one), the bytes are the objects', and each GET's latency is one
// sample that includes its hop.
TEST_F(S3, RedirectsFromAFrontAreFollowedToTheGatewayAndCounted) {
  RedirectFront front(S3Gateway().at("AWS_ENDPOINT_URL"));
  ASSERT_TRUE(front.ok());
  TempDir dir;
  S3Fleet fleet(dir, {"--s3-allow-endpoint", front.endpoint()});
  const std::string bucket = NewBucket("redirect");
  WriteFile(dir.str() + "/job.yaml", JobThroughFront(bucket, 4, front.endpoint()));
  CommandResult r = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out");
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  EXPECT_EQ(List(bucket, "data/train/").size(), 4u);
  const json s = LoadJson(dir.str() + "/out/summary.json");
  EXPECT_EQ(s["dlio_ext"]["train_io"]["samples"].get<double>(), 4) << s["dlio_ext"]["train_io"].dump();
  const std::string metrics = HttpGet(fleet.metrics_port, "/metrics");
  const std::string get = "{agent=\"agent-0\",operation=\"get\"}";
  const std::string gets = Sample(metrics, "dlio_s3_requests_total" + get);
  ASSERT_NE(gets, "") << metrics;
  EXPECT_GE(std::stod(gets), 4);
  EXPECT_EQ(Sample(metrics, "dlio_s3_redirects_total" + get), gets);  // every GET was redirected once
  EXPECT_EQ(Sample(metrics, "dlio_s3_request_duration_seconds_count" + get), gets);  // one sample per GET, hop in it
  EXPECT_GE(std::stod(Sample(metrics, "dlio_s3_redirects_total{agent=\"agent-0\",operation=\"put\"}")), 4);
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("dlio_s3_errors_total{agent=\"agent-0\",operation=\"get\"")));
  EXPECT_GE(front.redirected(), 8);  // 4 PUTs and 4 GETs at least
}

// A front that redirects to a host the agent does not allow: the request is refused before the hop, one line naming
// the URL and the endpoint rule; the job fails (a refusal is not retried).
TEST_F(S3, ARedirectToAHostTheAgentDoesNotAllowIsRefusedNamingTheUrl) {
  Trap trap;
  RedirectFront front(trap.endpoint());
  ASSERT_TRUE(front.ok() && trap.ok());
  TempDir dir;
  S3Fleet fleet(dir, {"--s3-allow-endpoint", front.endpoint()});
  const std::string bucket = NewBucket("redirect-refused");
  WriteFile(dir.str() + "/job.yaml", JobThroughFront(bucket, 2, front.endpoint()));
  CommandResult r = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("HTTP 307 redirect to '" + trap.endpoint() + "/"));
  EXPECT_THAT(r.out + r.err, HasSubstr("' refused: s3 endpoint " + trap.endpoint() + " is neither this agent's own"));
  EXPECT_EQ(trap.connections(), 0) << trap.seen();
}

// Issue 27 item 3 on the gateway: with dataset.skip_listing the agents derive the object names (nothing listed:
// the list counter stays at 0) and read them; an object deleted afterwards is named by the HEAD that checks it.
TEST_F(S3, SkipListingReadsDerivedNamesWithoutListingAndNamesAMissingObject) {
  TempDir dir;
  S3Fleet fleet(dir);
  const std::string bucket = NewBucket("skiplist");
  const std::string dataset = "dataset:\n  skip_listing: true\n  listing_validation_interval: 1\n"
                              "  num_subfolders_train: 2\n";
  std::string job = Workload("npz", 6, 1, 4096, 2, 0, 1, true, Storage(bucket));
  job = std::regex_replace(job, std::regex("dataset:\n"), dataset);
  WriteFile(dir.str() + "/job.yaml", job);
  CommandResult explain = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--explain"});
  EXPECT_THAT(explain.out, HasSubstr("listing: train/ names derived from dataset.file_prefix 'img', not listed "
                                     "(dataset.skip_listing: true); the first, every 1-th and the last checked by "
                                     "HEAD"));
  CommandResult r = fleet.Submit(dir.str() + "/job.yaml", dir.str() + "/out");
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  EXPECT_EQ(LoadJson(dir.str() + "/out/summary.json")["dlio_ext"]["train_io"]["samples"].get<double>(), 6);
  EXPECT_EQ(List(bucket, "data/train/").size(), 6u);
  // A read-only job: not one LIST request (generation's look for its own unfinished uploads was one), every name
  // checked by HEAD.
  const std::string list = "dlio_s3_requests_total{agent=\"agent-0\",operation=\"list\"}";
  const std::string head = "dlio_s3_requests_total{agent=\"agent-0\",operation=\"head\"}";
  const std::string before = HttpGet(fleet.metrics_port, "/metrics");
  WriteFile(dir.str() + "/read.yaml", std::regex_replace(job, std::regex("generate_data: true"),
                                                         "generate_data: false"));
  CommandResult read = fleet.Submit(dir.str() + "/read.yaml", dir.str() + "/out-read");
  ASSERT_PRED1(JobRan, read.exit_code) << read.out << read.err << fleet.Logs();
  EXPECT_EQ(LoadJson(dir.str() + "/out-read/summary.json")["dlio_ext"]["train_io"]["samples"].get<double>(), 6);
  const std::string after = HttpGet(fleet.metrics_port, "/metrics");
  EXPECT_EQ(Sample(after, list), Sample(before, list)) << after;
  EXPECT_GE(std::stod(Sample(after, head)) - std::stod(Sample(before, head)), 6);

  // Two missing: the HEADs go 16 at once, and the first missing name (lowest index) is the one named.
  ASSERT_EQ(S3Tool({"delete", bucket, "data/train/1/img_3_of_6.npz"}).exit_code, 0);
  ASSERT_EQ(S3Tool({"delete", bucket, "data/train/1/img_5_of_6.npz"}).exit_code, 0);
  CommandResult missing = fleet.Submit(dir.str() + "/read.yaml", dir.str() + "/out-missing");
  EXPECT_EQ(missing.exit_code, 1) << missing.out << missing.err;
  EXPECT_THAT(missing.out + missing.err,
              HasSubstr("dataset.skip_listing: object s3://" + bucket + "/data/train/1/img_3_of_6.npz ("));
  EXPECT_THAT(missing.out + missing.err, ::testing::Not(HasSubstr("img_5_of_6.npz (")));
  EXPECT_THAT(missing.out + missing.err, HasSubstr("set dataset.skip_listing: false to list it"));
}

// Issue 27 item 5: the MLCommons v3 object-storage workload files we ship load and run as shipped apart from the
// endpoint override and a scaled-down dataset (generated here, not there yet); storage_library is a label that
// --explain names. post_generation_settle_seconds holds the job after generation.
TEST_F(S3, MlcommonsObjectStorageWorkloadsRunWithEndpointOverride) {
  for (const char* name : {"unet3d_h100_s3dlio", "unet3d_h100_s3torch", "unet3d_h100_minio"}) {
    SCOPED_TRACE(name);
    const std::string file = SourceDir() + "/configs/workloads/" + name + ".yaml";
    const std::string bucket = ReadFile(file).find("mlp-s3dlio") != std::string::npos ? "mlp-s3dlio"
                               : ReadFile(file).find("mlp-s3torch") != std::string::npos ? "mlp-s3torch"
                                                                                          : "mlp-minio";
    ASSERT_EQ(S3Tool({"mkbucket", bucket}).exit_code, 0);
    CommandResult explain = RunCommand({Bin("dlio-coordinator"), "run", file, "--explain"});
    ASSERT_EQ(explain.exit_code, 0) << explain.err;
    EXPECT_THAT(explain.out,
                HasSubstr("client: the agents' own S3 client (libcurl, SigV4); storage.storage_library '"));
    EXPECT_THAT(explain.out, HasSubstr("listing: train/ listed (ListObjectsV2) once for the job by the agent of "
                                       "rank 0, shared with the others as a pattern or compressed names "
                                       "(dataset.skip_listing unset and 168 files < 100000)"));
    TempDir dir;
    const auto t0 = std::chrono::steady_clock::now();
    CommandResult r =
        RunJob(dir, file,
               {"++workload.storage.storage_options.endpoint_url=" + S3Gateway().at("AWS_ENDPOINT_URL"),
                "++workload.workflow.generate_data=True", "++workload.dataset.num_files_train=8",
                "++workload.dataset.record_length_bytes=65536", "++workload.dataset.record_length_bytes_stdev=0",
                "++workload.train.epochs=1", "++workload.train.computation_time=0.01",
                "++workload.storage.post_generation_settle_seconds=2"},
               1);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    EXPECT_GE(took, 2.0);
    EXPECT_GT(LoadJson(dir.str() + "/out/summary.json")["dlio_ext"]["train_io"]["bytes"].get<double>(), 0);
    EXPECT_EQ(List(bucket, "test-run/unet3d/train/").size(), 8u);
  }
}

// Issue 27 item 4: a loader thread keeps dlio_ext.s3_requests_in_flight whole-object GETs in flight. Read with 1 and
// with 8 in flight, the same objects (sizes drawn per file, so each object's size tells it apart, shuffled by seed)
// give the same samples and bytes, one GET per sample, and every loader thread takes its objects in the same order
// (its read events ordered by when they were taken: ts + dur); with 8 in flight a thread's GETs overlap (their
// latencies add up to more than the thread's span), with 1 never.
TEST_F(S3, ReadAheadGetsTheSameSamplesAndBytesInPlanOrderAsOneGetAtATime) {
  TempDir dir;
  const std::string bucket = NewBucket("inflight");
  std::string job = Workload("npz", 48, 1, 32768, 4, 0, 1, true, Storage(bucket));
  job = std::regex_replace(job, std::regex("data_folder: data"), "data_folder: s3://" + bucket + "/ds");
  job = std::regex_replace(job, std::regex("record_length_bytes: 32768"),
                           "record_length_bytes: 32768\n  record_length_bytes_stdev: 16384");
  WriteFile(dir.str() + "/gen.yaml", std::regex_replace(job, std::regex("train: true"), "train: false"));
  CommandResult gen = RunJob(dir, dir.str() + "/gen.yaml", {}, 1);
  ASSERT_PRED1(JobRan, gen.exit_code) << gen.out << gen.err;
  WriteFile(dir.str() + "/read.yaml", std::regex_replace(job, std::regex("generate_data: true"),
                                                         "generate_data: false"));
  struct Run {
    json summary;
    std::map<std::pair<int, int>, std::vector<uint64_t>> order;  // (pid, tid): bytes of each read, as taken
    std::map<std::pair<int, int>, double> busy, span;             // sum of read durations; first start to last end
  };
  auto read = [&](int in_flight) {
    Run run;
    const std::string tag = std::to_string(in_flight);
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/read.yaml", "--local-agents", "1",
                                  "--data-root", dir.str(), "--results-dir", dir.str() + "/results-" + tag,
                                  "--output", dir.str() + "/out-" + tag, "--trace", dir.str() + "/trace-" + tag,
                                  "dlio_ext.s3_requests_in_flight=" + tag, "reader.file_shuffle=seed",
                                  "reader.sample_shuffle=seed", "train.seed=7"},
                                 seconds(240));
    EXPECT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    if (r.exit_code != 0) return run;
    run.summary = LoadJson(dir.str() + "/out-" + tag + "/summary.json");
    std::map<std::pair<int, int>, std::vector<std::pair<double, uint64_t>>> reads;
    std::map<std::pair<int, int>, double> first, last;
    const json trace = LoadJson(dir.str() + "/trace-" + tag);
    for (const json& e : trace["traceEvents"]) {
      if (e["ph"] != "X" || e["name"] != "read") continue;
      const auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
      const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
      reads[key].emplace_back(end, e["args"]["bytes"].get<uint64_t>());
      run.busy[key] += e["dur"].get<double>();
      first[key] = first.count(key) ? std::min(first[key], ts) : ts;
      last[key] = std::max(last[key], end);
    }
    for (auto& [key, v] : reads) {
      std::sort(v.begin(), v.end());
      for (const auto& [end, bytes] : v) run.order[key].push_back(bytes);
      run.span[key] = last[key] - first[key];
    }
    return run;
  };
  const Run one = read(1), eight = read(8);
  ASSERT_FALSE(one.summary.is_null());
  ASSERT_FALSE(eight.summary.is_null());
  for (const Run* run : {&one, &eight}) {
    SCOPED_TRACE(run == &one ? "1 in flight" : "8 in flight");
    const json& s3 = run->summary["dlio_ext"]["s3"];
    EXPECT_EQ(run->summary["dlio_ext"]["train_io"]["samples"].get<int64_t>(), 48);
    EXPECT_EQ(s3["get"]["requests"].get<int64_t>(), 48) << s3.dump();  // nothing asked twice, nothing dropped
    EXPECT_EQ(run->summary["metric"]["train_read_bytes"].get<uint64_t>(), s3["get"]["bytes"].get<uint64_t>());
  }
  EXPECT_EQ(eight.summary["metric"]["train_read_bytes"], one.summary["metric"]["train_read_bytes"]);
  // The sizes differ from object to object (else the order check below would see nothing).
  std::set<uint64_t> sizes;
  for (const auto& [key, v] : one.order) sizes.insert(v.begin(), v.end());
  EXPECT_GT(sizes.size(), 10u);
  ASSERT_EQ(one.order.size(), 2u) << "two loader threads";
  EXPECT_EQ(eight.order, one.order);
  bool overlapped = false;
  for (const auto& [key, busy] : eight.busy) overlapped |= busy > 1.5 * eight.span.at(key);
  EXPECT_TRUE(overlapped) << "8 in flight: no loader thread had GETs overlapping";
  for (const auto& [key, busy] : one.busy) EXPECT_LE(busy, one.span.at(key) + 1.0) << "1 in flight overlapped";
}

// Issue 27 item 1 (and item 6's two gateways): two radosgw daemons of one cluster are two endpoints of one store.
// The per-endpoint figures of summary.json (dlio_ext.s3_endpoints, the same counts as the dlio_s3_endpoint_* series).
json EndpointFigures(const TempDir& dir) {
  return LoadJson(dir.str() + "/out/summary.json")["dlio_ext"].value("s3_endpoints", json::object());
}

// The two-gateway tests' set-up: a bucket of the test's own (none for an empty stem), a second radosgw of the suite's
// cluster (the test checks second.ok()) and the first gateway's endpoint.
struct TwoGateways {
  explicit TwoGateways(const std::string& stem)
      : bucket(stem.empty() ? "" : NewBucket(stem)),
        second(S3GatewayDir()),
        first(S3Gateway().at("AWS_ENDPOINT_URL")) {}
  std::string bucket;
  ExtraGateway second;
  std::string first;
};

// The gateway-kill tests' dataset: 32 npz objects of 64 KiB, 64 steps of 0.25 s for one agent of 2 ranks' batches.
std::string KillJob(const TempDir& dir, const std::string& bucket) {
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npz", 32, 1, 65536, 1, 0.25, 2, true, Storage(bucket)));
  return job;
}

// One of two gateways dies in the middle of the epoch: rank 0 (of 1) reads `g.bucket` with the gateway that dies
// first in its list (the fork's comma-separated form), s3_max_attempts `attempts`; 64 steps of 0.25 s, the gateway
// killed 4 s in, after the start-up and the preflight of both endpoints.
CommandResult ReadWhileTheSecondGatewayDies(const TempDir& dir, TwoGateways& g, int attempts) {
  std::thread killer([&g] {
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    g.second.Stop();
  });
  CommandResult r = RunJob(dir, dir.str() + "/job.yaml",
                           {"workflow.generate_data=false",
                            "storage.storage_options.endpoint_url=" + g.second.endpoint() + "," + g.first,
                            "storage.storage_options.s3_max_attempts=" + std::to_string(attempts), JobKeyId(),
                            JobSecret()},
                           1);
  killer.join();
  return r;
}

// Round robin (per rank, the default): 2 agents of 1 rank read through 2 gateways; the requests split within 10 %
// of even, none failed over.
TEST_F(S3, TwoGatewaysRoundRobinSplitsRequestsEvenly) {
  TempDir dir;
  TwoGateways g("two");
  const std::string& bucket = g.bucket;
  const ExtraGateway& second = g.second;
  const std::string& first = g.first;
  ASSERT_TRUE(second.ok()) << second.error();
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 64, 1, 16384, 2, 0, 2, true, Storage(bucket)));
  ASSERT_PRED1(JobRan, RunJob(dir, dir.str() + "/job.yaml", {"train.epochs=1"}, 1).exit_code);
  // The second gateway is not the agents' own endpoint: the job brings its own keys (docs/object-storage.md).
  CommandResult r = RunJob(dir, dir.str() + "/job.yaml",
                           {"workflow.generate_data=false",
                            "storage.storage_options.endpoint_url=['" + first + "', '" + second.endpoint() + "']",
                            JobKeyId(), JobSecret()},
                           2);
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const json e = EndpointFigures(dir);
  ASSERT_TRUE(e.contains(first) && e.contains(second.endpoint())) << e.dump();
  const double a = e[first]["requests"].get<double>(), b = e[second.endpoint()]["requests"].get<double>();
  EXPECT_GE(a + b, 128) << e.dump();  // 64 objects x 2 epochs, and the preflight and listing
  EXPECT_LE(std::abs(a - b), 0.1 * (a + b) / 2) << e.dump();
  EXPECT_GT(e[second.endpoint()]["bytes"].get<double>(), 64 * 16384) << e.dump();
  EXPECT_EQ(LoadJson(dir.str() + "/out/summary.json")["dlio_ext"]["s3_failovers"].get<int>(), 0);
}

// One of two gateways is killed in the middle of the epoch: with attempts left the requests of the rank on it go to
// the other and the job completes, the failovers counted (summary.json, per endpoint and in all).
TEST_F(S3, OneOfTwoGatewaysKilledMidEpochFailsOverWithRetriesLeft) {
  TempDir dir;
  TwoGateways g("failover");
  const ExtraGateway& second = g.second;
  const std::string& first = g.first;
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_PRED1(JobRan, RunJob(dir, KillJob(dir, g.bucket), {"train.epochs=1", "train.computation_time=0"}, 1).exit_code);
  CommandResult r = ReadWhileTheSecondGatewayDies(dir, g, 3);
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const json s = LoadJson(dir.str() + "/out/summary.json");
  EXPECT_EQ(s["dlio_ext"]["train_io"]["samples"].get<int>(), 64) << s.dump();
  const json e = EndpointFigures(dir);
  EXPECT_GE(e[second.endpoint()]["failovers"].get<int>(), 1) << e.dump();
  EXPECT_GE(e[second.endpoint()]["errors"].get<int>(), 1) << e.dump();
  EXPECT_GT(e[first]["requests"].get<int>(), 0) << e.dump();
  EXPECT_EQ(s["dlio_ext"]["s3_failovers"].get<int>(), e[second.endpoint()]["failovers"].get<int>() +
                                                      e[first]["failovers"].get<int>());
}

// The same without retries (s3_max_attempts 1): the job fails with one line naming the endpoint that died.
TEST_F(S3, OneOfTwoGatewaysKilledMidEpochWithoutRetriesFailsNamingIt) {
  TempDir dir;
  TwoGateways g("noretry");
  const std::string& bucket = g.bucket;
  const ExtraGateway& second = g.second;
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_PRED1(JobRan, RunJob(dir, KillJob(dir, bucket), {"train.epochs=1", "train.computation_time=0"}, 1).exit_code);
  CommandResult r = ReadWhileTheSecondGatewayDies(dir, g, 1);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::regex line("s3 (GET|HEAD) endpoint " + second.endpoint() + " bucket '" + bucket +
                        "' object 'data/train/img_[0-9]+_of_32\\.npz': no HTTP status \\(");
  EXPECT_TRUE(std::regex_search(r.err, line)) << r.err;
}

// Issue 27 items 1 and 5: the MLCommons multi-endpoint and pytorch_s3dlio workload files we ship (their s3dlio keys
// spelled as ours, see each file's header) load with --explain and run scaled down with an endpoint override: the
// multi-endpoint ones through the two gateways, requests on both.
TEST_F(S3, MlcommonsMultiEndpointAndS3dlioWorkloadsRunWithEndpointOverride) {
  TwoGateways g("");  // the workload files name their buckets
  const ExtraGateway& second = g.second;
  const std::string& first = g.first;
  ASSERT_TRUE(second.ok()) << second.error();
  struct Case {
    const char* name;
    const char* bucket;
    bool multi;
  };
  for (const Case& c : {Case{"multi_endpoint_roundrobin", "training-bucket", true},
                        Case{"multi_endpoint_mpi", "training-bucket", true}, Case{"pytorch_s3dlio", "my-bucket", false},
                        Case{"pytorch_s3dlio_multiendpoint", "my-bucket", true},
                        Case{"pytorch_s3dlio_local_test", "benchmark", false}}) {
    SCOPED_TRACE(c.name);
    const std::string file = SourceDir() + "/configs/workloads/" + c.name + ".yaml";
    ASSERT_EQ(S3Tool({"mkbucket", c.bucket}).exit_code, 0);
    CommandResult explain = RunCommand({Bin("dlio-coordinator"), "run", file, "--explain"});
    ASSERT_EQ(explain.exit_code, 0) << explain.out << explain.err;
    EXPECT_THAT(explain.out, HasSubstr("client: the agents' own S3 client (libcurl, SigV4); storage.storage_library '"));
    TempDir dir;
    std::vector<std::string> over = {"++workload.workflow.generate_data=True", "++workload.workflow.checkpoint=False",
                                     "++workload.dataset.num_files_train=16", "++workload.dataset.record_length_bytes=16384",
                                     "++workload.train.epochs=1", "++workload.train.computation_time=0.01"};
    if (c.multi) {
      over.push_back("++workload.storage.storage_options.endpoint_url=['" + first + "', '" + second.endpoint() + "']");
      over.push_back(JobKeyId());  // the second gateway is not the agents' own: the job brings its keys
      over.push_back(JobSecret());
    } else {
      over.push_back("++workload.storage.storage_options.endpoint_url=" + first);
    }
    CommandResult r = RunJob(dir, file, over, 2);
    ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    EXPECT_GT(LoadJson(dir.str() + "/out/summary.json")["dlio_ext"]["train_io"]["bytes"].get<double>(), 0);
    const json e = EndpointFigures(dir);
    EXPECT_GT(e[first]["requests"].get<double>(), 0) << e.dump();
    if (c.multi) {
      EXPECT_GT(e[second.endpoint()]["requests"].get<double>(), 0) << e.dump();
    }
  }
}

}  // namespace
}  // namespace dlio::testing
