"""Interrupting a run: a signal to the ranks mid-run, then (for SIGTERM) --resume.

usage: interrupt_case.py --binary B --mpirun "mpirun ..." --np N --signal TERM|INT|KILL|STOP -- ARGS...

TERM/INT: every rank exits 143/130 within seconds; OUTPUT.partial is a readable HDF5 file with
complete = 0 and stopped_at_step; --resume then finishes it, and every element of its /y is
what an uninterrupted run writes (OUTPUT.md's formula). KILL (one rank): every rank ends
within a bounded time with a non-zero code, and OUTPUT.partial is still readable with
complete = 0. STOP (one rank, which then never answers, and mpirun does not notice): the others'
timeout_s ends the job with exit 4, naming the wait, and OUTPUT.partial is still readable.
"""
import argparse
import os
import shlex
import signal
import subprocess
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

from formula import y_rows  # noqa: E402


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def rank_pids(binary, output):
    """The gpurelay processes of this run (not mpirun): their argv[0] is the binary."""
    found = subprocess.run(["pgrep", "-f", "^" + binary + " .*" + output], capture_output=True,
                           text=True).stdout.split()
    return [int(p) for p in found]


def start(opts, args, output, quiet=True):
    command = shlex.split(opts.mpirun) + ["-np", str(opts.np), opts.binary] + args + [
        "--output", output] + (["--quiet"] if quiet else [])
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    # The ranks keep HDF5's file locking: only this script's reads of the open .partial do
    # without it.
    env = {k: v for k, v in os.environ.items() if k != "HDF5_USE_FILE_LOCKING"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def first_row_written(path):
    """Whether the run's file already holds step 0's /y (all zeros until that row is flushed):
    the ranks are in their steps, past set-up and calibration."""
    try:
        with h5py.File(path, "r") as f:
            return bool(np.any(f["y"][:, 0, :]))
    except (OSError, KeyError):
        return False  # not made yet, or caught between two writes


def wait_for_steps(path, proc, limit=120):
    """Returns once the run is in its steps: `path` (the .partial, made at set-up) holds its
    first flushed row of /y. Fails after `limit` s, or if the run ends first."""
    deadline = time.monotonic() + limit
    while not first_row_written(path):
        if time.monotonic() > deadline or proc.poll() is not None:
            fail(f"{path} never held a row of /y (did the run end early?)")
        time.sleep(0.02)


def finish(proc, timeout, what):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"{what}: no exit within {timeout} s: a rank hangs")
    print(out)
    print(err, file=sys.stderr)
    proc.output = out
    return proc.returncode, err


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--signal", choices=["TERM", "INT", "KILL", "STOP"], required=True)
    parser.add_argument("--after", type=float, default=0.0,
                        help="seconds before the signal, from a second into the steps")
    parser.add_argument("--ranks-stop-together", action="store_true",
                        help="TERM/INT: every rank's last step in the .partial's timings is the "
                             "step before stopped_at_step (none ran ahead or stopped early)")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    opts.binary = os.path.abspath(opts.binary)
    args = [a for a in opts.args if a != "--"]

    with tempfile.TemporaryDirectory() as tmp:
        output = os.path.join(tmp, "stopped.h5")
        proc = start(opts, args, output)
        # Not before the steps run. A signal during set-up proves nothing and can end the job
        # the wrong way: one that comes before the ranks install their handlers (MPI_Init can
        # take over a second on a loaded machine, or under the sanitizers) kills them instead of
        # stopping them.
        wait_for_steps(output + ".partial", proc)
        time.sleep(opts.after)
        pids = rank_pids(opts.binary, output)
        if len(pids) != opts.np:
            fail(f"found {len(pids)} rank processes, expected {opts.np} (did the run end early?)")
        if opts.signal in ("KILL", "STOP"):
            os.kill(max(pids), getattr(signal, "SIG" + opts.signal))  # one rank dies or hangs
        else:
            for pid in pids:  # as srun and Slurm's time limit do: every rank gets it
                os.kill(pid, getattr(signal, "SIG" + opts.signal))
        sent = time.monotonic()
        code, err = finish(proc, 60, "after the signal")
        print(f"exit {code} {time.monotonic() - sent:.1f} s after the signal")
        partial = output + ".partial"
        if os.path.exists(output):
            fail("the final file exists though the run was interrupted")
        if not os.path.exists(partial):
            fail("no .partial file left")
        with h5py.File(partial, "r") as f:
            if int(f.attrs["complete"]) != 0:
                fail("complete is not 0 in the .partial file")
            if int(f.attrs.get("verified", -1)) != 0:
                fail("the .partial file has no verified = 0 attribute")
            if opts.signal == "KILL":
                if code == 0:
                    fail("exit code 0 after a rank was killed")
                print("ok: every rank ended, .partial readable with complete = 0")
                return
            if opts.signal == "STOP":
                if code != 4:
                    fail(f"exit code {code} after a rank stopped, expected 4 (timeout_s)")
                if "did not finish within" not in err:
                    fail("no timeout line naming the wait on stderr")
                print("ok: the timeout ended every rank with exit 4, .partial readable")
                return
            stopped = int(f.attrs["stopped_at_step"])
            stopped_pass = int(f.attrs["stopped_pass"])
            steps = int(f.attrs["steps"])
            if opts.ranks_stop_together:
                check_ranks_stopped_together(f, stopped)
            overlap = f.attrs["overlap"]
            overlap = overlap.decode() if isinstance(overlap, bytes) else str(overlap)
        expected = 143 if opts.signal == "TERM" else 130
        if code != expected:
            fail(f"exit code {code}, expected {expected}")
        if not any(line.startswith("gpurelay: stopped by SIG" + opts.signal) for line in err.splitlines()):
            fail("no 'stopped by' line on stderr")
        if not 0 < stopped < steps:
            fail(f"stopped_at_step {stopped} is not inside the run (0..{steps})")

        # Not quiet: the progress of a resumed run, under mpirun, in whole lines.
        resume_run = start(opts, args + ["--resume"], output, quiet=False)
        code, err = finish(resume_run, 240, "resume")
        if code != 0:
            fail(f"--resume exited {code}")
        # overlap = compare (the default) runs two passes, and the progress counts both.
        passes = 2 if overlap == "compare" else 1
        pass_names = ["overlap=off", "overlap=on"] if passes == 2 else [f"overlap={overlap}"]
        last = f"pass 2 of 2 ({pass_names[-1]})" if passes == 2 else f"{pass_names[-1]} pass"
        progress = [line for line in resume_run.output.split("\n") if "progress: " in line]
        if "\r" in resume_run.output:
            fail("carriage returns in the progress under mpirun (whole lines expected)")
        if not progress or not progress[-1].startswith(f"progress: {last}, step {steps} of {steps};"):
            fail(f"the resumed run's last progress line is {progress[-1:]}, not {last}'s step "
                 f"{steps} of {steps}")
        # The header says where the resumed run starts.
        resumed_line = (f"resumed: from step {stopped} of the {pass_names[stopped_pass]} pass "
                        f"({stopped_pass + 1} of {passes}) of ")
        if resumed_line not in resume_run.output:
            fail(f"no line '{resumed_line}...' in the resumed run's header")
        with h5py.File(output, "r") as resumed:
            if int(resumed.attrs["complete"]) != 1 or int(resumed.attrs["verified"]) != 1:
                fail("the resumed file is not complete and verified")
            if int(resumed.attrs["resumed_from_step"]) != stopped:
                fail("resumed_from_step does not say where the run stopped")
            elements = check_y_by_formula(resumed)
        print(f"ok: stopped at step {stopped} of {steps}, resumed, every element of /y by the "
              f"formula ({elements} elements)")


