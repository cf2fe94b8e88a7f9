"""The time-limit path on the test cluster, with scripts/slurm/time-limit.sbatch as shipped.

usage: time_limit.py --binary B --root REPO_ROOT [--quick]     (SLURM_CONF set; run by ctest)

--quick (the full suite's slurm.stop_resume, seconds): the template's srun and its mpirun
(GPURELAY_LAUNCHER=mpirun), each stopped by `scancel --batch --signal=TERM`, the signal the time
limit sends to the batch shell, as soon as the run's first rows are in its .partial. Each must
end by the signal (which the template passes on as SIGUSR1) and leave OUTPUT.partial, with
gpurelay's line in the job's log and no launcher's restatement of it, and a second job with
--resume must complete the file, every element of /y by OUTPUT.md's formula.

Without --quick (slurm.time_limit, in the slow tier: over a minute, since Slurm checks time
limits on a 30-s timer):

Three jobs are stopped mid-run: the template's srun and its mpirun (GPURELAY_LAUNCHER=mpirun)
under `sbatch --time --signal=B:TERM@S`, and srun stopped by `scancel --signal=TERM`. Each must
end by the signal (exit 138 through the template, which sends its launcher SIGUSR1; 143 for
scancel's SIGTERM; not the hard limit) leaving OUTPUT.partial with complete = 0 and a
stopped_at_step inside the run; a second job with --resume must then complete the file, and its
/y must equal, element for element, that of an uninterrupted job with the same flags.

Slurm sends the --signal warning at its next 30-s timer tick once the job is within
S + 30 s of its limit: with --time=2 and S = 80 that is 10 to 40 s after the start. The runs are
sized from four short calibration jobs run at once, as the three runs to stop and the reference
are, to take
about 65 s at the fastest rate seen, so the signal (40 s at the latest) always finds them running.
"""
import argparse
import contextlib
import csv
import math
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")
# The poll reads a .partial that the run has open (flushed, never half-written metadata).
os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from interrupt_case import check_y_by_formula, first_row_written  # noqa: E402

TEMPLATE = "scripts/slurm/time-limit.sbatch"
SIGNAL_AHEAD_S = 80
RUN_TARGET_S = 65.0


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


class Cluster:
    """Submits from a work folder laid out like the repository root; cancels what is left."""

    def __init__(self, work):
        self.work = work
        self.jobs = []

    def submit(self, sbatch_args, flags, env=None):
        command = ["sbatch", "--parsable"] + sbatch_args + [TEMPLATE] + flags
        print("+ " + " ".join(command), flush=True)
        # The jobs keep HDF5's file locking: only this script's polls do without it.
        environment = {k: v for k, v in os.environ.items() if k != "HDF5_USE_FILE_LOCKING"}
        run = subprocess.run(command, cwd=self.work, capture_output=True, text=True,
                             env=dict(environment, **(env or {})))
        if run.returncode != 0:
            fail(f"sbatch failed: {run.stderr.strip()}")
        job = run.stdout.strip().split(";")[0]
        self.jobs.append(job)
        return job

    def field(self, job, name):
        out = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True,
                             text=True).stdout
        fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
        return fields.get(name, "")

    def running(self, job):
        return self.field(job, "JobState") == "RUNNING"

    def listed(self, job):
        """Whether squeue still lists the job; a failed squeue (a busy slurmctld) counts as
        listed, so that a slow answer is not taken for the job's end."""
        run = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], capture_output=True,
                             text=True)
        return run.returncode != 0 or bool(run.stdout.strip())

    def wait(self, jobs, seconds):
        deadline = time.monotonic() + seconds
        while any(self.listed(job) for job in jobs):
            if time.monotonic() > deadline:
                fail(f"jobs {jobs} still queued or running after {seconds} s")
            time.sleep(1)

    def log(self, job):
        path = os.path.join(self.work, "outputs", f"gpurelay-resumable-{job}.out")
        return open(path).read() if os.path.exists(path) else "(no log)"

    def cancel_all(self):
        if self.jobs:
            subprocess.run(["scancel"] + self.jobs, capture_output=True)


def stop_when_stepping(cluster, work, name, job, seconds):
    """Once the job's first rows are in outputs/NAME.h5.partial (within `seconds`), the signal
    the time limit sends, at once: `scancel --batch --signal=TERM`, to the batch shell, as the
    time limit's B: signal goes (the template passes it on to its launcher as SIGUSR1)."""
    partial = os.path.join(work, "outputs", f"{name}.h5.partial")
    deadline = time.monotonic() + seconds
    while not first_row_written(partial):
        if time.monotonic() > deadline or not cluster.listed(job):
            print(cluster.log(job))
            fail(f"{name}: job {job} wrote no rows to {partial} within {seconds} s")
        time.sleep(0.05)
    subprocess.run(["scancel", "--batch", "--signal=TERM", job], check=True)


