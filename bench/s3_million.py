#!/usr/bin/env python3
"""The million-object S3 bench (issue 27 item 6): generate --objects small objects (default 1,000,000 of 4 KiB) on a
one-node Ceph RGW this script starts (scripts/ceph-rgw.sh; memstore sized to the data, or CEPH_RGW_OBJECTSTORE=
bluestore for a file-backed OSD, its block file WORK/gateway/osd/block-0.img: memstore holds ~40 KiB of memory per
4 KiB object, so a million need bluestore; the bucket's index pre-sharded for the object count, --index-shards)
with DLIO's names (npz), then read them with one agent twice, for one epoch (or --steps steps): listing
(dataset.skip_listing: false, ListObjectsV2 of the whole prefix) and not (dataset.skip_listing: true, names derived,
a HEAD of every listing_validation_interval-th: 1000, or --validation-interval). For each read it reports

  listing    seconds spent in LIST requests (summary.json dlio_ext.s3.list: count x mean latency), their count, and
             the listing's wall time on its agent (dlio_ext.listing.train.seconds: with --subfolders N the subfolders
             are listed concurrently, so less than the sum)
  first      time to first batch: from the job's start (trace start_unix_us) to the end of the step thread's first
             wait for a batch (--trace), listing and planning included
  rss        the agent's peak RSS (VmHWM of the dlio-agent process, polled while it runs)
  GETs/s     GET requests of the epoch over the epoch's wall time (0_per_epoch_stats.json)

Generation (--generator): `agent`, the agent's own generate phase (--threads writer threads, one PUT each at a
time); `copies` (the default, the fastest measured), the agent generates one object of the same shape on the local
file system and the reference client (bench/s3_ref.c `put ... @FILE`) PUTs copies of it under every DLIO name with
--gen-threads PUTs in flight; `sparse`, the same copies of only the objects a `--steps` skip_listing read touches
(the first (steps + 16) x 64, every validation interval-th, the last ten: a time to first batch at a million names
without a million PUTs; --reuse of such a bucket needs --generator sparse too). The read phases are the agent's in
every case (the objects are valid npz either way).

Reads again without generating: --keep-gateway leaves the gateway and its bucket running (folder WORK/gateway);
`--reuse GATEWAY_DIR` then takes that gateway's settings from GATEWAY_DIR/env (written by scripts/ceph-rgw.sh
start), checks its daemons still run and its bucket holds at least --objects objects, and runs only the reads (with
the binaries of --bin-dir, e.g. another build's); --reads chooses which (default listing,skip_listing). The results
file is rewritten after each phase, so a long run that is stopped keeps what it measured. A --steps read that is too
short for DLIO's metric window ends with the coordinator's exit 6 (AU not measured), which is not an error here.

Only the standard library. Exit status: 0 ran, 2 error.

  python3 bench/s3_million.py --bin-dir build/bin --work /tmp/million [--objects 100000] [--results FILE]
  python3 bench/s3_million.py --bin-dir build/bin --work /tmp/rerun --reuse /tmp/million/gateway --objects 100000
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time


READS = {"listing": False, "skip_listing": True}  # a read's name: its dataset.skip_listing


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def job_yaml(objects, record, threads, in_flight, generate, skip_listing, storage="s3", steps=0, interval=None,
             subfolders=0):
    sub = f"  num_subfolders_train: {subfolders}\n" if subfolders > 0 else ""
    root = "  storage_root: million\n" if storage == "s3" else ""
    cap = f"  total_training_steps: {steps}\n" if steps > 0 else ""
    check = f"  listing_validation_interval: {interval}\n" if interval is not None else ""
    return f"""model:
  name: million
framework: pytorch
workflow:
  generate_data: {str(generate).lower()}
  train: {str(not generate).lower()}
storage:
  storage_type: {storage}
{root}dataset:
  data_folder: m
  format: npz
  num_files_train: {objects}
  num_samples_per_file: 1
  record_length_bytes: {record}
  skip_listing: {str(skip_listing).lower()}
{sub}{check}reader:
  data_loader: pytorch
  batch_size: 64
  read_threads: {threads}
  prefetch_size: 8
