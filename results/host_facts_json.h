// Host facts in the results (issue 25 item 2; docs/results.md "Host facts"): a RunHostFacts (base/host_facts.h) as
// JSON, as it travels from an agent to the coordinator (RankResult.host_facts) and as it is stored with the run
// (<agent>_host_facts.json: the facts at the job's start and at its end, and what changed between them in one line).
//
// On the wire an agent sends {"start": facts} with its first phase of a job and {"end": facts} after every phase
// whose facts differ from the ones it sent last (so "end" is the latest that differed; none at all: the end is the
// start). MergeHostFactsWire keeps the first start and the latest end.
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>

#include "base/host_facts.h"
#include "nlohmann/json.hpp"

namespace dlio {

// {"hostname", "kernel", "os_release": {...}, "cpu_model", "memory_bytes",
// "cgroup_memory_limit_bytes", "nics": [{"name", "speed_mbps" (null unknown), "mtu", "state"}], "sysctl": {...},
// "environment": {...} (secrets "***"), "drives": [{"name", "kind", "vendor", "model", "size_bytes", "rotational"
// (true, false, null unknown), "transport"}], "mounts": [{"mount_point", "fs_type", "source"}], "data_root":
// {"path", "mount_point", "fs_type"}}.
nlohmann::json RunHostFactsJson(const RunHostFacts& f);

// What differs from `start` to `end` in one line ("sysctl vm.swappiness 60 -> 10; mount /mnt/x (nfs4) added"): the
// kernel, sysctl values, environment variables (names only for masked ones), drives (by name and size) and mounts
// (by mount point, type and source); at most 8 items, then "and N more". "" when nothing did.
std::string HostFactsChanges(const nlohmann::json& start, const nlohmann::json& end);

// Folds one phase's wire text into `into` ({"start", "end"}): the first start kept, a later end replacing the
// earlier. Malformed text (a broken or newer agent) is ignored: the run's results stand without it.
void MergeHostFactsWire(const std::string& text, nlohmann::json* into);

// <agent>_host_facts.json's object: {"agent", "start", "end" (the start when no end came), "changed" (the one line,
// "" when nothing changed)}.
nlohmann::json HostFactsFileJson(const std::string& agent, const nlohmann::json& merged);

}  // namespace dlio
