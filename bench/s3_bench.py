#!/usr/bin/env python3
"""S3 benchmark (issue 15): the agent against a reference C client of the same requests (dlio-bench-s3-ref, plain
libcurl with the same SigV4 signing), on a one-node Ceph RADOS Gateway that this script starts
(scripts/ceph-rgw.sh) and stops.

Cases, each with the same objects and the same concurrency on both sides, the sides interleaved for --rounds
rounds (agent, reference, agent, reference, ...; every other round the reference goes first, so neither side always
follows the other): each round is one pair, and the ratio is the median of the per-pair ratios agent / reference,
with their min-max beside it (on a machine loaded by others a ratio of two runs minutes apart means little; the two
runs of one pair see the same load). Use 7 rounds or more when the ratio is the point:
  get-2MiB    unet3d-like: npz objects of ~2 MiB, whole-object GETs, 4 loader threads vs 4 client threads, one GET
              in flight per loader thread (dlio_ext.s3_requests_in_flight: 1)
  get-100KiB  resnet-like: npz objects of ~100 KiB, the same
  put-2MiB    generation by PUT: the agent's generate phase (its generation workers) vs as many PUT threads
  get-100KiB-inflight, get-2MiB-inflight  (issue 27) --inflight-threads loader threads (1: the rate per loader
              thread) with --in-flight GETs in flight each, against the reference with as many client threads as
              the agent has GETs in flight (the same concurrency), and against the agent with 1 in flight (today's
              path), and against the reference with as many threads as the agent, each keeping --in-flight GETs in
              flight over a libcurl multi handle (the same concurrency from the same number of threads): three rows,
              "<case>" (vs the threaded reference), "<case>-vs-multi" and "<case>-vs-1" (vs one in flight);
              with --before-bin-dir, the agent of that folder (e.g. main's build) runs in every round too, interleaved
              with the others: rows "<case>-before" and "<case>-before-vs-multi" (before and after from one run)
Agent rate: bytes read over the wall time from the first epoch's start to the last epoch's end (0_per_epoch_stats),
as bench.py measures its read cases; generation: the generate phase's bytes over its seconds (summary.json).
Reference rate: bytes over the time from its first request to its last answer.
Columns: the agent's and the reference's median rates, the median per-pair ratio and its min-max over the rounds.
Only the standard library. Exit status: 0 ran, 1 a target missed (--check-targets), 2 error.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
TARGETS = {"get-2MiB": 0.90, "get-100KiB": 0.80, "put-2MiB": 0.80, "get-100KiB-inflight": 0.90,
           "get-100KiB-inflight-vs-1": 1.50, "get-2MiB-inflight": 0.95, "get-2MiB-inflight-vs-1": 0.0,
           "get-100KiB-inflight-vs-multi": 0.90, "get-2MiB-inflight-vs-multi": 0.95}
for _case in ("get-100KiB-inflight", "get-2MiB-inflight"):  # --before-bin-dir rows: the same targets
    TARGETS[f"{_case}-before"] = TARGETS[_case]
    TARGETS[f"{_case}-before-vs-multi"] = TARGETS[f"{_case}-vs-multi"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(argv, env, timeout=600):
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}...: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


def job_yaml(bucket, prefix, files, record, epochs, generate, train, threads, in_flight=1):
    return f"""model:
  name: s3bench
framework: pytorch
workflow:
  generate_data: {str(generate).lower()}
  train: {str(train).lower()}
storage:
  storage_type: s3
  storage_root: {bucket}
dataset:
  data_folder: {prefix}
  format: npz
  num_files_train: {files}
  num_samples_per_file: 1
  record_length_bytes: {record}
reader:
  data_loader: pytorch
  batch_size: 4
  read_threads: {threads}
  prefetch_size: 8
train:
  epochs: {epochs}
  computation_time: 0
output:
  metric:
    exclude_start_steps: 0
dlio_ext:
  s3_requests_in_flight: {in_flight}
