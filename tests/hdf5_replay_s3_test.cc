// The hdf5 replay engine over S3 (issue 31) against a real Ceph RADOS Gateway (the CTest fixture s3_gateway, as
// s3_test.cc): per sample, the ranged GETs (offset, length, order), the HEADs and the counted bytes of the replay
// engine equal the libhdf5 engine's, contiguous and chunked, and the delivered bytes are the same.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "readers/format.h"
#include "readers/hdf5_replay.h"
#include "storage/hdf5_vfd.h"
#include "storage/s3/client.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

using std::chrono::seconds;

// The gateway's settings ($DLIO_S3_DIR/env, written by scripts/ceph-rgw.sh).
std::map<std::string, std::string> Gateway() {
  const char* dir = std::getenv("DLIO_S3_DIR");
  std::ifstream in(std::string(dir != nullptr && *dir != '\0' ? dir : DLIO_S3_DEFAULT_DIR) + "/env");
  std::map<std::string, std::string> m;
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const auto& [k, v] : m) ::setenv(k.c_str(), v.c_str(), 1);  // for s3_tool.py (boto3)
  return m;
}

std::string Describe(const std::vector<Hdf5Io>& v) {
  std::string s;
  for (const Hdf5Io& io : v) {
    s += io.kind == Hdf5Io::Kind::kOpen ? "HEAD " : io.kind == Hdf5Io::Kind::kClose ? "close " : "";
    if (io.kind == Hdf5Io::Kind::kRead) s += "GET(" + std::to_string(io.addr) + "," + std::to_string(io.size) + ") ";
  }
  return s;
}

struct Sample {
  std::string gets;
  uint64_t bytes = 0, ops = 0, files = 0;
  std::string data;
};

std::vector<Sample> ReadAll(FormatOptions o, bool replay, const std::vector<std::pair<std::string, uint32_t>>& order,
                            hdf5_internal::ReplayCounters* counters) {
  o.hdf5_replay = replay;
  auto f = MakeFormat("hdf5", o);
  EXPECT_TRUE(f.ok()) << f.status();
  auto r = (*f)->NewSampleReader();
  auto driver = hdf5_internal::DriverOf(*r);
  EXPECT_TRUE(driver.ok()) << driver.status();
  std::vector<Sample> out;
  std::vector<Hdf5Io> issued;
  IoStats st;
  for (const auto& [key, i] : order) {
    issued.clear();
    (*driver)->set_issued_log(&issued);
    const IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(key, i, st);
    EXPECT_TRUE(n.ok()) << n.status();
    const IoSnapshot after = st.Snapshot();
    out.push_back({Describe(issued), after.bytes - before.bytes, after.ops - before.ops, after.files - before.files,
                   std::string(r->last_sample())});
  }
  (*driver)->set_issued_log(nullptr);
  *counters = hdf5_internal::ReplayCountersOf(*r);
  return out;
}

TEST(Hdf5ReplayS3, SameRangedGetsAsLibhdf5PerSample) {
  const std::map<std::string, std::string> gw = Gateway();
  ASSERT_TRUE(gw.count("AWS_ENDPOINT_URL")) << "no gateway: $DLIO_S3_DIR/env is missing (the s3_gateway fixture)";
  const std::string bucket = "hdf5-replay-" + std::to_string(::getpid());
  CommandResult mk = RunCommand({"/usr/bin/python3", SourceDir() + "/tests/python/s3_tool.py", "mkbucket", bucket},
                                seconds(120));
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  auto config = std::make_shared<S3Config>();
  config->endpoint = gw.at("AWS_ENDPOINT_URL");
  config->bucket = bucket;
  config->access_key_id = gw.at("AWS_ACCESS_KEY_ID");
  config->secret_access_key = S3Secret(gw.at("AWS_SECRET_ACCESS_KEY"));
  config->force_path_style = true;
  struct Layout {
    const char* name;
    std::vector<int64_t> chunks;
    const char* compression;
  };
  for (const Layout& l : {Layout{"contiguous", {}, "none"}, Layout{"chunked", {1, 16, 32}, "none"},
                          Layout{"gzip", {1, 16, 32}, "gzip"}}) {
    FormatOptions o;
    o.samples_per_file = 5;
    o.sample_dims = {32, 32};
    o.hdf5_chunk_dims = l.chunks;
    o.compression = l.compression;
    o.io_engine = IoEngine::kS3;
    o.s3 = config;
    auto f = MakeFormat("hdf5", o);
    ASSERT_TRUE(f.ok()) << f.status();
    std::vector<std::string> keys;
    IoStats gen;
    for (int n = 0; n < 2; ++n) {
      keys.push_back(std::string("train/") + l.name + "_" + std::to_string(n) + ".hdf5");
      ASSERT_TRUE((*f)->Generate(keys.back(), n + 1, gen).ok()) << keys.back();
    }
    std::vector<std::pair<std::string, uint32_t>> order;
    for (uint32_t s = 0; s < 10; ++s) order.emplace_back(keys[s % 2], (s * 3) % 5);  // files interleaved
    hdf5_internal::ReplayCounters lc, rc;
    const std::vector<Sample> lib = ReadAll(o, false, order, &lc);
    const std::vector<Sample> rep = ReadAll(o, true, order, &rc);
    ASSERT_EQ(lib.size(), rep.size());
    for (size_t n = 0; n < lib.size(); ++n) {
      const std::string at = std::string(l.name) + " " + order[n].first + " sample " + std::to_string(order[n].second);
      EXPECT_EQ(rep[n].gets, lib[n].gets) << at;
      EXPECT_NE(lib[n].gets.find("GET("), std::string::npos) << at << ": the sample's data is a ranged GET";
      EXPECT_EQ(rep[n].bytes, lib[n].bytes) << at;
      EXPECT_EQ(rep[n].ops, lib[n].ops) << at;
      EXPECT_EQ(rep[n].files, lib[n].files) << at;
      EXPECT_EQ(rep[n].data, lib[n].data) << at;
    }
    EXPECT_EQ(rc.fallback, 0u) << l.name << ": " << rc.last_fallback;
    EXPECT_GT(rc.replayed, 0u) << l.name;
  }
}

}  // namespace
}  // namespace dlio::testing