train:
  epochs: 1
  computation_time: 0
{cap}output:
  metric:
    exclude_start_steps: 0
dlio_ext:
  s3_requests_in_flight: {in_flight}
"""


def agent_pids(parent):
    """dlio-agent processes below `parent` (the `run` verb's local agents)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == parent and comm.startswith("dlio-agent"):
            out.append(int(d))
    return out


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Million:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.env = dict(os.environ)
        self.rows = []
        self.gen_seconds = None
        self.shards = 0

    def start_gateway(self):
        self.gw = os.path.join(self.work, "gateway")
        subprocess.run(["bash", os.path.join(self.src, "scripts/ceph-rgw.sh"), "stop", self.gw])
        shutil.rmtree(self.gw, ignore_errors=True)
        # memstore keeps the objects in the OSD's memory: room for the data, its replicas of metadata and the index.
        self.env.setdefault("CEPH_RGW_MEMSTORE_BYTES", str(max(4 << 30, self.args.objects * self.args.record * 3)))
        # bluestore: a sparse block file sized for the data, measured ~20 KiB of it per 4 KiB object (RocksDB and
        # the bucket index included), 24 KiB allowed.
        self.env.setdefault("CEPH_RGW_BLUESTORE_BYTES", str(max(10 << 30, self.args.objects * 24 << 10)))
        p = subprocess.run(["bash", os.path.join(self.src, "scripts/ceph-rgw.sh"), "start", self.gw], env=self.env,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"ceph-rgw.sh start: {p.stderr[-2000:]}")
        for line in p.stdout.splitlines():
            k, _, v = line.partition("=")
            if k.startswith("AWS_"):
                self.env[k] = v
        subprocess.run([os.path.join(self.args.bin_dir, "dlio-bench-s3-ref"), "mkbucket", "million"], env=self.env,
                       check=True, capture_output=True)
        # One index shard holds the whole listing's omap; RGW's dynamic resharding would split it while the PUTs
        # run (blocking them). Sharded up front: ~100,000 entries per shard at most, RGW's own threshold.
        # (RGW creates 11; radosgw-admin refuses a reshard to the count the bucket already has.)
        shards = self.args.index_shards or max(11, min(101, self.args.objects // 50_000 + 1))
        if shards != 11:
            p = subprocess.run(["radosgw-admin", "-c", os.path.join(self.gw, "ceph.conf"), "-n", "client.rgw.a",
                                "bucket", "reshard", "--bucket", "million", "--num-shards", str(shards)],
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise RuntimeError(f"radosgw-admin bucket reshard --num-shards {shards}: {p.stderr[-2000:]}")
        self.shards = shards

    def reuse_gateway(self, gw):
        """Takes the running gateway in `gw` (ceph-rgw.sh start's folder) and its bucket `million` as they are."""
        self.gw = os.path.abspath(gw)
        conf = os.path.join(self.gw, "ceph.conf")
        try:
            with open(os.path.join(self.gw, "env")) as f:
                lines = f.read().splitlines()
            with open(os.path.join(self.gw, "pids")) as f:
                pids = [line.split() for line in f if line.strip()]
        except OSError as e:
            raise RuntimeError(f"--reuse {gw}: not a running gateway's folder (ceph-rgw.sh start writes env and "
                               f"pids there): {e}")
        for pid, name in pids:
            try:
                with open(f"/proc/{pid}/cmdline") as f:
                    alive = conf in f.read().replace("\0", " ")
            except OSError:
                alive = False
            if not alive:
                raise RuntimeError(f"--reuse {gw}: its {name} (PID {pid}) is not running")
        for line in lines:
            k, _, v = line.partition("=")
            if k.startswith("AWS_"):
                self.env[k] = v
        p = subprocess.run(["radosgw-admin", "-c", conf, "-n", "client.rgw.a", "bucket", "stats", "--bucket",
                            "million"], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"--reuse {gw}: radosgw-admin bucket stats --bucket million: {p.stderr[-2000:]}")
        stats = json.loads(p.stdout)
        count = stats.get("usage", {}).get("rgw.main", {}).get("num_objects", 0)
        if count < self.args.objects and self.args.generator != "sparse":  # sparse: only what a read touches
            raise RuntimeError(f"--reuse {gw}: bucket million holds {count} objects, fewer than --objects "
                               f"{self.args.objects}")
        self.shards = stats.get("num_shards", 0)
        self.gen_seconds = None
        log(f"reusing {self.gw}: bucket million holds {count} objects, {self.shards} index shards")

    def objectstore(self):
        try:
            with open(os.path.join(self.gw, "ceph.conf")) as f:
                for line in f:
                    k, _, v = line.partition("=")
                    if k.strip() == "osd objectstore":
                        return v.strip()
        except OSError:
            pass
        return "?"

    def stop_gateway(self):
        subprocess.run(["bash", os.path.join(self.src, "scripts/ceph-rgw.sh"), "stop", self.gw])

    def run(self, tag, text, trace=True):
        d = os.path.join(self.work, "runs", tag)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "job.yaml"), "w") as f:
            f.write(text)
        argv = [os.path.join(self.args.bin_dir, "dlio-coordinator"), "run", os.path.join(d, "job.yaml"),
                "--local-agents", "1", "--data-root", d, "--results-dir", os.path.join(d, "results"), "--output",
                os.path.join(d, "out")] + (["--trace", os.path.join(d, "trace.json")] if trace else [])
        t0 = time.time()
        p = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak = {"kib": 0}
        done = threading.Event()

        def poll():  # 0.2 s: the agent lives for seconds to minutes; VmHWM is a high-water mark anyway
            while not done.is_set():
                for pid in agent_pids(p.pid):
                    peak["kib"] = max(peak["kib"], vm_hwm_kib(pid))
                time.sleep(0.2)

        th = threading.Thread(target=poll)
        th.start()
        out, err = p.communicate(timeout=4 * 3600)
        done.set()
        th.join()
        if p.returncode not in (0, 6):  # 6: ran, AU not measured (a --steps read too short for DLIO's window)
            raise RuntimeError(f"{tag}: exit {p.returncode}: {err[-2000:]}")
        return d, time.time() - t0, peak["kib"]

    def generate(self):
        a = self.args
        if a.generator == "sparse":
            return self.generate_sparse()
        if a.generator == "agent":
            d, secs, _ = self.run("generate", job_yaml(a.objects, a.record, a.threads, a.in_flight, True, False,
                                                       subfolders=a.subfolders), False)
        else:
            # One object of the job's shape from the agent (on the local file system), then copies of it under
            # every name DLIO's generation gives: {prefix}_{i padded to digits(N)}_of_{N}.npz.
            d, _, _ = self.run("seed", job_yaml(1, a.record, 1, 1, True, False, "local_fs"), False)
            seed = os.path.join(d, "m", "train", "img_0_of_1.npz")
            fmt = f"m/train/img_%0{len(str(a.objects))}zu_of_{a.objects}.npz"
            t0 = time.time()
            subprocess.run([os.path.join(a.bin_dir, "dlio-bench-s3-ref"), "put", "million", fmt, str(a.objects),
                            "@" + seed, str(a.gen_threads)], env=self.env, check=True, capture_output=True)
            secs = time.time() - t0
        log(f"generated {a.objects} objects in {secs:.0f} s ({a.objects / secs:.0f} PUTs/s, {a.generator})")
        self.gen_seconds = secs

    def generate_sparse(self):
        """Only the objects a --steps skip_listing read touches: the first (steps + 16) x 64 (the read and its
        read-ahead), the validation's every interval-th and the last; copies of one agent-made object (as `copies`).
        The names as DLIO gives them, so the agent derives, validates and reads them as in a full bucket; its time
        to first batch does not depend on the objects nobody reads. Needs --objects and the interval powers of 10."""
        a = self.args
        d, _, _ = self.run("seed", job_yaml(1, a.record, 1, 1, True, False, "local_fs"), False)
        seed = os.path.join(d, "m", "train", "img_0_of_1.npz")
        digits = len(str(a.objects))
        interval = 1000 if a.validation_interval is None else a.validation_interval
        zeros = len(str(interval)) - 1
        last = str(a.objects - 1).zfill(digits)
        batches = [  # (printf key, count): s3_ref's put names i in [0, count)
            (f"m/train/img_%0{digits}zu_of_{a.objects}.npz", min(a.objects, (a.steps + 16) * 64)),
            (f"m/train/img_{last[:-1]}%zu_of_{a.objects}.npz", 10),
        ]
        if interval > 0:
            batches.append((f"m/train/img_%0{digits - zeros}zu{'0' * zeros}_of_{a.objects}.npz", a.objects // interval))
        t0 = time.time()
        n = 0
        for fmt, count in batches:
            subprocess.run([os.path.join(a.bin_dir, "dlio-bench-s3-ref"), "put", "million", fmt, str(count),
                            "@" + seed, str(a.gen_threads)], env=self.env, check=True, capture_output=True)
            n += count
        secs = time.time() - t0
        log(f"generated {n} of the {a.objects} names (sparse: what the read touches) in {secs:.0f} s")
        self.gen_seconds = secs
        self.gen_count = n

    def read(self, name, skip_listing):
        a = self.args
        d, secs, rss_kib = self.run(name, job_yaml(a.objects, a.record, a.threads, a.in_flight, False, skip_listing,
                                                   steps=a.steps, interval=a.validation_interval,
                                                   subfolders=a.subfolders))
        with open(os.path.join(d, "out", "summary.json")) as f:
            summary = json.load(f)["dlio_ext"]
        s3 = summary["s3"]
        # the listing's wall time on its agent (subfolders are listed concurrently: less than the latencies' sum)
        wall = summary.get("listing", {}).get("train", {}).get("seconds", 0.0)
        lst = s3.get("list", {})
        list_req = lst.get("requests", 0)
        lat = lst.get("latency_seconds", {})
        list_s = lat.get("count", 0) * lat.get("mean", 0.0)  # the sum of the LIST requests' latencies
        with open(os.path.join(d, "trace.json")) as f:
            trace = json.load(f)
        waits = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == "wait"]
        first = min(e["ts"] + e["dur"] for e in waits) / 1e6 if waits else float("nan")
        with open(os.path.join(d, "out", "0_per_epoch_stats.json")) as f:
            marks = [v for k, v in json.load(f).items() if k.isdigit()]
        ts = lambda x: datetime.datetime.fromisoformat(x).timestamp()
        epoch = max(ts(m["end"]) for m in marks) - min(ts(m["start"]) for m in marks)
        gets = s3["get"]["requests"]
        row = (name, list_req, list_s, wall, first, rss_kib / 1024, gets / epoch, secs)
        log(f"  {name}: LIST {list_req} in {list_s:.2f} s (wall {wall:.2f} s), first batch {first:.2f} s, "
            f"agent RSS {rss_kib / 1024:.0f} MiB, {gets / epoch:.0f} GETs/s, run {secs:.0f} s")
        self.rows.append(row)

    def report(self, final=True):
        """Writes the table to --results (after every phase) and, when `final`, prints it."""
        a = self.args
        if self.gen_seconds is None:
            gen = f"generated before (--reuse {self.gw})"
        else:
            made = getattr(self, "gen_count", a.objects)  # sparse: fewer than the names
            gen = (f"generation of {made} objects {self.gen_seconds:.0f} s, {made / self.gen_seconds:.0f} PUTs/s "
                   f"({a.generator}, {a.gen_threads} in flight)")
        span = f"{a.steps} steps of 64" if a.steps else "one epoch"
        if a.validation_interval is not None:
            span += f", listing_validation_interval {a.validation_interval}"
        sub = f" in {a.subfolders} subfolders" if a.subfolders else ""
        lines = [f"{a.objects} objects{sub} of {a.record} B (npz), 1 agent, {a.threads} loader threads x {a.in_flight} in "
                 f"flight, {span}; {gen}; {self.shards} index shards, {self.objectstore()} OSD",
                 "",
                 "| read | LIST requests | listing s (sum of latencies) | listing wall s | first batch s | agent peak RSS MiB "
                 "| GETs/s | run s |",
                 "|---|---|---|---|---|---|---|---|"]
        for name, lr, ls, wall, first, rss, rate, secs in self.rows:
            lines.append(f"| {name} | {lr} | {ls:.2f} | {wall:.2f} | {first:.2f} | {rss:.0f} | {rate:.0f} | {secs:.0f} |")
        text = "\n".join(lines)
        if final:
            print(text)
        if a.results:
            with open(a.results, "w") as f:
                f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--objects", type=int, default=1_000_000)
    ap.add_argument("--record", type=int, default=4096, help="record_length_bytes (4096: 64x64 uint8 samples)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--in-flight", type=int, default=8)
    ap.add_argument("--generator", choices=["copies", "agent", "sparse"], default="copies",
                    help="sparse: only the objects a --steps skip_listing read touches (see generate_sparse)")
    ap.add_argument("--gen-threads", type=int, default=32, help="PUTs in flight of the copies generator")
    ap.add_argument("--index-shards", type=int, default=0, help="bucket index shards (0: one per 50,000 objects)")
    ap.add_argument("--keep-gateway", action="store_true", help="leave the gateway running (its folder: WORK/gateway)")
    ap.add_argument("--reuse", metavar="GATEWAY_DIR",
                    help="read from this running gateway's bucket (a --keep-gateway run's WORK/gateway); no generation")
    ap.add_argument("--reads", default="listing,skip_listing",
                    help="comma-separated reads to run, of listing, skip_listing (default both)")
    ap.add_argument("--steps", type=int, default=0,
                    help="train.total_training_steps of the reads (0: the whole epoch, objects / 64 steps)")
    ap.add_argument("--validation-interval", type=int,
                    help="dataset.listing_validation_interval of the reads (default: the job's default, 1000)")
    ap.add_argument("--subfolders", type=int, default=0,
                    help="dataset.num_subfolders_train (0: none); with subfolders generation is --generator agent")
    ap.add_argument("--results")
    args = ap.parse_args()
    if args.subfolders < 0 or (args.subfolders > 0 and args.generator != "agent" and not args.reuse):
        raise ValueError(f"--subfolders: {args.subfolders} (allowed: 0, or a count with --generator agent: the copies "
                         "generator names no subfolders)")
    if args.validation_interval is not None and args.validation_interval < 0:
        raise ValueError(f"--validation-interval: {args.validation_interval} (allowed: 0 for no HEAD, or an interval)")
    if args.steps < 0:
        raise ValueError(f"--steps: {args.steps} (allowed: 0 for the whole epoch, or a step count)")
    if args.generator == "sparse":
        iv = 1000 if args.validation_interval is None else args.validation_interval
        pow10 = lambda n: n >= 10 and str(n).rstrip("0") == "1"
        if args.steps <= 0 or args.reads != "skip_listing" or args.subfolders or not pow10(args.objects) or \
                not (iv == 0 or (pow10(iv) and iv <= args.objects)):
            raise ValueError("--generator sparse: needs --reads skip_listing, --steps > 0, no --subfolders, and "
                             "--objects and --validation-interval powers of 10 (or the interval 0)")
    reads = [r for r in args.reads.split(",") if r]
    for r in reads:
        if r not in READS:
            raise ValueError(f"--reads: unknown read '{r}' (allowed: {', '.join(READS)})")
    os.makedirs(args.work, exist_ok=True)
    m = Million(args)
    if args.reuse:
        m.reuse_gateway(args.reuse)  # never stopped here: it is someone else's
        for r in reads:
            m.read(r, READS[r])
            m.report(final=r == reads[-1])
        return 0
    try:
        m.start_gateway()  # inside: a failed set-up (the reshard) stops what it started too
        m.generate()
        m.report(final=not reads)
        for r in reads:
            m.read(r, READS[r])
            m.report(final=r == reads[-1])
    finally:
        if not args.keep_gateway:
            m.stop_gateway()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
        log(f"s3_million: {e}")
        sys.exit(2)
