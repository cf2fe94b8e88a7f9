"""The faults of a real cluster, each made for real: a full or read-only file system, a quota hit
by one rank at file creation, two jobs on one output, signals sent to mpirun, a stop between the
last close and the rename, and damaged .partial files (made with h5py).

usage: fault_case.py --binary B --mpirun "mpirun ..." --case NAME [-- GPURELAY_ARGS...]

Every case bounds each run (a hang fails the test), checks the exit code and the one error line,
and reads back what is left on disk. Cases that need root (mount) exit 77 (skipped) without it.
"""
import argparse
import concurrent.futures
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch  # noqa: E402
from launch import with_keys  # noqa: E402
from needs import SKIP, need_modules  # noqa: E402

need_modules("numpy", "h5py")
# interrupt_case sets HDF5_USE_FILE_LOCKING=FALSE before h5py loads, for its polls of an open
# .partial; its start() keeps the variable from the ranks, and so does Runner.start below.
from interrupt_case import first_row_written  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402

# 15 to 30 ms a step on the CPU (C's work): the signals come once the first rows are flushed
# (step 5), so a run of 80 steps is still in its steps, and a resume has the rest to do.
LONG = ["--device", "cpu", "--elements", "20000", "--c-elements", "64Ki", "--c-iterations", "400",
        "--steps", "80", "--warmup", "2", "--write", "all", "--flush-every", "5",
        "--overlap", "on"]
SHORT = ["--device", "cpu", "--elements", "3001", "--c-elements", "4096", "--c-iterations", "16",
         "--steps", "6", "--warmup", "1", "--write", "all"]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


class Runner:
    def __init__(self, opts):
        self.mpirun = shlex.split(opts.mpirun)
        self.binary = os.path.abspath(opts.binary)

    def command(self, args, np_ranks=2):
        return self.mpirun + ["-np", str(np_ranks), self.binary] + args + ["--quiet"]

    def start(self, args, np_ranks=2, env=None):
        command = self.command(args, np_ranks)
        print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
        env = {k: v for k, v in (env or os.environ).items() if k != "HDF5_USE_FILE_LOCKING"}
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)

    def run(self, args, np_ranks=2, timeout=120, env=None):
        return finish(self.start(args, np_ranks, env), timeout)


def finish(proc, timeout):
    """(exit code, our stderr lines, whole stderr); a run that outlasts `timeout` fails."""
    code, _, err = launch.finish(proc, timeout)
    ours = [line for line in err.splitlines() if line.startswith("gpurelay:")]
    return code, ours, err


def expect_usage_error(result, text):
    code, ours, _ = result
    if code != 2:
        fail(f"exit code {code}, expected 2")
    if len(ours) != 1:
        fail(f"expected one error line from one rank, got {len(ours)}: {ours}")
    if text not in ours[0]:
        fail(f"error line {ours[0]!r} does not contain {text!r}")


def wait_for(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    fail(f"timed out waiting for {what}")


def check_complete(path, verified=1):
    with h5py.File(path, "r") as f:
        if int(f.attrs["complete"]) != 1 or int(f.attrs["verified"]) != verified:
            fail(f"{path}: complete {f.attrs['complete']}, verified {f.attrs['verified']}")


def expect_complete_run(runner, args, output, what, timeout=120):
    """Runs `args` to exit 0 and checks that `output` is complete and verified."""
    code, _, _ = runner.run(args, timeout=timeout)
    if code != 0:
        fail(f"{what} exited {code}")
    check_complete(output)


def readable_or_absent(path):
    """A .partial, when there is one, opens and says complete = 0."""
    if os.path.exists(path):
        with h5py.File(path, "r") as f:
            if int(f.attrs["complete"]) != 0:
                fail(f"{path}: complete is not 0")


@contextlib.contextmanager
def mounted_tmpfs(folder, options):
    """A small tmpfs at `folder`; the case is skipped where mounting is not allowed."""
    os.makedirs(folder, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs",
                                            folder]).returncode != 0:
        print(f"SKIP: cannot mount a tmpfs ({options}) here")
        sys.exit(SKIP)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", folder])