# What a launcher prints on top of an exit gpurelay explained: the template's log leaves it out.
RESTATED = re.compile(r"Exited with exit code|Primary job +terminated|mpirun detected that|"
                      r"Forwarding signal|Terminating StepId")


def check_stopped(cluster, job, output, steps, what, signal_name):
    state, code = cluster.field(job, "JobState"), cluster.field(job, "ExitCode")
    print(f"{what}: job {job} {state} exit {code}, ran {cluster.field(job, 'RunTime')}")
    # The template passes the batch shell's SIGTERM on to its launcher as SIGUSR1 (138); a
    # SIGTERM sent to the job step reaches srun's ranks as it is (143).
    expected = {"SIGUSR1": "138:0", "SIGTERM": "143:0"}[signal_name]
    log = cluster.log(job)
    if state == "TIMEOUT" or code != expected or f"gpurelay: stopped by {signal_name}" not in log:
        print(log)
        fail(f"{what}: job {job} ended {state} with exit {code}, not by {signal_name} ({expected} "
             f"and gpurelay's 'stopped by {signal_name}' line)")
    if signal_name == "SIGUSR1" and RESTATED.search(log):
        print(log)
        fail(f"{what}: job {job}'s log restates gpurelay's stop: {RESTATED.search(log).group(0)}")
    partial = output + ".partial"
    if os.path.exists(output) or not os.path.exists(partial):
        fail(f"{what}: expected only {partial} after the stop")
    with h5py.File(partial, "r") as f:
        complete, stopped = int(f.attrs["complete"]), int(f.attrs["stopped_at_step"])
    print(f"{what}: {partial}: complete = {complete}, stopped_at_step = {stopped} of {steps}")
    if complete != 0 or not 0 < stopped < steps - 1:
        fail(f"{what}: complete {complete}, stopped_at_step {stopped}: not stopped mid-run")


def read_y(path):
    with h5py.File(path, "r") as f:
        if int(f.attrs["complete"]) != 1 or int(f.attrs["verified"]) != 1:
            fail(f"{path}: complete {f.attrs['complete']}, verified {f.attrs['verified']}")
        return f["step"][...], f["y"][...]


@contextlib.contextmanager
def submit_folder(binary, root):
    """A cluster to submit to from a folder laid out like the repository root (inputs/ and
    scripts/ linked, outputs/ made), GPURELAY_BINARY set: (cluster, folder). The jobs left are
    cancelled at the end."""
    if not os.path.isfile(os.environ.get("SLURM_CONF", "")):
        fail("SLURM_CONF does not name a cluster's slurm.conf (the ctest fixture sets it)")
    with tempfile.TemporaryDirectory() as work:
        for name in ("inputs", "scripts"):
            os.symlink(os.path.join(root, name), os.path.join(work, name))
        # As in a clone: the templates' logs go there, and Slurm does not make the folder.
        os.mkdir(os.path.join(work, "outputs"))
        os.environ["GPURELAY_BINARY"] = os.path.abspath(binary)
        cluster = Cluster(work)
        try:
            yield cluster, work
        finally:
            cluster.cancel_all()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--quick", action="store_true",
                        help="scancel's signal to the batch shell at once, not the time limit")
    opts = parser.parse_args()
    with submit_folder(opts.binary, opts.root) as (cluster, work):
        (run_quick if opts.quick else run)(cluster, work)
    print("PASS: time_limit" + (" --quick" if opts.quick else ""))


