#!/usr/bin/env python3
"""The ceilings measured in the same launch (calibrate = true): run gpurelay on the CPU path,
then check that the JSON summary holds them, that every ratio is exactly what the two
measurements it compares give (the ceiling's time over the phase's; A counts half a copy's bytes),
that the CSV's columns say the same of the main pass, that the HDF5 file's pass groups carry the
same ceilings, ratios, attribution and judgements as the JSON, that the calibration stayed out of
the timed steps, and that calibrate = false measures none.

usage: ceilings_check.py --binary GPURELAY --mpirun "MPIRUN ..." [--np N] -- ARGS...
"""
import argparse
import csv
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from needs import need_modules  # noqa: E402

need_modules("h5py")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def run(args, binary, mpirun, np, out, extra):
    cmd = shlex.split(mpirun) + ["-np", str(np), binary, "--device", "cpu", "--quiet",
                                 "--output", f"{out}/{extra}.h5", "--summary-json",
                                 f"{out}/{extra}.json", "--results-csv", f"{out}/{extra}.csv"]
    cmd += args
    print("+ " + " ".join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        fail(f"exit {done.returncode}: {done.stderr.strip()[-400:]}")
    summary = json.load(open(f"{out}/{extra}.json"))
    rows = list(csv.DictReader(open(f"{out}/{extra}.csv")))
    return summary, rows[-1]


def value(figures, name):
    """A judged figure's value as measured (whatever its verdict), or None where absent."""
    return (figures.get(name) or {}).get("value")


def check_file_carries_json(path, summary):
    """/timings/PASS attributes equal the JSON's figures, each value beside its verdict; the
    placement at the root."""
    import h5py
    c = summary["ceilings_ms"]
    with h5py.File(path, "r") as f:
        for i, p in enumerate(summary["passes"]):
            attrs = f["timings"]["overlap_on" if p["overlap"] else "overlap_off"].attrs
            expected = {"ceiling_transfer_ms": c["transfer"], "ceiling_a_copy_ms": c["a_copy"],
                        "ceiling_b_copy_ms": c["b_copy"], "ceiling_c_ms": c["c"],
                        "ceiling_cost_ms": c["cost"],
                        "step_p90_over_median": p["stability"]["step_p90_over_median"],
                        "step_cv": p["stability"]["step_cv"],
                        "step_max_over_median": p["stability"]["step_max_over_median"],
                        "step_unstable": p["stability"]["unstable"],
                        "clocks_measured": p["clocks"]["measured"],
                        "phase_times_readable": summary["phase_times"]["readable"]}
            figures = dict(p["figures"])
            if i == len(summary["passes"]) - 1:
                figures.update(summary.get("figures", {}))
            for name, judged in figures.items():
                expected[name] = judged["value"]
                if judged["verdict"] == "withheld":
                    expected[name + "_withheld"] = judged["reason"]
                if "ci95" in judged:
                    expected[name + "_ci95_lo"], expected[name + "_ci95_hi"] = judged["ci95"]
            for name, want in expected.items():
                if name not in attrs:
                    fail(f"/timings pass overlap={p['overlap']} has no attribute {name}")
                got = attrs[name]
                same = (bool(got) == want if isinstance(want, bool)
                        else str(got) == want if isinstance(want, str)
                        else math.isclose(float(got), want, rel_tol=1e-12))
                if not same:
                    fail(f"HDF5 {name} = {got!r}, the JSON's {want!r}")
        ranks = summary["ranks"]
        if str(f.attrs["rank_cores"]).split(";") != [r["cores"] for r in ranks]:
            fail(f"rank_cores {f.attrs['rank_cores']!r} differs from the JSON's ranks")
        if str(f.attrs["rank_core_numa"]).split(";") != [r["core_numa"] for r in ranks]:
            fail("rank_core_numa differs from the JSON's ranks")


def check_on(summary, row):
    c = summary.get("ceilings_ms")
    if not c:
        fail("calibrate = true but the summary has no ceilings_ms")
    for key in ("transfer", "a_copy", "b_copy", "c", "cost"):
        if not (c[key] is not None and c[key] > 0):
            fail(f"ceiling {key} = {c[key]!r}, not a positive time")
    for p in summary["passes"]:
        ph, figures = p["phases_ms"], p["figures"]
        expected = {"transfer_vs_ceiling": c["transfer"] / value(figures, "transfer_ms"),
                    "a_vs_copy": c["a_copy"] / (2 * ph["a"]["median"]),
                    "b_vs_copy": c["b_copy"] / ph["b"]["median"],
                    "c_vs_alone": c["c"] / ph["c"]["median"]}
        for key, want in expected.items():
            if not close(value(figures, key), want):
                fail(f"pass overlap={p['overlap']}: {key} {value(figures, key)} != {want}")
            # Rendered in the field of its name exactly where shown.
            shown = figures[key]["verdict"] == "shown"
            if (p[key] is not None) != shown or (shown and not close(p[key], want)):
                fail(f"pass overlap={p['overlap']}: {key} rendered {p[key]}, verdict {shown}")
        if p["timing"]["phase_timed_steps"] > p.get("timed_steps", 10**9):
            fail("more phase-timed steps than timed steps")
    main = summary["passes"][-1]
    config = summary["config"]
    # The CSV renders the main pass's verdicts: a value where shown, empty where withheld.
    for column in ("transfer_vs_ceiling", "a_vs_copy", "b_vs_copy", "c_vs_alone"):
        want = main[column]
        if (row[column] == "") != (want is None) or (
                want is not None and not math.isclose(float(row[column]), want, rel_tol=1e-5)):
            fail(f"CSV {column} {row[column]!r} != the JSON's rendered {want}")
    if not math.isclose(float(row["ceiling_transfer_ms"]), c["transfer"], rel_tol=1e-5):
        fail("CSV ceiling_transfer_ms differs from the JSON's")
    # The overlapped step, attributed: the parts add up to it, each as its formula says.
    run = summary["figures"]
    a = {key: value(run, f"overlap_attribution_{key}_ms")
         for key in ("step", "perfect_overlap", "c_slowdown", "transfer_slowdown", "rest")}
    off, on = summary["passes"][0], summary["passes"][-1]
    if not close(a["step"], on["time_per_step_ms"]):
        fail("the attributed step is not the overlap=on pass's time per step")
    if not close(a["perfect_overlap"] + a["c_slowdown"] + a["transfer_slowdown"] + a["rest"],
                 a["step"]):
        fail(f"the attribution's parts do not add up to the step: {a}")
    if not close(a["c_slowdown"], on["phases_ms"]["c"]["median"] - c["c"]):
        fail("C's slowdown is not C's median with overlap less C alone")
    if not close(a["transfer_slowdown"], value(on["figures"], "transfer_ms") - c["transfer"]):
        fail("the transfer's slowdown is not its median with overlap less the bare transfer")
    ph = off["phases_ms"]
    depth = config["depth"]
    perfect = max(ph["a"]["median"] + c["transfer"],
                  (max(c["transfer"], c["c"]) if depth == 1 else c["c"]) + ph["b"]["median"])
    if not close(a["perfect_overlap"], perfect):
        fail(f"perfect overlap {a['perfect_overlap']} != {perfect} from the ceilings")
    # The calibration is not in the timed steps: their count is the deck's.
    timed = config["steps"] - config["warmup"]
    if main["timing"]["phase_timed_steps"] > timed:
        fail("the calibration was counted among the timed steps")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    a = parser.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    with tempfile.TemporaryDirectory() as out:
        summary, row = run(args + ["--timing", "phases"], a.binary, a.mpirun, a.np, out, "on")
        check_on(summary, row)
        check_file_carries_json(f"{out}/on.h5", summary)
        summary, row = run(args + ["--calibrate", "false"], a.binary, a.mpirun, a.np, out, "off")
        if ("ceilings_ms" in summary or "overlap_attribution_ms" in summary
                or any("transfer_vs_ceiling" in p["figures"] for p in summary["passes"])):
            fail("calibrate = false but the summary has ceilings")
        if row["transfer_vs_ceiling"] != "" or row["ceiling_transfer_ms"] != "":
            fail("calibrate = false but the CSV has ceiling cells")
    print("ok: ceilings and their ratios")


if __name__ == "__main__":
    main()
