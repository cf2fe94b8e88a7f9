#!/usr/bin/env python3
"""How gpurelay's costs grow with the rank count, on the CPU path.

usage: lab/scale.py [--ranks 2,8,16,32,64] [--patterns NAME,...] [--steps SHORT LONG]
                    [--binary B] [--library LIB] [--mpirun "mpirun ..."] [--keep DIR | --from DIR]

For each pattern (pairs adjacent, pairs split, a relay of 4 stages, an all-reduce in groups of 4)
and rank count, two verified launches (exit 0, the JSON's verdict) with the collective-call count
preloaded (lab/mpi_counts): SHORT steps and LONG steps, each flushing the file 4 times and
writing every 100th step. It prints one Markdown table: each figure at each rank count, and its
growth from 8 ranks up: constant when it spreads by less than half its mean, else the fit
a + b f(n) (f: log2 n, n or n², b > 0, the best by least squares) with its R², "unclear" under
0.8. Every time is the slowest rank's:

  MPI_Init    seconds inside MPI_Init_thread
  set-up      MPI_Init's return to the first stop vote (set-up, the pass's opening barrier and its
              cold first step)
  step        the LONG run's time per step (its JSON)
  create, flush, close   the file's MPI_File_open, MPI_File_sync (each, on average) and
              MPI_File_close, as HDF5 calls them
  gathered    the bytes rank 0 received in gathers in the SHORT run (its step times grow it)
  world/step  collectives over the world per rank per step: what the LONG run adds over the
              SHORT one, over the steps it adds (the stop vote, every cadence)
  report      the lines rank 0 prints (progress lines left out)

On an oversubscribed machine the times are the scheduler's; the counts and bytes are not.
Build first: scripts/build (the binary and build/lab/mpi_counts/libgpurelay_mpi_counts.so).
"""
import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "lab", "mpi_counts"))
import mpi_counts  # noqa: E402

TINY = ["--device", "cpu", "--elements", "1024", "--c-elements", "0", "--overlap", "on",
        "--write", "every:100", "--warmup", "2"]
PATTERNS = {
    "pairs adjacent": lambda n: ["--pairing", "adjacent"],
    "pairs split": lambda n: ["--pairing", "split"],
    "relay of 4": lambda n: ["--pattern", "relay", "--group-size", str(min(4, n))],
    "all-reduce of 4": lambda n: ["--pattern", "allreduce", "--group-size", str(min(4, n))],
}


def slowest(counts, field, name=None):
    return max(c[field] if name is None else c[field].get(name, 0.0) for c in counts)


# The table's columns, in order: (heading, unit, figure from one case's two runs).
COLUMNS = [
    ("MPI_Init", "s", lambda r: slowest(r["short"], "init_seconds")),
    ("set-up", "s", lambda r: slowest(r["short"], "first_seconds", "MPI_Iallreduce")),
    ("step", "ms", lambda r: r["long_json"]["passes"][-1]["time_per_step_ms"]),
    ("create", "ms", lambda r: 1e3 * slowest(r["short"], "seconds", "MPI_File_open")),
    ("flush", "ms", lambda r: 1e3 * max(c["seconds"].get("MPI_File_sync", 0.0) /
                                        max(1, c["world"].get("MPI_File_sync", 0))
                                        for c in r["short"])),
    ("close", "ms", lambda r: 1e3 * slowest(r["short"], "seconds", "MPI_File_close")),
    ("gathered", "KiB", lambda r: r["short"][0]["gathered_bytes"] / 1024),
    ("world/step", "", lambda r: max(
        (longer["world_calls"] - shorter["world_calls"])
        for longer, shorter in zip(r["long"], r["short"])) / (r["steps"][1] - r["steps"][0])),
    ("report", "lines", lambda r: r["report_lines"]),
]


# The laws a figure may grow by with the rank count n, simplest first.
LAWS = {"log": lambda n: math.log2(n), "linear": lambda n: n, "quadratic": lambda n: n * n}


def fit(points, law):
    """Least squares value = a + b law(n): (a, b, correlation²); growth() passes varying values."""
    xs, ys = [LAWS[law](n) for n, _ in points], [v for _, v in points]
    b, a = statistics.linear_regression(xs, ys)
    return a, b, statistics.correlation(xs, ys) ** 2


