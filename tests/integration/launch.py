"""Launching gpurelay from the integration tests' scripts: its flags as argument lists, and a
launch waited for within a bound."""
import subprocess
import sys


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
