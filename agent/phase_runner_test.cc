#include "agent/phase_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/test_dir.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

using Dir = TestDir;

// A checkpoint phase run directly: one agent holding rank 0 of 2, a non-transformer model (only rank 0 writes).
// Loads read rank 0's own file, or with recovery_rank_shift the files of rank (0 + 1) % 2 = 1, which holds none.
TEST(CheckpointPhase, SavesThePlannedFileAndShiftedLoadsReadAnotherRanksFiles) {
  Dir d;
  PhaseRunner runner(d.path(), "a", nullptr);
  PhaseCommand cmd;
  cmd.job_id = "j";
  cmd.kind = PhaseKind::kCheckpoint;
  cmd.spec.checkpoint = true;
  cmd.spec.train = false;
  cmd.spec.checkpoint_folder = "ck";
  cmd.spec.model_size_bytes = 12345;
  cmd.world = 2;
  cmd.first_rank = 0;
  cmd.local_ranks = 1;
  cmd.epoch = 1;
  cmd.checkpoint_step = 1;
  int barriers = 0;
  auto barrier = [&](uint64_t) {
    ++barriers;
    return absl::OkStatus();
  };
  cmd.phase_id = "save-checkpoint-1";
  auto saved = runner.Run(cmd, barrier, nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_EQ(saved->size(), 1u);
  ASSERT_EQ((*saved)[0].checkpoints.size(), 1u);
  EXPECT_EQ((*saved)[0].checkpoints[0].bytes, 12345u);
  EXPECT_FALSE((*saved)[0].checkpoints[0].load);
  EXPECT_EQ(fs::file_size(d.path() / "ck" / "global_epoch1_step1" / "model_states-0.pt"), 12345u);
  EXPECT_EQ(barriers, 1);  // before the save; none after it without rank_sync

  cmd.phase_id = "load-checkpoint-1";
  cmd.checkpoint_load = true;
  cmd.spec.checkpoint_rank_sync = true;
  cmd.spec.checkpoint_evict_cache = true;
  auto own = runner.Run(cmd, barrier, nullptr);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ((*own)[0].checkpoints[0].bytes, 12345u);
  EXPECT_TRUE((*own)[0].checkpoints[0].load);
  EXPECT_EQ(barriers, 3);  // before, and rank_sync after

  cmd.spec.recovery_rank_shift = true;
  auto shifted = runner.Run(cmd, barrier, nullptr);
  ASSERT_TRUE(shifted.ok()) << shifted.status();
  EXPECT_EQ((*shifted)[0].checkpoints[0].bytes, 0u);

  cmd.spec.checkpoint_folder = "../escape";
  auto escaped = runner.Run(cmd, barrier, nullptr);
  EXPECT_FALSE(escaped.ok());
  EXPECT_NE(std::string(escaped.status().message()).find("checkpoint.checkpoint_folder"), std::string::npos)
      << escaped.status();
}

// A one-agent, one-rank npy job with its data folder "data".
PhaseCommand NpyJob(int64_t train_files, int64_t eval_files, int64_t samples_per_file, double record_bytes) {
  PhaseCommand cmd;
  cmd.job_id = "j";
  cmd.spec.format = "npy";
  cmd.spec.num_files_train = train_files;
  cmd.spec.num_files_eval = eval_files;
  cmd.spec.num_samples_per_file = samples_per_file;
  cmd.spec.record_length_bytes = record_bytes;
  cmd.spec.data_folder = "data";
  return cmd;
}

// Runs cmd's generate phase; cmd is left at epoch 1, ready for a training phase.
bool Generated(PhaseRunner& runner, PhaseCommand& cmd) {
  cmd.phase_id = "generate";
  cmd.kind = PhaseKind::kGenerate;
  auto r = runner.Run(cmd, [](uint64_t) { return absl::OkStatus(); }, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  cmd.kind = PhaseKind::kTrainEpoch;
  cmd.epoch = 1;
  return r.ok();
}

// D5 of issue 13: a cancel stops a rank inside a long emulated compute step and a reader held back by the bandwidth
// cap, well within the coordinator's 2 s stop grace (before, a 20 s compute step ran out and a 1 MiB/s cap on 4 MiB
// samples held the phase for minutes).
TEST(Steps, CancelInterruptsComputeAndTheBandwidthCap) {
  Dir d;
  PhaseRunner runner(d.path(), "a", nullptr);
  PhaseCommand cmd = NpyJob(2, 0, 1, 4 << 20);
  ASSERT_TRUE(Generated(runner, cmd));
  auto none = [](uint64_t) { return absl::OkStatus(); };
  struct Case {
    const char* what;
    double compute;
    int64_t cap;
  };
  for (const Case& c : {Case{"compute", 20.0, 0}, Case{"bandwidth cap", 0.0, 1 << 20}}) {
    cmd.phase_id = std::string("train-") + c.what;
    cmd.spec.computation_time.a = c.compute;
    cmd.spec.read_bandwidth_limit = c.cap;
    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto r = runner.Run(cmd, none, &cancel);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stopper.join();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << c.what << ": " << r.status();
    EXPECT_LT(took, 1.5) << c.what << ": the phase did not stop promptly";
  }
}

// One batch size per phase, the epoch plan's: an evaluation's loader, its progress and its steps all use
// batch_size_eval, a training epoch's batch_size (the eval progress once added batch_size per step).
TEST(Steps, LoaderAndProgressTakeTheBatchOfThePlan) {
  Dir d;
  PhaseRunner runner(d.path(), "a", nullptr);
  PhaseCommand cmd = NpyJob(4, 4, 3, 64);
  cmd.spec.batch_size = 1;
  cmd.spec.batch_size_eval = 4;
  ASSERT_TRUE(Generated(runner, cmd));
  auto none = [](uint64_t) { return absl::OkStatus(); };
  for (const bool eval : {false, true}) {
    cmd.phase_id = eval ? "eval-1" : "train-epoch-1";
    cmd.kind = eval ? PhaseKind::kEval : PhaseKind::kTrainEpoch;
    const int64_t batch = eval ? cmd.spec.batch_size_eval : cmd.spec.batch_size;
    auto r = runner.Run(cmd, none, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    const int64_t steps = 12 / batch;  // 4 files x 3 samples, one rank
    EXPECT_EQ(runner.progress().total.load(), static_cast<uint64_t>(steps)) << cmd.phase_id;
    EXPECT_EQ(runner.progress().samples.load(), static_cast<uint64_t>(steps * batch)) << cmd.phase_id;
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].io.samples, static_cast<uint64_t>(steps * batch)) << cmd.phase_id;
    ASSERT_FALSE((*r)[0].blocks.empty());
    EXPECT_EQ((*r)[0].blocks[0].proc.size(), static_cast<size_t>(steps)) << cmd.phase_id;
  }
}

// --- The dataset layout the generator writes, against DLIO's (../shared/reference/dlio.md §2.1-2.2) ---------------

std::string TestData() {
  const char* env = std::getenv("DLIO_TESTDATA");
  return env != nullptr ? env : "/work/main/../shared/testdata";
}

// Every folder and file under `root`, relative to it ("train/", "train/img_0_of_4.npz", ...; folders end in '/').
std::set<std::string> Tree(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(e.path(), root).string();
    out.insert(e.is_directory() ? rel + "/" : rel);
  }
  return out;
}