def growth(values):
    """How {ranks: value} grows from 8 ranks up, as the module says ("unclear": noise)."""
    points = [(n, v) for n, v in values.items() if n >= 8] or list(values.items())
    ys = [v for _, v in points]
    if len(points) < 2 or max(ys) - min(ys) <= 0.5 * abs(sum(ys) / len(ys)):
        return "constant"
    fits = {law: fit(points, law) for law in LAWS}
    law = max((name for name in fits if fits[name][1] > 0), key=lambda name: fits[name][2],
              default=None)
    if law is None or fits[law][2] < 0.8:
        return "unclear" + (f" (R² {fits[law][2]:.2f} {law})" if law else "")
    a, b, r2 = fits[law]
    term = {"log": "log2 n", "linear": "n", "quadratic": "n²"}[law]
    return f"{law}: {a:.3g} {'+' if b >= 0 else '-'} {abs(b):.3g} {term} (R² {r2:.2f})"


def launch(opts, n, args, folder, quiet):
    """One counted launch into `folder` (counts, stdout.txt, summary.json); exits if it failed."""
    os.makedirs(folder)
    summary = os.path.join(folder, "summary.json")
    command = (shlex.split(opts.mpirun) + ["-np", str(n)] +
               mpi_counts.mpirun_flags(opts.library, folder) +
               [opts.binary] + args + ["--output", os.path.join(folder, "out.h5"),
                                       "--summary-json", summary] + (["--quiet"] if quiet else []))
    print("+ " + " ".join(shlex.quote(c) for c in command), file=sys.stderr, flush=True)
    run = subprocess.run(command, capture_output=True, text=True, timeout=opts.timeout)
    if run.returncode != 0 or not json.load(open(summary))["verified"]:
        sys.exit(f"scale: the run failed (exit {run.returncode}):\n{run.stderr[-3000:]}")
    os.remove(os.path.join(folder, "out.h5"))
    with open(os.path.join(folder, "stdout.txt"), "w") as f:
        f.write(run.stdout)


def measure(opts, pattern, n, tmp):
    """One case's two launches (or, with --from, what they left): counts, JSON, report length."""
    case = {"steps": opts.steps}
    for name, steps, quiet in zip(("short", "long"), opts.steps, (False, True)):
        folder = os.path.join(tmp, f"{pattern.replace(' ', '_')}_np{n}_{name}")
        if not opts.reread:
            args = TINY + PATTERNS[pattern](n) + ["--steps", str(steps),
                                                  "--flush-every", str(steps // 4)]
            launch(opts, n, args, folder, quiet)
        case[name] = mpi_counts.read(folder, n)
        case[name + "_json"] = json.load(open(os.path.join(folder, "summary.json")))
        if name == "short":
            with open(os.path.join(folder, "stdout.txt")) as f:
                case["report_lines"] = sum(1 for line in f if not line.startswith("progress:"))
    return case


def table(results, ranks):
    head = "| pattern | figure | " + " | ".join(f"{n} ranks" for n in ranks) + " | growth |"
    lines = [head, "|" + " --- |" * (len(ranks) + 3)]
    for pattern, by_ranks in results.items():
        for heading, unit, figure in COLUMNS:
            values = {n: figure(by_ranks[n]) for n in ranks}
            cells = [f"{values[n]:.4g}" for n in ranks]
            name = f"{heading} ({unit})" if unit else heading
            lines.append(f"| {pattern} | {name} | " + " | ".join(cells) + " | " +
                         growth(values) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="2,8,16,32,64")
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--steps", type=int, nargs=2, default=[200, 1200],
                        metavar=("SHORT", "LONG"))
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "app", "gpurelay"))
    parser.add_argument("--library", default=os.path.join(
        ROOT, "build", "lab", "mpi_counts", "libgpurelay_mpi_counts.so"))
    parser.add_argument("--mpirun", default="mpirun --oversubscribe" +
                        (" --allow-run-as-root" if os.geteuid() == 0 else ""))
    parser.add_argument("--timeout", type=float, default=600, help="each launch's bound (s)")
    parser.add_argument("--keep", help="keep every launch's counts, JSON and stdout in this "
                        "new folder")
    parser.add_argument("--from", dest="reread", metavar="DIR",
                        help="launch nothing: the table from what --keep DIR kept")
    opts = parser.parse_args()
    ranks = [int(n) for n in opts.ranks.split(",")]
    patterns = opts.patterns.split(",")
    for what, path in (("binary", opts.binary), ("library", opts.library)):
        if not opts.reread and not os.path.exists(path):
            parser.error(f"no {what} {path} (scripts/build first)")
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown or opts.steps[0] >= opts.steps[1]:
        parser.error(f"patterns are {', '.join(PATTERNS)}; SHORT < LONG")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = opts.reread or opts.keep or scratch
        results = {p: {n: measure(opts, p, n, tmp) for n in ranks} for p in patterns}
    print(table(results, ranks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
