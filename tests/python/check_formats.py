#!/usr/bin/python3
"""Check data files of any DLIO format with the libraries DLIO itself reads them with (numpy, h5py, Pillow).

Usage: /usr/bin/python3 check_formats.py DIR --format F [--dims D1,D2,...] [--dtype T] [--samples N]
                                         [--num-dset K] [--compression C] [--chunks C0,C1,...] [--max-shape M1,...]
                                         [--index-dir DIR]

Opens every DIR/**/*.F and checks DLIO's layout (names, dtypes, shapes), as DLIO's generators write it:
  npy             one array of dtype T, shape (*dims, nspf): samples on the last axis
  npz             members exactly x, y; x as npy; y int64 zeros (nspf,); members stored, or deflated with
                  --compression zip (numpy.savez_compressed)
  hdf5            datasets records_0..records_{K-1} and labels; records_k dtype T, shape (nspf, *dims') with dims[0]
                  split over K and a leading 1 dropped; labels int64 zeros; --compression gzip|szip|lzf as h5py
                  reports it; --chunks / --max-shape as h5py reports them; the last sample of every records_k read
  csv             nspf identical rows of prod(dims) numbers, no header row, no index column, LF line ends
  jpeg, png       one 8-bit grayscale image (mode L) per file, width dims[1], height dims[0]; JPEG baseline;
                  with --pillow-from-png DIR, each JPEG must be byte for byte what Pillow's save(format="JPEG")
                  writes for the pixels of DIR/<same name>.png (lossless, generated from the same seed)
  indexed_binary, mmap_indexed_binary
                  F.off.idx / F.sz.idx: nspf little-endian uint64 offsets and sizes; samples back to back, each
                  prod(dims) x itemsize bytes; the data file is exactly their sum
  synthetic       a placeholder holding the file's index as text
  tfrecord        (--index-dir) DALI index DIR/<file>.idx: one "offset length" line per framed record
  parquet         read by an independent reader, hyparquet (tests/js/check_parquet.mjs, node): one list column
                  "data" of prod(dims) values of T per row (the column without a schema), nspf rows in one row group,
                  the codec of --compression (default none), a few rows decoded
Options not given are not checked (shapes then only have to agree with each other).
Prints one line per problem and exits 1 if there was any (2 on bad usage or no files found), 0 otherwise.
Batch form (one interpreter start for many checks): [::] ARGS :: ARGS :: ...; runs each check and prints
"results RC1 RC2 ..." with each check's exit code, then exits 0.
Needs Debian's /usr/bin/python3 (python3-numpy, python3-h5py, python3-pil); the pyenv python3 on PATH has none.
"""
import argparse
import pathlib
import re
import struct
import sys
import zipfile

import numpy as np


def ints(text):
    return tuple(int(v) for v in text.split(",")) if text else None


def check_array(path, a, name, want_dims, dtype, samples):
    problems = []
    if dtype is not None and a.dtype != np.dtype(dtype):
        problems.append(f"{path}: {name} dtype {a.dtype}, expected {dtype}")
    if want_dims is not None and a.shape[:-1] != want_dims:
        problems.append(f"{path}: {name} sample shape {a.shape[:-1]}, expected {want_dims} (samples on the last axis)")
    if samples is not None and a.shape[-1] != samples:
        problems.append(f"{path}: {name} holds {a.shape[-1]} samples on its last axis, expected {samples}")
    return problems


def check_npy(path, o):
    a = np.load(path)
    return check_array(path, a, "array", o.dims, o.dtype, o.samples)


def check_npz(path, o):
    problems = []
    with zipfile.ZipFile(path) as zf:
        methods = {i.filename: i.compress_type for i in zf.infolist()}
    want = zipfile.ZIP_DEFLATED if o.compression == "zip" else zipfile.ZIP_STORED
    for member, method in methods.items():
        if method != want:
            problems.append(f"{path}: member {member} has zip method {method}, expected {want}")
    with np.load(path) as z:
        if sorted(z.files) != ["x", "y"]:
            return problems + [f"{path}: members {sorted(z.files)}, expected ['x', 'y']"]
        x, y = z["x"], z["y"]
    problems += check_array(path, x, "x", o.dims, o.dtype, o.samples)
    if y.dtype != np.int64 or y.shape != (x.shape[-1],) or y.any():
        problems.append(f"{path}: y is {y.dtype} {y.shape}, expected int64 zeros ({x.shape[-1]},)")
    return problems


def hdf5_record_dims(dims, k):
    d = list(dims)
    d[0] //= k
    if d[0] == 1:
        d = d[1:]
    return tuple(d)