// Generates `spec` (data_folder "data") on one rank into a fresh data root and returns the tree under data/.
std::set<std::string> GeneratedTree(WorkloadSpec spec) {
  Dir d;
  spec.data_folder = "data";
  spec.generate_data = true;
  PhaseRunner runner(d.path(), "a", nullptr);
  PhaseCommand cmd;
  cmd.job_id = "j";
  cmd.phase_id = "generate";
  cmd.kind = PhaseKind::kGenerate;
  cmd.spec = spec;
  auto r = runner.Run(cmd, [](uint64_t) { return absl::OkStatus(); }, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  return Tree(d.path() / "data");
}

// DLIO's layout, written from its rules (data_generator.py, tf_generator.py as dlio.md §2.1 and testdata's README
// describe them), independently of the code under test: "{prefix}_{i padded to digits(N)}_of_{N}.{format}" under
// train/ or valid/, in subfolder "{i % S padded to digits(S)}" when S > 1 (every subfolder made, empty or not),
// train/ and valid/ always; tfrecord: index/<split>/<file>.idx per file; indexed formats: <file>.off.idx and
// <file>.sz.idx beside each file.
std::set<std::string> DlioLayout(const std::string& format, const std::string& prefix, int64_t train_files,
                                 int64_t train_sub, int64_t eval_files, int64_t eval_sub) {
  auto pad = [](int64_t v, int64_t of) {
    std::string s = std::to_string(v);
    return std::string(std::to_string(of).size() - s.size(), '0') + s;
  };
  std::set<std::string> out = {"train/", "valid/"};
  auto split = [&](const std::string& name, int64_t files, int64_t sub) {
    for (int64_t s = 0; sub > 1 && s < sub; ++s) out.insert(name + "/" + pad(s, sub) + "/");
    for (int64_t i = 0; i < files; ++i) {
      const std::string file = absl::StrCat(prefix, "_", pad(i, files), "_of_", files, ".", format);
      const std::string dir = sub > 1 ? name + "/" + pad(i % sub, sub) + "/" : name + "/";
      out.insert(dir + file);
      if (format == "indexed_binary" || format == "mmap_indexed_binary") {
        out.insert(dir + file + ".off.idx");
        out.insert(dir + file + ".sz.idx");
      }
      if (format == "tfrecord") {
        out.insert("index/");
        out.insert("index/" + name + "/");
        out.insert("index/" + name + "/" + file + ".idx");
      }
    }
  };
  split("train", train_files, train_sub);
  split("valid", eval_files, eval_sub);
  return out;
}

// Every dataset the real DLIO generated (../shared/testdata/dlio-generated): generating its workload.yaml gives the
// same files at the same paths, plus the empty valid/ folder git could not keep.
TEST(GenerateLayout, MatchesWhatDlioGeneratedForEveryTestdataCase) {
  const fs::path cases = fs::path(TestData()) / "dlio-generated";
  ASSERT_TRUE(fs::is_directory(cases)) << cases << " (set DLIO_TESTDATA)";
  int checked = 0;
  for (const auto& c : fs::directory_iterator(cases)) {
    if (!fs::exists(c.path() / "workload.yaml")) continue;
    absl::StatusOr<WorkloadSpec> spec = LoadWorkloadFile((c.path() / "workload.yaml").string(), {});
    ASSERT_TRUE(spec.ok()) << c.path() << ": " << spec.status();
    std::set<std::string> dlio;
    for (const std::string& rel : Tree(c.path())) {
      if (rel.rfind("train/", 0) == 0 || rel.rfind("valid/", 0) == 0) dlio.insert(rel);
    }
    dlio.insert("valid/");  // DLIO made it; git keeps no empty folder
    EXPECT_EQ(GeneratedTree(*spec), dlio) << c.path().filename();
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

// The cases the testdata has no example of: subfolders in both splits, evaluation files, and tfrecord's index
// folders (per split, flat), each against DLIO's rules.
TEST(GenerateLayout, SubfoldersEvaluationFilesAndTfrecordIndexFollowDlio) {
  struct Case {
    std::string format;
    int64_t train_files, train_sub, eval_files, eval_sub;
  };
  for (const Case& c : {Case{"npy", 7, 3, 0, 0}, Case{"npz", 12, 2, 3, 4}, Case{"tfrecord", 5, 0, 2, 0},
                        Case{"tfrecord", 11, 10, 3, 2}, Case{"indexed_binary", 3, 2, 2, 0},
                        Case{"hdf5", 2, 0, 1, 0}}) {
    WorkloadSpec spec;
    spec.format = c.format;
    spec.num_files_train = c.train_files;
    spec.num_subfolders_train = c.train_sub;
    spec.num_files_eval = c.eval_files;
    spec.num_subfolders_eval = c.eval_sub;
    spec.evaluation = c.eval_files > 0;
    spec.num_samples_per_file = 2;
    spec.record_length_bytes = 1024;
    EXPECT_EQ(GeneratedTree(spec), DlioLayout(c.format, spec.file_prefix, c.train_files, c.train_sub, c.eval_files,
                                              c.eval_sub))
        << c.format << " " << c.train_files << "/" << c.train_sub << " eval " << c.eval_files << "/" << c.eval_sub;
  }
}

}  // namespace
}  // namespace dlio
