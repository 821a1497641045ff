#!/usr/bin/env python3
"""Functions and files a reader can hold: no production function over 80 lines, no production file over 800.

Production code is every tracked .cc/.h outside tests/, bench/ and fuzz/, *_test.cc and test_util.h aside.
Functions are measured by Universal Ctags from signature to closing brace (lambdas count in the function that holds
them), as the before-stop hook measures them. Data tables are exempt: a function with a comment line containing
"Data table" among the three lines above its signature, and a file with "Data table" in its first ten lines (the
key rows, embedded page text).

  long-functions.py [--source DIR] [--function-limit 80] [--file-limit 800]
Exit status: 0 when nothing is over, 1 otherwise (each one named on a line), 2 when ctags is missing or fails.
It checks itself first: a 100-line function must be reported.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile


def production_files(src):
    out = subprocess.run(["git", "ls-files", "*.cc", "*.h"], cwd=src, capture_output=True, text=True, check=True)
    files = []
    for f in out.stdout.split():
        if f.split("/", 1)[0] in ("tests", "bench", "fuzz") or f.endswith("_test.cc") or f.endswith("test_util.h"):
            continue
        files.append(f)
    return files


def long_functions(src, files, limit):
    """[(file, line, name, length)] of functions over `limit` lines."""
    try:
        out = subprocess.run(["ctags", "--fields=+ne", "--c++-kinds=f", "--language-force=C++", "-x",
                              "--_xformat=%{line} %{end} %N %F"] + files, cwd=src, capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit(2)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        sys.exit(2)
    found, cache = [], {}
    for row in out.stdout.splitlines():
        parts = row.split(" ", 3)
        if len(parts) < 4 or not parts[1].isdigit():
            continue
        start, end, name, path = int(parts[0]), int(parts[1]), parts[2], parts[3]
        n = end - start + 1
        if n <= limit:
            continue
        lines = cache.setdefault(path, (pathlib.Path(src) / path).read_text(errors="replace").split("\n"))
        if any("Data table" in l for l in lines[max(0, start - 4):start - 1]):
            continue
        found.append((path, start, name, n))
    return found


def long_files(src, files, limit):
    found = []
    for f in files:
        lines = (pathlib.Path(src) / f).read_text(errors="replace").split("\n")
        n = len(lines) - (1 if lines and lines[-1] == "" else 0)
        if n > limit and not any("Data table" in l for l in lines[:10]):
            found.append((f, n))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=".")
    ap.add_argument("--function-limit", type=int, default=80)
    ap.add_argument("--file-limit", type=int, default=800)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:  # self-check
        body = "int F() {\n" + "  int x = 0;\n" * 98 + "  return 0;\n}\n"
        pathlib.Path(d, "x.cc").write_text(body)
        if not long_functions(d, ["x.cc"], a.function_limit):
            sys.exit("long-functions: self-check failed: a 100-line function was not reported")
    files = production_files(a.source)
    funcs = long_functions(a.source, files, a.function_limit)
    big = long_files(a.source, files, a.file_limit)
    for path, line, name, n in funcs:
        print(f"{path}:{line}: {name}: {n} lines (limit {a.function_limit})")
    for path, n in big:
        print(f"{path}: {n} lines (limit {a.file_limit})")
    print(f"long-functions: {len(files)} files, {len(funcs)} function(s) and {len(big)} file(s) over the limits")
    return 1 if funcs or big else 0


if __name__ == "__main__":
    sys.exit(main())
