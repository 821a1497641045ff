#include "client/render.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dlio {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

// The documented exit statuses (README, --help) of a step that failed, by the code CoordinatorClient gives it.
TEST(ExitStatusOf, FollowsTheStatusCode) {
  EXPECT_EQ(ExitStatusOf(absl::OkStatus()), kExitOk);
  EXPECT_EQ(ExitStatusOf(absl::InvalidArgumentError("x")), kExitBadInput);
  EXPECT_EQ(ExitStatusOf(absl::UnavailableError("x")), kExitUnreachable);
  EXPECT_EQ(ExitStatusOf(absl::DeadlineExceededError("x")), kExitUnreachable);
  EXPECT_EQ(ExitStatusOf(absl::UnimplementedError("x")), kExitUnreachable);
  EXPECT_EQ(ExitStatusOf(absl::UnauthenticatedError("x")), kExitRefused);
  EXPECT_EQ(ExitStatusOf(absl::NotFoundError("x")), kExitJobNotSucceeded);
  EXPECT_EQ(ExitStatusOf(absl::AbortedError("x")), kExitJobNotSucceeded);
  EXPECT_EQ(ExitStatusOf(absl::FailedPreconditionError("x")), kExitJobNotSucceeded);
  EXPECT_EQ(ExitStatusOf(absl::ResourceExhaustedError("x")), kExitJobNotSucceeded);
}

TEST(CallFailure, NamesTheCoordinatorWhenTheConnectionOrTheTokenIsTheCause) {
  const std::string at = "host:7543";
  EXPECT_EQ(CallFailure(absl::UnauthenticatedError("bad token"), at).message(),
            "refused by the coordinator at host:7543: bad token");
  EXPECT_EQ(CallFailure(absl::UnavailableError("Socket closed"), at).message(),
            "lost the coordinator at host:7543: Socket closed");
  EXPECT_EQ(CallFailure(absl::DeadlineExceededError("Deadline Exceeded"), at).message(),
            "lost the coordinator at host:7543: Deadline Exceeded");
  EXPECT_EQ(CallFailure(absl::UnimplementedError(""), at).message(),
            "the coordinator at host:7543 does not offer this call (an older build?)");
  EXPECT_EQ(CallFailure(absl::InvalidArgumentError("dataset.x: unknown key"), at).message(), "dataset.x: unknown key");
  EXPECT_EQ(CallFailure(absl::NotFoundError("no job j1"), at).message(), "no job j1");
  EXPECT_EQ(CallFailure(absl::Status(absl::StatusCode::kInternal, ""), at).message(), "gRPC error 13");
  // The code stays: the exit status follows from it.
  EXPECT_EQ(CallFailure(absl::UnauthenticatedError("x"), at).code(), absl::StatusCode::kUnauthenticated);
}

Verdict VerdictOf(VerdictStatus s) {
  Verdict v;
  v.status = s;
  return v;
}

TEST(ExitStatusOf, AJobThatRanToItsEnd) {
  JobOutcome o;
  o.state = JobState::kSucceeded;
  o.verdict = VerdictOf(VerdictStatus::kPass);
  EXPECT_EQ(ExitStatusOf(o), kExitOk);
  o.verdict = VerdictOf(VerdictStatus::kNotApplicable);
  EXPECT_EQ(ExitStatusOf(o), kExitOk);
  o.verdict = VerdictOf(VerdictStatus::kFail);
  EXPECT_EQ(ExitStatusOf(o), kExitBelowTarget);
  o.verdict = VerdictOf(VerdictStatus::kNotMeasured);
  EXPECT_EQ(ExitStatusOf(o), kExitNotMeasured);
  o.files.status = absl::AbortedError("--output: cannot create 'x'");
  EXPECT_EQ(ExitStatusOf(o), kExitJobNotSucceeded);
  o.files.status = absl::OkStatus();
  o.state = JobState::kFailed;
  EXPECT_EQ(ExitStatusOf(o), kExitJobNotSucceeded);
  o.refused = true;
  EXPECT_EQ(ExitStatusOf(o), kExitBadInput);
  o.state = JobState::kCancelled;
  o.refused = false;
  EXPECT_EQ(ExitStatusOf(o), kExitJobNotSucceeded);
}

