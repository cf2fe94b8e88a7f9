#!/usr/bin/env python3
"""A launch of any length is refused by nothing but the machine: one of 10^10 steps (ended by
--duration 1s) announces and leaves the same file as one of 10^4 steps, since the histograms
take the same room at any length and step_record = "auto" keeps at most 10^4 steps' own times.
Each must exit 0 with its header's "output: PATH (up to SIZE)". The two files' sizes may differ by
what a report's text attributes say (a busy machine's slow steps are listed), never by the steps:
10^10 steps' own times would take 640 GB."""
import argparse
import os
import re
import shlex
import subprocess
import tempfile

from launch import fail, finish

# The most two files of one layout may differ by their text attributes.
ATTRIBUTE_SLACK = 16 * 1024


def launch(binary, mpirun, folder, *extra):
    output = os.path.join(folder, f"steps{extra[1]}.h5")
    args = shlex.split(mpirun) + ["-np", "2", binary, "--device", "cpu", "--elements", "1Ki",
                                  "--c-elements", "0", "--overlap", "on", "--write", "none",
                                  "--output", output, *extra]
    code, out, _ = finish(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True), 120)
    announced = re.search(r"^output: .* \(up to (.+)\)$", out, re.M)
    if code != 0 or not announced:
        fail(f"{extra}: exit {code}, announced size {announced and announced.group(1)}")
    return announced.group(1), os.path.getsize(output)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        short = launch(opts.binary, opts.mpirun, folder, "--steps", "10000")
        long = launch(opts.binary, opts.mpirun, folder, "--steps", "10000000000",
                      "--duration", "1s")
    print(f"10^4 steps: up to {short[0]}, {short[1]} bytes; 10^10: up to {long[0]}, {long[1]}")
    if short[0] != long[0]:
        fail("the file of 10^10 steps announces another size than that of 10^4")
    if abs(short[1] - long[1]) > ATTRIBUTE_SLACK:
        fail(f"the file of 10^10 steps differs in size from that of 10^4 by more than "
             f"{ATTRIBUTE_SLACK} bytes")
    print("PASS: long_run")


if __name__ == "__main__":
    main()
