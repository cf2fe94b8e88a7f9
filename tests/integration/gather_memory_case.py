#!/usr/bin/env python3
"""Rank 0's gather of every rank's step times counts in the start-up memory check.

Two launches that cannot fit (10^10 steps), refused at once with exit 2, one with overlap =
"on" and one with "compare": each rank's per-step records double with the second pass, but rank
0 gathers every rank's step times one pass at a time, so the records the refusal names grow
less than 2x with the gather counted, and exactly 2x without it."""
import argparse
import re
import os
import shlex
import subprocess
import tempfile

from launch import fail, finish

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


def records_named(binary, mpirun, overlap, folder):
    args = shlex.split(mpirun) + ["-np", "2", binary, "--device", "cpu", "--elements", "1Ki",
                                  "--output", os.path.join(folder, f"{overlap}.h5"),
                                  "--steps", "10000000000", "--overlap", overlap,
                                  "--write", "none", "--c-elements", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, out, err = finish(proc, 120)
    if code != 2:
        fail(f"overlap = {overlap}: exit {code}, not 2 (the memory check's refusal)")
    found = re.search(r"\(([\d.]+) (\w+) of it per-step records of 10000000000 steps, with rank "
                      r"0's of every rank on its node\)", out + err)
    if not found:
        fail(f"overlap = {overlap}: no line naming the per-step records and rank 0's gather")
    return float(found.group(1)) * UNITS[found.group(2)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        on = records_named(opts.binary, opts.mpirun, "on", folder)
        both = records_named(opts.binary, opts.mpirun, "compare", folder)
    ratio = both / on
    print(f"records: {on:.4g} B with one pass, {both:.4g} B with two: {ratio:.3f}x")
    # Without rank 0's gather the records are per pass only: 2.00x.
    if not 1.2 < ratio < 1.8:
        fail(f"two passes' records {ratio:.3f}x one pass's: rank 0's gather is not counted once")
    print("PASS: gather_memory")


if __name__ == "__main__":
    main()
