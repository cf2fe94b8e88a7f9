"""Launching gpurelay from the integration tests' scripts: its flags as argument lists, a
launch waited for within a bound, and whether a launcher passes a signal on to its ranks.

usage (from a shell test): launch.py --forwards SIGNAL -- LAUNCHER...   exit 0 when LAUNCHER
(e.g. mpirun -np 1) passes SIGNAL on to its rank, 1 when it does not."""
import argparse
import select
import signal
import subprocess
import sys
import time

# A rank that sets a handler for the signal named in {0}, says so, and exits 42 when it comes.
SIGNALLED_RANK = ("import signal, sys, time\n"
                  "signal.signal(signal.{0}, lambda *_: sys.exit(42))\n"
                  "print('ready', flush=True)\n"
                  "time.sleep(60)\n")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def with_keys(base, *pairs):
    """`base` with the flags in `pairs` ("--steps", "20000", ...) replaced or added: gpurelay
    refuses a flag given twice."""
    args = list(base)
    for flag, value in zip(pairs[::2], pairs[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    return args


def finish(proc, timeout):
    """(exit code, stdout, stderr) of `proc`, both printed; a run that outlasts `timeout` is
    killed and fails the test."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        fail(f"no exit within {timeout} s: a rank hangs")
    print(out)
    print(err, file=sys.stderr)
    return proc.returncode, out, err


def forwards(launcher, name="SIGUSR1", timeout=30):
    """Whether `launcher` (an argument list ending in its rank count, e.g. mpirun -np 1) passes the
    signal `name` on to its rank: a rank that exits 42 on it is started and, once its handler is
    set, the launcher is signalled; it must end so within 10 s. Asked only once a test's stop went
    missing, to tell a launcher that keeps the signal (a setting of the machine's MPI) from a
    gpurelay that ignored it."""
    proc = subprocess.Popen(launcher + [sys.executable, "-c", SIGNALLED_RANK.format(name)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + timeout
        line = ""
        while "ready" not in line and time.monotonic() < end and proc.poll() is None:
            if select.select([proc.stdout], [], [], max(0.0, end - time.monotonic()))[0]:
                line = proc.stdout.readline()
        if "ready" not in line:
            print(f"the launcher's probe rank did not start within {timeout} s", file=sys.stderr)
            return False
        proc.send_signal(getattr(signal, name))
        try:
            return proc.wait(timeout=10) == 42
        except subprocess.TimeoutExpired:
            return False
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Whether a launcher passes a signal on to its "
                                     "rank: exit 0 if it does, 1 if not.")
    parser.add_argument("--forwards", required=True, metavar="SIGNAL", help="e.g. SIGUSR1")
    parser.add_argument("launcher", nargs="+", help="the launcher and its rank count")
    opts = parser.parse_args()
    sys.exit(0 if forwards(opts.launcher, opts.forwards) else 1)
