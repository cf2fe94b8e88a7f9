"""--print-config gives a deck that reproduces the run: printed from flags, read back it prints
the same text, and a run from the deck writes the same /y and the same resolved deck as the run
from the flags.

usage: print_config_roundtrip.py --binary B --mpirun "mpirun ..." -- FLAGS...
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


# LeakSanitizer's own stop-the-world tracer, at the exit of an MPI singleton (a rank started
# without mpirun, which forks an orted), at times faults before it has checked anything: not a
# leak report, and not gpurelay's. Such an exit alone is run again, once.
LSAN_TRACER_FAULT = ("Tracer caught signal", "LeakSanitizer has encountered a fatal error")


def run(command):
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and all(s in done.stderr for s in LSAN_TRACER_FAULT):
        print("LeakSanitizer's tracer faulted at exit; once more:\n" + done.stderr, flush=True)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        print(done.stdout, done.stderr)
        fail(f"exit {done.returncode}")
    return done.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("flags", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    flags = [f for f in opts.flags if f != "--"]
    mpirun = shlex.split(opts.mpirun) + ["-np", "2", opts.binary]
    with tempfile.TemporaryDirectory() as tmp:
        from_flags = os.path.join(tmp, "from_flags.h5")
        from_deck = os.path.join(tmp, "from_deck.h5")
        deck_path = os.path.join(tmp, "deck.toml")
        deck = run([opts.binary] + flags + ["--output", from_deck, "--print-config"])
        with open(deck_path, "w") as f:
            f.write(deck)
        again = run([opts.binary, "--input", deck_path, "--print-config"])
        if again != deck:
            fail("the deck printed from the deck differs from the deck printed from the flags")
        run(mpirun + flags + ["--output", from_flags, "--quiet"])
        run(mpirun + ["--input", deck_path, "--quiet"])
        with h5py.File(from_flags, "r") as a, h5py.File(from_deck, "r") as b:
            stored_a = a.attrs["config_toml"].replace(from_flags, "OUT")
            stored_b = b.attrs["config_toml"].replace(from_deck, "OUT")
            if stored_a != stored_b:
                fail("the two runs resolved different decks")
            if not np.array_equal(a["y"][...], b["y"][...]) or not np.array_equal(a["step"][...], b["step"][...]):
                fail("the two runs wrote different results")
        print("ok: the printed deck reproduces the run")


if __name__ == "__main__":
    main()