def stopped_partial(runner, tmp, name="stopped.h5", extra=()):
    """A .partial left by SIGTERM to the ranks mid-run, as Slurm's time limit leaves one."""
    output = os.path.join(tmp, name)
    args = LONG + list(extra) + ["--output", output]
    proc = runner.start(args)
    wait_for(lambda: first_row_written(output + ".partial"), 60, "the first rows in the .partial")
    pids = subprocess.run(["pgrep", "-f", "^" + runner.binary + " .*" + output],
                          capture_output=True, text=True).stdout.split()
    for pid in pids:
        os.kill(int(pid), signal.SIGTERM)
    code, _, _ = finish(proc, 60)
    if code != 143:
        fail(f"the run stopped by SIGTERM exited {code}, expected 143")
    return output, args


# --- the cases ------------------------------------------------------------------------------------

def case_bad_text(runner, tmp, args):
    """Text that cannot travel in the deck or would break a CSV row, and a deck that never ends:
    one line from one rank, exit 2."""
    output = os.path.join(tmp, "out.h5")
    expect_usage_error(runner.run(SHORT + ["--output", output, "--tag", "a\rb"]),
                       "tag must not hold control characters")
    bad_byte = os.fsdecode(b"tag\xff")  # surrogate-escaped: passed to the program as the byte
    expect_usage_error(runner.run(SHORT + ["--output", output, "--tag", bad_byte]),
                       "tag is not valid UTF-8")
    expect_usage_error(runner.run(SHORT + ["--output", os.path.join(tmp, bad_byte + ".h5")]),
                       "output is not valid UTF-8")
    expect_usage_error(runner.run(SHORT + ["--output", output, "--input", "/dev/zero"]),
                       "larger than 1 MiB")
    expect_usage_error(runner.run(SHORT + ["--output", output, "--depth", "--steps", "5"]),
                       "option --depth needs a value")
    if os.listdir(tmp):
        fail(f"bad input left files behind: {os.listdir(tmp)}")


def case_full_disk(runner, tmp, args):
    """The file would not fit: refused at start with the figures, nothing left behind. Its
    timings alone (every one of 20000 steps kept), and its tensors: --write all of 2,000 steps of
    1 MiB, 2 GB that a 64 MiB file system must refuse in seconds, before the run makes or fills
    anything."""
    with mounted_tmpfs(os.path.join(tmp, "small"), "size=256k") as folder:
        output = os.path.join(folder, "out.h5")
        result = runner.run(with_keys(SHORT, "--steps", "20000", "--write", "none", "--step-record",
                                      "all", "--output", output), timeout=60)
        expect_usage_error(result, "free")
        if os.listdir(folder):
            fail(f"files left on the full file system: {os.listdir(folder)}")
    with mounted_tmpfs(os.path.join(tmp, "small64"), "size=64m") as folder:
        output = os.path.join(folder, "out.h5")
        start = time.monotonic()
        result = runner.run(with_keys(SHORT, "--steps", "2000", "--elements", "256Ki", "--write",
                                      "all", "--output", output), timeout=60)
        expect_usage_error(result, "output: the file needs 2001.9 MiB, but '" + folder + "' has")
        print(f"refused in {time.monotonic() - start:.1f} s")
        if os.listdir(folder):
            fail(f"files left on the full file system: {os.listdir(folder)}")


def fill(folder):
    """Fills the file system of `folder` to its last byte."""
    fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for chunk in (4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * chunk) == chunk:
                    pass
    finally:
        os.close(fd)


