#!/usr/bin/env python3
"""Docs that run: every command block of the project's Markdown files is executed, or marked as an illustration.

The convention (docs/documentation.md):
  - A command block is a fenced block tagged sh, bash, shell, zsh or console. A `console` block is a transcript:
    lines starting with "$ " are commands (a trailing backslash continues them), the lines after a command are the
    output it must print (a line containing "..." is matched up to the "..."; a line of only "..." matches
    anything).
  - One or more HTML comment lines right above the fence steer the test:
      <!-- illustration: WHY -->   not run (it needs a cluster, a registry, hours, ...); WHY is required.
      <!-- docs-test: ci -->       the block is the CI entry point: .ci/run must run exactly its command.
      <!-- docs-test: KEY=VALUE ... --> run it with:
          fleet=N            a coordinator (serve, on a free port) and N agents first; $DLIO_COORDINATOR points at it
          set=KEY=VALUE      appended as --set KEY=VALUE to every `dlio-coordinator run|submit` (repeatable), to scale
                             a job down or make its verdict independent of this machine's speed
          exit=N[,M...]      the exit statuses that count as success (default 0)
  - Every block runs in a fresh scratch folder that mirrors the source tree (symlinks: configs/, scripts/, ... resolve
    as in a checkout; `build` is the build folder), with the build's bin/ first on PATH and HOME and TMPDIR inside
    the scratch folder, under `set -e -o pipefail`.
  - Whether run or not, every `dlio-coordinator`/`dlio-agent` command of every block must name an existing
    subcommand and existing options (checked against --help), and every path under configs/, scripts/, slurm/, helm/,
    dashboards/, docs/, bench/ or tests/ must exist.
  - A command outside such a block is refused: an untagged fence or an indented block whose first line is a command.

  run_doc_blocks.py --source SRC --build BUILD_DIR [--only FILE[:LINE]]
Exit status: 0 when every block passed, 1 otherwise (each problem named with file:line).
"""
import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

SHELL_LANGS = {"sh", "bash", "shell", "zsh", "console"}
COMMAND_START = re.compile(r"^(\$ |dlio-coordinator\b|dlio-agent\b|bash |sh |sbatch |cmake |helm |docker |kubectl |"
                           r"export |openssl )")
FENCE = re.compile(r"^( {0,3})(```+|~~~+)\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*(illustration|docs-test)\s*:?\s*(.*?)\s*-->\s*$")
CHECKED_DIRS = ("configs/", "scripts/", "slurm/", "helm/", "dashboards/", "docs/", "bench/", "tests/")
BLOCK_TIMEOUT_S = 180  # the Quick start (setup check, build check, a 2-epoch job) is the longest


class Block:
    def __init__(self, path, line, lang, body, markers):
        self.path, self.line, self.lang, self.body, self.markers = path, line, lang, body, markers

    def where(self):
        return f"{self.path}:{self.line}"


def markdown_files(src):
    out = []
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "fixtures")
                         and not os.path.exists(os.path.join(folder, d, "CMakeCache.txt")))
        out += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    return out


def parse(path, rel):
    """(command blocks, problems) of one Markdown file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, problems = [], []
    i = 0
    prev_blank = True
    in_list = False
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            fence, lang = m.group(2), m.group(3).lower()
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence):
                j += 1
            body = lines[i + 1:j]
            markers = []
            k = i - 1
            while k >= 0 and MARKER.match(lines[k]):
                markers.insert(0, MARKER.match(lines[k]).groups())
                k -= 1
            first = next((b.strip() for b in body if b.strip()), "")
            if lang in SHELL_LANGS:
                blocks.append(Block(rel, i + 1, lang, body, markers))
            elif first.startswith("$ "):
                problems.append(f"{rel}:{i + 1}: a console transcript in a ```{lang} block: tag it ```console")
            elif markers:
                problems.append(f"{rel}:{i + 1}: a docs-test or illustration marker on a ```{lang} block, which is "
                                "not a command block")
            i = j + 1
            prev_blank = True
            continue
        stripped = line.strip()
        if re.match(r"^\s*([-*+]|\d+\.)\s", line):
            in_list = True
        elif not stripped:
            pass
        elif not line.startswith(" "):
            in_list = False
        # An indented code block starts after a blank line, outside a list, with 4 spaces.
        if prev_blank and not in_list and line.startswith("    ") and COMMAND_START.match(stripped):
            problems.append(f"{rel}:{i + 1}: a command in an indented block: use a fenced ```sh (or ```console) block")
        prev_blank = not stripped
        i += 1
    return blocks, problems


def directives(block):
    """(kind, options, problems): kind is 'illustration', 'ci' or 'run'."""
    opts = {"fleet": 0, "set": [], "exit": [0]}
    kind, problems = "run", []
    for name, text in block.markers:
        if name == "illustration":
            if not text:
                problems.append(f"{block.where()}: <!-- illustration: WHY --> must say why the block is not run")
            kind = "illustration"
            continue
        for word in shlex.split(text):
            key, _, value = word.partition("=")
            try:
                if key == "ci" and not value:
                    kind = "ci"
                elif key == "fleet":
                    opts["fleet"] = int(value)
                elif key == "set" and "=" in value:
                    opts["set"].append(value)
                elif key == "exit":
                    opts["exit"] = [int(v) for v in value.split(",")]
                else:
                    raise ValueError
            except ValueError:
                problems.append(f"{block.where()}: docs-test: '{word}' is not one of ci, fleet=N, set=KEY=VALUE, "
                                "exit=N[,M]")
    return kind, opts, problems


def commands(block):
    """The block's command lines, continuation lines joined, prompts and comments removed."""
    out, cur = [], ""
    for raw in block.body:
        line = raw.rstrip()
        if block.lang == "console":
            if cur == "" and not line.startswith("$ "):
                continue  # output
            if line.startswith("$ "):
                line = line[2:]
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip():
            out.append(cur.strip())
        cur = ""
    return out