TEST(ExitStatusOfJob, ZeroWhileItRunsThenAsItEnded) {
  JobInfoData i;
  i.record.state = JobState::kRunning;
  EXPECT_EQ(ExitStatusOfJob(i), kExitOk);
  i.record.state = JobState::kInterrupted;
  EXPECT_EQ(ExitStatusOfJob(i), kExitJobNotSucceeded);
  i.record.state = JobState::kSucceeded;
  i.verdict = VerdictOf(VerdictStatus::kFail);
  EXPECT_EQ(ExitStatusOfJob(i), kExitBelowTarget);
}

JobOutcome Succeeded() {
  JobOutcome o;
  o.job_id = "j1";
  o.state = JobState::kSucceeded;
  o.message = "job j1 succeeded";
  o.verdict = VerdictOf(VerdictStatus::kNotApplicable);
  EpochMetric e;
  e.epoch = 1;
  e.au_percent = 95.0;
  e.samples_per_second = 100.0;
  o.epochs = {e};
  o.mean = e;
  return o;
}

TEST(RenderOutcome, TextIsTheFinalLineTheTableTheFilesAndTheVerdict) {
  JobOutcome o = Succeeded();
  o.files.output = "out";
  o.files.count = 3;
  o.files.trace = "t.json";
  std::ostringstream out, err;
  EXPECT_EQ(RenderOutcome(o, "", /*json=*/false, out, err), kExitOk);
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("job j1 succeeded\n\nepoch ", 0), 0u) << text;
  EXPECT_THAT(text, HasSubstr("\nresults: 3 files in out\ntrace: t.json\nverdict: "));
  EXPECT_EQ(err.str(), "");
}

// Issue 26: the limit line follows the verdict line, on the terminal and in --json.
TEST(RenderOutcome, TheLimitLineFollowsTheVerdict) {
  JobOutcome o = Succeeded();
  o.verdict.limit_class = "storage";
  o.verdict.limit_line = "storage: ranks waited 41 % of each step for data";
  std::ostringstream out, err, jout, jerr;
  RenderOutcome(o, "", /*json=*/false, out, err);
  EXPECT_THAT(out.str(), HasSubstr("\nverdict: " + VerdictLine(o.verdict) +
                                   "\nlimit: storage: ranks waited 41 % of each step for data\n"));
  RenderOutcome(o, "", /*json=*/true, jout, jerr);
  EXPECT_EQ(json::parse(jout.str())["verdict"]["limit"]["class"], "storage");
}

TEST(RenderStatusAndResults, ShowTheLimitUnderTheVerdict) {
  JobInfoData i;
  i.record.id = "j1";
  i.record.state = JobState::kSucceeded;
  i.verdict = VerdictOf(VerdictStatus::kFail);
  i.verdict.au_percent = 60;
  i.verdict.limit_class = "page cache";
  i.verdict.limit_line = "page cache: 97 % of the 1.07 GB read came from memory";
  std::ostringstream status, results;
  RenderStatus(i, /*json_out=*/false, status);
  EXPECT_THAT(status.str(), HasSubstr("  limit:      page cache: 97 % of the 1.07 GB read came from memory\n"));
  RenderResults("j1", i, {"summary.json"}, "{}", "out", /*json_out=*/false, results);
  EXPECT_THAT(results.str(), HasSubstr("\nlimit: page cache: 97 % of the 1.07 GB read came from memory\n"));
}

TEST(RenderStatusAndList, ARunningJobShowsItsCompletedEpochsFigures) {
  JobInfoData i;
  i.record.id = "j1";
  i.record.state = JobState::kRunning;
  i.record.epochs_done = 2;
  i.record.epochs_total = 5;
  i.record.message = "job j1 running";
  i.completed_au_percent = 31.25;
  i.completed_samples_per_second = 812.4;
  std::ostringstream status, doc, list;
  RenderStatus(i, /*json_out=*/false, status);
  EXPECT_THAT(status.str(), HasSubstr("  epochs:     2 of 5 completed (AU 31.2 %, 812.4 samples/s)\n"));
  RenderStatus(i, /*json_out=*/true, doc);
  const json j = json::parse(doc.str());
  EXPECT_DOUBLE_EQ(j["completed_au_percent"].get<double>(), 31.25);
  EXPECT_DOUBLE_EQ(j["completed_samples_per_second"].get<double>(), 812.4);
  JobList jl;
  jl.jobs.push_back(i);
  RenderList(jl, false, list);
  EXPECT_THAT(list.str(), HasSubstr("epochs so far: AU 31.2 %, 812.4 samples/s; job j1 running"));
  // An unmeasured AU says so; none at all (no epoch ended yet) leaves the lines as they were.
  i.completed_au_percent.reset();
  status.str("");
  RenderStatus(i, false, status);
  EXPECT_THAT(status.str(), HasSubstr("completed (AU not measured, 812.4 samples/s)"));
  i.completed_samples_per_second.reset();
  status.str("");
  RenderStatus(i, false, status);
  EXPECT_THAT(status.str(), HasSubstr("  epochs:     2 of 5 completed\n"));
}