def check_hdf5(path, o):
    import h5py

    problems = []
    k = o.num_dset or 1
    with h5py.File(path, "r") as f:
        names = sorted(f.keys())
        records = sorted((n for n in names if n.startswith("records_")), key=lambda n: int(n.split("_")[1]))
        if names != sorted(records + ["labels"]) or records != [f"records_{j}" for j in range(len(records))]:
            return [f"{path}: datasets {names}, expected records_0..records_{{K-1}} and labels"]
        if o.num_dset is not None and len(records) != k:
            problems.append(f"{path}: {len(records)} records datasets, expected {k}")
        nspf = f["records_0"].shape[0]
        for name in records:
            r = f[name]
            if o.dtype is not None and r.dtype != np.dtype(o.dtype):
                problems.append(f"{path}: {name} dtype {r.dtype}, expected {o.dtype}")
            if o.dims is not None and r.shape[1:] != hdf5_record_dims(o.dims, k):
                problems.append(f"{path}: {name} sample shape {r.shape[1:]}, expected {hdf5_record_dims(o.dims, k)}")
            if r.shape[0] != nspf:
                problems.append(f"{path}: {name} holds {r.shape[0]} samples, records_0 {nspf}")
            want_comp = None if o.compression in (None, "none") else o.compression
            if o.compression is not None and r.compression != want_comp:
                problems.append(f"{path}: {name} compression {r.compression}, expected {want_comp}")
            if o.chunks is not None and r.chunks != o.chunks:
                problems.append(f"{path}: {name} chunks {r.chunks}, expected {o.chunks}")
            if o.max_shape is not None and r.maxshape != (nspf, *o.max_shape):
                problems.append(f"{path}: {name} maxshape {r.maxshape}, expected {(nspf, *o.max_shape)}")
            r[nspf - 1]  # read the last sample through h5py (runs the filters)
        labels = f["labels"][()]
    if o.samples is not None and nspf != o.samples:
        problems.append(f"{path}: records_0 holds {nspf} samples, expected {o.samples}")
    if labels.dtype != np.int64 or labels.shape != (nspf,) or labels.any():
        problems.append(f"{path}: labels is {labels.dtype} {labels.shape}, expected int64 zeros ({nspf},)")
    return problems


def check_csv(path, o):
    problems = []
    raw = pathlib.Path(path).read_bytes()
    if b"\r" in raw:
        problems.append(f"{path}: CR in line ends, expected LF only")
    rows = [line.split(b",") for line in raw.split(b"\n") if line]
    try:
        table = np.array([[float(v) for v in row] for row in rows])  # a header row or index text would fail here
    except ValueError as e:
        return problems + [f"{path}: not a table of numbers (header row?): {e}"]
    if table.ndim != 2:
        return problems + [f"{path}: rows of different lengths"]
    if not (table == table[0]).all():
        problems.append(f"{path}: rows differ; DLIO writes the same record in every row")
    if o.samples is not None and table.shape[0] != o.samples:
        problems.append(f"{path}: {table.shape[0]} rows, expected {o.samples}")
    if o.dims is not None and table.shape[1] != int(np.prod(o.dims)):
        problems.append(f"{path}: {table.shape[1]} values per row, expected {int(np.prod(o.dims))}")
    if o.dtype is not None:
        info = np.iinfo(o.dtype) if np.dtype(o.dtype).kind in "ui" else None
        if info is not None and (table.min() < info.min or table.max() > info.max or (table != table.round()).any()):
            problems.append(f"{path}: values outside {o.dtype}")
        if info is None and (table.min() < 0 or table.max() >= 1):
            problems.append(f"{path}: float values outside [0, 1)")
    return problems


def check_image(path, o, fmt):
    from PIL import Image

    problems = []
    with Image.open(path) as img:
        if img.format != fmt.upper():
            problems.append(f"{path}: image format {img.format}, expected {fmt.upper()}")
        if img.mode != "L":
            problems.append(f"{path}: mode {img.mode}, expected L (8-bit grayscale)")
        if o.dims is not None and img.size != (o.dims[1], o.dims[0]):
            problems.append(f"{path}: size {img.size} (width, height), expected {(o.dims[1], o.dims[0])}")
        if fmt == "jpeg" and img.info.get("progressive"):
            problems.append(f"{path}: progressive JPEG, expected baseline")
        a = np.asarray(img)
        if a.dtype != np.uint8 or a.ndim != 2:
            problems.append(f"{path}: decodes to {a.dtype} {a.shape}, expected uint8 (height, width)")
    if fmt == "jpeg" and o.pillow_from_png:
        import io

        with Image.open(pathlib.Path(o.pillow_from_png) / (path.stem + ".png")) as src:
            out = io.BytesIO()
            src.save(out, format="JPEG")
        if out.getvalue() != path.read_bytes():
            problems.append(f"{path}: {path.stat().st_size} bytes differ from Pillow's {len(out.getvalue())}-byte "
                            "JPEG of the same pixels")
    return problems


def check_indexed(path, o):
    problems = []
    off = np.fromfile(str(path) + ".off.idx", dtype="<u8")
    sz = np.fromfile(str(path) + ".sz.idx", dtype="<u8")
    size = pathlib.Path(path).stat().st_size
    if off.shape != sz.shape:
        return [f"{path}: {off.size} offsets but {sz.size} sizes"]
    if o.samples is not None and off.size != o.samples:
        problems.append(f"{path}: index has {off.size} samples, expected {o.samples}")
    if off.size and (off[0] != 0 or (off[1:] != np.cumsum(sz)[:-1]).any()):
        problems.append(f"{path}: offsets {off[:8]} are not the samples back to back")
    if int(sz.sum()) != size:
        problems.append(f"{path}: sizes add up to {int(sz.sum())}, file has {size} bytes")
    if o.dims is not None:
        want = int(np.prod(o.dims)) * np.dtype(o.dtype or "uint8").itemsize
        if (sz != want).any():
            problems.append(f"{path}: sample sizes {sz[:8]}, expected {want}")
    return problems


