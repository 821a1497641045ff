#!/usr/bin/env python3
"""DLIO_TEST_COMPILE_OPTIONS (CMakeLists.txt) reach the test sources and nothing else: read from the build folder's
compile_commands.json and CMakeCache.txt,
  - every unit test source (a room's *_test.cc) and every process test source (tests/*.cc, which link the harness)
    is compiled with the options, after the build type's flags (so that, e.g., -g0 wins over -g);
  - no other source (the rooms, the mains, bench/ programs, generated code) gets them: what is tested is compiled
    as it ships.
  test_compile_options.py --source SRC --build BUILD_DIR
Exit status: 0 when both hold (or the options are empty), 1 otherwise (each wrong source named on one line).
"""
import argparse
import json
import os
import re
import shlex
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    src = os.path.realpath(args.source)
    cache = open(os.path.join(args.build, "CMakeCache.txt")).read()
    m = re.search(r"^DLIO_TEST_COMPILE_OPTIONS:[A-Z]*=(.*)$", cache, re.M)
    options = m.group(1).split(";") if m and m.group(1) else []
    if not options:
        print("DLIO_TEST_COMPILE_OPTIONS is empty: nothing to check")
        return 0
    build_type = re.search(r"^CMAKE_BUILD_TYPE:[A-Z]*=(.*)$", cache, re.M).group(1).upper()
    type_flags = shlex.split(re.search(r"^CMAKE_CXX_FLAGS_%s:[A-Z]*=(.*)$" % build_type, cache, re.M).group(1))
    wrong, tests = [], 0
    for entry in json.load(open(os.path.join(args.build, "compile_commands.json"))):
        path = os.path.realpath(entry["file"])
        rel = os.path.relpath(path, src)
        argv = shlex.split(entry["command"])
        is_test = rel.endswith("_test.cc") or (rel.startswith("tests" + os.sep) and rel.endswith(".cc"))
        if rel.startswith(".."):  # generated code in the build folder
            is_test = False
        at = [i for i in range(len(argv) - len(options) + 1) if argv[i:i + len(options)] == options]
        last_type = max((i for i, a in enumerate(argv) if a in type_flags), default=-1)
        if is_test:
            tests += 1
            if not at or at[-1] < last_type:
                wrong.append("%s: a test source compiled without %s after the build type's flags" % (rel, " ".join(options)))
        elif at:
            wrong.append("%s: not a test source, but compiled with the test options %s" % (rel, " ".join(options)))
    for line in wrong:
        print(line, file=sys.stderr)
    print("%d test sources compiled with %s, the other sources without" % (tests, " ".join(options)))
    return 1 if wrong or tests == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