def case_side_outputs_full(runner, tmp, args):
    """The summary JSON and the results CSV do not fit when the run ends (the disk filled during
    the run): exit 4 naming the file and the reason, the HDF5 file published and verified, no
    half-written JSON or .tmp beside it, and the CSV and its side tables (NAME.ranks.csv,
    NAME.links.csv) as they were (a row that fitted only in part is taken back)."""
    with mounted_tmpfs(os.path.join(tmp, "side"), "size=64k") as folder:
        csv_path = os.path.join(folder, "results.csv")
        json_path = os.path.join(folder, "summary.json")
        expect_complete_run(runner, SHORT + ["--output", os.path.join(tmp, "first.h5"),
                                             "--results-csv", csv_path],
                            os.path.join(tmp, "first.h5"), "the run that starts the CSV")
        with open(csv_path, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        row = lines[-1]
        # More whole rows until the file's last page has room for part of a row only: the next
        # append then writes part of its row before the file system refuses the rest.
        size = os.path.getsize(csv_path)
        while not 0 < (-size) % 4096 < len(row):
            with open(csv_path, "ab") as f:
                f.write(row)
            size += len(row)
        fill(folder)
        sides = [os.path.join(folder, "results." + table + ".csv") for table in ("ranks", "links")]
        before = [open(path, "rb").read() for path in [csv_path] + sides]

        for name, flags, message in (
                ("json", ["--summary-json", json_path], "cannot write '" + json_path + "'"),
                ("csv", ["--results-csv", csv_path], "cannot append to results CSV")):
            output = os.path.join(tmp, name + ".h5")
            code, ours, _ = runner.run(SHORT + ["--output", output] + flags)
            if code != 4:
                fail(f"{name}: exit code {code}, expected 4")
            if len(ours) != 1 or message not in ours[0] or "No space left" not in ours[0]:
                fail(f"{name}: expected one line with {message!r} and the reason, got {ours}")
            check_complete(output)
        left = sorted(set(os.listdir(folder)) -
                      {"results.csv", "results.ranks.csv", "results.links.csv", "filler"})
        if left:
            fail(f"files left beside the side outputs: {left}")
        if [open(path, "rb").read() for path in [csv_path] + sides] != before:
            fail("the results CSV or a side table changed: a partial row was left in it")


def case_read_only(runner, tmp, args):
    """A read-only file system: exit 2 with the system's reason, even as root."""
    with mounted_tmpfs(os.path.join(tmp, "ro"), "size=1m,ro") as folder:
        expect_usage_error(runner.run(SHORT + ["--output", os.path.join(folder, "out.h5")]),
                           "Read-only file system")


def case_quota(runner, tmp, args):
    """Rank 0 alone may not grow files past 8 MiB (a limit like a quota, which free space does not
    show): the file system's refusal is found at start, with the figures, before any file work."""
    output = os.path.join(tmp, "quota.h5")
    deck = with_keys(SHORT, "--steps", "200000", "--write", "none", "--step-record", "all",
                     "--output", output) + ["--quiet"]
    # SIGXFSZ ignored, so a write past the limit fails (EFBIG) instead of killing the rank.
    limited = ["bash", "-c", 'trap "" XFSZ; ulimit -f 8192; exec "$@"', "limited", runner.binary]
    command = runner.mpirun + ["-np", "1"] + limited + deck + [":", "-np", "1", runner.binary] + deck
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    expect_usage_error(finish(subprocess.Popen(command, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True), 90),
                       "File too large")
    if os.listdir(tmp):
        fail(f"files left behind: {os.listdir(tmp)}")


def case_two_jobs(runner, tmp, args):
    """A second job on a live output is refused at start, naming the owner; the first, still
    running, then stops cleanly on SIGTERM and leaves its .partial."""
    output = os.path.join(tmp, "shared.h5")
    # Minutes of steps: however slow the two refused launches (the sanitizers), it still runs.
    first = runner.start(with_keys(LONG, "--steps", "20000") + ["--output", output])
    wait_for(lambda: os.path.exists(output + ".partial"), 60, "the first job's .partial")
    expect_usage_error(runner.run(SHORT + ["--output", output]), "in use by")
    expect_usage_error(runner.run(SHORT + ["--output", output, "--overwrite"]), "in use by")
    if first.poll() is not None:
        fail(f"the first job ended ({first.returncode}) before the refusals were checked")
    wait_for(lambda: first_row_written(output + ".partial"), 60, "the first job's first rows")
    for pid in subprocess.run(["pgrep", "-f", "^" + runner.binary + " .*" + output],
                              capture_output=True, text=True).stdout.split():
        os.kill(int(pid), signal.SIGTERM)
    code, _, _ = finish(first, 120)
    if code != 143:
        fail(f"the first job exited {code} after SIGTERM, expected 143")
    readable_or_absent(output + ".partial")
    # The lock went with the job: the output is free again.
    code, _, _ = runner.run(SHORT + ["--output", output, "--overwrite"])
    if code != 0:
        fail(f"a run after the first job ended exited {code}")


def case_resumable_kept(runner, tmp, args):
    """A fresh run never deletes a .partial that --resume can finish; --overwrite may."""
    output, long_args = stopped_partial(runner, tmp)
    partial = output + ".partial"
    before = open(partial, "rb").read()
    expect_usage_error(runner.run(long_args), "--resume")
    if open(partial, "rb").read() != before:
        fail("the refused run changed the resumable .partial")
    expect_complete_run(runner, long_args + ["--overwrite"], output, "the run with --overwrite")


def case_complete_partial(runner, tmp, args):
    """A stop between the last close and the rename leaves a complete .partial: --resume
    publishes it as it is."""
    output = os.path.join(tmp, "done.h5")
    code, _, _ = runner.run(SHORT + ["--output", output])
    if code != 0:
        fail(f"the first run exited {code}")
    os.rename(output, output + ".partial")
    code, ours, _ = runner.run(SHORT + ["--output", output, "--resume"])
    if code != 0:
        fail(f"--resume of a complete .partial exited {code}")
    if not any("already complete" in line for line in ours):
        fail(f"no line says the .partial was already complete: {ours}")
    check_complete(output)
    if os.path.exists(output + ".partial"):
        fail(".partial left after it was published")


def case_damaged_partial(runner, tmp, args):
    """--resume refuses a .partial whose attributes or structure are damaged, with exit 2."""
    output, long_args = stopped_partial(runner, tmp)
    pristine = open(output + ".partial", "rb").read()

    def damage(partial, edit):
        with open(partial, "wb") as f:
            f.write(pristine)
        edit(partial)

    def damaged(index, edit, *messages):
        """One damaged copy in a folder of its own, so that the refusals run side by side."""
        folder = os.path.join(tmp, f"damaged{index}")
        os.mkdir(folder)
        copy = os.path.join(folder, "stopped.h5")
        damage(copy + ".partial", edit)
        result = runner.run(with_keys(long_args, "--output", copy) + ["--resume"])
        for message in messages:
            expect_usage_error(result, message)
        if os.path.exists(copy):
            fail("a damaged .partial was published")

    def set_attr(name, value):
        def edit(partial):
            with h5py.File(partial, "r+") as f:
                f.attrs[name] = value
        return edit

    def del_attr(name):
        def edit(partial):
            with h5py.File(partial, "r+") as f:
                del f.attrs[name]
        return edit

    def truncate(partial):
        with open(partial, "r+b") as f:
            f.truncate(len(pristine) // 3)

    def corrupt_superblock(partial):
        with open(partial, "r+b") as f:
            f.seek(0)
            f.write(b"\0" * 64)

    # Each refusal says how to start afresh, as a fresh run takes it: one that says where the
    # run stopped is kept without --overwrite, a file that is not HDF5 is not. The launches are
    # refused at start, so mostly wait on mpirun: three at a time.
    cases = [
        (set_attr("stopped_pass", np.int64(7)), "damaged .partial",
         "with --overwrite instead of --resume"),
        (set_attr("stopped_pass", np.int64(-1)), "damaged .partial"),
        (set_attr("stopped_at_step", np.int64(-3)), "damaged .partial"),
        (set_attr("stopped_at_step", np.int64(10**12)), "damaged .partial"),
        (set_attr("stopped_at_step", "twelve"), "damaged .partial"),
        (set_attr("config_toml", "steps = [ oops"), "damaged .partial"),
        (del_attr("config_toml"), "damaged .partial"),
        (del_attr("complete"), "damaged .partial"),
        (truncate, "damaged .partial"),
        (corrupt_superblock, "damaged .partial", "run again without --resume to start afresh"),
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        for done in [pool.submit(damaged, i, *case) for i, case in enumerate(cases)]:
            done.result()  # a failed check exits the test (SystemExit) here
    partial = output + ".partial"
    damage(partial, set_attr("stopped_pass", np.int64(7)))
    code, ours, _ = runner.run(long_args)
    if code != 2 or not ours or "--overwrite to discard it" not in ours[0]:
        fail(f"a fresh run over a .partial that says where it stopped: exit {code}, {ours}")
    damage(partial, corrupt_superblock)
    expect_complete_run(runner, with_keys(long_args, "--steps", "20"), output,
                        "a fresh run over an unreadable .partial, without --overwrite")
    os.unlink(output)
    # Undamaged, it still resumes.
    with open(partial, "wb") as f:
        f.write(pristine)
    expect_complete_run(runner, long_args + ["--resume"], output, "--resume of the undamaged .partial")


def mpirun_signal(runner, tmp, sig, window):
    """Signals `sig` to mpirun itself mid-run, with Open MPI's kill window set to `window` s."""
    output = os.path.join(tmp, f"mpirun_{sig}.h5")
    # mpirun waits the window once before it forwards the signal and once more before SIGKILL:
    # the run must outlast the first wait.
    args = with_keys(LONG, "--steps", "1500", "--output", output)
    env = dict(os.environ, OMPI_MCA_odls_base_sigkill_timeout=str(window))
    proc = runner.start(args, env=env)
    wait_for(lambda: first_row_written(output + ".partial"), 60, "the first rows in the .partial")
    proc.send_signal(getattr(signal, "SIG" + sig))
    sent = time.monotonic()
    # mpirun itself needs twice the window; a loaded machine more.
    code, ours, _ = finish(proc, 180)
    print(f"mpirun exit {code} {time.monotonic() - sent:.1f} s after SIG{sig}")
    return output, args, code, ours


def case_mpirun_sigterm(runner, tmp, args):
    """SIGTERM to mpirun: with the kill window lengthened (5 s, room for a loaded machine to end
    a step of 30 ms and close the file), the ranks stop cleanly and say so, and the .partial
    says where to resume (mpirun itself exits 1, its own convention; resuming is checked by the
    sig*_then_resume tests)."""
    output, _, code, ours = mpirun_signal(runner, tmp, "TERM", 5)
    if code == 0:
        fail("mpirun exited 0 after SIGTERM")
    if not any(line.startswith("gpurelay: stopped by SIGTERM") for line in ours):
        fail(f"no 'stopped by SIGTERM' line: {ours}")
    with h5py.File(output + ".partial", "r") as f:
        if int(f.attrs["complete"]) != 0 or int(f.attrs["stopped_at_step"]) <= 0:
            fail("the .partial does not say where the run stopped")
        if int(f.attrs["stop_signal"]) != signal.SIGTERM:
            fail(f"stop_signal {f.attrs['stop_signal']}, expected SIGTERM")


def case_mpirun_sigint(runner, tmp, args):
    """SIGINT to mpirun reaches the ranks as SIGTERM (Open MPI sends SIGTERM for both): the line
    says where it came from instead of claiming a SIGTERM was sent."""
    output, _, code, ours = mpirun_signal(runner, tmp, "INT", 5)
    if code == 0:
        fail("mpirun exited 0 after SIGINT")
    if not any(line.startswith("gpurelay: stopped by SIGTERM") and "mpirun" in line
               for line in ours):
        fail(f"no 'stopped by SIGTERM' line naming mpirun: {ours}")
    # ... and the signal that stops without mpirun's kill window (issue #26).
    if not any("SIGUSR1 to mpirun" in line for line in ours):
        fail(f"the 'stopped by' line does not name SIGUSR1 to mpirun: {ours}")
    readable_or_absent(output + ".partial")


def case_mpirun_kill_window(runner, tmp, args):
    """Open MPI's default window (1 s from its SIGTERM to its SIGKILL) with steps longer than it:
    the ranks die mid-step, yet the .partial opens, and --resume says it cannot continue it
    instead of deleting it or crashing."""
    output = os.path.join(tmp, "killed.h5")
    slow = ["--device", "cpu", "--elements", "4096", "--c-elements", "1Mi", "--c-iterations",
            "3000", "--steps", "40", "--warmup", "1", "--write", "all", "--flush-every", "1",
            "--overlap", "on", "--output", output]
    env = dict(os.environ, OMPI_MCA_odls_base_sigkill_timeout="1")
    proc = runner.start(slow, env=env)
    wait_for(lambda: first_row_written(output + ".partial"), 60, "the first row in the .partial")
    proc.send_signal(signal.SIGTERM)
    code, _, _ = finish(proc, 60)
    if code == 0:
        fail("mpirun exited 0 after SIGTERM")
    readable_or_absent(output + ".partial")
    if not os.path.exists(output + ".partial"):
        fail("no .partial left")
    # The refusal names the signal that would have kept the file, and how to start afresh, the
    # way a fresh run then takes it: without --overwrite, which it does not need here.
    result = runner.run(slow + ["--resume"])
    expect_usage_error(result, "was not stopped cleanly")
    for part in ("SIGUSR1 to mpirun", "run again without --resume to start afresh"):
        if part not in result[1][0]:
            fail(f"the refusal {result[1][0]!r} does not say {part!r}")
    readable_or_absent(output + ".partial")
    expect_complete_run(runner, with_keys(slow, "--steps", "2", "--c-iterations", "10"), output,
                        "a fresh run over the killed run's .partial")


def case_mpirun_double_sigint(runner, tmp, args):
    """Two SIGINTs to mpirun, as `timeout -s INT` sends (to mpirun, then to its process group) or
    a second Ctrl-C: Open MPI's mpirun then exits at once and its library ends the ranks, which
    get no signal to stop on. Every rank ends, the .partial still opens, and --resume says what
    to send instead (SIGUSR1 to mpirun) and how to start afresh, which works as it says."""
    output = os.path.join(tmp, "double.h5")
    args = with_keys(LONG, "--steps", "3000", "--output", output)
    proc = runner.start(args)
    wait_for(lambda: first_row_written(output + ".partial"), 60, "the first rows in the .partial")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    code, _, _ = finish(proc, 60)
    if code == 0:
        fail("mpirun exited 0 after two SIGINTs")
    pids = lambda: subprocess.run(["pgrep", "-f", "^" + runner.binary + " .*" + output],
                                  capture_output=True, text=True).stdout.split()
    wait_for(lambda: not pids(), 30, "the ranks to end after mpirun exited")
    if os.path.exists(output + ".lock"):
        os.unlink(output + ".lock")  # the killed rank 0 could not remove it; a stale lock is free
    readable_or_absent(output + ".partial")
    with h5py.File(output + ".partial", "r") as f:
        stopped = "stopped_at_step" in f.attrs
    if stopped:
        print("mpirun forwarded a SIGTERM before it exited: the ranks stopped cleanly")
        return
    result = runner.run(with_keys(args, "--steps", "3000") + ["--resume"])
    expect_usage_error(result, "was not stopped cleanly")
    for part in ("SIGUSR1 to mpirun", "run again without --resume to start afresh"):
        if part not in result[1][0]:
            fail(f"the refusal {result[1][0]!r} does not say {part!r}")
    expect_complete_run(runner, with_keys(args, "--steps", "20"), output,
                        "a fresh run over the .partial, without --overwrite")



def case_mpirun_sigusr1(runner, tmp, args):
    """SIGUSR1 to mpirun, with Open MPI's default settings and steps longer than its kill window:
    mpirun forwards SIGUSR1 to every rank and does not kill them, so the ranks finish the step in
    flight, close the .partial, exit 138 (mpirun too), and --resume completes the file. (A step
    takes about 1.5 s on an idle CI core, several on a loaded one.)"""
    output = os.path.join(tmp, "usr1.h5")
    # No ceilings: measuring C alone would take twelve of these slow C runs in each launch.
    slow = ["--device", "cpu", "--elements", "4096", "--c-elements", "1Mi", "--c-iterations",
            "3000", "--steps", "6", "--warmup", "1", "--write", "all", "--flush-every", "1",
            "--overlap", "on", "--calibrate", "false", "--output", output]
    env = {k: v for k, v in os.environ.items() if k != "OMPI_MCA_odls_base_sigkill_timeout"}
    proc = runner.start(slow, env=env)
    # After step 0's row: the signal lands in a later step, with one step at least still to do.
    wait_for(lambda: first_row_written(output + ".partial"), 60, "the first row in the .partial")
    proc.send_signal(signal.SIGUSR1)
    code, ours, _ = finish(proc, 120)
    if code != 138 and not launch.forwards(runner.mpirun + ["-np", "1"], "SIGUSR1"):
        print(f"SKIP: mpirun exited {code} after SIGUSR1: this mpirun does not pass SIGUSR1 on to "
              "its ranks (a rank waiting for it, signalled through mpirun, went on): the "
              "machine's MPI settings, not gpurelay (output_resume_own stops the ranks by it)")
        sys.exit(SKIP)
    if code != 138:
        fail(f"mpirun exited {code} after SIGUSR1, expected 138 (the ranks' 128 + 10)")
    if not any(line.startswith("gpurelay: stopped by SIGUSR1 after step") for line in ours):
        fail(f"no 'stopped by SIGUSR1' line: {ours}")
    with h5py.File(output + ".partial", "r") as f:
        stopped = int(f.attrs["stopped_at_step"])
        if int(f.attrs["complete"]) != 0 or not 0 <= stopped < 5:
            fail(f"the .partial does not say where the run stopped (stopped_at_step {stopped})")
        if int(f.attrs["stop_signal"]) != signal.SIGUSR1:
            fail(f"stop_signal {f.attrs['stop_signal']}, expected SIGUSR1")
    expect_complete_run(runner, slow + ["--resume"], output, "--resume after SIGUSR1",
                        timeout=240)

CASES = {name[len("case_"):]: fn for name, fn in globals().items()
         if name.startswith("case_")}


def main():
    # The bad-text cases pass bytes that are not UTF-8 (surrogate escapes once in Python):
    # printing their command must not fail where stdout's encoding is strict (the GPU machine's).
    sys.stdout.reconfigure(errors="backslashreplace")
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        CASES[opts.case](Runner(opts), tmp, [a for a in opts.args if a != "--"])
    print(f"ok: {opts.case}")


if __name__ == "__main__":
    main()
