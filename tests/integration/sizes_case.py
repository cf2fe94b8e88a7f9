"""Several tensor sizes in one launch (elements as a list or a range), checked from its outputs.

usage: sizes_case.py --binary B --mpirun "mpirun ..." --np N --expect 4096,65536 [--stop] -- ARGS

Without --stop: one run of ARGS (which give --elements); its sizes must be --expect, worked out
by hand from the list or range. Each size's group /cases/i holds its elements, /y checked row by
row against the numpy formula, zero mismatches; the CSV has one row per size, the JSON one case
per size, and the report's closing table one PASSED row per size.

With --stop: SIGTERM to every rank once the first size is done (its sizes_done is in the
.partial), so the stop lands in a later size (the second, unless the poll saw the file late);
the .partial says which (stopped_size, with the sizes before it done), --resume finishes it, and
every size's /y is what an uninterrupted run writes (the formula), element by element.
"""
import argparse
import csv
import json
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")

# The poll reads a .partial that the run has open (flushed, never half-written metadata).
os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from formula import consumer_rows, y_rows  # noqa: E402
from interrupt_case import fail, finish, rank_pids, start  # noqa: E402


def run_to_end(opts, args, output, quiet=True):
    code, err = finish(start(opts, args, output, quiet=quiet), 300, "run")
    if code != 0:
        fail(f"exit {code}: {err.strip()}")
    return err


def check_sizes_file(path, sizes, np_ranks):
    """Every size's group: its elements, /y by the formula, zero mismatches."""
    with h5py.File(path, "r") as f:
        if int(f.attrs["complete"]) != 1 or not bool(f.attrs["verified"]):
            fail("the file is not complete and verified")
        if int(f.attrs["sizes_done"]) != len(sizes):
            fail(f"sizes_done {f.attrs['sizes_done']}, expected {len(sizes)}")
        if "y" in f or "timings" in f:
            fail("a file of several sizes has datasets at its root")
        if sorted(f["cases"]) != sorted(str(i) for i in range(len(sizes))):
            fail(f"groups {sorted(f['cases'])}, expected one per size")
        root_sizes = f.attrs["elements"]
        if root_sizes.dtype != np.int64 or [int(n) for n in root_sizes] != sizes:
            fail(f"root elements {root_sizes!r}: expected a 1-D int64 array of {sizes}")
        seed, alpha = int(f.attrs["seed"]), float(f.attrs["alpha"])
        dtype = np.float32 if f.attrs["dtype"] == "float32" else np.float64
        pattern = str(f.attrs["pattern"])
        group_size = int(f.attrs["group_size"]) or np_ranks
        pairs = consumer_rows(pattern, group_size, np_ranks)
        for i, elements in enumerate(sizes):
            group = f["cases"][str(i)]
            if int(group.attrs["elements"]) != elements or not bool(group.attrs["verified"]):
                fail(f"/cases/{i}: elements {group.attrs['elements']}, verified "
                     f"{group.attrs['verified']}; expected {elements}, True")
            y = group["y"]
            if y.shape[0] != pairs or y.shape[2] != elements:
                fail(f"/cases/{i}/y has shape {y.shape}")
            for r, step in enumerate(group["step"][...]):
                expected = y_rows(pattern, int(step), pairs, elements, seed, alpha, group_size,
                                  dtype)
                for pair in range(pairs):
                    wrong = np.count_nonzero(y[pair, r, :] != expected[pair])
                    if wrong:
                        fail(f"/cases/{i}/y pair {pair} step {step}: {wrong} wrong")
            for name in group["verification"]:
                for what in ("x_mismatches", "c_mismatches"):
                    if group["verification"][name][what][...].any():
                        fail(f"/cases/{i}/verification/{name}/{what} is not all zero")
            if group["timings/overlap_on/step"].shape[0] != np_ranks:
                fail(f"/cases/{i}/timings has {group['timings/overlap_on/step'].shape[0]} rows")