# CI runs as root, which mpirun refuses unless told.
MPIRUN = {"GPURELAY_LAUNCHER": "mpirun", "OMPI_ALLOW_RUN_AS_ROOT": "1",
          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def run_quick(cluster, work):
    # 15 to 30 ms of kernel C a step: the run is still in its steps when the signal comes after
    # its first flushed rows, and the resumed job has the rest to do.
    steps = 200
    flags = ["--device", "cpu", "--elements", "4096", "--c-elements", "64Ki", "--c-iterations",
             "400", "--steps", str(steps), "--warmup", "2", "--overlap", "on", "--write", "all",
             "--flush-every", "4", "--quiet"]
    cases = {"srun": {}, "mpirun": MPIRUN}
    jobs = {name: cluster.submit(["--time=10"], flags + ["--output", f"outputs/{name}.h5"], env)
            for name, env in cases.items()}
    for name, job in jobs.items():
        stop_when_stepping(cluster, work, name, job, 120)
    cluster.wait(list(jobs.values()), 120)
    for name, job in jobs.items():
        check_stopped(cluster, job, os.path.join(work, "outputs", f"{name}.h5"), steps,
                      f"{name}, scancel --batch", "SIGUSR1")
    resumed = {name: cluster.submit(["--time=10"], flags + ["--output", f"outputs/{name}.h5",
                                                            "--resume"], cases[name])
               for name in jobs}
    cluster.wait(list(resumed.values()), 300)
    for name, job in resumed.items():
        if cluster.field(job, "JobState") != "COMPLETED":
            print(cluster.log(job))
            fail(f"{name}: the --resume job {job} ended {cluster.field(job, 'JobState')}")
        with h5py.File(os.path.join(work, "outputs", f"{name}.h5"), "r") as f:
            read_y(f.filename)
            elements = check_y_by_formula(f)
        print(f"{name}: resumed by job {job}; every element of /y by the formula ({elements})")


def run(cluster, work):
    # About 15 ms of kernel C a step on one core; every 25th step's y is kept.
    base = ["--device", "cpu", "--elements", "4096", "--c-elements", "64Ki",
            "--c-iterations", "100", "--warmup", "2", "--overlap", "on", "--write", "every:25",
            "--flush-every", "4", "--quiet"]
    # Four calibration jobs at once, as the runs to stop and the reference will share the cores.
    calibration = [cluster.submit(["--time=5"], base + [
        "--steps", "300", "--output", f"outputs/calibrate{i}.h5",
        "--results-csv", "outputs/calibrate.csv", "--tag", f"calibrate {i}"]) for i in range(4)]
    cluster.wait(calibration, 180)
    rows = list(csv.DictReader(open(os.path.join(work, "outputs", "calibrate.csv"))))
    if len(rows) != 4:
        print(cluster.log(calibration[0]))
        fail(f"the calibration jobs wrote {len(rows)} CSV rows, not 4")
    # The fastest of the three: the rate moves by up to 2x from run to run (the ranks' stop
    # vote waits on the machine's scheduling), and a run that ends before the signal tests
    # nothing.
    step_ms = min(float(row["time_per_step_ms"]) for row in rows)
    steps = max(1000, math.ceil(RUN_TARGET_S * 1000 / step_ms))
    print(f"calibration: {step_ms:.3f} ms a step (fastest of 4 at once); runs of {steps} steps",
          flush=True)
    flags = base + ["--steps", str(steps)]

    def out(name):
        return ["--output", f"outputs/{name}.h5"]

    limit = ["--time=2", f"--signal=B:TERM@{SIGNAL_AHEAD_S}"]
    mpirun = MPIRUN
    cases = {
        "srun, time limit": (cluster.submit(limit, flags + out("srun")), "srun", {}),
        "mpirun, time limit": (cluster.submit(limit, flags + out("mpirun"), mpirun), "mpirun",
                               mpirun),
        "srun, scancel": (cluster.submit(["--time=10"], flags + out("scancel")), "scancel", {}),
    }

    # The uninterrupted run beside them: four runs at once, as in the calibration.
    reference = cluster.submit(["--time=10"], flags + out("reference"))

    # scancel --signal=TERM (no --batch): the job step, srun's ranks, gets it. Sent once the
    # ranks have written their first rows.
    scancel_job = cases["srun, scancel"][0]
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(work, "outputs", "scancel.h5.partial")) \
            or not cluster.running(scancel_job):
        if time.monotonic() > deadline:
            fail("the scancel job wrote no .partial within 120 s")
        time.sleep(0.5)
    time.sleep(5)
    subprocess.run(["scancel", "--signal=TERM", scancel_job], check=True)

    cluster.wait([job for job, _, _ in cases.values()], 300)
    for what, (job, name, env) in cases.items():
        check_stopped(cluster, job, os.path.join(work, "outputs", f"{name}.h5"), steps, what,
                      "SIGTERM" if name == "scancel" else "SIGUSR1")

    resumed = {what: cluster.submit(["--time=10"], flags + out(name) + ["--resume"], env)
               for what, (_, name, env) in cases.items()}
    cluster.wait(list(resumed.values()) + [reference], 600)
    ref_step, ref_y = read_y(os.path.join(work, "outputs", "reference.h5"))
    for what, job in resumed.items():
        name = cases[what][1]
        state = cluster.field(job, "JobState")
        if state != "COMPLETED":
            print(cluster.log(job))
            fail(f"{what}: the --resume job {job} ended {state}")
        path = os.path.join(work, "outputs", f"{name}.h5")
        if os.path.exists(path + ".partial"):
            fail(f"{what}: {path}.partial still there after --resume")
        step, y = read_y(path)
        if not np.array_equal(step, ref_step) or not np.array_equal(y, ref_y):
            fail(f"{what}: /y after --resume differs from the uninterrupted run's")
        print(f"{what}: resumed by job {job}; /y ({y.shape}) equals the uninterrupted run's")


if __name__ == "__main__":
    main()
