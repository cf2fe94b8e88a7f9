"""Runs gpurelay under mpirun with the report on and checks its distributions and its pairs: each
phase's median (and its 95% interval), min, max, p50, p90, p99 and cv in the JSON summary against
numpy over the same /timings read back from the file (the step's over the consumers; the
quantiles, read from the pass's histograms, within their relative error; min, max and cv exact),
and against the file's /histograms read as OUTPUT.md reads them (exact), the time per step as the
step's median with its interval, the periods' sum against the pass's time, the slow steps against
the periods there, the CSV row against the JSON; one report line per pair (with more than one),
the pairs slowed with debug_delay_us flagged SLOW (in the report and the JSON) and no other.

usage: distribution_case.py --binary B --mpirun "mpirun ..." --np N [--slow-pair P ...]
                            -- GPURELAY_ARGS...
"""
import argparse
import csv
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

SLOW_STEP_FACTOR = 3.0  # report/reduce.hpp's kSlowStepFactor
SLOW_STEPS_KEPT = 8


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def close(got, want, what, rel_tol=1e-9):
    if got is None or not math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-12):
        fail(f"{what}: {got} in the JSON, numpy says {want}")


def interval_rank(n):
    """The rank k (from 1) of the order statistics that bound the median's 95% interval: the
    largest k with P(Binomial(n, 1/2) <= k - 1) <= 0.025 (report/summary.cpp's); 0 for none."""
    cdf, k = 0.0, 0
    for i in range(n // 2):
        cdf += math.comb(n, i) / 2.0 ** n
        if cdf > 0.025 * (1 + 1e-12):
            break
        k = i + 1
    return k


def histogram_at_rank(f, name, phase):
    """A pass's phase from /histograms, as OUTPUT.md reads it: its count, and its k-th least
    time (from 0), the least and the largest exact."""
    h = f["histograms"]
    row = h.attrs["phases"].split(",").index(phase)
    counts = h[name]["counts"][row].astype(np.int64)
    least, most = h[name]["sums"][row][2:4]
    i = np.arange(len(counts))
    value = 2 * h.attrs["lowest_ms"] * h.attrs["gamma"] ** i / (h.attrs["gamma"] + 1)
    value[0], value[-1] = 0.0, 1e7
    cum = np.cumsum(counts)
    n = int(cum[-1])

    def at_rank(k):
        if k == 0 or k == n - 1:
            return least if k == 0 else most
        return np.clip(value[np.searchsorted(cum, k, side="right")], least, most)
    return n, at_rank


def histogram_quantile(f, name, phase, q):
    """A quantile of a pass's phase from /histograms, as OUTPUT.md reads it."""
    n, at_rank = histogram_at_rank(f, name, phase)
    at = (n - 1) * q
    below = int(np.floor(at))
    return at_rank(below) + (at - below) * (at_rank(min(below + 1, n - 1)) - at_rank(below))


def check_median_interval(f, name, phase, stats, ordered):
    """The median's 95% interval: the order statistics at interval_rank's ranks, read from the
    histogram (exactly what /histograms gives, within its relative error of the samples')."""
    got = stats["median_ci95"]
    k = interval_rank(ordered.size)
    if not k:
        if got != [None, None]:
            fail(f"{name}/{phase}: median_ci95 {got} from {ordered.size} samples")
        return
    n, at_rank = histogram_at_rank(f, name, phase)
    tolerance = f["histograms"].attrs["relative_error"]
    for end, exact, read in ((0, ordered[k - 1], at_rank(k - 1)),
                             (1, ordered[ordered.size - k], at_rank(n - k))):
        close(got[end], float(exact), f"{name}/{phase} median_ci95[{end}]", tolerance)
        close(got[end], float(read), f"{name}/{phase} median_ci95[{end}] from /histograms")


def check_distributions(f, summary):
    """Every pass's phases against numpy over the file's timed steps of every rank (the step's
    period over the ranks whose period is their pair's step: the consumers)."""
    consumers = [r for r, rank in enumerate(summary["ranks"]) if rank["role"] != "producer"]
    for p in summary["passes"]:
        name = "overlap_on" if p["overlap"] else "overlap_off"
        start, end = p["timed_from"], p["timed_from"] + p["timed_steps"]
        for phase, stats in p["phases_ms"].items():
            t = f["timings"][name][phase][:, start:end]
            if phase == "step":
                t = t[consumers]
            samples = t[~np.isnan(t)]
            if samples.size == 0:
                if stats["p99"] is not None:
                    fail(f"{name}/{phase}: a p99 {stats['p99']} without samples")
                continue
            want = {"median": np.median(samples), "min": samples.min(), "max": samples.max(),
                    "p50": np.percentile(samples, 50), "p90": np.percentile(samples, 90),
                    "p99": np.percentile(samples, 99), "cv": samples.std() / samples.mean()}
            quantiles = {"median": 0.5, "p50": 0.5, "p90": 0.9, "p99": 0.99}
            for key, value in want.items():
                # Every step is kept here: the histogram's quantiles lie within its relative
                # error of the exact ones, and are exactly what the file's /histograms give.
                tolerance = f["histograms"].attrs["relative_error"] if key in quantiles else 1e-9
                close(stats.get(key), float(value), f"{name}/{phase} {key}", tolerance)
                if key in quantiles:
                    close(stats.get(key), float(histogram_quantile(f, name, phase, quantiles[key])),
                          f"{name}/{phase} {key} from /histograms")
            check_median_interval(f, name, phase, stats, np.sort(samples))
        # The time per step is the step's median period, with that interval.
        step = p["figures"]["time_per_step_ms"]
        close(step["value"], p["phases_ms"]["step"]["median"], f"{name} time_per_step_ms")
        if step.get("ci95") != p["phases_ms"]["step"]["median_ci95"]:
            fail(f"{name}: time_per_step_ms's ci95 {step.get('ci95')} is not the step's median's")
        period = f["timings"][name]["step"][:, start:end]
        # The periods run from where the clock started to where it stopped: no rank's sum
        # exceeds the pass's time (the first timed step is read from the clock's start, not
        # from the warm-up's last step, before the ceilings and the barrier).
        wall = p["mean_step_ms"] * p["timed_steps"]
        for rank, periods in enumerate(period):
            if np.nansum(periods) > 1.05 * wall + 0.5:
                fail(f"{name}: rank {rank}'s step periods add up to {np.nansum(periods):.3f} ms, "
                     f"over the pass's {wall:.3f} ms (first {periods[0]:.3f} ms)")
        # Slow against the JSON's median (the consumers' periods): counted on each rank (the
        # JSON has the most any rank counted, give or take the steps in the bucket of the bound),
        # named among each rank's 64 slowest steps (all of them here).
        bound = SLOW_STEP_FACTOR * p["phases_ms"]["step"]["median"]
        counts = [int(np.sum(row > bound)) for row in period]
        near = int(np.sum(np.abs(period[~np.isnan(period)] - bound) <= 0.005 * bound))
        slow = [start + s for s in range(period.shape[1]) if (period[:, s] > bound).any()]
        got = p["slow_steps"]
        if abs(got["count"] - max(max(counts), len(slow[:SLOW_STEPS_KEPT]))) > near or \
                (period.shape[1] <= 64 and not near and got["first"] != slow[:SLOW_STEPS_KEPT]):
            fail(f"{name}: slow steps {got}, the file says {max(counts)} on the rank with most: "
                 f"{slow[:SLOW_STEPS_KEPT]}")
        # The file's pass group carries the same figures.
        attrs = f["timings"][name].attrs
        for phase, stats in p["phases_ms"].items():
            for key, attr in (("p50", "_p50_ms"), ("p90", "_p90_ms"), ("p99", "_p99_ms"),
                              ("cv", "_cv")):
                in_file, in_json = float(attrs[phase + attr]), stats[key]
                if in_json is None and math.isnan(in_file):
                    continue
                if in_json is None or not math.isclose(in_file, in_json, rel_tol=1e-12):
                    fail(f"/timings/{name} {phase}{attr}: {in_file} in the file, {in_json} in the "
                         "JSON")
        if int(attrs["slow_steps"]) != got["count"]:
            fail(f"/timings/{name} slow_steps {attrs['slow_steps']} != the JSON's {got['count']}")
        numbers = attrs["slow_step_numbers"]
        numbers = numbers.decode() if isinstance(numbers, bytes) else str(numbers)
        if numbers != ",".join(str(n) for n in got["first"]):
            fail(f"/timings/{name} slow_step_numbers {numbers!r} != the JSON's {got['first']}")
        pairs = attrs["pairs"]
        pairs = pairs.decode() if isinstance(pairs, bytes) else str(pairs)
        slow_in_file = pairs.count(", slow")
        if slow_in_file != sum(1 for q in p["pairs"] if q["slow"]):
            fail(f"/timings/{name} pairs {pairs!r} flags {slow_in_file} slow pair(s), the JSON "
                 f"{sum(1 for q in p['pairs'] if q['slow'])}")
    print(f"distributions of {len(summary['passes'])} pass(es) agree with numpy and the file")


def check_csv(path, summary):
    rows = list(csv.DictReader(open(path)))
    if len(rows) != 1:
        fail(f"{len(rows)} CSV rows, expected 1")
    main = summary["passes"][-1]
    readable = summary["phase_times"]["readable"]
    for phase, stats in main["phases_ms"].items():
        for key, column in (("p50", "_ms_p50"), ("p90", "_ms_p90"), ("p99", "_ms_p99"),
                            ("cv", "_cv")):
            cell, want = rows[0][phase + column], stats[key]
            # The CSV renders the judgement: no phase's figure where they cannot be read.
            if want is None or (not readable and phase != "step"):
                if cell != "":
                    fail(f"CSV {phase}{column} = {cell!r} where the JSON has null")
            elif not math.isclose(float(cell), want, rel_tol=1e-5, abs_tol=1e-9):
                fail(f"CSV {phase}{column} = {cell}, the JSON {want}")
    slow_pairs = sum(1 for pair in main.get("pairs", []) if pair["slow"])
    if int(rows[0]["slow_steps"]) != main["slow_steps"]["count"] or \
            int(rows[0]["slow_pairs"]) != slow_pairs:
        fail(f"CSV slow_steps/slow_pairs {rows[0]['slow_steps']}/{rows[0]['slow_pairs']}")


def check_pairs(stdout, summary, slow_pairs):
    """One report line per pair per pass, naming both ranks' places and the link; SLOW exactly
    on the slowed pairs, there and in the JSON."""
    for i, p in enumerate(summary["passes"]):
        flagged = sorted(pair["pair"] for pair in p["pairs"] if pair["slow"])
        if flagged != sorted(slow_pairs):
            fail(f"pass {i}: the JSON flags pairs {flagged}, expected {sorted(slow_pairs)}: "
                 f"{p['pairs']}")
    lines = [line for line in stdout.splitlines() if re.match(r"  pair \d+: rank \d+ \(", line)]
    pairs = len(summary["passes"][0]["pairs"])
    # One pair has no line of its own: the pass's figures are its.
    expected = pairs * len(summary["passes"]) if pairs > 1 else 0
    if len(lines) != expected:
        fail(f"{len(lines)} pair lines in the report, expected {expected}")
    for line in lines:
        pair = int(re.match(r"  pair (\d+):", line).group(1))
        host = summary["ranks"][summary["passes"][0]["pairs"][pair]["producer"]]["host"]
        shown = summary["passes"][-1]["pairs"][pair]["transfer_gbps"] is not None
        if host not in line or (" GB/s, step " in line) != shown or " over " not in line:
            fail(f"pair line without host, link or step, or with a GB/s the JSON "
                 f"{'shows' if shown else 'withholds'}: {line!r}")
        if ("SLOW" in line) != (pair in slow_pairs):
            fail(f"pair {pair} {'flagged' if 'SLOW' in line else 'not flagged'}: {line!r}")
    table = any(re.match(r"  phase +median +min +max +p90 +p99 +cv$", line)
                for line in stdout.splitlines())
    if table != summary["phase_times"]["readable"]:
        fail("a phase table where the phase times cannot be read, or none where they can")
    if not summary["phase_times"]["readable"] and "GB/s" in stdout:
        fail("a GB/s where the phase times cannot be read")
    if "slow steps (a period over 3x the median): " not in stdout:
        fail("no slow steps line in the report")
    print(f"{len(lines)} pair lines; flagged: {sorted(slow_pairs)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--slow-pair", type=int, action="append", default=[],
                        help="a pair the run slows (debug_delay_rank its consumer), to be flagged")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    args = [a for a in opts.args if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        output, summary_path = os.path.join(tmp, "out.h5"), os.path.join(tmp, "summary.json")
        csv_path = os.path.join(tmp, "results.csv")
        command = shlex.split(opts.mpirun) + ["-n", str(opts.np), opts.binary] + args + [
            "--output", output, "--summary-json", summary_path, "--results-csv", csv_path]
        print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
        run = subprocess.run(command, capture_output=True, text=True, timeout=150)
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        if run.returncode != 0:
            fail(f"exit code {run.returncode}")
        summary = json.load(open(summary_path))
        with h5py.File(output, "r") as f:
            check_distributions(f, summary)
        check_csv(csv_path, summary)
        check_pairs(run.stdout, summary, opts.slow_pair)
    print("ok")


if __name__ == "__main__":
    main()