TEST(RenderOutcome, JsonIsOneDocument) {
  JobOutcome o = Succeeded();
  o.cancelled_by_signal = true;
  std::ostringstream out, err;
  EXPECT_EQ(RenderOutcome(o, "results", /*json=*/true, out, err), kExitOk);
  const json doc = json::parse(out.str());
  EXPECT_EQ(doc["job_id"], "j1");
  EXPECT_EQ(doc["state"], "succeeded");
  EXPECT_EQ(doc["exit_status"], 0);
  EXPECT_EQ(doc["epochs"].size(), 1u);
  EXPECT_EQ(doc["mean"]["au_percent"], 95.0);
  EXPECT_EQ(doc["results_dir"], "results/j1");  // nothing fetched: where the coordinator keeps them
  EXPECT_EQ(doc["cancelled_by_signal"], true);
  EXPECT_TRUE(doc.contains("verdict"));
}

// A fetch that failed: what was fetched before it is said, then the failure; no verdict line, no document.
TEST(RenderOutcome, AFetchThatFailedEndsItWithExitOne) {
  JobOutcome o = Succeeded();
  o.files.output = "out";
  o.files.count = 2;
  o.files.status = absl::AbortedError("--trace: job j1 left no trace (no phase with reads completed)");
  std::ostringstream out, err;
  EXPECT_EQ(RenderOutcome(o, "results", /*json=*/false, out, err), kExitJobNotSucceeded);
  EXPECT_THAT(out.str(), HasSubstr("results: 2 files in out\n"));
  EXPECT_THAT(out.str(), Not(HasSubstr("verdict:")));
  EXPECT_EQ(err.str(), "--trace: job j1 left no trace (no phase with reads completed)\n");
  std::ostringstream jout, jerr;
  EXPECT_EQ(RenderOutcome(o, "results", /*json=*/true, jout, jerr), kExitJobNotSucceeded);
  EXPECT_EQ(jout.str(), "");
}

TEST(RenderOutcome, AFailedJobSaysSoOnStderrAndKeepsItsCompletedEpochs) {
  JobOutcome o = Succeeded();
  o.state = JobState::kFailed;
  o.message = "job j1 failed: agent a0 lost";
  o.verdict = VerdictOf(VerdictStatus::kIncomplete);
  std::ostringstream out, err;
  EXPECT_EQ(RenderOutcome(o, "", /*json=*/false, out, err), kExitJobNotSucceeded);
  EXPECT_EQ(err.str(), "dlio-coordinator: job j1 failed: agent a0 lost\n");
  EXPECT_EQ(out.str().rfind("results of the completed epoch(s):\nepoch ", 0), 0u) << out.str();
}

// `list` shows the newest jobs it fetched; when the coordinator keeps older ones it says so (text) or sets "more"
// (JSON), and a complete list reads as before (issue 24 item 7: paged `list`).
TEST(RenderList, SaysWhenTheCoordinatorKeepsOlderJobsThanTheOnesShown) {
  JobList list;
  for (const char* id : {"20260101-000000-2-abcd", "20260101-000000-1-abcd"}) {
    JobInfoData j;
    j.record.id = id;
    j.record.state = JobState::kSucceeded;
    list.jobs.push_back(j);
  }
  std::ostringstream text, doc;
  RenderList(list, false, text);
  RenderList(list, true, doc);
  EXPECT_THAT(text.str(), Not(HasSubstr("the newest")));
  EXPECT_FALSE(json::parse(doc.str()).contains("more"));
  list.more = true;
  text.str("");
  doc.str("");
  RenderList(list, false, text);
  RenderList(list, true, doc);
  EXPECT_LT(text.str().find("20260101-000000-2-abcd"), text.str().find("20260101-000000-1-abcd")) << "as listed";
  EXPECT_THAT(text.str(), HasSubstr("\n(the newest 2 jobs; the coordinator keeps older ones: --limit N shows N, "
                                    "--limit 0 every one)\n\n0 agent(s) attached"));
  EXPECT_EQ(json::parse(doc.str())["more"], true);
  EXPECT_EQ(json::parse(doc.str())["jobs"].size(), 2u);
}

