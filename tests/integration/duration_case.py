"""A run bounded by its duration: it ends by itself, every rank after the same step.

usage: duration_case.py --binary B --mpirun "mpirun ..." --np N [--signal] -- GPURELAY_ARGS...

GPURELAY_ARGS give --duration (and write = last, the default). The run must end with exit 0,
complete and verified, each pass before its `steps` (the JSON's timed steps), every rank's last
kept step (/timings/PASS/step_index) the pass's last, /step the last pass's last step, and /y's
row the formula's at that step (OUTPUT.md). With --signal, SIGTERM reaches every rank once its
steps run: exit 143 and a .partial; the same command with --resume then completes it, with the
checks above. The wall time is printed, not judged.
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")
os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"  # the poll reads the run's open .partial

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from formula import y_rows  # noqa: E402
from interrupt_case import fail, finish, rank_pids, start  # noqa: E402


def ended_on(summary, f):
    """Each pass's last step, checked to be before its steps and every rank's last kept one."""
    steps = int(f.attrs["steps"])
    last = None
    for p in summary["passes"]:
        name = "overlap_on" if p["overlap"] else "overlap_off"
        last = p["timed_from"] + p["timed_steps"] - 1
        if last + 1 >= steps:
            fail(f"{name} ran all its {steps} steps: the duration did not end it")
        kept = f["timings"][name]["step_index"][...]
        ends = sorted({int(row.max()) for row in kept})
        if ends != [last]:
            fail(f"{name}: the ranks' last steps are {ends}, not all the pass's last, {last}")
    return last


def check_run(output, summary_path):
    summary = json.load(open(summary_path))
    with h5py.File(output, "r") as f:
        if int(f.attrs["complete"]) != 1 or not summary["verified"]:
            fail("the run is not complete and verified")
        last = ended_on(summary, f)
        if list(f["step"][...]) != [last]:
            fail(f"/step {list(f['step'][...])}, expected the last step run, {last}")
        attrs = f.attrs
        dtype = np.float32 if attrs["dtype"] == "float32" else np.float64
        y = f["y"][:, 0, :]
        want = y_rows(str(attrs["pattern"]), last, y.shape[0], int(attrs["elements"][0]),
                      int(attrs["seed"]), float(attrs["alpha"]),
                      int(attrs["group_size"]) or int(attrs["world_size"]), dtype)
        if np.count_nonzero(y != want):
            fail(f"/y of step {last}: {np.count_nonzero(y != want)} elements wrong")
    print(f"ok: {len(summary['passes'])} pass(es) ended by the duration, every rank after the "
          f"same step; the last, {last}, in /step and /y by the formula")


def wait_in_steps(partial, proc, limit=120):
    """Returns once the run's .partial exists and a second has passed: the ranks are in their
    steps (the short runs here write no row of /y before their last step)."""
    deadline = time.monotonic() + limit
    while not os.path.exists(partial):
        if time.monotonic() > deadline or proc.poll() is not None:
            fail(f"{partial} never appeared")
        time.sleep(0.02)
    time.sleep(1.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--signal", action="store_true")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    opts.binary = os.path.abspath(opts.binary)
    args = [a for a in opts.args if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        output, summary = os.path.join(tmp, "out.h5"), os.path.join(tmp, "summary.json")
        args += ["--summary-json", summary]
        began = time.monotonic()
        proc = start(opts, args, output)
        if opts.signal:
            wait_in_steps(output + ".partial", proc)
            for pid in rank_pids(opts.binary, output):
                os.kill(pid, signal.SIGTERM)
            code, _ = finish(proc, 60, "after SIGTERM")
            if code != 143 or not os.path.exists(output + ".partial"):
                fail(f"exit {code} after SIGTERM (expected 143 and a .partial)")
            with h5py.File(output + ".partial", "r") as f:
                print(f"stopped at step {int(f.attrs['stopped_at_step'])}; resuming")
            args += ["--resume"]
            began = time.monotonic()
            proc = start(opts, args, output)
        code, _ = finish(proc, 600, "the run")
        print(f"exit {code} after {time.monotonic() - began:.1f} s")
        if code != 0:
            fail(f"exit {code}")
        check_run(output, summary)


if __name__ == "__main__":
    main()