def check_synthetic(path, o):
    m = re.search(r"_(\d+)_of_\d+\.synthetic$", path.name)
    text = path.read_text()
    if m is None or text != str(int(m.group(1))):
        return [f"{path}: holds {text!r}, expected the file index as text"]
    return []


def check_tfrecord_index(path, o):
    problems = []
    idx = pathlib.Path(o.index_dir) / (path.name + ".idx")
    if not idx.exists():
        return [f"{path}: no index file {idx}"]
    data = path.read_bytes()
    want, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        want.append(f"{pos} {12 + length + 4}")
        pos += 12 + length + 4
    got = idx.read_text().splitlines()
    if got != want:
        problems.append(f"{path}: index lines {got[:3]}..., expected {want[:3]}...")
    if o.samples is not None and len(want) != o.samples:
        problems.append(f"{path}: {len(want)} records, expected {o.samples}")
    return problems


PARQUET_CODECS = {None: "UNCOMPRESSED", "none": "UNCOMPRESSED", "snappy": "SNAPPY", "zstd": "ZSTD", "lz4": "LZ4_RAW",
                  "gzip": "GZIP"}


def check_parquet(path, o):
    import json
    import subprocess
    import tempfile
    size = int(np.prod(o.dims)) if o.dims else None
    if size is None or o.samples is None:
        return [f"{path}: parquet needs --dims and --samples"]
    entry = {"path": str(path), "rows": o.samples, "row_groups": [o.samples], "codec": PARQUET_CODECS[o.compression],
             "columns": [{"name": "data", "dtype": o.dtype or "uint8", "size": size}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as m:
        json.dump([entry], m)
    script = pathlib.Path(__file__).resolve().parent.parent / "js" / "check_parquet.mjs"
    if not (script.parent.parent.parent / "node_modules" / "hyparquet").exists():
        return [f"{path}: hyparquet is missing: run `npm ci` at the repository root (package.json devDependencies)"]
    r = subprocess.run(["node", str(script), "read", m.name], capture_output=True, text=True)
    pathlib.Path(m.name).unlink()
    return [] if r.returncode == 0 else [f"{path}: hyparquet: {(r.stdout + r.stderr).strip()}"]


def run(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--format", required=True)
    ap.add_argument("--dims", type=ints, help="sample shape, comma-separated")
    ap.add_argument("--dtype", help="numpy element type")
    ap.add_argument("--samples", type=int, help="samples per file")
    ap.add_argument("--num-dset", type=int, help="hdf5: records datasets per file")
    ap.add_argument("--compression", help="npz: none|zip; hdf5: none|gzip|szip|lzf; parquet: none|snappy|zstd|lz4|gzip")
    ap.add_argument("--chunks", type=ints, help="hdf5: chunk shape")
    ap.add_argument("--max-shape", type=ints, help="hdf5: maxshape after the samples axis")
    ap.add_argument("--index-dir", help="tfrecord: folder of the DALI index files")
    ap.add_argument("--pillow-from-png", help="jpeg: folder of PNGs of the same pixels to encode with Pillow")
    o = ap.parse_args(argv)

    checks = {"npy": check_npy, "npz": check_npz, "hdf5": check_hdf5, "csv": check_csv,
              "jpeg": lambda p, o: check_image(p, o, "jpeg"), "png": lambda p, o: check_image(p, o, "png"),
              "indexed_binary": check_indexed, "mmap_indexed_binary": check_indexed,
              "synthetic": check_synthetic, "tfrecord": check_tfrecord_index, "parquet": check_parquet}
    if o.format not in checks or (o.format == "tfrecord" and not o.index_dir):
        print(f"--format {o.format}: not checked here", file=sys.stderr)
        return 2
    files = sorted(p for p in pathlib.Path(o.dir).rglob("*." + o.format) if p.is_file())
    if not files:
        print(f"{o.dir}: no .{o.format} files", file=sys.stderr)
        return 2
    problems = []
    for p in files:
        try:
            problems += checks[o.format](p, o)
        except Exception as e:  # noqa: BLE001 - any failure to open is a finding, reported with the file
            problems.append(f"{p}: cannot read: {type(e).__name__}: {e}")
    for line in problems:
        print(line, file=sys.stderr)
    print(f"checked {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


def main():
    argv = sys.argv[1:]
    if "::" not in argv:
        return run(argv)
    groups, cur = [], []
    for a in argv + ["::"]:
        if a == "::":
            groups.append(cur)
            cur = []
        else:
            cur.append(a)
    rcs = []
    for g in (g for g in groups if g):  # a leading "::" makes even a single check a batch
        try:
            rcs.append(run(g))
        except SystemExit as e:  # argparse usage errors
            rcs.append(e.code if isinstance(e.code, int) else 2)
    print("results", *rcs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
