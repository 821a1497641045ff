#include "client/loaded_job.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 8 files of one sample, batch 4: one step per epoch on one rank, none on 4 ranks (plan/preflight.h).
constexpr char kJob[] = R"(
dataset: {format: npz, num_files_train: 8, num_samples_per_file: 1, record_length_bytes: 1024}
reader: {batch_size: 4}
train: {epochs: 1, computation_time: 0.01}
)";

// A job file of its own in the test's temporary folder, removed at the end.
class JobFile {
 public:
  explicit JobFile(const std::string& text)
      : path_((fs::path(::testing::TempDir()) /
               ("loaded_job_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml"))
                  .string()) {
    std::ofstream(path_) << text;
  }
  ~JobFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LoadedJob, HoldsTheTextTheOverridesAndTheSpecParsedFromThem) {
  JobFile f(kJob);
  absl::StatusOr<LoadedJob> job = LoadedJob::Load(f.path(), {"train.epochs=3"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->path(), f.path());
  EXPECT_EQ(job->text(), kJob);
  EXPECT_THAT(job->overrides(), ElementsAre("train.epochs=3"));
  EXPECT_EQ(job->spec().epochs, 3);
  EXPECT_EQ(job->spec().num_files_train, 8);
}

// A job file is read once per command: what is derived from the LoadedJob never looks at the file again, so a file
// changed or removed after the load changes nothing (and the text submitted is the text that was checked).
TEST(LoadedJob, EverythingDerivedFromItUsesTheTextReadOnce) {
  absl::StatusOr<LoadedJob> job;
  {
    JobFile f(kJob);
    job = LoadedJob::Load(f.path(), {});
    ASSERT_TRUE(job.ok()) << job.status();
    std::ofstream(f.path()) << "dataset: {num_files_train: -1}\n";  // what a second read would see
  }
  ASSERT_FALSE(fs::exists(job->path()));
  absl::StatusOr<LoadedJob> run = job->WithOverrides({"train.seed=7"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->text(), kJob);
  EXPECT_EQ(run->spec().num_files_train, 8);
  EXPECT_EQ(run->spec().seed, 7);
  EXPECT_TRUE(CheckPreRun(*job, JobWorld{1, 1}).ok());
  const JobRequest request = SubmissionOf(*run, JobPlacement{}, /*trace=*/false);
  EXPECT_EQ(request.workload_yaml, kJob);
  // --explain of `run` on its local fleet, from the held job.
  LoadOptions plan_only;
  plan_only.plan_only = true;
  absl::StatusOr<LoadedJob> plan = LoadedJob::FromText("job.yaml", kJob, {}, plan_only);
  ASSERT_TRUE(plan.ok()) << plan.status();
  SubmitOptions opt;
  opt.client.json = true;
  const LocalFleetShape local{1, 1, uint64_t{1} << 30};
  std::ostringstream out;
  EXPECT_EQ(ExplainJobPlan(opt, *plan, &local, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("\"runnable\": true"));
}

TEST(LoadedJob, WithOverridesAppendsAfterItsOwnAndKeepsTheOptions) {
  LoadOptions strict;
  strict.strict = true;
  absl::StatusOr<LoadedJob> job = LoadedJob::FromText("job.yaml", kJob, {"train.epochs=2"}, strict);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<LoadedJob> run = job->WithOverrides({"train.epochs=4", "train.seed=9"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_THAT(run->overrides(), ElementsAre("train.epochs=2", "train.epochs=4", "train.seed=9"));
  EXPECT_EQ(run->spec().epochs, 4);
  EXPECT_TRUE(run->options().strict);
  EXPECT_EQ(run->path(), "job.yaml");
}

// Every load error is bad input (exit 2), one line naming the file or the key.
TEST(LoadedJob, ErrorsAreInvalidArgumentNamingTheFileOrTheKey) {
  absl::StatusOr<LoadedJob> missing = LoadedJob::Load("/nonexistent/job.yaml", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/job.yaml"));
  EXPECT_EQ(ExitStatusOf(missing.status()), kExitBadInput);

  absl::StatusOr<LoadedJob> bad = LoadedJob::FromText("job.yaml", kJob, {"dataset.num_files_train=-1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("dataset.num_files_train"));

  absl::StatusOr<LoadedJob> job = LoadedJob::FromText("job.yaml", kJob, {});
  ASSERT_TRUE(job.ok());
  absl::StatusOr<LoadedJob> run = job->WithOverrides({"dataset.num_file_train=3"});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("dataset.num_files_train"));  // the nearest key
}

TEST(LoadSubmission, LoadsTheJobThenChecksThePlacementFlags) {
  JobFile f(kJob);
  SubmitOptions opt;
  opt.job_path = f.path();
  opt.overrides = {"train.epochs=2"};
  absl::StatusOr<LoadedJob> job = LoadSubmission(opt, /*plan_only=*/false);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().epochs, 2);
  opt.agents = -1;
  absl::StatusOr<LoadedJob> refused = LoadSubmission(opt, /*plan_only=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("--agents"));
}

// The pre-run check is one status of several lines: each refusal, then the fleet (what `run` and `submit` print).
TEST(CheckPreRun, RefusalsThenTheFleetAsOneInvalidArgument) {
  absl::StatusOr<LoadedJob> job = LoadedJob::FromText("job.yaml", kJob, {});
  ASSERT_TRUE(job.ok());
  const absl::Status s = CheckPreRun(*job, JobWorld{2, 2});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string text(s.message());
  EXPECT_THAT(text, HasSubstr("\nrefused before anything ran, on " + DescribeWorld(JobWorld{2, 2}) +
                              " (--explain shows the plan)"));
  EXPECT_EQ(text.back(), ')');
}

TEST(SubmissionOf, TheJobAsLoadedWithTheTraceOverrideLast) {
  absl::StatusOr<LoadedJob> job = LoadedJob::FromText("dir/job.yaml", kJob, {"train.epochs=2"});
  ASSERT_TRUE(job.ok());
  const JobRequest r = SubmissionOf(*job, JobPlacement{2, 4, -5, -1.0, {}, false}, /*trace=*/true);
  EXPECT_EQ(r.workload_yaml, kJob);
  EXPECT_THAT(r.overrides, ElementsAre("train.epochs=2", "dlio_ext.trace=true"));
  EXPECT_EQ(r.source_name, "dir/job.yaml");
  EXPECT_EQ(r.agents, 2);
  EXPECT_EQ(r.accelerators_per_agent, 4);
  EXPECT_EQ(r.wait_for_agents_s, 0);
  EXPECT_EQ(r.barrier_timeout_s, 0.0);
  EXPECT_THAT(SubmissionOf(*job, JobPlacement{}, false).overrides, ElementsAre("train.epochs=2"));
}

}  // namespace
}  // namespace dlio