def check_summaries(csv_path, json_path, report, sizes):
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if [int(r["elements"]) for r in rows] != sizes:
        fail(f"CSV rows for {[r['elements'] for r in rows]}, expected {sizes}")
    if any(r["verified"] != "ok" or int(r["tensor_bytes"]) % int(r["elements"]) for r in rows):
        fail("a CSV row is not verified or has the wrong tensor_bytes")
    with open(json_path) as f:
        summary = json.load(f)
    if summary["sizes"] != sizes or not summary["verified"]:
        fail(f"JSON sizes {summary['sizes']}, verified {summary['verified']}")
    if [c["config"]["elements"] for c in summary["cases"]] != sizes:
        fail("the JSON's cases are not the sizes in order")
    table = [m for m in (re.match(r"\s+(\d+)\s+(\d+)\s+(\d+)\s.*\s(PASSED|FAILED)$", line)
                         for line in report.splitlines()) if m]
    width = int(rows[0]["tensor_bytes"]) // sizes[0]
    if [(int(m[1]), int(m[2]), int(m[3]), m[4]) for m in table] != [
            (i, width * n, n, "PASSED") for i, n in enumerate(sizes)]:
        fail(f"the closing table's rows are {[m[0] for m in table]}")


def wait_for_first_size(partial, proc, limit=120):
    """Returns once the .partial says the first size is done."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with h5py.File(partial, "r") as f:
                if int(f.attrs.get("sizes_done", 0)) >= 1:
                    return
        except (OSError, KeyError):
            pass  # not made yet, or caught between writes
        time.sleep(0.05)
    fail("the first size never finished (or the run ended first)")


def stop_and_resume(opts, args, tmp, sizes):
    output = os.path.join(tmp, "stopped.h5")
    proc = start(opts, args, output)
    wait_for_first_size(output + ".partial", proc)
    for pid in rank_pids(opts.binary, output):
        os.kill(pid, signal.SIGTERM)
    code, err = finish(proc, 60, "after the signal")
    if code != 143:
        fail(f"exit {code} after SIGTERM, expected 143")
    with h5py.File(output + ".partial", "r") as f:
        stopped, done = int(f.attrs["stopped_size"]), int(f.attrs["sizes_done"])
    if not 1 <= stopped < len(sizes) or done != stopped:
        fail(f"stopped_size {stopped}, sizes_done {done}: not a stop after the first size")
    if f"of size {stopped + 1} of {len(sizes)}" not in err:
        fail(f"the stop line does not name size {stopped + 1}")
    run_to_end(opts, args + ["--resume"], output)
    # Every size's /y by the formula: what an uninterrupted run writes, element by element.
    check_sizes_file(output, sizes, opts.np)
    with h5py.File(output, "r") as resumed:
        if int(resumed.attrs["resumed_from_size"]) != stopped:
            fail(f"resumed_from_size is not {stopped}")
    print(f"ok: stopped in size {stopped + 1} of {len(sizes)}, resumed; every size's /y by the "
          "formula")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--expect", required=True, help="the sizes, comma-separated")
    parser.add_argument("--stop", action="store_true")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    opts.binary = os.path.abspath(opts.binary)
    args = [a for a in opts.args if a != "--"]
    sizes = [int(s) for s in opts.expect.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        if opts.stop:
            stop_and_resume(opts, args, tmp, sizes)
            return
        output = os.path.join(tmp, "sizes.h5")
        csv_path, json_path = os.path.join(tmp, "r.csv"), os.path.join(tmp, "s.json")
        proc = start(opts, args + ["--results-csv", csv_path, "--summary-json", json_path],
                     output, quiet=False)
        code, err = finish(proc, 300, "run")
        if code != 0:
            fail(f"exit {code}: {err.strip()}")
        check_sizes_file(output, sizes, opts.np)
        check_summaries(csv_path, json_path, proc.output, sizes)
        print(f"ok: {len(sizes)} sizes in one launch, each checked from the file, CSV, JSON, table")


if __name__ == "__main__":
    main()