class HelpCache:
    def __init__(self, bin_dir):
        self.bin_dir, self.cache = bin_dir, {}

    def options(self, argv):
        """(options the command accepts, its subcommands) or None when it is no command."""
        key = tuple(argv)
        if key not in self.cache:
            r = subprocess.run([os.path.join(self.bin_dir, argv[0])] + argv[1:] + ["--help"], capture_output=True,
                               text=True, timeout=30)
            if r.returncode != 0:
                self.cache[key] = None
            else:
                text = r.stdout
                opts = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))
                subs = set(re.findall(r"^  ([a-z]+)\s{2,}", text, re.M))
                self.cache[key] = (opts, subs)
        return self.cache[key]


def check_static(block, src, helps):
    problems = []
    for cmd in commands(block):
        cmd = re.sub(r"(^|\s)#.*$", "", cmd)  # a trailing comment
        try:
            words = shlex.split(cmd)
        except ValueError:
            words = cmd.split()
        for word in words:
            for w in (word, word.split("=", 1)[-1]):  # a path may follow KEY= (--set-file job.workload=configs/...)
                w = w.strip("\"'")
                if w.startswith(CHECKED_DIRS) and not re.search(r"[$*<>{}]", w) and \
                        not os.path.exists(os.path.join(src, w.rstrip("/"))):
                    problems.append(f"{block.where()}: {w}: no such file in the source tree")
        for at, w in enumerate(words):
            if os.path.basename(w) not in ("dlio-coordinator", "dlio-agent"):
                continue
            argv = [os.path.basename(w)]
            rest = words[at + 1:]
            info = helps.options(argv)
            while rest and info and not rest[0].startswith("-") and rest[0] in info[1]:
                argv.append(rest.pop(0))
                info = helps.options(argv)
            if info is None:
                problems.append(f"{block.where()}: `{' '.join(argv)}` is not a command")
                continue
            for r in rest:
                if r in ("|", "||", "&&", ";", "&", ">", "2>&1") or r.startswith(("|", ">", ")")):
                    break
                name = r.split("=", 1)[0]
                if re.match(r"^--?[A-Za-z]", name) and name not in info[0]:
                    problems.append(f"{block.where()}: `{' '.join(argv)}` has no option {name}")
    return problems


def mirror(src, build, root):
    for name in os.listdir(src):
        if name != "build":
            os.symlink(os.path.join(src, name), os.path.join(root, name))
    os.symlink(build, os.path.join(root, "build"))


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Fleet:
    """A coordinator on a free port and N agents, stopped by pid."""

    def __init__(self, bin_dir, work, agents, env):
        self.procs = []
        port_file = os.path.join(work, ".coordinator.port")
        log = open(os.path.join(work, ".fleet.log"), "w")
        self.procs.append(subprocess.Popen(
            [os.path.join(bin_dir, "dlio-coordinator"), "serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
             "--results-dir", os.path.join(work, ".coordinator-results")], stdout=log, stderr=log, env=env))
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if time.time() > deadline or self.procs[0].poll() is not None:
                raise RuntimeError("the coordinator of fleet= did not start")
            time.sleep(0.05)
        self.address = "127.0.0.1:" + open(port_file).read().strip()
        for i in range(agents):
            self.procs.append(subprocess.Popen(
                [os.path.join(bin_dir, "dlio-agent"), "--coordinator", self.address, "--data-root", work, "--name",
                 f"docs-agent-{i}", "--reconnect-window", "2", "--log-level", "warn"], stdout=log, stderr=log,
                env=env))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def wrapper(sets):
    """Shell function that appends --set KEY=VALUE to `dlio-coordinator run|submit`."""
    if not sets:
        return ""
    extra = " ".join("--set " + shlex.quote(s) for s in sets)
    return ('dlio-coordinator() { case "$1" in run|submit) command dlio-coordinator "$@" ' + extra + ' ;; '
            '*) command dlio-coordinator "$@" ;; esac; }\n')


