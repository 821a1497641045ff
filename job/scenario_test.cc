#include "job/scenario.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ScenarioSpec> Parse(const std::string& text) { return ParseScenario(text, "s.yaml"); }

// The error of `text`, which must be refused.
std::string Error(const std::string& text) {
  absl::StatusOr<ScenarioSpec> s = Parse(text);
  EXPECT_FALSE(s.ok()) << text;
  return s.ok() ? "" : std::string(s.status().message());
}

constexpr const char* kFull = R"(scenario:
  name: mix
  description: training beside checkpoint bursts
  members:
    - name: train
      workload: unet3d_h100
      overrides: [dataset.num_files_train=8, train.epochs=2]
      placement: {agents: 1, accelerators: 4}
    - name: ckpt
      inline:
        model: {name: llama3_8b}
        workflow: {checkpoint: true}
      placement: {agent_names: [a1, a2], share: true}
      start: 2.5
      repeat_every: 60
      until: train
    - name: gen
      workload: configs/gen.yaml
      repeat_every: 5
      times: 3
)";

TEST(Scenario, ParsesMembersPlacementAndTiming) {
  absl::StatusOr<ScenarioSpec> s = Parse(kFull);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "mix");
  EXPECT_EQ(s->description, "training beside checkpoint bursts");
  ASSERT_EQ(s->members.size(), 3u);
  const ScenarioMember& train = s->members[0];
  EXPECT_EQ(train.workload, "unet3d_h100");
  EXPECT_THAT(train.overrides, ::testing::ElementsAre("dataset.num_files_train=8", "train.epochs=2"));
  EXPECT_EQ(train.placement.agents, 1);
  EXPECT_EQ(train.placement.accelerators, 4);
  EXPECT_EQ(train.start_s, 0);
  EXPECT_FALSE(train.repeats());
  EXPECT_EQ(train.line, 5);
  const ScenarioMember& ckpt = s->members[1];
  EXPECT_TRUE(ckpt.workload.empty());
  EXPECT_THAT(ckpt.inline_yaml, HasSubstr("llama3_8b"));
  EXPECT_THAT(ckpt.placement.agent_names, ::testing::ElementsAre("a1", "a2"));
  EXPECT_TRUE(ckpt.placement.share);
  EXPECT_DOUBLE_EQ(ckpt.start_s, 2.5);
  EXPECT_DOUBLE_EQ(ckpt.repeat_every_s, 60);
  EXPECT_EQ(ckpt.until, "train");
  EXPECT_EQ(s->members[2].times, 3);
  EXPECT_EQ(s->Find("gen"), &s->members[2]);
  EXPECT_EQ(s->Find("nope"), nullptr);
}

TEST(Scenario, DetectedByItsTopLevelKey) {
  EXPECT_TRUE(IsScenarioText(kFull));
  EXPECT_FALSE(IsScenarioText("model: {name: unet3d}\nworkflow: {train: true}\n"));
  EXPECT_FALSE(IsScenarioText("workload:\n  scenario: 1\n"));
  EXPECT_FALSE(IsScenarioText("[unclosed"));
  EXPECT_FALSE(IsScenarioText("- a\n- b\n"));
}

