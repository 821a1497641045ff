#!/usr/bin/env python3
"""Agent memory against the dataset's name count (issue 27 target "agent memory independent of the dataset size
beyond its shard"), measured on a whole dlio-agent process: its peak RSS (VmHWM, polled while it runs) for the same
small training read of a local_fs npz dataset whose dataset.num_files_train is each of --names, with
dataset.skip_listing: true (the names derived, agent/data_file_names.h) and listing_validation_interval: 0.

Only the names' count differs between the runs: one agent, batch 4, read_threads 1, total_training_steps 4 (--steps),
one epoch, no shuffle, so every run reads the same first few files. Only those files exist on disk (hard links of one
npz file the agent generates first, named as DLIO names file i of N: img_<i padded to digits(N)>_of_<N>.npz), so a
million names cost no million files. `--listing` adds the same read with skip_listing: false for the counts up to
--listing-max (those need every file: hard links, one directory entry each), listed and then kept as the compact
pattern when the names are DLIO's.

Prints a table (names, read, peak RSS MiB, growth per name in bytes against the smallest count of the same read)
and writes it to --results. Only the standard library. Exit status: 0 ran, 2 error.

  python3 bench/names_rss.py --bin-dir build/bin --work /tmp/names [--names 10000,100000,1000000] [--rounds 3]
"""
import argparse
import errno
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_million import agent_pids, vm_hwm_kib  # noqa: E402  (the same /proc polling as the S3 bench)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def job_yaml(files, generate, skip_listing, steps=4):
    cap = f"  total_training_steps: {steps}\n" if steps > 0 else ""
    return f"""model:
  name: names_rss
framework: pytorch
workflow:
  generate_data: {str(generate).lower()}
  train: {str(not generate).lower()}
storage:
  storage_type: local_fs
dataset:
  data_folder: m
  format: npz
  num_files_train: {files}
  num_samples_per_file: 1
  record_length_bytes: 4096
  skip_listing: {str(skip_listing).lower()}
  listing_validation_interval: 0
reader:
  data_loader: pytorch
  batch_size: 4
  read_threads: 1
  prefetch_size: 2
train:
  epochs: 1
  computation_time: 0
{cap}output:
  metric:
    exclude_start_steps: 0
"""


def run(bin_dir, d, text, measured=True):
    """Runs the job in folder `d` (its data root) with one local agent; returns (agent peak RSS KiB, seconds)."""
    with open(os.path.join(d, "job.yaml"), "w") as f:
        f.write(text)
    shutil.rmtree(os.path.join(d, "results"), ignore_errors=True)
    shutil.rmtree(os.path.join(d, "out"), ignore_errors=True)
    argv = [os.path.join(bin_dir, "dlio-coordinator"), "run", os.path.join(d, "job.yaml"), "--local-agents", "1",
            "--data-root", d, "--results-dir", os.path.join(d, "results"), "--output", os.path.join(d, "out")]
    t0 = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"kib": 0}
    done = threading.Event()

    def poll():  # VmHWM is a high-water mark: a poll only has to come before the agent exits
        while not done.is_set():
            for pid in agent_pids(p.pid):
                peak["kib"] = max(peak["kib"], vm_hwm_kib(pid))
            time.sleep(0.02)

    th = threading.Thread(target=poll)
    th.start()
    _, err = p.communicate(timeout=3600)
    done.set()
    th.join()
    if p.returncode != 0:
        raise RuntimeError(f"{argv[2]}: exit {p.returncode}: {err[-2000:]}")
    if measured and peak["kib"] == 0:
        raise RuntimeError(f"{argv[2]}: the agent's VmHWM was never read (it ended before the first poll)")
    return peak["kib"], time.time() - t0


def dataset(bin_dir, work, names, all_files):
    """A data root whose m/train holds the first files of `names` (all of them when `all_files`)."""
    seed_dir = os.path.join(work, "seed")
    seed = os.path.join(seed_dir, "m", "train", "img_0_of_1.npz")
    if not os.path.exists(seed):
        shutil.rmtree(seed_dir, ignore_errors=True)
        os.makedirs(seed_dir)
        run(bin_dir, seed_dir, job_yaml(1, True, False), measured=False)
    d = os.path.join(work, f"n{names}{'-all' if all_files else ''}")
    train = os.path.join(d, "m", "train")
    if not os.path.isdir(train):
        os.makedirs(train + ".part", exist_ok=True)
        digits = len(str(names))
        source = seed
        for i in range(names if all_files else min(names, 256)):  # 4 steps of 4 and the read-ahead: 256 is plenty
            target = os.path.join(train + ".part", f"img_{i:0{digits}d}_of_{names}.npz")
            if os.path.exists(target):
                continue
            try:
                os.link(source, target)
            except OSError as e:
                if e.errno != errno.EMLINK:  # ext4 allows 65,000 links to one file: the next ones link to a copy
                    raise
                shutil.copyfile(seed, target)
                source = target
        os.rename(train + ".part", train)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--names", default="10000,100000,1000000", help="comma-separated dataset.num_files_train values")
    ap.add_argument("--rounds", type=int, default=3, help="runs per count (the median is reported)")
    ap.add_argument("--listing", action="store_true", help="also the listed read (skip_listing: false)")
    ap.add_argument("--listing-max", type=int, default=100_000, help="largest count --listing runs (files made)")
    ap.add_argument("--steps", type=int, default=4,
                    help="train.total_training_steps (0: the whole epoch, every file made: RSS against its length)")
    ap.add_argument("--results")
    args = ap.parse_args()
    try:
        counts = sorted(int(x) for x in args.names.split(",") if x)
    except ValueError:
        raise ValueError(f"--names: '{args.names}' is not a comma-separated list of integers")
    if not counts or counts[0] < 1:
        raise ValueError(f"--names: '{args.names}' needs counts of at least 1")
    if args.steps < 0:
        raise ValueError(f"--steps: {args.steps} (allowed: 0 for the whole epoch, or a step count)")
    if args.rounds < 1:
        raise ValueError(f"--rounds: {args.rounds} (allowed: 1 or more)")
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    reads = [("skip_listing", True)] + ([("listing", False)] if args.listing else [])
    rows = []
    for read, skip in reads:
        base = None
        for n in counts:
            if not skip and n > args.listing_max:
                continue
            d = dataset(args.bin_dir, work, n, not skip or args.steps == 0)
            kibs = []
            for _ in range(args.rounds):
                kib, secs = run(args.bin_dir, d, job_yaml(n, False, skip, args.steps))
                kibs.append(kib)
                log(f"{n} names, {read}: agent peak RSS {kib / 1024:.1f} MiB ({secs:.1f} s)")
            kib = statistics.median(kibs)
            growth = "-" if base is None else f"{(kib - base[1]) * 1024 / (n - base[0]):.1f}"
            if base is None:
                base = (n, kib)
            rounds = ", ".join(f"{k / 1024:.1f}" for k in kibs)
            rows.append(f"| {n:,} | {read} | {kib / 1024:.1f} ({rounds}) | {growth} |")
    span = f"{args.steps} steps" if args.steps else "one epoch (files / 4 steps)"
    text = "\n".join([f"One dlio-agent, local_fs npz, {span} of batch 4, listing_validation_interval 0; median of "
                      f"{args.rounds} runs (runs in brackets); growth against the smallest count of the same read.",
                      "", "| names | read | agent peak RSS MiB | growth per name, bytes |", "|---|---|---|---|"] + rows)
    print(text)
    if args.results:
        with open(args.results, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
        log(f"names_rss: {e}")
        sys.exit(2)