def expected_lines(block):
    """For a console block: [(command, [expected output lines])]."""
    pairs, cur_cmd, cont = [], None, False
    for raw in block.body:
        line = raw.rstrip()
        if line.startswith("$ ") or cont:
            text = line[2:] if line.startswith("$ ") and not cont else line
            if cont:
                pairs[-1][0] += " " + text.rstrip("\\")
            else:
                pairs.append([text.rstrip("\\"), []])
            cont = line.endswith("\\")
            continue
        if pairs and line.strip():
            pairs[-1][1].append(line.strip())
    return pairs


def run_group(argv, cwd, env):
    """subprocess.run in a process group of its own, the whole group killed on timeout (a block's children too)."""
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything the block left in the background
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def run_block(block, opts, src, build, bin_dir):
    """None when the block passed, else a problem."""
    with tempfile.TemporaryDirectory(prefix="dlio-docs-") as work:
        mirror(src, build, work)
        for d in ("home", "tmp"):
            os.mkdir(os.path.join(work, ".docs-" + d))
        env = {k: v for k, v in os.environ.items()
               if k not in ("DLIO_WERROR", "BUILD_TYPE", "DLIO_COORDINATOR", "DLIO_BIN_DIR")}
        env.update(PATH=bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin"), HOME=os.path.join(work, ".docs-home"),
                   TMPDIR=os.path.join(work, ".docs-tmp"), BUILD_DIR=build)
        fleet = None
        try:
            if opts["fleet"]:
                fleet = Fleet(bin_dir, work, opts["fleet"], env)
                env["DLIO_COORDINATOR"] = fleet.address
            if block.lang == "console":
                steps = expected_lines(block)
            else:
                steps = [("\n".join(block.body), None)]
            for cmd, expect in steps:
                script = "set -e -o pipefail\n" + wrapper(opts["set"]) + cmd + "\n"
                r = run_group(["bash", "-c", script], work, env)
                shown = (r.stdout + r.stderr).strip().splitlines()[-15:]
                if r.returncode not in opts["exit"]:
                    return (f"{block.where()}: exit status {r.returncode} (expected "
                            f"{' or '.join(map(str, opts['exit']))}):\n      " + "\n      ".join(shown))
                for want in expect or []:
                    probe = want.split("...")[0].strip()
                    if probe and probe not in r.stdout + r.stderr:
                        return (f"{block.where()}: `{cmd}` did not print: {want}\n      " + "\n      ".join(shown))
        except subprocess.TimeoutExpired:
            return f"{block.where()}: did not finish within {BLOCK_TIMEOUT_S} s"
        finally:
            if fleet:
                fleet.stop()
    return None


def check_ci(block, src):
    cmds = commands(block)
    ci = open(os.path.join(src, ".ci/run")).read()
    runs = [c for c in re.findall(r"^\s*(?:exec\s+)?([^#\n].*?)\s*$", ci, re.M) if not c.startswith(("set ", "cd "))]
    if len(cmds) != 1 or cmds[0] not in runs:
        return f"{block.where()}: docs-test: ci, but .ci/run does not run `{' '.join(cmds)}` (it runs: {runs})"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--only", help="FILE or FILE:LINE (relative to the source) to run only that")
    o = ap.parse_args()
    src, build = os.path.realpath(o.source), os.path.realpath(o.build)
    bin_dir = os.path.join(build, "bin")
    helps = HelpCache(bin_dir)
    problems, counts = [], {"run": 0, "illustration": 0, "ci": 0}
    for path in markdown_files(src):
        rel = os.path.relpath(path, src)
        blocks, found = parse(path, rel)
        problems += found
        for b in blocks:
            if o.only and o.only not in (rel, b.where()):
                continue
            kind, opts, found = directives(b)
            problems += found + check_static(b, src, helps)
            counts[kind] += 1
            if kind == "illustration":
                print(f"illustration {b.where()}: {b.markers[-1][1]}")
            elif kind == "ci":
                p = check_ci(b, src)
                problems += [p] if p else []
                print(f"ci           {b.where()}: .ci/run runs it")
            else:
                t0 = time.time()
                p = run_block(b, opts, src, build, bin_dir)
                problems += [p] if p else []
                print(f"{'FAILED' if p else 'ran':12} {b.where()} ({b.lang}) in {time.time() - t0:.1f} s")
    for p in problems:
        print(f"FAIL {p}")
    print(f"{counts['run']} block(s) run, {counts['ci']} run by CI, {counts['illustration']} illustration(s); "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
