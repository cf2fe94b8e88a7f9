"""Profiles gpurelay on the CPU path with Nsight Systems (nsys profile --trace=nvtx,osrt) and
checks `nsys stats --report nvtxsum`: one row per phase in the gpurelay domain ("gpurelay:B"),
whose instances are the run's steps, one "pass overlap=on" range, and no range named by step.

One rank, started directly (MPI singleton; the rank is producer and consumer of its pair):
Debian's nsys 2022.4 under mpirun hangs after "Generating ....qdstrm" here, waiting on its
exited launcher process, with one rank as with two.

usage: nsys_ranges.py --binary B    (nsys on PATH)
"""
import argparse
import csv
import glob
import os
import shutil
import subprocess
import sys
import tempfile

STEPS, WARMUP = 6, 2
PHASES = ["A", "send", "recv", "C", "wait", "B", "verify", "write"]


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def nvtx_summary(nsys, report, prefix):
    """Range name -> instances, from nsys stats --report nvtxsum."""
    run = subprocess.run([nsys, "stats", "--report", "nvtxsum", "--format", "csv", "--output",
                          prefix, "--force-export=true", report],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if run.returncode != 0:
        print(run.stdout[-4000:])
        fail(f"nsys stats exited {run.returncode} on {report}")
    paths = glob.glob(prefix + "*nvtxsum*.csv")
    if len(paths) != 1:
        print(run.stdout[-4000:])
        fail(f"expected one nvtxsum CSV for {report}, found {paths}")
    with open(paths[0], newline="") as f:
        rows = list(csv.DictReader(f))
    print(f"{os.path.basename(report)}: " + ", ".join(f"{r['Range']} x{r['Instances']}"
                                                      for r in rows))
    return {row["Range"]: int(row["Instances"]) for row in rows}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    opts = parser.parse_args()
    nsys = shutil.which("nsys")
    if nsys is None:
        fail("nsys not on PATH")

    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "gpurelay")
        command = [nsys, "profile", "--trace=nvtx,osrt", "--sample=none", "--cpuctxsw=none",
                   "-o", report, opts.binary,
                   "--device", "cpu", "--steps", str(STEPS), "--warmup", str(WARMUP),
                   "--overlap", "on", "--write", "all", "--elements", "3001",
                   "--c-elements", "4096", "--c-iterations", "4", "--quiet",
                   "--output", os.path.join(tmp, "out.h5")]
        print("+ " + " ".join(command), flush=True)
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=240)
        print(run.stdout[-4000:])
        if run.returncode != 0:
            fail(f"nsys profile exited {run.returncode}")
        if not os.path.isfile(report + ".nsys-rep"):
            fail(f"no report {report}.nsys-rep (was the importer found?)")
        summary = nvtx_summary(nsys, report + ".nsys-rep", os.path.join(tmp, "stats"))

        for phase in PHASES:
            got = summary.get(f"gpurelay:{phase}")
            # --write all: every step, warm-up ones included, has every phase.
            if got != STEPS:
                fail(f"range gpurelay:{phase} has {got} instances, not {STEPS} "
                     "(one per step, named by the phase alone)")
        if summary.get("gpurelay:pass overlap=on") != 1:
            fail("no single 'pass overlap=on' range")
        stray = [name for name in summary if "step" in name]
        if stray:
            fail(f"ranges still named by step: {stray}")
    print("PASS: nsys_ranges")


if __name__ == "__main__":
    main()
