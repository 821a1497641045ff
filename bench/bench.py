#!/usr/bin/env python3
"""Side-by-side benchmark of the agent against fio and libhdf5 (issue 5). Driven by bench/run.sh.

Every read case runs one dlio-agent (1 accelerator, computation_time 0, the coordinator's step barrier included)
against its reference, the two sides alternating for --rounds rounds; the medians are compared:
    ratio = median(agent bytes/s) / median(reference bytes/s).
Agent bytes/s: bytes read over the timed epoch seconds (output.metric.exclude_start_steps 0, so the whole epoch),
from the job's summary.json. Each agent run is a fresh `dlio-coordinator serve` + `dlio-agent` + `submit`, so the
agent's start-up, baseline RSS and CPU time can be read from /proc around the submit.
References replay the agent's own I/O: a recording run with DLIO_IOLOG_DIR makes the agent write one fio iolog
per loader thread (storage/storage.h); fio replays them with one job per thread, the same engine and queue depth,
the logs repeated for the same number of epochs. Case (c) is compared with dlio-bench-hdf5-loop, libhdf5 called
directly with the agent's sample order and thread count (fio's 4 KiB random reads shown beside it). Case (f) (issue
18) is the simple reference a user writes first: `dlio-coordinator run` against a plain fio job over the same files.
Only the standard library is used. Exit status: 0 ran, 1 a target missed (--check-targets), 2 error, 77 no fio.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20
# Every fio job reads into (and writes from) page-aligned buffers, as the agent does. fio aligns its buffers only for
# O_DIRECT; otherwise they start 16 bytes into a malloc'd block, and on AMD EPYC hosts the kernel's page-cache copy
# into such a buffer ran at half speed (fio psync replay of (a): 11 GB/s unaligned, 22 GB/s with this line; a plain C
# loop the same), which made the agent look 1.8x faster than fio. The reference is what fio can do at its best.
FIO_ALIGN = "iomem_align=4096\n"


# ------------------------------------------------------------------------------------------------------------
# Sizes per mode. full: each side of a round reads ~9-11 GB from the page cache (about a second on an idle machine,
# several when the neighbours compile: short runs let fixed per-epoch costs dominate); quick: about a third of
# that; smoke: tiny, one round, only to show the harness works.
SIZES = {
    "full": dict(rounds=5, a_files=128, a_epochs=10, b_files=16, b_records=400, b_epochs=12, c_files=16,
                 c_samples=1024, c_epochs=3, d_files=128, e_epochs=10, f_epochs=5, g_files=128),
    "quick": dict(rounds=5, a_files=64, a_epochs=4, b_files=8, b_records=400, b_epochs=6, c_files=8, c_samples=512,
                  c_epochs=2, d_files=32, e_epochs=4, f_epochs=5, g_files=32),
    "smoke": dict(rounds=1, a_files=8, a_epochs=1, b_files=4, b_records=40, b_epochs=1, c_files=2, c_samples=64,
                  c_epochs=1, d_files=4, e_epochs=1, f_epochs=1, g_files=4),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def proc_status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def evict(paths):
    """Drops the files' pages from the page cache (posix_fadvise DONTNEED), one file after another."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(8 * MIB):
                pass


def epoch_marks(out):
    """(start, end) in seconds since the epoch of every training epoch of rank 0, in epoch order, from the result
    folder's 0_per_epoch_stats.json (DLIO's file: ISO times per epoch)."""
    with open(os.path.join(out, "0_per_epoch_stats.json")) as f:
        per_epoch = json.load(f)
    ts = lambda x: datetime.datetime.fromisoformat(x).timestamp()
    epochs = sorted((int(k), v) for k, v in per_epoch.items() if k.isdigit())
    return [(ts(v["start"]), ts(v["end"])) for _, v in epochs]


def children_cpu_seconds():
    """utime + stime of this process's waited-for children (and theirs): a run's CPU when taken around it."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def job_yaml(name, fmt, folder, files, nspf, record, batch=1, threads=1, epochs=1, generate=False, train=True,
             reader_extra="", dataset_extra="", ext=""):
    return f"""# bench/bench.py case {name}
model:
  name: bench_{name}
workflow:
  generate_data: {str(generate)}
  train: {str(train)}
dataset:
  data_folder: {folder}
  format: {fmt}
  num_files_train: {files}
  num_samples_per_file: {nspf}
  record_length_bytes: {record}
{dataset_extra}reader:
  data_loader: pytorch
  batch_size: {batch}
  read_threads: {threads}
  prefetch_size: 2
{reader_extra}train:
  epochs: {epochs}
  computation_time: 0