// Every bad key or value: one line naming the key (with the file and line) and what is allowed.
TEST(Scenario, EveryBadKeyOrValueIsOneLineNamingItAndWhatIsAllowed) {
  const std::string head = "scenario:\n  members:\n    - name: a\n      workload: w\n";
  const struct {
    std::string text;
    std::string want;
  } cases[] = {
      {"model: {}\n", "no top-level key scenario; expected scenario:"},
      {"scenario: {members: [{name: a, workload: w}]}\nmodel: 1\n", "model: unknown key; expected one of scenario"},
      {"scenario: {members: [], nme: x}\n", "scenario.nme: unknown key; expected one of name, description, members"},
      {"scenario: {name: x}\n", "scenario.members: missing; expected a list of members"},
      {"scenario: {members: []}\n", "scenario.members: '[...]' has 0 members; expected a list of 1 to 64 members"},
      {"scenario: {name: 'a/b', members: [{name: a, workload: w}]}\n", "scenario.name: 'a/b' is not a name"},
      {head + "      stat: 3\n", "s.yaml:5: scenario.members[0].stat: unknown key; expected one of name, workload,"},
      {head + "      start: -1\n",
       "scenario.members[0].start: '-1' is out of range; expected a number of seconds >= 0"},
      {head + "      start: soon\n", "scenario.members[0].start: 'soon' is not a number; expected a number of seconds"},
      {head + "      start: .nan\n", "scenario.members[0].start: '.nan' is not a number"},
      {head + "      start: 1e9\n", "scenario.members[0].start: '1e9' is out of range"},
      {head + "      repeat_every: 0\n      times: 2\n",
       "scenario.members[0].repeat_every: '0' is out of range; expected a number of seconds > 0"},
      {head + "      repeat_every: 5\n", "s.yaml:3: scenario.members[0]: repeat_every without until or times"},
      {head + "      times: 2\n", "scenario.members[0]: times without repeat_every"},
      {head + "      repeat_every: 5\n      times: 0\n", "scenario.members[0].times: '0' is out of range; expected an "
                                                          "integer from 1 to 10000"},
      {head + "      until: a\n", "scenario.members[0].until: 'a' is the member itself; expected one of a but 'a'"},
      {head + "      until: b\n", "scenario.members[0].until: 'b' is not a member"},
      {head + "      overrides: x=1\n", "scenario.members[0].overrides: 'x=1' is not a list; expected a list of "
                                        "overrides KEY=VALUE"},
      {head + "      inline: {model: x}\n", "scenario.members[0]: expected exactly one of workload"},
      {head + "      inline: 3\n", "scenario.members[0].inline: '3' is not a mapping"},
      {"scenario:\n  members:\n    - name: a\n", "scenario.members[0]: expected exactly one of workload"},
      {"scenario:\n  members:\n    - workload: w\n", "scenario.members[0]: no name; expected name:"},
      {"scenario:\n  members:\n    - {name: 'x y', workload: w}\n", "scenario.members[0].name: 'x y' is not a member "
                                                                   "name; expected letters, digits"},
      {head + "    - {name: a, workload: v}\n", "scenario.members[1].name: 'a' is taken by another member"},
      {head + "      placement: {agents: -1}\n", "scenario.members[0].placement.agents: '-1' is out of range; "
                                                 "expected an integer from 0 to 4096"},
      {head + "      placement: {accelerators: two}\n", "placement.accelerators: 'two' is not an integer"},
      {head + "      placement: {nodes: 2}\n", "scenario.members[0].placement.nodes: unknown key; expected one of "
                                               "agents, accelerators, agent_names, share"},
      {head + "      placement: {share: maybe}\n", "placement.share: 'maybe' is not a boolean; expected true or false"},
      {head + "      placement: {agent_names: a1}\n", "placement.agent_names: 'a1' is not a list"},
      {head + "      placement: {agents: 3, agent_names: [x, y]}\n", "placement.agents: '3' differs from the 2 "
                                                                     "agent_names"},
      {head + "      placement: 4\n", "scenario.members[0].placement: '4' is not a mapping"},
  };
  for (const auto& c : cases) {
    const std::string e = Error(c.text);
    EXPECT_THAT(e, HasSubstr(c.want)) << c.text;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(Scenario, UntilMayNotLeadRoundInACircle) {
  const std::string e = Error(
      "scenario:\n  members:\n    - {name: a, workload: w, until: b}\n    - {name: b, workload: w, until: c}\n"
      "    - {name: c, workload: w, until: a}\n");
  EXPECT_THAT(e, HasSubstr("scenario.members[0].until: 'b' leads round in a circle of until"));
  // A chain that ends is fine.
  EXPECT_TRUE(Parse("scenario:\n  members:\n    - {name: a, workload: w, until: b}\n"
                    "    - {name: b, workload: w, until: c}\n    - {name: c, workload: w}\n")
                  .ok());
}

TEST(Scenario, YamlSyntaxErrorsNameTheFile) {
  EXPECT_THAT(Error("scenario: [unclosed\n"), HasSubstr("s.yaml"));
}

}  // namespace
}  // namespace dlio