TEST(RenderDetached, TheJobIdAlone) {
  std::ostringstream text, doc;
  RenderDetached("j7", false, text);
  RenderDetached("j7", true, doc);
  EXPECT_EQ(text.str(), "j7\n");
  EXPECT_EQ(doc.str(), "{\"job_id\":\"j7\",\"state\":\"queued\"}\n");
}

TEST(SubmitView, WithoutStdoutOnlyTheCancelLinesAreShown) {
  std::ostringstream err;
  SubmitView view(nullptr, err, "host:1", /*tty=*/false);
  view.Submitted("j1");
  JobEventData e;
  e.phase_id = "train-epoch-1";
  e.message = "phase started";
  view.Progress(e);
  view.Cancelling("j1");
  view.CancelFailed("j1", absl::DeadlineExceededError("Deadline Exceeded"));
  view.Clear();
  EXPECT_EQ(err.str(),
            "\ninterrupted: cancelling job j1 on the coordinator\ncancelling job j1 failed: Deadline Exceeded\n");
}

TEST(SubmitView, TextShowsTheSubmissionAndTheMessages) {
  std::ostringstream out, err;
  SubmitView view(&out, err, "host:1", /*tty=*/false);
  view.Submitted("j1");
  JobEventData e;
  e.message = "phase generate started";
  view.Progress(e);
  EXPECT_EQ(out.str(), "job j1 submitted to host:1\nphase generate started\n");
}

JobInfoData CancelledJob(JobState state, const std::string& message) {
  JobInfoData i;
  i.record.id = "j1";
  i.record.state = state;
  i.record.message = message;
  i.record.agent_names = {"a0", "a1"};
  return i;
}

TEST(RenderCancel, ExitZeroOnlyWhenTheStopIsConfirmedOrThereWasNothingToStop) {
  std::ostringstream out;
  EXPECT_EQ(RenderCancel("j1", true,
                         CancelledJob(JobState::kCancelled,
                                      "job j1 cancelled during phase train-epoch-1; every agent stopped within 0.20 s"),
                         false, out),
            kExitOk);
  EXPECT_EQ(RenderCancel("j1", false, CancelledJob(JobState::kSucceeded, "job j1 succeeded"), false, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("had already ended (succeeded); nothing to cancel"));
}

TEST(RenderCancel, AgentsThatDidNotConfirmTheStopExitOneAndAreNamed) {
  // The job ended, but the coordinator's grace ran out for one agent: its message names it.
  std::ostringstream out;
  const std::string ended =
      "job j1 cancelled during phase train-epoch-1; agent(s) a1 did not confirm the stop within 2 s";
  EXPECT_EQ(RenderCancel("j1", true, CancelledJob(JobState::kCancelled, ended), false, out), kExitJobNotSucceeded);
  EXPECT_EQ(out.str(), ended + "\n");
  // The job has not ended within the client's wait: every agent of the job is unconfirmed.
  out.str("");
  EXPECT_EQ(RenderCancel("j1", true, CancelledJob(JobState::kRunning, "phase train-epoch-1 started"), false, out),
            kExitJobNotSucceeded);
  EXPECT_EQ(out.str(),
            "job j1: cancel requested; still running after 10 s; agent(s) a0, a1 did not confirm the stop\n");
  // --json says so too.
  out.str("");
  EXPECT_EQ(RenderCancel("j1", true, CancelledJob(JobState::kCancelled, ended), true, out), kExitJobNotSucceeded);
  const json doc = json::parse(out.str());
  EXPECT_EQ(doc["stop_confirmed"], false);
  EXPECT_EQ(doc["message"], ended);
}

}  // namespace
}  // namespace dlio
