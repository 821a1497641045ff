// Independent readers: tests/python/check_formats.py reads what we generate with numpy, h5py and Pillow (the
// libraries DLIO reads with) and checks DLIO's names, dtypes and shapes; it also accepts DLIO's own datasets.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

bool HavePython() {
  return std::system("/usr/bin/python3 -c 'import numpy, h5py, PIL' 2>/dev/null") == 0;
}

// Runs every check in one interpreter (the batch form "ARGS :: ARGS ..."): Python with numpy and h5py takes about
// 0.3 s to start, and there are dozens of checks. Returns each check's exit code.
std::vector<int> RunChecks(const std::vector<std::string>& checks) {
  std::string cmd = std::string("/usr/bin/python3 ") + DLIO_SOURCE_DIR + "/tests/python/check_formats.py";
  for (const std::string& c : checks) cmd += " :: " + c;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  std::vector<int> rcs;
  const size_t at = out.rfind("results");
  if (at == std::string::npos) {
    ADD_FAILURE() << "check_formats.py printed no results:\n" << out;
    return rcs;
  }
  std::istringstream in(out.substr(at + 7));
  for (int rc; in >> rc;) rcs.push_back(rc);
  return rcs;
}

struct Case {
  std::string format;
  FormatOptions options;
  std::string expect;  // check_formats.py options
};

std::vector<Case> Cases(const std::string& index_dir) {
  auto opts = [](int64_t nspf, std::vector<int64_t> dims, const std::string& type) {
    FormatOptions o;
    o.samples_per_file = nspf;
    o.sample_dims = std::move(dims);
    o.element_type = type;
    return o;
  };
  std::vector<Case> v;
  v.push_back({"npy", opts(3, {6, 5}, "float32"), "--dims 6,5 --dtype float32 --samples 3"});
  v.push_back({"npz", opts(2, {4, 4, 2}, "int16"), "--dims 4,4,2 --dtype int16 --samples 2 --compression none"});
  FormatOptions z = opts(2, {5, 3}, "uint64");
  z.compression = "zip";
  v.push_back({"npz", z, "--dims 5,3 --dtype uint64 --samples 2 --compression zip"});
  FormatOptions lzf = opts(3, {6, 8}, "uint16");
  lzf.hdf5_num_dset_per_record = 3;
  lzf.compression = "lzf";
  v.push_back({"hdf5", lzf, "--dims 6,8 --dtype uint16 --samples 3 --num-dset 3 --compression lzf --chunks 3,2,8"});
  FormatOptions szip = opts(2, {8, 8}, "float16");
  szip.compression = "szip";
  szip.hdf5_chunk_dims = {1, 4, 8};
  szip.hdf5_max_shape = {16, 16};
  v.push_back({"hdf5", szip,
               "--dims 8,8 --dtype float16 --samples 2 --num-dset 1 --compression szip --chunks 1,4,8 "
               "--max-shape 16,16"});
  FormatOptions gz = opts(4, {3, 4, 5}, "int32");
  gz.compression = "gzip";
  v.push_back({"hdf5", gz, "--dims 3,4,5 --dtype int32 --samples 4 --compression gzip --chunks 4,3,4,5"});
  v.push_back({"csv", opts(2, {3, 7}, "int8"), "--dims 3,7 --dtype int8 --samples 2"});
  v.push_back({"csv", opts(3, {2, 2}, "float64"), "--dims 2,2 --dtype float64 --samples 3"});
  v.push_back({"jpeg", opts(1, {24, 40}, "uint8"), "--dims 24,40"});
  v.push_back({"png", opts(2, {24, 40}, "uint8"), "--dims 24,40"});
  v.push_back({"indexed_binary", opts(4, {5, 5}, "float64"), "--dims 5,5 --dtype float64 --samples 4"});
  v.push_back({"mmap_indexed_binary", opts(3, {7}, "uint8"), "--dims 7 --samples 3"});
  v.push_back({"synthetic", opts(2, {8, 8}, "uint8"), ""});
  FormatOptions tf = opts(5, {10, 10}, "uint8");
  tf.tfrecord_index_dir = index_dir;
  v.push_back({"tfrecord", tf, "--samples 5 --index-dir " + index_dir});
  return v;
}

TEST(PythonCrossCheck, NumpyH5pyAndPillowFindDliosLayoutInWhatWeGenerate) {
  if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy, h5py or PIL (python3-numpy python3-h5py python3-pil)";
  testing::TempDir root;
  int n = 0;
  std::vector<std::string> checks, names;
  std::vector<int> want;
  for (const Case& c : Cases(root.path() + "/index")) {
    const std::string dir = root.path() + "/" + std::to_string(n++);
    std::filesystem::create_directories(dir);
    auto f = MakeFormat(c.format, c.options);
    ASSERT_TRUE(f.ok()) << c.format << ": " << f.status();
    IoStats st;
    for (int i = 0; i < 2; ++i) {
      const std::string path = dir + "/" + DataFileName("img", i, 2, (*f)->extension());
      ASSERT_TRUE((*f)->Generate(path, static_cast<uint64_t>(i) + 1, st).ok()) << path;
    }
    checks.push_back(dir + " --format " + c.format + " " + c.expect);
    names.push_back(c.format + " " + c.expect);
    want.push_back(0);
    if (c.format != "synthetic") {
      // The checker can fail: the same files against a wrong expectation.
      checks.push_back(dir + " --format " + c.format + " " + c.expect + " --samples 99 --dims 99,99");
      names.push_back(c.format + " with a wrong expectation");
      want.push_back(1);
    }
  }
  const std::vector<int> got = RunChecks(checks);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << names[i];
}

// Our JPEGs are Pillow's: with the same libjpeg-turbo and the same pixels (a PNG from the same seed holds them
// losslessly), Pillow's save(format="JPEG") writes the same bytes.
TEST(PythonCrossCheck, JpegBytesAreWhatPillowWritesForTheSamePixels) {
  if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy, h5py or PIL";
  testing::TempDir root;
  FormatOptions o;
  o.sample_dims = {48, 80};
  for (const char* name : {"jpeg", "png"}) {
    auto f = MakeFormat(name, o);
    ASSERT_TRUE(f.ok());
    IoStats st;
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*f)->Generate(root.path() + "/" + DataFileName("img", i, 3, name), 100 + i, st).ok());
    }
  }
  EXPECT_EQ(RunChecks({root.path() + " --format jpeg --dims 48,80 --pillow-from-png " + root.path()}),
            std::vector<int>{0});
}

TEST(PythonCrossCheck, AcceptsEveryDlioGeneratedDataset) {
  if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy, h5py or PIL";
  auto at = [](const char* name) { return testing::DlioCase(name) + "/train"; };
  const std::vector<std::string> checks = {
      at("npz") + " --format npz --dims 64,64 --dtype uint8 --samples 2 --compression none",
      at("npy") + " --format npy --dims 64,64 --dtype uint8 --samples 2",
      at("hdf5") + " --format hdf5 --dims 64,64 --dtype uint8 --samples 3 --num-dset 1 --compression none",
      at("hdf5_chunked_gzip") + " --format hdf5 --dims 128,128 --samples 3 --compression gzip --chunks 1,32,32",
      at("csv") + " --format csv --dims 32,32 --dtype uint8 --samples 2",
      at("png") + " --format png --dims 64,64",
      at("jpeg") + " --format jpeg --dims 64,64",
      at("indexed_binary") + " --format indexed_binary --dims 45,45 --dtype uint8 --samples 8",
  };
  EXPECT_EQ(RunChecks(checks), std::vector<int>(checks.size(), 0));
}

}  // namespace
}  // namespace dlio
