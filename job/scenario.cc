#include "job/scenario.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "job/document.h"
#include "yaml-cpp/yaml.h"

namespace dlio {
namespace {

using workload_internal::AtLine;
using workload_internal::LineOf;

// One key of the file: its path as the errors name it, its node and the file's name.
struct At {
  const std::string& source;
  std::string key;
  YAML::Node node;
};

absl::Status Bad(const At& at, const std::string& why, const std::string& allowed) {
  std::string value = at.node.IsScalar() ? at.node.Scalar() : at.node.IsSequence() ? "[...]" : "{...}";
  if (at.node.IsNull()) value = "";
  return AtLine(at.source, LineOf(at.node),
                absl::InvalidArgumentError(absl::StrCat(at.key, ": '", value, "' ", why, "; expected ", allowed)));
}

// Keys of a mapping not in `allowed`: the first one, named with what is allowed.
absl::Status CheckKeys(const At& at, const std::vector<std::string>& allowed) {
  if (!at.node.IsMap()) return Bad(at, "is not a mapping", absl::StrCat("a mapping of ", absl::StrJoin(allowed, ", ")));
  for (auto it = at.node.begin(); it != at.node.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "";
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    return AtLine(at.source, LineOf(it->first),
                  absl::InvalidArgumentError(absl::StrCat(at.key, at.key.empty() ? "" : ".", k,
                                                          ": unknown key; expected one of ",
                                                          absl::StrJoin(allowed, ", "))));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Text(const At& at, const std::string& allowed) {
  if (!at.node.IsScalar() || at.node.Scalar().empty()) return Bad(at, "is not a non-empty string", allowed);
  return at.node.Scalar();
}

absl::StatusOr<double> Seconds(const At& at, bool zero_ok) {
  const std::string allowed = zero_ok ? absl::StrCat("a number of seconds >= 0 and <= ", kMaxScenarioSeconds)
                                      : absl::StrCat("a number of seconds > 0 and <= ", kMaxScenarioSeconds);
  double v = 0;
  if (!at.node.IsScalar() || !YAML::convert<double>::decode(at.node, v) || !std::isfinite(v)) {
    return Bad(at, "is not a number", allowed);
  }
  if (v < 0 || (!zero_ok && v == 0) || v > kMaxScenarioSeconds) return Bad(at, "is out of range", allowed);
  return v;
}

absl::StatusOr<int> Count(const At& at, int min, int max) {
  const std::string allowed = absl::StrCat("an integer from ", min, " to ", max);
  int64_t v = 0;
  if (!at.node.IsScalar() || !YAML::convert<int64_t>::decode(at.node, v)) return Bad(at, "is not an integer", allowed);
  if (v < min || v > max) return Bad(at, "is out of range", allowed);
  return static_cast<int>(v);
}

absl::StatusOr<std::vector<std::string>> Strings(const At& at, const std::string& allowed) {
  if (!at.node.IsSequence()) return Bad(at, "is not a list", allowed);
  std::vector<std::string> out;
  for (size_t i = 0; i < at.node.size(); ++i) {
    absl::StatusOr<std::string> s = Text(At{at.source, absl::StrCat(at.key, "[", i, "]"), at.node[i]}, allowed);
    if (!s.ok()) return s.status();
    out.push_back(*std::move(s));
  }
  return out;
}

bool IsMemberName(const std::string& s) {
  if (s.empty() || s.size() > 64 || s == "." || s == "..") return false;
  for (const char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

absl::Status ParsePlacement(const At& at, ScenarioPlacement* p) {
  if (absl::Status s = CheckKeys(at, {"agents", "accelerators", "agent_names", "share"}); !s.ok()) return s;
  for (auto it = at.node.begin(); it != at.node.end(); ++it) {
    const std::string k = it->first.Scalar();
    const At v{at.source, absl::StrCat(at.key, ".", k), it->second};
    absl::Status s;
    if (k == "agents" || k == "accelerators") {
      absl::StatusOr<int> n = Count(v, 0, 4096);
      if (n.ok()) (k == "agents" ? p->agents : p->accelerators) = *n;
      s = n.status();
    } else if (k == "agent_names") {
      absl::StatusOr<std::vector<std::string>> names = Strings(v, "a list of agent names");
      if (names.ok()) p->agent_names = *std::move(names);
      s = names.status();
    } else if (!v.node.IsScalar() || !YAML::convert<bool>::decode(v.node, p->share)) {
      s = Bad(v, "is not a boolean", "true or false");
    }
    if (!s.ok()) return s;
  }
  if (!p->agent_names.empty() && p->agents > 0 && p->agents != static_cast<int>(p->agent_names.size())) {
    return Bad(At{at.source, at.key + ".agents", at.node["agents"]},
               absl::StrCat("differs from the ", p->agent_names.size(), " agent_names"),
               "the number of agent_names, or no agents key");
  }
  return absl::OkStatus();
}

// The member's timing keys and its overrides; `k` is the key, `v` its value.
absl::Status ParseMemberKey(const std::string& k, const At& v, ScenarioMember* m) {
  if (k == "name") {
    absl::StatusOr<std::string> s = Text(v, "a member name");
    if (s.ok() && !IsMemberName(*s)) {
      return Bad(v, "is not a member name", "letters, digits, '_', '-' and '.', at most 64 characters");
    }
    if (s.ok()) m->name = *s;
    return s.status();
  }
  if (k == "workload") {
    absl::StatusOr<std::string> s = Text(v, "a workload file's path or a shipped workload's name");
    if (s.ok()) m->workload = *s;
    return s.status();
  }
  if (k == "inline") {
    if (!v.node.IsMap() || v.node.size() == 0) {
      return Bad(v, "is not a mapping", "a workload's keys (model, dataset, ...)");
    }
    YAML::Emitter e;
    e << v.node;
    m->inline_yaml = std::string(e.c_str()) + "\n";
    return absl::OkStatus();
  }
  if (k == "overrides") {
    absl::StatusOr<std::vector<std::string>> o = Strings(v, "a list of overrides KEY=VALUE");
    if (o.ok()) m->overrides = *std::move(o);
    return o.status();
  }
  if (k == "placement") return ParsePlacement(v, &m->placement);
  if (k == "start" || k == "repeat_every") {
    absl::StatusOr<double> s = Seconds(v, /*zero_ok=*/k == "start");
    if (s.ok()) (k == "start" ? m->start_s : m->repeat_every_s) = *s;
    return s.status();
  }
  if (k == "times") {
    absl::StatusOr<int> n = Count(v, 1, kMaxScenarioRuns);
    if (n.ok()) m->times = *n;
    return n.status();
  }
  absl::StatusOr<std::string> s = Text(v, "another member's name");  // until
  if (s.ok()) m->until = *s;
  return s.status();
}

absl::StatusOr<ScenarioMember> ParseMember(const std::string& source, const std::string& key, const YAML::Node& node) {
  const At at{source, key, node};
  if (absl::Status s = CheckKeys(at, {"name", "workload", "inline", "overrides", "placement", "start", "repeat_every",
                                      "times", "until"});
      !s.ok()) {
    return s;
  }
  ScenarioMember m;
  m.line = LineOf(node);
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string k = it->first.Scalar();
    if (absl::Status s = ParseMemberKey(k, At{source, absl::StrCat(key, ".", k), it->second}, &m); !s.ok()) return s;
  }
  const auto missing = [&](const std::string& what) {
    return AtLine(source, m.line, absl::InvalidArgumentError(absl::StrCat(key, ": ", what)));
  };
  if (m.name.empty()) return missing("no name; expected name: a member name (its results folder)");
  if (m.workload.empty() == m.inline_yaml.empty()) {
    return missing("expected exactly one of workload (a file's path or a shipped workload's name) or inline (a "
                   "workload's keys)");
  }
  if (m.repeats() && m.until.empty() && m.times == 0) {
    return missing("repeat_every without until or times; expected until: <member> or times: N (a member never "
                   "repeats forever)");
  }
  if (m.times > 0 && !m.repeats()) return missing("times without repeat_every; expected repeat_every: SECONDS");
  return m;
}

// Every `until` names another member, and none leads round in a circle.
absl::Status CheckUntil(const ScenarioSpec& spec) {
  std::vector<std::string> names;
  for (const ScenarioMember& m : spec.members) names.push_back(m.name);
  for (size_t i = 0; i < spec.members.size(); ++i) {
    const ScenarioMember& m = spec.members[i];
    if (m.until.empty()) continue;
    const std::string key = absl::StrCat("scenario.members[", i, "].until");
    const auto bad = [&](const std::string& why) {
      return AtLine(spec.source, m.line,
                    absl::InvalidArgumentError(absl::StrCat(key, ": '", m.until, "' ", why, "; expected one of ",
                                                            absl::StrJoin(names, ", "), " but '", m.name,
                                                            "', without a circle")));
    };
    if (m.until == m.name) return bad("is the member itself");
    std::set<std::string> seen{m.name};
    for (const ScenarioMember* t = spec.Find(m.until); t != nullptr; t = spec.Find(t->until)) {
      if (!seen.insert(t->name).second) return bad("leads round in a circle of until");
      if (t->until.empty()) break;
    }
    if (spec.Find(m.until) == nullptr) return bad("is not a member");
  }
  return absl::OkStatus();
}

absl::Status ParseMembers(const YAML::Node& node, ScenarioSpec* spec) {
  const At at{spec->source, "scenario.members", node};
  const std::string allowed = absl::StrCat("a list of 1 to ", kMaxScenarioMembers, " members");
  if (!node.IsSequence()) return Bad(at, "is not a list", allowed);
  if (node.size() == 0 || node.size() > static_cast<size_t>(kMaxScenarioMembers)) {
    return Bad(at, absl::StrCat("has ", node.size(), " members"), allowed);
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string key = absl::StrCat("scenario.members[", i, "]");
    absl::StatusOr<ScenarioMember> m = ParseMember(spec->source, key, node[i]);
    if (!m.ok()) return m.status();
    if (spec->Find(m->name) != nullptr) {
      return Bad(At{spec->source, key + ".name", node[i]["name"]}, "is taken by another member",
                 "a name of its own (its results folder)");
    }
    spec->members.push_back(*std::move(m));
  }
  return CheckUntil(*spec);
}

}  // namespace

const ScenarioMember* ScenarioSpec::Find(const std::string& n) const {
  for (const ScenarioMember& m : members) {
    if (m.name == n) return &m;
  }
  return nullptr;
}

bool IsScenarioText(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    return root.IsMap() && root["scenario"].IsDefined();
  } catch (const YAML::Exception&) {
    return false;
  }
}

absl::StatusOr<ScenarioSpec> ParseScenario(const std::string& text, const std::string& source) {
  absl::StatusOr<YAML::Node> root = workload_internal::ParseYaml(text, source);
  if (!root.ok()) return root.status();
  ScenarioSpec spec;
  spec.source = source;
  if (!root->IsMap() || !(*root)["scenario"].IsDefined()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no top-level key scenario; expected scenario: {name, "
                                                   "description, members}"));
  }
  if (absl::Status s = CheckKeys(At{source, "", *root}, {"scenario"}); !s.ok()) return s;
  const YAML::Node top = (*root)["scenario"];
  if (absl::Status s = CheckKeys(At{source, "scenario", top}, {"name", "description", "members"}); !s.ok()) return s;
  for (const char* k : {"name", "description"}) {
    if (!top[k].IsDefined()) continue;
    absl::StatusOr<std::string> v = Text(At{source, absl::StrCat("scenario.", k), top[k]}, "a string");
    if (!v.ok()) return v.status();
    (std::string(k) == "name" ? spec.name : spec.description) = *v;
  }
  if (!spec.name.empty() && !IsMemberName(spec.name)) {
    return Bad(At{source, "scenario.name", top["name"]}, "is not a name",
               "letters, digits, '_', '-' and '.', at most 64 characters (the scenario's folder)");
  }
  if (!top["members"].IsDefined()) {
    return AtLine(source, LineOf(top),
                  absl::InvalidArgumentError("scenario.members: missing; expected a list of members"));
  }
  if (absl::Status s = ParseMembers(top["members"], &spec); !s.ok()) return s;
  return spec;
}

}  // namespace dlio