output:
  metric:
    exclude_start_steps: 0
{ext}"""


class Bench:
    def __init__(self, args):
        self.args = args
        self.mode = "smoke" if args.smoke else ("quick" if args.quick else "full")
        self.size = dict(SIZES[self.mode])
        if args.rounds:
            self.size["rounds"] = args.rounds
        self.bin = os.path.abspath(args.bin_dir)
        self.work = os.path.abspath(args.work)
        os.makedirs(self.work, exist_ok=True)
        self.fio = shutil.which("fio")
        self.rows = []           # (section, label, ours, reference, ratio, target, met, note)
        self.agent_runs = []     # every agent run's start-up / RSS samples
        self.loads = []
        self.case_loads = []     # loads sampled during the last alternate() (a case's rounds)
        self.n = 0

    # --------------------------------------------------------------------------------------------------------
    # Processes

    def _wait_for_line(self, path, pattern, proc, timeout=15.0):
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            try:
                with open(path) as f:
                    m = rx.search(f.read())
                    if m:
                        return m
            except FileNotFoundError:
                pass
            if proc.poll() is not None:
                raise BenchError(f"{proc.args[0]} exited ({proc.returncode}) before '{pattern}'; see {path}")
            time.sleep(0.001)
        raise BenchError(f"timed out waiting for '{pattern}' in {path}")

    def run_dir(self, job_text, tag):
        """A fresh numbered folder for one run under work/runs, with the job file in it. Returns (folder, job file)."""
        self.n += 1
        d = os.path.join(self.work, "runs", f"{self.n:03d}-{tag}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        job = os.path.join(d, "job.yaml")
        with open(job, "w") as f:
            f.write(job_text)
        return d, job

    def agent_job(self, job_text, tag, env_extra=None, before=None):
        """Runs one job on a fresh coordinator + agent. Returns the summary plus the agent's /proc figures."""
        d, job = self.run_dir(job_text, tag)
        clog = os.path.join(d, "coordinator.log")
        coord = subprocess.Popen([os.path.join(self.bin, "dlio-coordinator"), "serve", "--listen", "127.0.0.1:0",
                                  "--results-dir", os.path.join(d, "results")],
                                 stdout=open(clog, "w"), stderr=subprocess.STDOUT)
        agent = None
        try:
            port = self._wait_for_line(clog, r"listening on (?:port |.*\(port )(\d+)", coord).group(1)
            addr = f"127.0.0.1:{port}"
            env = dict(os.environ)
            env.update(env_extra or {})
            alog = os.path.join(d, "agent.log")
            t0 = time.monotonic()
            agent = subprocess.Popen([os.path.join(self.bin, "dlio-agent"), "--coordinator", addr, "--data-root",
                                      self.work, "--name", f"bench-{self.n}", "--log-level", "info"],
                                     stdout=open(alog, "w"), stderr=subprocess.STDOUT, env=env)
            self._wait_for_line(alog, r"attached to", agent)
            startup = time.monotonic() - t0
            rss0 = proc_status_kib(agent.pid, "VmRSS")
            if before:
                before()
            self.loads.append(loadavg())
            cpu0 = proc_cpu_seconds(agent.pid)
            out = os.path.join(d, "out")
            r = subprocess.run([os.path.join(self.bin, "dlio-coordinator"), "submit", job, "--coordinator", addr,
                                "--agents", "1", "--wait-for-agents", "10", "--output", out],
                               capture_output=True, text=True)
            cpu1 = proc_cpu_seconds(agent.pid)
            hwm = proc_status_kib(agent.pid, "VmHWM")
            # 5 and 6: the job ran but missed its AU target or could not measure it; the bench measures rates.
            if r.returncode not in (0, 5, 6):
                raise BenchError(f"job {tag} failed ({r.returncode}): {r.stderr.strip()[-2000:]}\n(see {d})")
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
        finally:
            for p in (agent, coord):
                if p is not None and p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(10)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        ext = summary.get("dlio_ext", {})
        res = dict(dir=d, startup_s=startup, rss0_mib=rss0 / 1024, hwm_mib=hwm / 1024, cpu_s=cpu1 - cpu0,
                   summary=summary)
        epochs = ext.get("train_epochs", [])
        if epochs:
            # Gated rate: bytes over the wall time from the first epoch's start to the last epoch's end, so the
            # epoch boundaries (phase orders, plan, loader start) count, as fio's replay of all epochs is one run.
            # The DLIO-style rate over the epochs' own timed windows is kept beside it.
            marks = epoch_marks(out)
            res["bytes"] = sum(e["read_bytes"] for e in epochs)
            res["seconds"] = marks[-1][1] - marks[0][0]
            res["epoch_seconds"] = sum(e["timed_seconds"] for e in epochs)
            res["samples"] = ext.get("train_io", {}).get("samples", 0)
            res["bps"] = res["bytes"] / res["seconds"]
            res["epoch_bps"] = res["bytes"] / res["epoch_seconds"]
        gen = ext.get("generate")
        if gen:
            res["bytes"] = gen["io"]["bytes"]
            res["seconds"] = gen["seconds"]
            res["bps"] = res["bytes"] / res["seconds"]
        self.agent_runs.append(res)
        return res

    def embedded_run(self, job_text, tag, file_bytes):
        """`dlio-coordinator run JOB --local-agents 1`: the embedded coordinator and its own agent, as a user starts a
        job on one machine. Rate: `file_bytes` per epoch over the wall time from the first epoch's start to the last
        epoch's end (0_per_epoch_stats.json). CPU: the coordinator's and the agent's together (rusage of children)."""
        d, job = self.run_dir(job_text, tag)
        out = os.path.join(d, "out")
        self.loads.append(loadavg())
        cpu0 = children_cpu_seconds()
        r = subprocess.run([os.path.join(self.bin, "dlio-coordinator"), "run", job, "--local-agents", "1",
                            "--data-root", self.work, "--results-dir", os.path.join(d, "results"), "--output", out],
                           capture_output=True, text=True)
        cpu = children_cpu_seconds() - cpu0
        if r.returncode not in (0, 5, 6):  # 5, 6: AU target missed or not measurable; the bench measures rates
            raise BenchError(f"run {tag} failed ({r.returncode}): {r.stderr.strip()[-2000:]}\n(see {d})")
        marks = epoch_marks(out)
        with open(os.path.join(out, "summary.json")) as f:
            ext = json.load(f).get("dlio_ext", {})
        epochs = ext.get("train_epochs", [])
        seconds = marks[-1][1] - marks[0][0]
        nbytes = file_bytes * len(marks)
        return dict(dir=d, bytes=nbytes, seconds=seconds, bps=nbytes / seconds, cpu_s=cpu,
                    samples=ext.get("train_io", {}).get("samples", 0),
                    epoch_bps=nbytes / sum(e["timed_seconds"] for e in epochs),
                    durations=[e - s for s, e in marks], gaps=[b[0] - a[1] for a, b in zip(marks, marks[1:])])

    def run_fio_group(self, jobfile):
        """fio with group_reporting: the group's own figures (bw_bytes = all jobs' bytes over the longest job's
        runtime, as fio computes it); CPU from rusage, as embedded_run's."""
        cpu0 = children_cpu_seconds()
        r = subprocess.run([self.fio, "--output-format=json", jobfile], capture_output=True, text=True)
        cpu = children_cpu_seconds() - cpu0
        if r.returncode != 0:
            raise BenchError(f"fio {jobfile} failed: {r.stderr.strip()[-2000:]}")
        group = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
        if group.get("error"):
            raise BenchError(f"fio {jobfile}: error {group['error']}")
        self.loads.append(loadavg())
        rd = group["read"]
        return dict(bytes=rd["io_bytes"], seconds=rd["runtime"] / 1000.0, bps=rd["bw_bytes"], cpu_s=cpu)

    def run_fio(self, jobfile):
        r = subprocess.run([self.fio, "--output-format=json", jobfile], capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"fio {jobfile} failed: {r.stderr.strip()[-2000:]}")
        text = r.stdout[r.stdout.index("{"):]
        jobs = json.loads(text)["jobs"]
        total, secs, cpu = 0, 0.0, 0.0
        for j in jobs:
            if j.get("error"):
                raise BenchError(f"fio {jobfile}: job {j['jobname']} error {j['error']}")
            b = j["read"]["io_bytes"] + j["write"]["io_bytes"]
            rt = j["job_runtime"] / 1000.0
            total += b
            secs = max(secs, rt)
            cpu += (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * rt
        self.loads.append(loadavg())
        secs = max(secs, 1e-3)  # fio reports whole milliseconds; a tiny (smoke) run may report 0
        return dict(bytes=total, seconds=secs, bps=total / secs, cpu_s=cpu)

    # --------------------------------------------------------------------------------------------------------
    # Datasets (generated once by the agent itself; kept between runs while their job text is unchanged)

    def dataset(self, name, fmt, files, nspf, record, dataset_extra=""):
        folder = f"data/{name}"
        text = job_yaml(f"gen_{name}", fmt, folder, files, nspf, record, generate=True, train=False,
                        dataset_extra=dataset_extra)
        marker = os.path.join(self.work, folder, ".bench-spec")
        if os.path.exists(marker) and open(marker).read() == text:
            return folder
        shutil.rmtree(os.path.join(self.work, folder), ignore_errors=True)
        log(f"bench: generating dataset {name} ({files} {fmt} files)")
        self.agent_job(text, f"gen-{name}")
        with open(marker, "w") as f:
            f.write(text)
        return folder

    def data_files(self, folder):
        return sorted(glob.glob(os.path.join(self.work, folder, "train", "**", "*.*"), recursive=True))

    # --------------------------------------------------------------------------------------------------------
    # fio replay of the agent's own reads

    def record_iolog(self, job_text, tag):
        rec = os.path.join(self.work, "iolog", tag)
        shutil.rmtree(rec, ignore_errors=True)
        os.makedirs(rec)
        self.agent_job(job_text, f"record-{tag}", env_extra={"DLIO_IOLOG_DIR": rec})
        logs = sorted(glob.glob(os.path.join(rec, "iolog.*")))
        if not logs:
            raise BenchError(f"the recording run of {tag} wrote no iolog")
        return logs

    def replay_job(self, logs, tag, epochs, engine, iodepth=1, direct=False):
        """A fio job file with one job per recorded iolog, repeated `epochs` times. O_DIRECT: the agent's last read
        of a file runs past its end (rounded up to 4 KiB, as DLIO's O_DIRECT readers do); fio treats the short read
        as an error, so it reads the aligned part only (< 4 KiB per file left out; bytes/s are compared)."""
        out = os.path.join(self.work, "iolog", tag + "-replay")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        sizes = {}
        lines = [f"[global]\nioengine={engine}\niodepth={iodepth}\ninvalidate=0\ndirect={int(direct)}\n{FIO_ALIGN}"]
        for i, path in enumerate(logs):
            with open(path) as f:
                body = f.read().splitlines()[1:]
            adds = [l for l in body if l.endswith(" add")]
            rest = []
            for l in body:
                if l.endswith(" add"):
                    continue
                if direct and " read " in l:
                    fname, _, off, length = l.rsplit(" ", 3)
                    size = sizes.setdefault(fname, os.path.getsize(fname))
                    off, length = int(off), int(length)
                    if off + length > size:
                        length = (size - off) // 4096 * 4096
                        if length == 0:
                            continue
                        l = f"{fname} read {off} {length}"
                rest.append(l)
            rlog = os.path.join(out, f"replay.{i}")
            with open(rlog, "w") as f:
                f.write("fio version 2 iolog\n" + "\n".join(adds + rest * epochs) + "\n")
            lines.append(f"[t{i}]\nread_iolog={rlog}\n")
        jobfile = os.path.join(out, "replay.fio")
        with open(jobfile, "w") as f:
            f.write("\n".join(lines))
        return jobfile

    # --------------------------------------------------------------------------------------------------------
    # Alternating rounds

    def alternate(self, name, ours_fn, ref_fn, beside_fn=None):
        """Rounds of agent, reference (and `beside_fn`, a second reference) in alternating order: the agent first in
        even rounds, last in odd ones. Returns the lists of results (a third one with beside_fn)."""
        ours, ref, beside = [], [], []
        first_load = len(self.loads)
        for r in range(self.size["rounds"]):
            order = [(ours, ours_fn), (ref, ref_fn)] + ([(beside, beside_fn)] if beside_fn else [])
            for out, fn in (order if r % 2 == 0 else order[::-1]):
                out.append(fn())
            log(f"bench: {name} round {r + 1}: agent {ours[-1]['bps'] / 1e6:.0f} MB/s, "
                f"reference {ref[-1]['bps'] / 1e6:.0f} MB/s" +
                (f", beside {beside[-1]['bps'] / 1e6:.0f} MB/s" if beside_fn else ""))
        self.case_loads = self.loads[first_load:]  # the machine's load during these rounds, for add_ratio's note
        return (ours, ref, beside) if beside_fn else (ours, ref)

    def add_ratio(self, section, label, ours, ref, target, unit_div=1e6, unit="MB/s", note=""):
        mo, mr = median([o["bps"] for o in ours]), median([r["bps"] for r in ref])
        ratio = mo / mr if mr else float("nan")
        per_round = [o["bps"] / r["bps"] for o, r in zip(ours, ref)]
        spread = f"rounds {min(per_round):.2f}-{max(per_round):.2f}" if len(per_round) > 1 else ""
        if all("epoch_bps" in o for o in ours):
            me = median([o["epoch_bps"] for o in ours])
            note = "; ".join(x for x in (f"epoch windows only (DLIO's timing): {me / unit_div:,.0f} {unit}, ratio "
                                         f"{me / mr:.2f}", note) if x)
        if self.case_loads:  # the 1-min load average around the rounds (other engineers share the cores)
            note = "; ".join(x for x in (note, f"load {min(self.case_loads):.1f}-{max(self.case_loads):.1f}") if x)
        met = None if target is None else ratio >= target
        self.rows.append((section, label, f"{mo / unit_div:,.0f} {unit}", f"{mr / unit_div:,.0f} {unit}",
                          f"{ratio:.2f}", "" if target is None else f">= {target:.2f}", met,
                          "; ".join(x for x in (spread, note) if x)))
        return ratio

    def add_row(self, section, label, ours, ref="", ratio="", target="", met=None, note=""):
        self.rows.append((section, label, ours, ref, ratio, target, met, note))

    # --------------------------------------------------------------------------------------------------------
    # Cases

    def case_a(self):
        s = self.size
        folder = self.dataset("a", "npz", s["a_files"], 1, 8388608)
        warm(self.data_files(folder))
        job = job_yaml("a", "npz", folder, s["a_files"], 1, 8388608, batch=4, threads=4, epochs=s["a_epochs"])
        logs = self.record_iolog(job_yaml("a", "npz", folder, s["a_files"], 1, 8388608, batch=4, threads=4), "a")
        fio_job = self.replay_job(logs, "a", s["a_epochs"], "psync")
        ours, ref = self.alternate("(a)", lambda: self.agent_job(job, "a"), lambda: self.run_fio(fio_job))
        self.add_ratio("Read path", f"(a) npz {s['a_files']} x 8 MiB, batch 4, read_threads 4, posix; vs fio psync "
                       "replay", ours, ref, 0.90)
        self.cpu_rows("(a) npz", ours, ref)

    def case_f(self):
        """Issue 18: the same dataset as (a) against the simple reference a user writes first, with the user's own
        method: `dlio-coordinator run` (embedded coordinator, one local agent), 5 epochs, rate = file bytes x epochs
        over first epoch start to last epoch end; fio reading every file whole, each of 4 jobs (processes) every
        fourth file, loops=epochs, the group's bw_bytes."""
        s = self.size
        folder = self.dataset("a", "npz", s["a_files"], 1, 8388608)
        files = self.data_files(folder)
        warm(files)
        sizes = {os.path.getsize(f) for f in files}
        if len(sizes) != 1:
            raise BenchError(f"(f): the files of {folder} differ in size ({sorted(sizes)}); fio's bs is one size")
        size = sizes.pop()
        epochs = s["f_epochs"]
        job = job_yaml("f", "npz", folder, s["a_files"], 1, 8388608, batch=4, threads=4, epochs=epochs)
        fio_text = (f"[global]\nrw=read\nbs={size}\nioengine=psync\n{FIO_ALIGN}invalidate=0\nloops={epochs}\n"
                    "group_reporting=1\n{extra}" +
                    "".join(f"[t{i}]\nfilename={':'.join(files[i::4])}\n" for i in range(4)))
        fio_job = os.path.join(self.work, "f-simple.fio")
        # Beside it, the same job as threads of one fio process. fio's job processes each call setsid(): with the
        # kernel's autogroup scheduling (sched_autogroup_enabled, on in most distributions' kernels) every job is a
        # scheduling group of its own, so on a busy machine four processes get up to four times the CPU share of
        # one process, whatever its thread count: the agent's loader threads, or fio's with thread=1.
        fio_one = os.path.join(self.work, "f-simple-threads.fio")
        for path, extra in ((fio_job, ""), (fio_one, "thread=1\n")):
            with open(path, "w") as f:
                f.write(fio_text.replace("{extra}", extra))
        ours, ref, one = self.alternate("(f)", lambda: self.embedded_run(job, "f", size * len(files)),
                                        lambda: self.run_fio_group(fio_job), lambda: self.run_fio_group(fio_one))
        gaps = [g * 1e3 for o in ours for g in o["gaps"]]
        first = median([o["durations"][0] * 1e3 for o in ours])
        later = [d * 1e3 for o in ours for d in o["durations"][1:]]
        self.add_ratio("Read path", f"(f) npz {s['a_files']} x 8 MiB, batch 4, read_threads 4, {epochs} epochs, "
                       "`dlio-coordinator run --local-agents 1`; vs plain fio (4 jobs of every fourth file, whole-file "
                       f"psync reads, loops={epochs}, group bw)", ours, ref, 0.90,
                       note=(f"epoch gaps median {median(gaps):.1f} ms (max {max(gaps):.1f}); " if gaps else "") +
                       f"epoch 1 {first:.0f} ms" + (f", later epochs median {median(later):.0f} ms" if later else ""))
        self.add_ratio("Read path", "(f) beside it: the same fio job with thread=1 (one process, one scheduling group "
                       "like the agent's; see the notes on autogroup)", ours, one, None, note="information only")
        self.cpu_rows("(f) npz, run mode", ours, ref, who="coordinator + agent, whole run")

    def case_b(self):
        s = self.size
        folder = self.dataset("b", "tfrecord", s["b_files"], s["b_records"], 114660)
        warm(self.data_files(folder))
        rx = "  transfer_size: 262144\n"
        job = job_yaml("b", "tfrecord", folder, s["b_files"], s["b_records"], 114660, batch=400, threads=4,
                       epochs=s["b_epochs"], reader_extra=rx)
        if self.mode == "smoke":
            job = job.replace("batch_size: 400", "batch_size: 20")
        logs = self.record_iolog(job.replace(f"epochs: {s['b_epochs']}", "epochs: 1"), "b")
        fio_job = self.replay_job(logs, "b", s["b_epochs"], "psync")
        ours, ref = self.alternate("(b)", lambda: self.agent_job(job, "b"), lambda: self.run_fio(fio_job))
        self.add_ratio("Read path", f"(b) tfrecord {s['b_files']} x {s['b_records']} records of 114 KB, batch 400, "
                       "256 KiB transfers, read_threads 4; vs fio psync replay", ours, ref, 0.80)
        self.cpu_rows("(b) tfrecord", ours, ref)

    def case_c(self):
        s = self.size
        dx = "  hdf5:\n    chunk_dims: [1, 64, 64]\n"
        folder = self.dataset("c", "hdf5", s["c_files"], s["c_samples"], 4096, dataset_extra=dx)
        files = self.data_files(folder)
        warm(files)
        job = job_yaml("c", "hdf5", folder, s["c_files"], s["c_samples"], 4096, batch=32, threads=4,
                       epochs=s["c_epochs"], dataset_extra=dx, reader_extra="  sample_shuffle: seed\n")
        job_path = os.path.join(self.work, "c-job.yaml")
        with open(job_path, "w") as f:
            f.write(job)

        def loop(extra=()):
            r = subprocess.run([os.path.join(self.bin, "dlio-bench-hdf5-loop"), job_path, self.work,
                                str(s["c_epochs"]), *extra], capture_output=True, text=True)
            if r.returncode != 0:
                raise BenchError(f"dlio-bench-hdf5-loop failed: {r.stderr.strip()}")
            j = json.loads(r.stdout)
            self.loads.append(loadavg())
            return dict(bytes=j["bytes"], seconds=j["seconds"], bps=j["bytes"] / j["seconds"], cpu_s=j["cpu_seconds"],
                        samples=j["samples"])

        # Beside it in the same rounds: the agent with the libhdf5 engine (dlio_ext.hdf5_engine; replay is the default).
        job_lib = job_yaml("c", "hdf5", folder, s["c_files"], s["c_samples"], 4096, batch=32, threads=4,
                           epochs=s["c_epochs"], dataset_extra=dx, reader_extra="  sample_shuffle: seed\n",
                           ext="dlio_ext:\n  hdf5_engine: libhdf5\n")
        ours, ref, lib = self.alternate("(c)", lambda: self.agent_job(job, "c"), loop,
                                        lambda: self.agent_job(job_lib, "c-libhdf5"))
        self.engine_row("(c) agent, hdf5 engines", ours, lib)
        self.add_ratio("Read path", f"(c) hdf5 {s['c_files']} x {s['c_samples']} samples, 4 KiB chunks, random "
                       "order, batch 32, read_threads 4; vs libhdf5 C loop (H5Fopen+H5Dread per sample)", ours, ref,
                       0.80)
        # Beside it: fio's 4 KiB random reads over the same files and the same number of samples (no target).
        per_job = max(1, s["c_files"] * s["c_samples"] * s["c_epochs"] // 4)
        fio_job = os.path.join(self.work, "c-fio.fio")
        with open(fio_job, "w") as f:
            f.write(f"[global]\nioengine=psync\nrw=randread\nbs=4k\ninvalidate=0\nnumber_ios={per_job}\n{FIO_ALIGN}"
                    f"filename={':'.join(files)}\nfile_service_type=random\n" +
                    "".join(f"[t{i}]\n" for i in range(4)))
        fio = [self.run_fio(fio_job) for _ in range(3)]
        open_once = [loop(["--keep-open"]) for _ in range(3)]
        mo = median([o["bps"] for o in ours])
        self.add_row("Read path", "(c) beside it: fio 4 KiB randread, 4 jobs, same files and count (no H5 library)",
                     f"{mo / 1e6:,.0f} MB/s", f"{median([f['bps'] for f in fio]) / 1e6:,.0f} MB/s",
                     f"{mo / median([f['bps'] for f in fio]):.2f}", note="information only")
        self.add_row("Read path", "(c) beside it: libhdf5 loop keeping files open (not DLIO's on_demand pattern)",
                     f"{mo / 1e6:,.0f} MB/s", f"{median([f['bps'] for f in open_once]) / 1e6:,.0f} MB/s",
                     f"{mo / median([f['bps'] for f in open_once]):.2f}", note="information only")
        self.cpu_rows("(c) hdf5", ours, ref, ref_name="libhdf5 loop")

    def case_d(self):
        s = self.size
        folder = self.dataset("d", "npz", s["d_files"], 1, 8388608)
        files = self.data_files(folder)
        rx = "  odirect: true\n"
        job = job_yaml("d", "npz", folder, s["d_files"], 1, 8388608, batch=4, threads=4, epochs=1, reader_extra=rx)
        logs = self.record_iolog(job, "d")
        fio_job = self.replay_job(logs, "d", 1, "psync", direct=True)
        ours, ref = self.alternate("(d)", lambda: self.agent_job(job, "d", before=lambda: evict(files)),
                                   lambda: (evict(files), self.run_fio(fio_job))[1])
        self.add_ratio("Read path", f"(d) O_DIRECT npz {s['d_files']} x 8 MiB (reader.odirect), evicted per file "
                       "first, read_threads 4; vs fio --direct=1 replay", ours, ref, 0.90)

    def case_e(self):
        s = self.size
        folder = self.dataset("a", "npz", s["a_files"], 1, 8388608)
        warm(self.data_files(folder))
        ext = "dlio_ext:\n  io_engine: io_uring\n"
        job = job_yaml("e", "npz", folder, s["a_files"], 1, 8388608, batch=4, threads=4, epochs=s["e_epochs"],
                       ext=ext)
        logs = self.record_iolog(job_yaml("e", "npz", folder, s["a_files"], 1, 8388608, batch=4, threads=4, ext=ext),
                                 "e")
        fio_job = self.replay_job(logs, "e", s["e_epochs"], "io_uring", iodepth=8)
        ours, ref = self.alternate("(e)", lambda: self.agent_job(job, "e"), lambda: self.run_fio(fio_job))
        self.add_ratio("Read path", f"(e) io_uring npz {s['a_files']} x 8 MiB in 1 MiB reads, 8 in flight per thread, "
                       "read_threads 4; vs fio --ioengine=io_uring --iodepth=8 replay", ours, ref, 0.90)

    def case_gen(self):
        s = self.size
        folder = "data/gen"
        job = job_yaml("gen", "npz", folder, s["g_files"], 1, 8388608, generate=True, train=False)
        gen_dir = os.path.join(self.work, folder)
        fio_dir = os.path.join(self.work, "fio-gen")

        def ours():
            shutil.rmtree(gen_dir, ignore_errors=True)
            return self.agent_job(job, "gen")

        def ref():
            shutil.rmtree(fio_dir, ignore_errors=True)
            os.makedirs(fio_dir)
            return self.run_fio(fio_file)

        first = ours()  # also tells the file size fio must write
        size = os.path.getsize(self.data_files(folder)[0])
        fio_file = os.path.join(self.work, "gen.fio")
        with open(fio_file, "w") as f:
            f.write(f"[gen]\nioengine=psync\nrw=write\nbs={size}\nbs_unaligned=1\nfilesize={size}\n{FIO_ALIGN}"
                    f"nrfiles={s['g_files']}\nfile_service_type=sequential\nopenfiles=1\nend_fsync=1\n"
                    f"fallocate=none\ndirectory={fio_dir}\n")
        del first
        o, r = self.alternate("generation", ours, ref)
        self.add_ratio("Generation", f"npz {s['g_files']} x 8 MiB, fresh files, 1 rank; vs fio sequential write of "
                       "the same bytes (one write per file, end_fsync=1)", o, r, 0.80)
        shutil.rmtree(gen_dir, ignore_errors=True)
        shutil.rmtree(fio_dir, ignore_errors=True)

    def engine_row(self, name, replay, lib):
        """Samples per CPU-second of the replay engine against the libhdf5 engine (issue 31's target: >= 2x)."""
        rep = median([r["samples"] / r["cpu_s"] for r in replay if r.get("cpu_s")])
        old = median([r["samples"] / r["cpu_s"] for r in lib if r.get("cpu_s")])
        same = all(a["bytes"] == b["bytes"] for a, b in zip(replay, lib))
        self.add_row("Client CPU cost", f"{name}: samples per CPU-second, replay vs libhdf5 (dlio_ext.hdf5_engine)",
                     f"{rep:,.0f}", f"{old:,.0f}", f"{rep / old:.2f}" if old else "", ">= 2.0",
                     bool(old) and rep / old >= 2.0, note="read bytes equal" if same else "read bytes DIFFER")

    def case_hdf5_engines(self):
        """dlio-bench-hdf5-engines: one loader thread per engine, page cache warm (the engines' CPU alone)."""
        s = self.size
        layouts = [("issue 31's H: 4 x 2,048 samples of 64 KiB, contiguous", ["--files", "4", "--samples", "2048",
                                                                               "--dims", "256,256"]),
                   (f"case (c)'s files: {s['c_files']} x {s['c_samples']} samples of 4 KiB, chunks 1x64x64",
                    ["--files", str(s["c_files"]), "--samples", str(s["c_samples"]), "--dims", "64,64",
                     "--chunk", "1,64,64"]),
                   ("4 x 64 samples of 16 KiB, chunks 1x32x32, gzip", ["--files", "4", "--samples", "64", "--dims",
                                                                      "128,128", "--chunk", "1,32,32",
                                                                      "--compression", "gzip"])]
        for n, (label, args) in enumerate(layouts):
            if self.mode == "smoke":
                args = [a if a not in ("2048", str(s["c_samples"])) else "64" for a in args]
            r = subprocess.run([os.path.join(self.bin, "dlio-bench-hdf5-engines"), os.path.join(self.work, f"h{n}"),
                                *args, "--rounds", str(s["rounds"])], capture_output=True, text=True)
            if r.returncode != 0:
                raise BenchError(f"dlio-bench-hdf5-engines failed: {r.stderr.strip()}")
            lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
            lib, rep = lines[0], lines[1]
            ratio = rep["samples_per_cpu_second"] / lib["samples_per_cpu_second"]
            self.add_row("Client CPU cost", f"hdf5 engines, {label}: samples per CPU-second, replay vs libhdf5",
                         f"{rep['samples_per_cpu_second']:,.0f}", f"{lib['samples_per_cpu_second']:,.0f}",
                         f"{ratio:.2f}", ">= 2.0", ratio >= 2.0,
                         note=f"{rep['bytes_per_sample']:,.0f} B read per sample by both; decompression "
                              f"{100 * rep['decode_share_of_cpu']:.0f} % of replay's CPU")

    # Parquet (issue 28): flux-like rows of two float32 list columns (512 KiB + 1.6 KiB), row groups of 8 rows.
    PQ_COLUMNS = ("  parquet:\n    row_group_size: 8\n    columns:\n"
                  "      - {name: t5_encodings, dtype: float32, size: 131072}\n"
                  "      - {name: clip_encodings, dtype: float32, size: 409}\n")

    def case_pq(self):
        """Parquet reads (row_group mode, both columns) against fio replaying the agent's own byte ranges (its
        footers and column chunks), then the cost of decoding: samples per CPU-second with decode off and on."""
        s = self.size
        files = max(4, s["a_files"] // 2)
        folder = self.dataset("pq", "parquet", files, 32, 525924, dataset_extra=self.PQ_COLUMNS)
        warm(self.data_files(folder))
        job = job_yaml("pq", "parquet", folder, files, 32, 525924, batch=32, threads=4, epochs=s["a_epochs"],
                       dataset_extra=self.PQ_COLUMNS)
        logs = self.record_iolog(job_yaml("pq", "parquet", folder, files, 32, 525924, batch=32, threads=4,
                                          dataset_extra=self.PQ_COLUMNS), "pq")
        fio_job = self.replay_job(logs, "pq", s["a_epochs"], "psync")
        ours, ref = self.alternate("(pq)", lambda: self.agent_job(job, "pq"), lambda: self.run_fio(fio_job))
        self.add_ratio("Read path", f"(pq) parquet {files} x 32 rows of 514 KiB (row groups of 8), batch 32, read_threads 4, "
                       "posix, row_group mode; vs fio psync replay of the same ranges", ours, ref, 0.90)
        self.cpu_rows("(pq) parquet", ours, ref)
        for codec in ("snappy", "zstd"):
            extra = self.PQ_COLUMNS.replace("  parquet:", f"  compression: {codec}\n  parquet:")
            cfolder = self.dataset(f"pq_{codec}", "parquet", files, 32, 525924, dataset_extra=extra)
            warm(self.data_files(cfolder))
            rates = []
            for decode in ("false", "true"):
                # several epochs: the agent's CPU time comes in 10 ms clock ticks
                r = self.agent_job(job_yaml("pqd", "parquet", cfolder, files, 32, 525924, batch=32, threads=4,
                                            epochs=s["a_epochs"], dataset_extra=extra,
                                            ext=f"dlio_ext:\n  parquet_decode: {decode}\n"),
                                   f"pq-{codec}-{decode}")
                rates.append(r["samples"] / r["cpu_s"] if r["cpu_s"] else float("nan"))
            self.add_row("Client CPU cost", f"(pq) parquet {codec}: samples per CPU-second, pages read only / "
                         "decompressed (dlio_ext.parquet_decode)", f"{rates[0]:,.0f} / {rates[1]:,.0f}",
                         note=f"decoding costs {1 / rates[1] - 1 / rates[0]:.2e} CPU-s per 514 KiB sample")

    def case_pqgen(self):
        s = self.size
        files = max(4, s["g_files"] // 2)
        folder = "data/pqgen"
        job = job_yaml("pqgen", "parquet", folder, files, 32, 525924, generate=True, train=False,
                       dataset_extra=self.PQ_COLUMNS)
        gen_dir = os.path.join(self.work, folder)
        fio_dir = os.path.join(self.work, "fio-pqgen")

        def ours():
            shutil.rmtree(gen_dir, ignore_errors=True)
            return self.agent_job(job, "pqgen")

        def ref():
            shutil.rmtree(fio_dir, ignore_errors=True)
            os.makedirs(fio_dir)
            return self.run_fio(fio_file)

        ours()  # tells the file size fio must write
        size = os.path.getsize(self.data_files(folder)[0])
        fio_file = os.path.join(self.work, "pqgen.fio")
        with open(fio_file, "w") as f:
            f.write(f"[gen]\nioengine=psync\nrw=write\nbs=8m\nfilesize={size}\n{FIO_ALIGN}"
                    f"nrfiles={files}\nfile_service_type=sequential\nopenfiles=1\nend_fsync=1\n"
                    f"fallocate=none\ndirectory={fio_dir}\n")
        o, r = self.alternate("parquet generation", ours, ref)
        self.add_ratio("Generation", f"parquet {files} x 32 rows of 514 KiB, fresh files, 1 rank; vs fio sequential "
                       "write of the same bytes in 8 MiB writes (end_fsync=1)", o, r, 0.80)
        shutil.rmtree(gen_dir, ignore_errors=True)
        shutil.rmtree(fio_dir, ignore_errors=True)

    def cpu_rows(self, name, ours, ref, ref_name="fio", who="agent process, whole submit"):
        cpu_gb = median([o["cpu_s"] / (o["bytes"] / 1e9) for o in ours])
        ref_gb = median([r["cpu_s"] / (r["bytes"] / 1e9) for r in ref])
        per_k = median([o["cpu_s"] / (o["samples"] / 1000) for o in ours if o.get("samples")])
        self.add_row("Client CPU cost", f"{name}: CPU-s per GB read ({who}; {ref_name} beside)",
                     f"{cpu_gb:.3f}", f"{ref_gb:.3f}", f"{cpu_gb / ref_gb:.2f}" if ref_gb else "",
                     note="lower is better; ratio = agent / reference")
        self.add_row("Client CPU cost", f"{name}: CPU-s per 1000 samples ({who.split(',')[0]})", f"{per_k:.4f}")

    def micro(self):
        exe = os.path.join(self.bin, "dlio-bench-micro")
        if not os.path.exists(exe):
            self.add_row("Microbenchmarks", "Google Benchmark not built (libbenchmark-dev missing)", "n/a")
            return
        extra = ["--benchmark_min_time=0.01", "--benchmark_filter=-BM_EpochPlan10M"] if self.mode == "smoke" else []
        r = subprocess.run([exe, "--benchmark_format=json", *extra], capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"dlio-bench-micro failed: {r.stderr[-2000:]}")
        for b in json.loads(r.stdout)["benchmarks"]:
            name = b["name"]
            cpu_ns = b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
            real_ns = b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
            if name.startswith("BM_Crc32cRecord"):
                self.add_row("Microbenchmarks", "CRC32C of a 114 KB record (ISA-L)",
                             f"{b['bytes_per_second'] / 1e9:.1f} GB/s (CPU)")
            elif name.startswith("BM_TfrecordWriteFramedRecords"):
                self.add_row("Microbenchmarks", "TFRecord write: Example framing + 2 CRCs per 114 KB record, to tmpfs",
                             f"{b['items_per_second'] / 1e3:.1f} k records/s (CPU)",
                             note=f"{b['bytes_per_second'] / 1e9:.2f} GB/s")
            elif name.startswith("BM_TfrecordStreamRecords"):
                self.add_row("Microbenchmarks", "TFRecord read: framing of 114 KB records streamed from tmpfs",
                             f"{b['items_per_second'] / 1e3:.1f} k records/s (CPU)",
                             note=f"{b['bytes_per_second'] / 1e9:.2f} GB/s incl. the kernel copy")
            elif name.startswith("BM_NpyHeaderParse"):
                self.add_row("Microbenchmarks", "NPY header parse (unet3d-like header)", f"{cpu_ns:.0f} ns (CPU)")
            elif name.startswith("BM_HistogramRecord"):
                self.add_row("Microbenchmarks", "LatencyHistogram::Record", f"{cpu_ns:.1f} ns (CPU)")
            elif name.startswith("BM_IoStatsAddOp"):
                self.add_row("Microbenchmarks", "IoStats::AddOp (counters + histogram, per read)",
                             f"{cpu_ns:.1f} ns (CPU)")
            elif name.startswith("BM_HistogramMerge"):
                self.add_row("Microbenchmarks", "LatencyHistogram merge (126 buckets)", f"{cpu_ns:.0f} ns (CPU)")
            elif name.startswith("BM_EpochPlan10M"):
                secs = real_ns / 1e9
                mb = b["total_MB"]
                self.add_row("Microbenchmarks", "Epoch plan, 10 M samples, file + sample shuffle: Make + rank list",
                             f"{secs:.2f} s wall ({cpu_ns / 1e9:.2f} s CPU), {mb:.0f} MB", "", "",
                             "< 1 s, < 200 MB", secs < 1.0 and mb < 200,
                             f"plan {b['plan_MB']:.0f} MB + rank list {b['rank_list_MB']:.0f} MB; peak RSS growth "
                             f"{b['peak_rss_growth_MB']:.0f} MB")

    def allocations(self):
        r = subprocess.run([os.path.join(self.bin, "dlio-bench-alloc"), os.path.join(self.work, "alloc")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"dlio-bench-alloc failed: {r.stderr[-2000:]}")
        for line in r.stdout.splitlines():
            m = re.match(r"alloc (\S+) (\S+) ours_per_sample=(\S+) library_per_sample=(\S+)", line)
            if not m:
                continue
            ours, lib = float(m.group(3)), float(m.group(4))
            self.add_row("Allocations (steady state, per sample)", f"{m.group(1)} via {m.group(2)}: our code",
                         f"{ours:.3f}", "", "", "0", ours == 0.0,
                         f"libraries (malloc inside {'libhdf5' if m.group(1) == 'hdf5' else 'libpng/libjpeg' if m.group(1) in ('png', 'jpeg') else 'C libraries'}): {lib:.1f}"
                         if lib else "libraries: 0")

    def startup_rows(self):
        st = [r["startup_s"] for r in self.agent_runs]
        rss = [r["rss0_mib"] for r in self.agent_runs]
        self.add_row("Agent", f"start-up: exec to attached to the coordinator (median of {len(st)} starts, max "
                     f"{max(st):.3f} s)", f"{median(st):.3f} s", "", "", "< 0.2 s", median(st) < 0.2)
        self.add_row("Agent", "baseline RSS once attached (median; max)", f"{median(rss):.1f} MiB",
                     "", "", "< 100 MiB", max(rss) < 100, f"max {max(rss):.1f} MiB")
        hwm = max(r["hwm_mib"] for r in self.agent_runs)
        self.add_row("Agent", "peak RSS over all runs (VmHWM)", f"{hwm:.0f} MiB",
                     note="read buffers: one whole file per loader thread for npz")

    def case_ckpt(self):
        """Checkpoint save (fsync) and load (page cache evicted first) of one rank's file vs fio on the same bytes."""
        size = {"smoke": 64 << 20, "quick": 1 << 30, "full": 2 << 30}[self.mode]
        job = f"""# bench/bench.py case ckpt
model:
  name: bench_ckpt
  model_size_bytes: {size}
workflow:
  generate_data: False
  train: False
  checkpoint: True
checkpoint:
  checkpoint_folder: ckpt
  num_checkpoints_write: 1
  num_checkpoints_read: 1
  fsync: True
dlio_ext:
  checkpoint_evict_cache: True
"""
        ckpt_dir = os.path.join(self.work, "ckpt")
        fio_dir = os.path.join(self.work, "fio-ckpt")
        bs = 64 << 20  # the Checkpointer's buffer: one write/read request per 64 MiB
        fio_w = os.path.join(self.work, "ckpt-write.fio")
        fio_r = os.path.join(self.work, "ckpt-read.fio")
        common = (f"ioengine=psync\nbs={bs}\nfilesize={size}\nfilename=model_states-0.pt\n{FIO_ALIGN}"
                  f"directory={fio_dir}\nfallocate=none\n")
        with open(fio_w, "w") as f:
            f.write(f"[save]\nrw=write\nend_fsync=1\n{common}")
        with open(fio_r, "w") as f:
            f.write(f"[load]\nrw=read\ninvalidate=1\n{common}")
        saves, loads, fsaves, floads, hwm = [], [], [], [], []
        first_load = len(self.loads)
        for r in range(self.size["rounds"]):
            def ours():
                shutil.rmtree(ckpt_dir, ignore_errors=True)
                res = self.agent_job(job, "ckpt")
                m = res["summary"]["metric"]
                saves.append(dict(bps=size / m["save_checkpoint_duration_mean_seconds"]))
                loads.append(dict(bps=size / m["load_checkpoint_duration_mean_seconds"]))
                hwm.append(res["hwm_mib"])

            def ref():
                shutil.rmtree(fio_dir, ignore_errors=True)
                os.makedirs(fio_dir)
                fsaves.append(self.run_fio(fio_w))
                floads.append(self.run_fio(fio_r))

            for fn in ((ours, ref) if r % 2 == 0 else (ref, ours)):
                fn()
            log(f"bench: ckpt round {r + 1}: agent save {saves[-1]['bps'] / 1e6:.0f} / load "
                f"{loads[-1]['bps'] / 1e6:.0f} MB/s, fio {fsaves[-1]['bps'] / 1e6:.0f} / {floads[-1]['bps'] / 1e6:.0f}")
        gib = size / (1 << 30)
        self.case_loads = self.loads[first_load:]
        self.add_ratio("Checkpoint", f"save {gib:g} GiB (1 file, 64 MiB writes, fsync); vs fio write, end_fsync=1",
                       saves, fsaves, None, note=f"agent peak RSS {max(hwm):.0f} MiB")
        self.add_ratio("Checkpoint", f"load {gib:g} GiB (page cache evicted first); vs fio read, invalidate=1",
                       loads, floads, None)
        shutil.rmtree(ckpt_dir, ignore_errors=True)
        shutil.rmtree(fio_dir, ignore_errors=True)

    def case_fleet(self):
        """Coordinator step barrier with 16, 64 and 256 agents (bench/fleet.sh, 1 accelerator each)."""
        sizes = {"smoke": [4], "quick": [16, 64], "full": [16, 64, 256]}[self.mode]
        steps = 10 if self.mode == "smoke" else 50
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fleet.sh")
        for n in sizes:
            log(f"bench: fleet of {n} agents, {steps} steps")
            p = subprocess.run(["bash", script, "--agents", str(n), "--steps", str(steps)], capture_output=True,
                               text=True, env=dict(os.environ, DLIO_BIN_DIR=self.bin))
            if p.returncode != 0:
                raise BenchError(f"fleet.sh --agents {n} failed: {p.stderr.strip()[-400:]}")
            out = p.stdout
            rel = re.search(r"release \(shortest wait per step\): p50 ([\d.]+) ms, p99 ([\d.]+) ms", out)
            allr = re.search(r"all ranks and steps:\s+p50 ([\d.]+) ms, p99 ([\d.]+) ms", out)
            att = re.search(r"attach time \(all \d+ agents, from the first launch\): ([\d.]+) s", out)
            cpu = re.search(r"coordinator CPU: ([\d.]+) s during the attach, ([\d.]+) s during the job", out)
            rss = re.search(r"RSS ([\d.]+) MiB at the end, peak ([\d.]+) MiB", out)
            if not (rel and allr and att and cpu and rss):
                raise BenchError(f"fleet.sh --agents {n}: unexpected output:\n{out}")
            self.add_row("Coordinator", f"step barrier with {n} agents x 1 accelerator, {steps} steps: release "
                         "(last arriver) p50 / p99", f"{float(rel.group(1)):.1f} / {float(rel.group(2)):.1f} ms",
                         note=f"all ranks p50 {float(allr.group(1)):.1f} ms, p99 {float(allr.group(2)):.1f} ms; "
                              f"attach {float(att.group(1)):.1f} s; coordinator CPU {float(cpu.group(2)):.2f} s "
                              f"for the job, peak RSS {float(rss.group(2)):.0f} MiB")

    # --------------------------------------------------------------------------------------------------------

    def run(self):
        if not self.fio:
            log("bench: fio not found; install it (scripts/setup.sh --test)")
            return 77
        started = datetime.datetime.now(datetime.timezone.utc)
        load0 = loadavg()
        cases = self.args.cases.split(",")
        for c in cases:
            t0 = time.monotonic()
            getattr(self, {"a": "case_a", "f": "case_f", "b": "case_b", "c": "case_c", "d": "case_d", "e": "case_e",
                           "gen": "case_gen", "hdf5": "case_hdf5_engines", "pq": "case_pq", "pqgen": "case_pqgen",
                           "micro": "micro", "alloc": "allocations",
                           "fleet": "case_fleet", "ckpt": "case_ckpt"}[c])()
            log(f"bench: {c} done in {time.monotonic() - t0:.0f} s")
        if self.agent_runs:
            self.startup_rows()
        text = self.report(started, load0)
        print(text)
        if self.args.results:
            with open(self.args.results, "w") as f:
                f.write(text)
        missed = [r for r in self.rows if r[6] is False]
        return 1 if (missed and self.args.check_targets) else 0

    def report(self, started, load0):
        here = os.path.dirname(os.path.abspath(__file__))
        commit = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        # Uncommitted changes other than this results file make the measured code differ from the commit.
        dirty = subprocess.run(["git", "-C", here, "diff", "--quiet", "HEAD", "--", ":(top)",
                                ":(top,exclude)bench/RESULTS.md"]).returncode != 0
        commit += " (with uncommitted changes)" if dirty else ""
        cpu = "?"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        mem = os.sysconf("SC_PHYS_PAGES") * PAGE / (1 << 30)
        fs = subprocess.run(["df", "-hT", self.work], capture_output=True, text=True).stdout.splitlines()[-1].split()
        fio_v = subprocess.run([self.fio, "--version"], capture_output=True, text=True).stdout.strip()
        loads = self.loads or [load0]
        lines = [
            f"## Run of {started.strftime('%Y-%m-%d %H:%M UTC')} ({self.mode}, {self.size['rounds']} rounds)",
            "",
            f"- Commit: `{commit}`",
            f"- Machine: {platform.node()}, {os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB RAM, kernel "
            f"{platform.release()}; data on {fs[1]} ({fs[0]}); {fio_v}",
            f"- Load (1-min load average, other engineers building on the same 2 cores): {load0:.1f} at start; "
            f"during the runs median {median(loads):.1f}, min {min(loads):.1f}, max {max(loads):.1f}",
            "",
            "| section | case | agent | reference | ratio | target | met | notes |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for sec, label, ours, ref, ratio, target, met, note in self.rows:
            m = "" if met is None else ("yes" if met else "**no**")
            lines.append(f"| {sec} | {label} | {ours} | {ref} | {ratio} | {target} | {m} | {note} |")
        return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", required=True, help="folder with dlio-agent, dlio-coordinator and dlio-bench-*")
    ap.add_argument("--work", required=True, help="scratch folder for datasets, iologs and runs (kept for reruns)")
    ap.add_argument("--quick", action="store_true", help="smaller datasets (a quarter), still 5 rounds")
    ap.add_argument("--smoke", action="store_true", help="tiny data, 1 round: checks the harness, measures nothing")
    ap.add_argument("--rounds", type=int, default=0, help="override the number of rounds")
    ap.add_argument("--cases", default="a,f,b,c,hdf5,d,e,gen,pq,pqgen,ckpt,micro,alloc,fleet",
                    help="comma-separated subset")
    ap.add_argument("--results", help="also write the table to this file")
    ap.add_argument("--check-targets", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    try:
        return Bench(args).run()
    except BenchError as e:
        log(f"bench: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