def check_ranks_stopped_together(f, stopped):
    """Every rank's step periods in the stopped pass end at the step before stopped_at_step: the
    ranks agreed on one step and each stopped after it (these runs write every step, so every
    step has an end event and a period)."""
    overlap = f.attrs["overlap"]
    overlap = overlap.decode() if isinstance(overlap, bytes) else str(overlap)
    passes = ["overlap_off", "overlap_on"] if overlap == "compare" else ["overlap_" + overlap]
    stopped_pass = passes[int(f.attrs["stopped_pass"])]
    periods = f["timings"][stopped_pass]["step"][...]
    last = [int(np.nonzero(np.isfinite(row))[0].max(initial=-1)) for row in periods]
    if any(step != stopped - 1 for step in last):
        fail(f"the ranks' last steps in {stopped_pass} are {sorted(set(last))}, not all "
             f"{stopped - 1} (stopped_at_step {stopped})")
    print(f"ok: every one of {len(last)} ranks stopped after step {stopped - 1}")


def check_y_by_formula(f):
    """Every row of a complete file's /y (written with write = all) against OUTPUT.md's
    formula, as an uninterrupted run writes it; returns the elements checked."""
    attrs = f.attrs
    steps, elements = int(attrs["steps"]), int(attrs["elements"][0])
    seed, alpha = int(attrs["seed"]), float(attrs["alpha"])
    dtype = np.float32 if attrs["dtype"] == "float32" else np.float64
    pattern, group_size = str(attrs["pattern"]), int(attrs["group_size"])
    if list(f["step"][...]) != list(range(steps)):
        fail("/step is not every step (these runs write all)")
    y = f["y"][...]
    group_size = group_size or int(attrs["world_size"])
    for step in range(steps):
        expected = y_rows(pattern, step, y.shape[0], elements, seed, alpha, group_size, dtype)
        wrong = np.count_nonzero(y[:, step, :] != expected)
        if wrong:
            fail(f"/y of step {step}: {wrong} of {y.shape[0] * elements} elements wrong")
    return y.size

if __name__ == "__main__":
    main()