"""


class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin_dir
        self.work = os.path.abspath(args.work)
        self.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.rows = []
        self.env = dict(os.environ)

    def start_gateway(self):
        self.gw = os.path.join(self.work, "gateway")
        subprocess.run(["bash", os.path.join(self.src, "scripts/ceph-rgw.sh"), "stop", self.gw])
        shutil.rmtree(self.gw, ignore_errors=True)
        out = run(["bash", os.path.join(self.src, "scripts/ceph-rgw.sh"), "start", self.gw], self.env, 300)
        for line in out.splitlines():
            k, _, v = line.partition("=")
            if k.startswith("AWS_"):
                self.env[k] = v
        run([os.path.join(self.bin, "dlio-bench-s3-ref"), "mkbucket", "bench"], self.env)

    def stop_gateway(self):
        subprocess.run(["bash", os.path.join(self.src, "scripts/ceph-rgw.sh"), "stop", self.gw])

    def agent(self, tag, text, bin_dir=None):
        d = os.path.join(self.work, "runs", tag)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "job.yaml"), "w") as f:
            f.write(text)
        run([os.path.join(bin_dir or self.bin, "dlio-coordinator"), "run", os.path.join(d, "job.yaml"),
             "--local-agents", "1",
             "--data-root", d, "--results-dir", os.path.join(d, "results"), "--output", os.path.join(d, "out")],
            self.env)
        with open(os.path.join(d, "out", "summary.json")) as f:
            ext = json.load(f)["dlio_ext"]
        if "generate" in ext and "train_epochs" not in ext:
            g = ext["generate"]
            return g["io"]["bytes"] / g["seconds"]
        with open(os.path.join(d, "out", "0_per_epoch_stats.json")) as f:
            marks = [v for k, v in json.load(f).items() if k.isdigit()]
        ts = lambda x: datetime.datetime.fromisoformat(x).timestamp()
        seconds = max(ts(m["end"]) for m in marks) - min(ts(m["start"]) for m in marks)
        return sum(e["read_bytes"] for e in ext["train_epochs"]) / seconds

    def ref(self, *args):
        r = json.loads(run([os.path.join(self.bin, "dlio-bench-s3-ref"), *args], self.env))
        return r["bytes"] / r["seconds"], r["requests"] / r["seconds"]

    def keys(self, prefix, files, record):
        """The agent's object keys of a dataset (its naming: DataFileRelPath), in a key file for the reference."""
        width = len(str(files))
        path = os.path.join(self.work, f"keys-{record}.txt")
        with open(path, "w") as f:
            for i in range(files):
                f.write(f"{prefix}/train/img_{str(i).zfill(width)}_of_{files}.npz\n")
        return path

    @staticmethod
    def interleaved(r, runs):
        """Runs the round's runs (callables) in order, in reverse order on odd rounds; returns their results in the
        given order."""
        out = [None] * len(runs)
        order = range(len(runs)) if r % 2 == 0 else reversed(range(len(runs)))
        for i in order:
            out[i] = runs[i]()
        return out

    def get_case(self, name, files, record, epochs):
        prefix = f"get-{record}"
        threads = self.args.threads
        self.agent(f"{name}-gen", job_yaml("bench", prefix, files, record, 1, True, False, threads))
        keyfile = self.keys(prefix, files, record)
        ours, theirs, ours_req, theirs_req = [], [], [], []
        obj = None
        for r in range(self.args.rounds):
            a, (b, breq) = self.interleaved(r, [
                lambda: self.agent(f"{name}-{r}", job_yaml("bench", prefix, files, record, epochs, False, True,
                                                           threads)),
                lambda: self.ref("get", "bench", keyfile, str(threads), str(epochs))])
            obj = obj or b / breq
            ours.append(a)
            ours_req.append(a / obj)
            theirs.append(b)
            theirs_req.append(breq)
            log(f"  {name} round {r + 1}: agent {a / 1e6:.0f} MB/s, reference {b / 1e6:.0f} MB/s ({breq:.0f} GETs/s)")
        self.add(name, ours, theirs, f"{threads} threads, {files} objects of {obj / 1024:.0f} KiB x {epochs} epochs; "
                 f"GETs/s {statistics.median(ours_req):.0f} vs {statistics.median(theirs_req):.0f}")

    def inflight_case(self, name, files, record, epochs):
        prefix = f"get-{record}"
        threads, window = self.args.inflight_threads, self.args.in_flight
        epochs = self.args.inflight_epochs or epochs
        before = self.args.before_bin_dir
        self.agent(f"{name}-gen", job_yaml("bench", prefix, files, record, 1, True, False, threads))
        keyfile = self.keys(prefix, files, record)
        job = lambda n: job_yaml("bench", prefix, files, record, epochs, False, True, threads, n)
        ours, one, theirs, multi, old = [], [], [], [], []
        for r in range(self.args.rounds):
            runs = [lambda: self.agent(f"{name}-{r}", job(window)),
                    lambda: self.ref("get", "bench", keyfile, str(threads * window), str(epochs))[0],
                    lambda: self.agent(f"{name}-1-{r}", job(1)),
                    lambda: self.ref("get", "bench", keyfile, str(threads), str(epochs), str(window))[0]]
            if before:  # main's agent, between the others: its pairs see the same load as ours
                runs.insert(2, lambda: self.agent(f"{name}-before-{r}", job(window), before))
            got = self.interleaved(r, runs)
            if before:
                old.append(got.pop(2))
            a, b, a1, bm = got
            ours.append(a)
            one.append(a1)
            theirs.append(b)
            multi.append(bm)
            was = f", before {old[-1] / 1e6:.0f} MB/s ({window} in flight)" if before else ""
            log(f"  {name} round {r + 1}: agent {a / 1e6:.0f} MB/s ({window} in flight){was}, {a1 / 1e6:.0f} MB/s "
                f"(1), reference {b / 1e6:.0f} MB/s ({threads * window} threads), {bm / 1e6:.0f} MB/s ({threads} x "
                f"{window} in flight)")
        what = f"{threads} loader thread(s) x {window} in flight, {files} objects of {record / 1024:.0f} KiB x {epochs} epochs"
        self.add(name, ours, theirs, f"{what}; reference {threads * window} threads")
        self.add(f"{name}-vs-multi", ours, multi, f"{what}; reference {threads} thread(s) x {window} in flight")
        self.add(f"{name}-vs-1", ours, one, f"{what}; the 'reference' column is the agent with 1 in flight")
        if before:
            self.add(f"{name}-before", old, theirs, f"{what}; the agent of {before}; reference {threads * window} "
                     "threads")
            self.add(f"{name}-before-vs-multi", old, multi, f"{what}; the agent of {before}; reference {threads} "
                     f"thread(s) x {window} in flight")

    def put_case(self, name, files, record):
        threads = self.args.threads
        # The agent generates with min(8, cores / ranks) workers per rank (agent/generate_phase.cc GenerationWorkers); the
        # reference gets as many PUT threads, and objects of the agent's object size.
        workers = max(1, min(8, os.cpu_count() or 1))
        ours, theirs = [], []
        for r in range(self.args.rounds):
            a = self.agent(f"{name}-{r}", job_yaml("bench", f"put-{r}", files, record, 1, True, False, threads))
            with open(os.path.join(self.work, "runs", f"{name}-{r}", "out", "summary.json")) as f:
                size = json.load(f)["dlio_ext"]["generate"]["io"]["bytes"] // files
            b, _ = self.ref("put", "bench", f"ref-put-{r}", str(files), str(size), str(workers))
            ours.append(a)
            theirs.append(b)
            log(f"  {name} round {r + 1}: agent {a / 1e6:.0f} MB/s, reference {b / 1e6:.0f} MB/s")
        self.add(name, ours, theirs, f"{files} objects of {size / 1024:.0f} KiB, {workers} generation workers vs "
                 f"{workers} PUT threads")

    def add(self, name, ours, theirs, note):
        """A row: ours[r] and theirs[r] are round r's pair; the ratio is the median of the per-pair ratios."""
        pairs = [o / t for o, t in zip(ours, theirs)]
        self.rows.append((name, statistics.median(ours), statistics.median(theirs), statistics.median(pairs),
                          min(pairs), max(pairs), len(pairs), TARGETS[name], note))

    def report(self):
        lines = ["| case | agent MB/s | reference MB/s | ratio (median of pairs) | pairs min-max | target | met | "
                 "notes |",
                 "|---|---|---|---|---|---|---|---|"]
        ok = True
        for name, o, t, ratio, lo, hi, n, target, note in self.rows:
            met = ratio >= target
            ok &= met
            lines.append(f"| {name} | {o / 1e6:.0f} | {t / 1e6:.0f} | {ratio:.2f} | {lo:.2f}-{hi:.2f} ({n}) | "
                         f"{target:.2f} | {'yes' if met else 'NO'} | {note} |")
        text = "\n".join(lines)
        print(text)
        if self.args.results:
            with open(self.args.results, "w") as f:
                f.write(text + "\n")
        return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=4, help="loader threads = reference client threads")
    ap.add_argument("--in-flight", type=int, default=8, help="the inflight cases' dlio_ext.s3_requests_in_flight")
    ap.add_argument("--inflight-threads", type=int, default=1, help="the inflight cases' loader threads")
    ap.add_argument("--inflight-epochs", type=int, default=0,
                    help="the inflight cases' epochs (0: 2, or 1 with --smoke); more epochs, longer pairs")
    ap.add_argument("--before-bin-dir", help="the inflight cases also run this folder's agent (e.g. main's build) in "
                    "every round: before and after in one run")
    ap.add_argument("--smoke", action="store_true", help="tiny, 1 round: checks the harness, measures nothing")
    ap.add_argument("--cases", default="get-2MiB,get-100KiB,put-2MiB")
    ap.add_argument("--results")
    ap.add_argument("--check-targets", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.rounds = 1
    os.makedirs(args.work, exist_ok=True)
    b = Bench(args)
    b.start_gateway()
    try:
        small = args.smoke
        for case in args.cases.split(","):
            log(f"case {case}")
            if case == "get-2MiB":
                b.get_case(case, 16 if small else 128, 2 * MIB, 1 if small else 4)
            elif case == "get-100KiB":
                b.get_case(case, 32 if small else 2000, 100 * 1024, 1 if small else 2)
            elif case == "get-100KiB-inflight":
                b.inflight_case(case, 32 if small else 2000, 100 * 1024, 1 if small else 2)
            elif case == "get-2MiB-inflight":
                b.inflight_case(case, 16 if small else 128, 2 * MIB, 1 if small else 2)
            elif case == "put-2MiB":
                b.put_case(case, 16 if small else 128, 2 * MIB)
            else:
                raise RuntimeError(f"unknown case {case}")
        ok = b.report()
    finally:
        b.stop_gateway()
    return 1 if (args.check_targets and not ok) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        log(f"s3_bench: {e}")
        sys.exit(2)
