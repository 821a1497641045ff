#!/usr/bin/env python3
"""A test's exit status is its verdict: proves it for every shell-driven test of the suite.

For each shell test (every tests/**/*.sh except sourced libraries (lib.sh) and fixtures, plus every shell script a
CTest runs, e.g. bench/fleet.sh), a copy with `exit 7` inserted after its last top-level `trap` line (else after the
last line that sources its helpers, else after its first line) must exit 7: an EXIT trap that loses `$?`, or a
harness that decides by itself, shows up as another status. The copy runs as CTest runs the original (same
arguments, environment and working folder), from a mirror of the source tree in a scratch folder (symlinks; only the
mutant is a real file), so the source tree is never written. This is the rule the project's stop hook applies.

It also fails on CTest properties that make a verdict out of something else than the exit status:
PASS_REGULAR_EXPRESSION (CTest then ignores the status) and WILL_FAIL. (gtest_discover_tests' SKIP_REGULAR_EXPRESSION
only turns GTEST_SKIP into "skipped"; it is left alone.) And it checks itself first: a script with the bug this
test exists for (`trap 'other; cleanup' EXIT` where cleanup reads `$?`) must be caught.

  shell_verdicts.py --source SRC --build BUILD_DIR
Exit status: 0 when every script passes, 1 otherwise (each failing script named on one line).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

TRAP = re.compile(r"^trap ")
SOURCE = re.compile(r"^(source|\.)\s")
BAD_PROPERTIES = ("PASS_REGULAR_EXPRESSION", "WILL_FAIL")
TIMEOUT_S = 30  # a mutant stops right after its prologue; 30 s only bounds a hang


def insertion_line(lines):
    """1-based line after which `exit 7` goes: the last top-level trap, else the last source, else the first."""
    for pattern in (TRAP, SOURCE):
        hits = [i + 1 for i, line in enumerate(lines) if pattern.match(line)]
        if hits:
            return hits[-1]
    return 1


def mirror(src, rel_dir, root):
    """A tree under `root` where every path resolves as in `src` (symlinks), with `rel_dir` made of real folders."""
    here_src, here = src, root
    for part in [p for p in rel_dir.split(os.sep) if p not in ("", ".")] + [None]:
        for name in os.listdir(here_src):
            if name != part and not os.path.lexists(os.path.join(here, name)):
                os.symlink(os.path.join(here_src, name), os.path.join(here, name))
        if part is None:
            break
        here_src, here = os.path.join(here_src, part), os.path.join(here, part)
        os.mkdir(here)
    return here


def run_mutant(src, script, interpreter, args, env, cwd):
    """(status, line): the exit status of the mutated copy, and the line `exit 7` follows."""
    with open(script) as f:
        lines = f.read().split("\n")
    at = insertion_line(lines)
    mutated = lines[:at] + ["exit 7"] + lines[at:]
    with tempfile.TemporaryDirectory(prefix="dlio-mutant-") as root:
        rel = os.path.relpath(os.path.dirname(os.path.realpath(script)), src)
        folder = mirror(src, "" if rel.startswith("..") else rel, root)
        target = os.path.join(folder, os.path.basename(script))
        if os.path.lexists(target):
            os.unlink(target)
        with open(target, "w") as f:
            f.write("\n".join(mutated))
        try:
            r = subprocess.run(interpreter + [target] + args, env=env, cwd=cwd or root, timeout=TIMEOUT_S,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            return r.returncode, at, r.stderr.strip().splitlines()[-1:]
        except subprocess.TimeoutExpired:
            return None, at, ["timed out"]


def ctest_shell_tests(build):
    """{script: (interpreter, args, env, cwd, name)} for every CTest whose command runs a .sh, and property problems."""
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True, capture_output=True, text=True)
    tests, problems = {}, []
    for t in json.loads(out.stdout)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        for bad in BAD_PROPERTIES:
            if bad in props:
                problems.append(f"{t['name']}: CTest property {bad} decides the verdict instead of the exit status")
        cmd = t.get("command", [])
        at = next((i for i, c in enumerate(cmd) if c.endswith(".sh")), None)
        if at is None:
            continue
        env = dict(os.environ)
        env.update(kv.split("=", 1) for kv in props.get("ENVIRONMENT", []))
        tests[os.path.realpath(cmd[at])] = (cmd[:at], cmd[at + 1:], env, props.get("WORKING_DIRECTORY"), t["name"])
    return tests, problems


def source_shell_tests(src):
    found = []
    for folder, dirs, files in os.walk(os.path.join(src, "tests")):
        dirs[:] = sorted(d for d in dirs if d != "fixtures")
        found += [os.path.realpath(os.path.join(folder, f)) for f in sorted(files) if f.endswith(".sh") and f != "lib.sh"]
    return found


def self_check():
    """The checker catches the bug it exists for: an EXIT trap whose handler reads $? after another command."""
    with tempfile.TemporaryDirectory(prefix="dlio-mutant-self-") as d:
        bad = os.path.join(d, "bad.sh")
        with open(bad, "w") as f:
            f.write("#!/usr/bin/env bash\ncleanup() { local rc=$?; exit $rc; }\nother() { return 0; }\n"
                    "trap 'other; cleanup' EXIT\necho 'the test body'\n")
        status, _, _ = run_mutant(d, bad, ["bash"], [], dict(os.environ), d)
        return status == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    o = ap.parse_args()
    src = os.path.realpath(o.source)
    if not self_check():
        print("self-check failed: a script whose EXIT trap loses $? was not caught")
        return 1
    tests, problems = ctest_shell_tests(o.build)
    for script in source_shell_tests(src):
        if script not in tests:
            problems.append(f"{os.path.relpath(script, src)}: a shell test no CTest runs")
            tests[script] = (["bash"], [], dict(os.environ), None, "-")
    for script, (interpreter, args, env, cwd, name) in sorted(tests.items()):
        status, at, why = run_mutant(src, script, interpreter or ["bash"], args, env, cwd)
        rel = os.path.relpath(script, src)
        if status == 7:
            print(f"ok   {rel} ({name}): exit 7 after line {at} is reported as 7")
        else:
            problems.append(f"{rel} ({name}): with `exit 7` after line {at} it exits {status} instead of 7"
                            + (" (its exit status is not its verdict)" if status == 0 else f": {' '.join(why)}"))
    for p in problems:
        print(f"FAIL {p}")
    print(f"{len(tests)} shell test(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
