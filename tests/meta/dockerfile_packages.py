#!/usr/bin/env python3
"""The Dockerfile installs what scripts/setup.sh installs: a package CMake needs cannot be missing from the image.

Reads the base package list of scripts/setup.sh (the `packages=(...)` array, without the `--test` additions) and the
`apt-get install` lists of each Dockerfile stage, then checks:
  - every base package is installed by the build stage, except those only the tests and benchmarks need (the image
    is configured with -DDLIO_BUILD_TESTS=OFF) and those only the runtime needs (checked below);
  - the runtime stage installs the packages loaded at run time by name rather than linked (ldd cannot see them):
    HDF5's lzf filter plugin and its liblzf.
It checks itself first: a Dockerfile without libsqlite3-dev must be reported.

  dockerfile_packages.py --source SRC
Exit status: 0 when the lists agree, 1 otherwise (each missing package named on one line).
"""
import argparse
import re
import sys

TEST_ONLY = {"libgtest-dev", "libgmock-dev", "libbenchmark-dev"}  # DLIO_BUILD_TESTS=OFF in the image
RUNTIME_ONLY = {"hdf5-plugin-lzf", "liblzf1"}                     # dlopen'ed by libhdf5: the runtime stage


def setup_packages(text):
    match = re.search(r"^packages=\((.*?)\)", text, re.S | re.M)
    if not match:
        sys.exit("dockerfile_packages: no packages=(...) array in scripts/setup.sh")
    words = []
    for line in match.group(1).splitlines():
        words += line.split("#", 1)[0].split()
    return set(words)


def stages(text):
    """Package names installed by `apt-get install` in each FROM stage, in order."""
    text = text.replace("\\\n", " ")
    result = []
    for line in text.splitlines():
        if line.startswith("FROM "):
            result.append(set())
        elif "apt-get install" in line and result:
            for command in line.split("&&"):
                if "apt-get install" in command:
                    args = command.split("apt-get install", 1)[1].split()
                    result[-1] |= {a for a in args if not a.startswith("-")}
    return result


def missing(setup_text, docker_text):
    base = setup_packages(setup_text)
    found = stages(docker_text)
    if len(found) < 2:
        return ["Dockerfile: expected a build stage and a runtime stage"]
    build, runtime = found[0], found[-1]
    problems = [f"Dockerfile build stage lacks {p} (scripts/setup.sh installs it)"
                for p in sorted(base - TEST_ONLY - RUNTIME_ONLY - build)]
    problems += [f"Dockerfile runtime stage lacks {p} (loaded at run time, not linked)"
                 for p in sorted(RUNTIME_ONLY - runtime)]
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    with open(f"{args.source}/scripts/setup.sh") as f:
        setup_text = f.read()
    with open(f"{args.source}/Dockerfile") as f:
        docker_text = f.read()
    mutant = docker_text.replace("libsqlite3-dev", "")
    if not any("libsqlite3-dev" in p for p in missing(setup_text, mutant)):
        print("dockerfile_packages: self-check failed: a Dockerfile without libsqlite3-dev was not reported")
        return 1
    problems = missing(setup_text, docker_text)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
