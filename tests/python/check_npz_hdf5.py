#!/usr/bin/python3
"""Cross-check NPZ and HDF5 data files with the libraries DLIO itself reads them with (numpy, h5py).

Usage: /usr/bin/python3 check_npz_hdf5.py DIR [--dims D1,D2] [--samples N]

Opens every *.npz and *.hdf5 under DIR (recursively) and checks DLIO's layout:
  npz:  members exactly x, y; x uint8 of shape (d1, d2, nspf) (samples on the last axis); y int64 zeros (nspf,)
  hdf5: datasets records_0 uint8 of shape (nspf, d1, d2) and labels int64 zeros (nspf,)
With --dims/--samples the shapes must match those values; otherwise they only have to agree with each other.
Prints one line per problem and exits 1 if there was any (2 on bad usage or no files found), 0 otherwise.
Needs Debian's /usr/bin/python3 (python3-numpy, python3-h5py); the pyenv python3 on PATH has neither.
"""
import argparse
import pathlib
import sys

import h5py
import numpy as np


def check_npz(path, dims, samples):
    problems = []
    with np.load(path) as z:
        if sorted(z.files) != ["x", "y"]:
            return [f"{path}: members {sorted(z.files)}, expected ['x', 'y']"]
        x, y = z["x"], z["y"]
    if x.dtype != np.uint8 or x.ndim != 3:
        problems.append(f"{path}: x is {x.dtype} {x.shape}, expected uint8 (d1, d2, nspf)")
    if y.dtype != np.int64 or y.ndim != 1:
        problems.append(f"{path}: y is {y.dtype} {y.shape}, expected int64 (nspf,)")
    if problems:
        return problems
    if dims is not None and x.shape[:2] != dims:
        problems.append(f"{path}: x sample shape {x.shape[:2]}, expected {dims}")
    nspf = x.shape[2]
    if samples is not None and nspf != samples:
        problems.append(f"{path}: x holds {nspf} samples, expected {samples}")
    if y.shape != (nspf,) or y.any():
        problems.append(f"{path}: y is {y.shape} with values {y[:8]}, expected {nspf} zeros")
    return problems


def check_hdf5(path, dims, samples):
    problems = []
    with h5py.File(path, "r") as f:
        if sorted(f.keys()) != ["labels", "records_0"]:
            return [f"{path}: datasets {sorted(f.keys())}, expected ['labels', 'records_0']"]
        r, labels = f["records_0"], f["labels"][()]
        if r.dtype != np.uint8 or r.ndim != 3:
            return [f"{path}: records_0 is {r.dtype} {r.shape}, expected uint8 (nspf, d1, d2)"]
        nspf = r.shape[0]
        r[nspf - 1]  # read the last sample through h5py (decompresses chunks if any)
        if dims is not None and r.shape[1:] != dims:
            problems.append(f"{path}: records_0 sample shape {r.shape[1:]}, expected {dims}")
    if samples is not None and nspf != samples:
        problems.append(f"{path}: records_0 holds {nspf} samples, expected {samples}")
    if labels.dtype != np.int64 or labels.shape != (nspf,) or labels.any():
        problems.append(f"{path}: labels is {labels.dtype} {labels.shape}, expected int64 zeros ({nspf},)")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--dims", help="sample shape d1,d2")
    ap.add_argument("--samples", type=int, help="samples per file")
    a = ap.parse_args()
    dims = tuple(int(v) for v in a.dims.split(",")) if a.dims else None

    files = sorted(p for p in pathlib.Path(a.dir).rglob("*") if p.suffix in (".npz", ".hdf5"))
    if not files:
        print(f"{a.dir}: no .npz or .hdf5 files", file=sys.stderr)
        return 2
    problems = []
    for p in files:
        try:
            problems += (check_npz if p.suffix == ".npz" else check_hdf5)(p, dims, a.samples)
        except Exception as e:  # noqa: BLE001 - any failure to open is a finding, reported with the file
            problems.append(f"{p}: cannot read: {type(e).__name__}: {e}")
    for line in problems:
        print(line, file=sys.stderr)
    print(f"checked {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
