#!/usr/bin/env python3
"""The rooms and their dependency order, as docs/architecture.md's "Rooms" table states them, hold in the code.

The table has one row per room (a top-level folder that is one CMake library target of the same name):
    | `room/` | may use | holds |
where "may use" lists the rooms (without slashes) that the room's production code may include and link, or "-".
Checks:
  - the allowed edges have no circle, and every row's rooms come before it in the table (nothing runs upward);
  - every folder holding production C++ (tests/, bench/ and fuzz/ aside) is a room of the table, and each room exists;
  - every `#include "X/..."` of a production file (not *_test.cc) of room R names R itself or a room R may use
    ("dlio/v1/..." is proto/'s generated and own code);
  - every `dlio::X` linked by a non-test target of R's CMakeLists.txt is R's own or a room R may use;
  - README.md's "## Source layout" table names exactly the rooms of the table.
It checks itself first: an include of a higher room from base/ must be reported.

  room_graph.py --source SRC
Exit status: 0 when the code keeps to the table, 1 otherwise (each offending include or link named on one line).
"""
import argparse
import pathlib
import re
import subprocess
import sys

OUTSIDE = {"tests", "bench", "fuzz", "node_modules", "build", "cmake", "scripts", "docs", "configs", "dashboards",
           "helm", "slurm"}
# dlio:: targets that are not named after their room.
TARGET_ROOM = {"agent_core": "agent", "agent_grpc": "agent", "coordinator_core": "coordinator",
               "coordinator_grpc": "coordinator", "alloc_counter": "base"}


def read_table(text):
    """{room: set(may use)} in table order, from the first table under a '## Rooms' heading."""
    section = re.search(r"^## Rooms\b(.*?)(?=^## )", text, re.S | re.M)
    if not section:
        sys.exit("room_graph: docs/architecture.md has no '## Rooms' section")
    rooms = {}
    for line in section.group(1).splitlines():
        m = re.match(r"^\|\s*`([a-z_]+)/`\s*\|([^|]*)\|", line)
        if not m:
            continue
        uses = {u.strip().strip("`").rstrip("/") for u in m.group(2).split(",")}
        rooms[m.group(1)] = {u for u in uses if u and u not in ("-", "—")}
    if not rooms:
        sys.exit("room_graph: the '## Rooms' section of docs/architecture.md has no `room/` rows")
    return rooms


def order_problems(rooms):
    problems, seen = [], set()
    for room, uses in rooms.items():
        for u in sorted(uses):
            if u not in rooms:
                problems.append(f"docs/architecture.md: {room}/ may use {u}/, which is not a room of the table")
            elif u not in seen:
                problems.append(f"docs/architecture.md: {room}/ may use {u}/, which comes after it (upward or a circle)")
        seen.add(room)
    return problems


def include_problems(room, path, text, rooms):
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        inc = m.group(1)
        target = "proto" if inc.startswith("dlio/v1/") else inc.split("/", 1)[0] if "/" in inc else None
        if target is None or target not in rooms or target == room:
            continue
        if target not in rooms[room]:
            problems.append(f"{path}:{n}: {room}/ includes \"{inc}\" but may use only "
                            f"{', '.join(sorted(rooms[room])) or 'nothing'}")
    return problems


def link_problems(room, path, text, rooms):
    problems = []
    for m in re.finditer(r"target_link_libraries\(\s*([\w-]+)([^)]*)\)", text):
        if m.group(1).endswith("_test"):
            continue
        for t in re.findall(r"dlio::(\w+)", m.group(2)):
            target = TARGET_ROOM.get(t, t)
            if target != room and target in rooms and target not in rooms[room]:
                problems.append(f"{path}: {m.group(1)} links dlio::{t} but {room}/ may use only "
                                f"{', '.join(sorted(rooms[room])) or 'nothing'}")
    return problems


def readme_problems(text, rooms):
    section = re.search(r"^## Source layout\b(.*?)(?=^## )", text, re.S | re.M)
    if not section:
        return ["README.md has no '## Source layout' section"]
    listed = set(re.findall(r"^\|\s*`([a-z_]+)/`\s*\|", section.group(1), re.M))
    return [f"README.md's source layout lists {r}/, which is not a room" for r in sorted(listed - set(rooms))] + \
           [f"README.md's source layout does not list room {r}/" for r in sorted(set(rooms) - listed)]


def code_folders(src):
    """Top-level folders holding C++ that git tracks (build folders such as build-release/ hold generated .cc)."""
    try:
        out = subprocess.run(["git", "ls-files", "*.cc", "*.h"], cwd=src, capture_output=True, text=True,
                             check=True).stdout.split()
        return {f.split("/", 1)[0] for f in out if "/" in f}
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked tarball): every folder
        return {p.name for p in src.iterdir() if p.is_dir() and not p.name.startswith(".") and any(p.rglob("*.cc"))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    src = pathlib.Path(ap.parse_args().source)
    rooms = read_table((src / "docs/architecture.md").read_text())

    # Self-check: the checker must see an upward include.
    if not include_problems("base", "base/x.cc", '#include "agent/loader.h"\n', {"base": set(), "agent": {"base"}}):
        sys.exit("room_graph: self-check failed: an upward include was not reported")

    problems = order_problems(rooms)
    folders = {f for f in code_folders(src) if f not in OUTSIDE}
    for f in sorted(folders - set(rooms)):
        problems.append(f"{f}/ holds C++ but is not a room of docs/architecture.md's table")
    for r in sorted(set(rooms) - {p.name for p in src.iterdir() if p.is_dir()}):
        problems.append(f"docs/architecture.md names room {r}/, which does not exist")
    for room in rooms:
        base = src / room
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if p.suffix not in (".cc", ".h") or p.name.endswith("_test.cc"):
                continue
            problems += include_problems(room, p.relative_to(src), p.read_text(errors="replace"), rooms)
        for cm in sorted(base.rglob("CMakeLists.txt")):
            problems += link_problems(room, cm.relative_to(src), cm.read_text(), rooms)
    problems += readme_problems((src / "README.md").read_text(), rooms)
    for p in problems:
        print(p)
    print(f"room_graph: {len(rooms)} rooms, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
