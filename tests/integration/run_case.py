"""Runs gpurelay under mpirun and checks what it did: exit code, messages, and the HDF5 file read
back element by element against the formula.

usage: run_case.py --binary B --mpirun "mpirun ..." --np N [--expect-exit C] [--expect-message TEXT]
                   [--timeout S] [--existing-output] -- GPURELAY_ARGS...
"""
import argparse
import collections
import csv
import json
import math
import os
import re
import shlex
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from formula import a_values, consumer_rows, relay_stage, y_rows  # noqa: E402


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def phase_timed_steps(used, steps, warmup, auto):
    """Which steps record phase events under the timing a pass used: every step for phases, every
    K-th timed step from the first for sampled:K, none for steps; auto times every warm-up step
    (it decides at the first timed one)."""
    if used == "phases":
        timed = [True] * steps
    elif used == "steps":
        timed = [False] * steps
    else:
        k = int(used.split(":")[1])
        timed = [s >= warmup and (s - warmup) % k == 0 for s in range(steps)]
    if auto:
        timed = [True if s < warmup else t for s, t in enumerate(timed)]
    return timed


# The most eager steps that share one end event (pipeline.hpp's kRetireGroupSteps).
RETIRE_GROUP_STEPS = 4


def retire_groups(steps, timed_from, own):
    """The retire groups of an eager pass from step 0, as step_timer.cpp forms them: a step that
    times its phases or is written (own[s]) has its own end event; the others share one with
    the steps of their group, which ends when it is full (the next step a multiple of
    RETIRE_GROUP_STEPS), before a step with its own, before the timed region and at the end. The
    cold step 0 ends its own."""
    groups, current = [], []
    for s in range(steps):
        current.append(s)
        after = s + 1
        if (s == 0 or own[s] or after >= steps or after == timed_from
                or after % RETIRE_GROUP_STEPS == 0 or own[after]):
            groups.append(current)
            current = []
    return groups


def check_timings(f, summary, np_ranks, expect_timing, written):
    """The HDF5 timings hold phase times exactly on the steps the pass's timing says (NaN on the
    others), a period on every step but the first, equal on the steps of each retire group, and
    the JSON counts them right."""
    steps = int(f.attrs["steps"])
    warmup = int(summary["config"]["warmup"])
    if summary["config"].get("graphs"):
        fail("check_timings knows the timing of eager steps only")
    for i, p in enumerate(summary["passes"]):
        name = "overlap_on" if p["overlap"] else "overlap_off"
        # Only a run's last pass writes /y (app/run.cpp).
        written_here = written if i + 1 == len(summary["passes"]) else set()
        timing = p["timing"]
        used, auto = timing["used"], timing["auto"]
        if expect_timing == "phases-by-auto":
            if not auto or used != "phases" or not timing["judged_from_ms"] >= 0.25:
                fail(f"{name}: timing {timing}, expected auto to choose phases")
        elif expect_timing == "auto":
            judged = timing["judged_from_ms"]
            if not auto or used not in ("phases", "sampled:16"):
                fail(f"{name}: timing {timing}, expected auto's phases or sampled:16")
            if judged is not None and (used == "sampled:16") != (judged < 0.25):
                fail(f"{name}: auto chose {used} from warm-up steps of {judged} ms")
        elif used != expect_timing or auto:
            fail(f"{name}: timing {timing}, expected {expect_timing}")
        expected = phase_timed_steps(used, steps, warmup, auto)
        g = f["timings"][name]
        # Every step has an A (producers) and a B (consumers) time exactly when it was phase-timed.
        for phase in ("a", "b"):
            has = ~np.isnan(g[phase][...]).all(axis=0)
            wrong = [s for s in range(steps) if has[s] != expected[s]]
            if wrong:
                fail(f"timings/{name}/{phase}: phase times on the wrong steps {wrong[:10]}")
        # An ipc receive only waits for the producer's copy: it is never phase-timed, and the
        # transfer is the send's (which is timed from after its wait for the slot's release).
        if summary["transport"].startswith("ipc") and not np.isnan(g["recv"][...]).all():
            fail(f"timings/{name}/recv: an ipc receive was phase-timed")
        period = g["step"][...]
        if np.isnan(period[:, 1:]).any() or not np.isnan(period[:, 0]).all():
            fail(f"timings/{name}/step: a period missing, or one for step 0")
        count = sum(expected[warmup:])
        if timing["phase_timed_steps"] != count:
            fail(f"{name}: phase_timed_steps {timing['phase_timed_steps']}, expected {count}")
        if summary["config"].get("launch") == "device":
            # The roles stamp every step: no step shares an end with another.
            if timing.get("grouped_steps") != 0 or timing.get("retire_group_steps") != 1:
                fail(f"{name}: a device-driven pass grouped steps: {timing}")
            continue
        # Steps that share an end event share its period: the group's over its steps.
        # Only a consumer's written steps end its groups; the summary counts the rank that groups
        # the fewest steps.
        grouped = None
        for rank in range(np_ranks):
            writes = written_here if summary["ranks"][rank]["role"] != "producer" else set()
            own = [expected[s] or s in writes for s in range(steps)] + [False]
            count = 0
            for group in retire_groups(steps, warmup, own):
                if len(group) == 1:
                    continue
                count += sum(1 for s in group if s >= warmup)
                shares = period[rank, group]
                if not (shares == shares[0]).all():
                    fail(f"timings/{name}/step: rank {rank}'s retire group {group} has periods "
                         f"{list(shares)}, not one share each")
            grouped = count if grouped is None else min(grouped, count)
        if timing.get("grouped_steps") != grouped or timing.get("retire_group_steps") != 4:
            fail(f"{name}: grouped_steps {timing.get('grouped_steps')} and retire_group_steps "
                 f"{timing.get('retire_group_steps')}, expected {grouped} and 4")
        if used == "steps" and p["step_bound_ms"] is not None:
            fail(f"{name}: a step bound {p['step_bound_ms']} without phase times")


def check_file(path, expect_rows_for, np_ranks, summary, expect_timing):
    with h5py.File(path, "r") as f:
        attrs = f.attrs
        if int(attrs["complete"]) != 1:
            fail("complete attribute is not 1")
        if int(attrs["verified"]) != 1:
            fail("verified attribute is not 1")
        # One type whatever the number of sizes: a 1-D int64 array (here of one size).
        if attrs["elements"].shape != (1,) or attrs["elements"].dtype != np.int64:
            fail(f"root elements {attrs['elements']!r} is not a 1-D int64 array of one size")
        elements = int(attrs["elements"][0])
        seed = int(attrs["seed"])
        alpha = float(attrs["alpha"])
        steps = int(attrs["steps"])
        dtype = np.float32 if attrs["dtype"] == "float32" else np.float64
        pattern = str(attrs.get("pattern", "pairs"))
        group_size = int(attrs.get("group_size", 0)) or np_ranks
        pairs = consumer_rows(pattern, group_size, np_ranks)
        if int(attrs["pair_count"]) != pairs:
            fail(f"pair_count {attrs['pair_count']} != {pairs}")
        rows = expect_rows_for(steps, attrs["write"])
        if rows:
            step_index = f["step"][...]
            if list(step_index) != rows:
                fail(f"/step {list(step_index)} != expected {rows}")
            y = f["y"]
            if y.shape != (pairs, len(rows), elements) or y.dtype != dtype:
                fail(f"/y shape {y.shape} {y.dtype}, expected {(pairs, len(rows), elements)} {dtype}")
            for r, step in enumerate(rows):
                expected = y_rows(pattern, step, pairs, elements, seed, alpha, group_size, dtype)
                if pattern == "relay":
                    check_relay_closed_form(expected, step, elements, seed, alpha, group_size,
                                            dtype)
                for pair in range(pairs):
                    wrong = np.count_nonzero(y[pair, r, :] != expected[pair])
                    if wrong:
                        fail(f"/y pair {pair} row {r} (step {step}): {wrong} of {elements} wrong")
        elif "y" in f:
            fail("/y exists though write = none")
        for name in f["verification"]:
            for what in ("x_mismatches", "c_mismatches"):
                counts = f["verification"][name][what][...]
                if counts.shape != (pairs, steps) or counts.any():
                    fail(f"verification/{name}/{what}: shape {counts.shape}, sum {counts.sum()}")
            for phase in ("a", "send", "recv", "c", "wait", "b", "step"):
                if f["timings"][name][phase].attrs.get("units") != "ms":
                    fail(f"timings/{name}/{phase} has no units = 'ms' attribute")
                t = f["timings"][name][phase][...]
                if t.shape != (np_ranks, steps):
                    fail(f"timings/{name}/{phase} shape {t.shape}")
            # step_record = "auto" keeps every step of a short run, each in its own column.
            index = f["timings"][name]["step_index"][...]
            if index.shape != (np_ranks, steps) or (index != np.arange(steps)).any():
                fail(f"timings/{name}/step_index {index[:, :10]} is not every step in order")
        check_timings(f, summary, np_ranks, expect_timing, set(rows))
        check_self_description(f, summary)
        if pattern == "relay":
            check_relay(f, summary, np_ranks, group_size)
        for key in ("gpurelay_version", "mpi_version", "hdf5_version", "config_toml", "rank_hosts"):
            if key not in attrs:
                fail(f"attribute {key} missing")


def check_relay_closed_form(expected, step, elements, seed, alpha, group_size, dtype):
    """With alpha a power of two every product of a relay is exact: stage k's y is
    alpha^k times A's output, as OUTPUT.md says, and the last stage's alpha^(n-1) times it."""
    if math.frexp(alpha)[0] != 0.5:
        return
    a = a_values(step, elements, seed, np.float64)
    for row, values in enumerate(expected):
        closed = (a * alpha ** relay_stage(row, group_size)).astype(dtype)
        if (values != closed).any():
            fail(f"relay row {row}: the stages' products differ from alpha^k times A's output")


def check_relay(f, summary, np_ranks, group_size):
    """Each pass of a relay reports a line per hop (its pairs), a stage per rank with its own
    counts, the period against the slowest hop and the fill latency; the file's pass attribute
    `relay` carries the JSON's figures."""
    for p in summary["passes"]:
        relay = p.get("relay")
        if relay is None:
            fail("a relay's pass has no relay figures in the JSON")
        hops = p["pairs"]
        if len(hops) != np_ranks - np_ranks // group_size:
            fail(f"{len(hops)} hops in the JSON, expected one per link")
        ceilings = summary.get("ceilings_ms")
        if ceilings is not None and len(ceilings.get("hops", [])) != len(hops):
            fail(f"hop ceilings {ceilings.get('hops')}, expected one per hop")
        stages = relay["stage_figures"]
        if relay["stages"] != group_size or [s["rank"] for s in stages] != list(range(np_ranks)):
            fail(f"relay stages {relay['stages']}, stage ranks {[s['rank'] for s in stages]}")
        if [s["stage"] for s in stages] != [r % group_size for r in range(np_ranks)]:
            fail("the stages are not numbered by group rank")
        if any(s["x_mismatches"] or s["c_mismatches"] for s in stages):
            fail("a stage counted wrong elements in a passing run")
        timed = [i for i in range(len(hops)) if hops[i]["transfer_ms"] is not None]
        # The slowest of the timed hops (none with timing = steps).
        slowest = max(timed, key=lambda i: hops[i]["transfer_ms"]) if timed else -1
        if relay["slowest_hop"] != slowest:
            fail(f"slowest hop {relay['slowest_hop']}, the hops say {slowest}")
        if not summary["config"]["graphs"] and not relay["fill_ms"] > 0:
            fail(f"fill latency {relay['fill_ms']} not measured")
        name = "overlap_on" if p["overlap"] else "overlap_off"
        attribute = f["timings"][name].attrs.get("relay")
        if attribute is None or json.loads(attribute) != relay:
            fail(f"/timings/{name} attribute relay differs from the JSON's figures")
    check_relay_csv(summary)


def check_relay_csv(summary):
    """The results CSV's relay columns hold the main (last) pass's JSON figures."""
    path = summary["config"].get("results_csv")
    if not path:
        return
    with open(path) as f:
        row = list(csv.DictReader(f))[-1]
    relay = summary["passes"][-1]["relay"]
    if int(row["relay_stages"]) != relay["stages"]:
        fail(f"CSV relay_stages {row['relay_stages']}, JSON {relay['stages']}")
    for column, key in (("relay_slowest_hop_ms", "slowest_hop_ms"), ("relay_fill_ms", "fill_ms"),
                        ("relay_period_over_slowest_hop", "period_over_slowest_hop")):
        value = relay[key]
        cell = row[column]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if cell not in ("", "nan"):
                fail(f"CSV {column} {cell!r}, JSON {value!r}")
        elif not math.isclose(float(cell), value, rel_tol=1e-5):
            fail(f"CSV {column} {cell}, JSON {value}")


# Dimension names of each kind of dataset (issue #26: the file describes itself).
DIMS = {"y": ["pair", "step", "element"], "step": ["row"], "timings": ["rank", "step"],
        "verification": ["pair", "step"], "histograms/counts": ["phase", "bucket"],
        "histograms/sums": ["phase", "figure"]}


def dims_of(name):
    """The dimension names a dataset must have, by its kind: its top group, or for the
    histograms that and its own name."""
    top = name.split("/")[0]
    return DIMS[top + "/" + name.split("/")[-1]] if top == "histograms" else DIMS[top]


def check_self_description(f, summary):
    """Every dataset says its units, what it holds and its dimensions; /step is /y's dimension
    scale; booleans are h5py booleans; the special values are explained; each pass group carries
    its summary, the same figures as the JSON's."""
    datasets = []
    f.visititems(lambda name, obj: datasets.append(name) if isinstance(obj, h5py.Dataset) else None)
    for name in datasets:
        d = f[name]
        for key in ("units", "description"):
            if not isinstance(d.attrs.get(key), str) or not d.attrs[key]:
                fail(f"/{name} has no {key} attribute")
        labels = [dim.label for dim in d.dims]
        if labels != dims_of(name):
            fail(f"/{name}: dimension names {labels}, expected {dims_of(name)}")
    if "y" in f:
        scales = [s.name for s in f["y"].dims[1].values()]
        if scales != ["/step"]:
            fail(f"/y's step dimension has scales {scales}, expected /step")
    for key in ("blocking", "graphs", "overwrite", "resume", "quiet", "verified"):
        value = f.attrs[key]
        if not isinstance(value, np.bool_):
            fail(f"attribute {key} = {value!r} is a {type(value).__name__}, not a boolean")
    for key in ("description", "sentinels"):
        if not f.attrs.get(key):
            fail(f"root attribute {key} missing")
    if "stopped_at_step" not in f.attrs["sentinels"]:
        fail("the sentinels attribute does not explain stopped_at_step")
    for p in summary["passes"]:
        name = "overlap_on" if p["overlap"] else "overlap_off"
        t, v = f["timings"][name].attrs, f["verification"][name].attrs
        for key, want in (("time_per_step_ms", p["time_per_step_ms"]),
                          ("transfer_gbps", p["algbw_gbps"]),
                          ("step_model_ms", p["step_bound_ms"])):
            got = t.get(key)
            if got is None or not (got == want or (want is None and np.isnan(got))
                                   or math.isclose(got, want, rel_tol=1e-12)):
                fail(f"/timings/{name} attribute {key} = {got}, the JSON says {want}")
        if t.get("overlap") is not np.bool_(p["overlap"]) and bool(t.get("overlap")) != p["overlap"]:
            fail(f"/timings/{name} overlap attribute wrong")
        if v.get("verified") != np.True_ or int(v["x_mismatches"]) != 0:
            fail(f"/verification/{name} does not carry its verdict")


def rows_for(steps, write):
    if write == "all":
        return list(range(steps))
    if write == "last":
        return [steps - 1]
    if write == "none":
        return []
    k = int(write.split(":")[1])
    return [s for s in range(steps) if (s + 1) % k == 0]


# Host spot-check samples (pipeline and app): of every row written, and of each pass's last tensor.
ROW_SPOT_SAMPLES = 1024
LAST_SPOT_SAMPLES = 4096


def check_totals(path, np_ranks):
    """The JSON summary's verification totals are the counts the run must have checked: every
    element of x and z of every step on every pair, and the host's spot-check samples, counted in
    samples (not rows) -- with nothing wrong."""
    summary = json.load(open(path))
    if summary.get("schema_version") != 2:
        fail(f"JSON schema_version {summary.get('schema_version')}, expected 2")
    config = summary["config"]
    # Typed values: numbers, booleans and strings, not TOML literals in strings.
    for key, kind in (("elements", int), ("alpha", float), ("overlap", str), ("write", str),
                      ("blocking", bool), ("quiet", bool), ("timeout_s", float)):
        if type(config[key]) is not kind:
            fail(f"JSON config {key} = {config[key]!r} is not a {kind.__name__}")
    elements, c_elements = int(config["elements"]), int(config["c_elements"])
    steps = int(config["steps"])
    pairs = consumer_rows(config.get("pattern", "pairs"), int(config.get("group_size", 0)),
                          np_ranks)
    passes = summary["passes"]
    pattern = config.get("pattern", "pairs")
    if summary.get("pattern") != pattern:
        fail(f"JSON pattern {summary.get('pattern')!r}, config says {pattern!r}")
    # nccl-tests' bus bandwidth: algbw x 1 (pairs, broadcast), x 2(n-1)/n (all-reduce over n).
    n = int(config.get("group_size", 0)) or np_ranks
    factor = 2.0 * (n - 1) / n if pattern == "allreduce" else 1.0
    if pattern != "pairs" and (summary["group_size"], summary["groups"]) != (n, np_ranks // n):
        fail(f"JSON groups {summary['groups']} of {summary['group_size']}, expected of {n}")
    for i, p in enumerate(passes):
        algbw, busbw = p["algbw_gbps"], p["busbw_gbps"]
        if algbw is not None and not math.isclose(busbw, algbw * factor, rel_tol=1e-12):
            fail(f"pass {i}: busbw {p['busbw_gbps']} != algbw {p['algbw_gbps']} x {factor}")
        v = p["verification"]
        # Only the last pass writes /y, so only its rows are spot-checked as they are written.
        rows = len(rows_for(steps, config["write"])) if i == len(passes) - 1 else 0
        expected = {
            "x_checked": elements * steps * pairs,
            "c_checked": c_elements * steps * pairs,
            "spot_checked": pairs * (rows * min(ROW_SPOT_SAMPLES, elements)
                                     + min(LAST_SPOT_SAMPLES, elements)),
            "x_mismatches": 0, "c_mismatches": 0, "spot_mismatches": 0,
        }
        for key, want in expected.items():
            if v[key] != want:
                fail(f"pass {i}: verification {key} = {v[key]}, expected {want}")


def step_bound(a, transfer, c, b, depth, overlap):
    """The step bound, worked out independently of pipeline/step_bound.cpp."""
    if not overlap:
        consumer = transfer + c + b
    elif depth == 1:
        consumer = max(transfer, c) + b
    else:
        consumer = c + b
    return max(a + transfer, consumer)


def check_host_wait(summary):
    """The hosts' wait policy as host_wait set it, or for auto by its rule from the ranks' own
    figures: prompt on the GPU path, and on the CPU path only where each node's working threads
    fit the cores its ranks may use."""
    mode, used, reason = (summary["config"]["host_wait"], summary["host_wait"],
                          summary["host_wait_reason"])
    threads, cores = {}, {}
    for r in summary["ranks"]:
        threads[r["host"]] = threads.get(r["host"], 0) + r["host_threads"]
        cores.setdefault(r["host"], set()).update(range_list(r["cores"]))
    fits = all(threads[h] <= len(cores[h]) for h in threads)
    expected = (mode if mode != "auto" else
                "prompt" if fits or summary["backend"] == "cuda" else "sparing")
    if used != expected:
        fail(f"host_wait {used!r} ({reason}), expected {expected!r}: threads {threads}, "
             f"cores {dict((h, len(c)) for h, c in cores.items())}")
    busiest = f"{max(threads.values())} working thread(s) on a node"
    if busiest not in reason:
        fail(f"host_wait_reason {reason!r} does not say {busiest!r}")


def range_list(text):
    """The numbers a range list names: "0-3,7" -> [0, 1, 2, 3, 7]."""
    numbers = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        numbers.extend(range(int(first), int(last or first) + 1))
    return numbers


def check_summary(path):
    """The JSON summary's step bounds agree with its own phase medians."""
    summary = json.load(open(path))
    depth = int(summary["config"]["depth"])
    def medians(p):
        ph = p["phases_ms"]
        return ph["a"]["median"], p["transfer_ms"], ph["c"]["median"], ph["b"]["median"]
    for p in summary["passes"]:
        host = p["host_us_per_step"]
        if sorted(host) != ["callback", "queue", "retire"] or min(host.values()) < 0:
            fail(f"host_us_per_step {host} is not three non-negative times")
        if p["timing"]["used"] == "steps":
            continue  # no phase medians, no bound (check_timings checks it is null)
        expected = step_bound(*medians(p), depth, p["overlap"])
        if not math.isclose(p["step_bound_ms"], expected, rel_tol=1e-9):
            fail(f"pass overlap={p['overlap']}: step_bound_ms {p['step_bound_ms']} != {expected}")
    check_host_wait(summary)
    if len(summary["passes"]) == 2 and summary["passes"][0]["timing"]["used"] != "steps":
        expected = step_bound(*medians(summary["passes"][0]), depth, True)
        if not math.isclose(summary["overlap_ideal_ms"], expected, rel_tol=1e-9):
            fail(f"overlap_ideal_ms {summary['overlap_ideal_ms']} != {expected}")


def check_every_rank_and_pair(summary_path, output, results_csv, np_ranks):
    """The report names a few ranks and pairs at scale; the JSON, the CSV's side tables
    (NAME.ranks.csv, NAME.links.csv) and the file keep every one of them."""
    summary = json.load(open(summary_path))
    pairs = max(np_ranks // 2, 1)
    ranks = summary["ranks"]
    if len(ranks) != np_ranks or any(not r["host"] for r in ranks):
        fail(f"the JSON has {len(ranks)} ranks, expected {np_ranks} with their hosts")
    for p in summary["passes"]:
        if sorted(pair["pair"] for pair in p["pairs"]) != list(range(pairs)):
            fail(f"the JSON's pass overlap={p['overlap']} has pairs "
                 f"{[pair['pair'] for pair in p['pairs']]}, expected 0..{pairs - 1}")
    stem = results_csv[:-len(".csv")]
    rank_rows = list(csv.DictReader(open(stem + ".ranks.csv")))
    if [int(r["rank"]) for r in rank_rows] != list(range(np_ranks)):
        fail(f"{stem}.ranks.csv has ranks {[r['rank'] for r in rank_rows]}")
    link_rows = list(csv.DictReader(open(stem + ".links.csv")))
    expected = [(p["overlap"], i) for p in summary["passes"] for i in range(pairs)]
    got = [(r["pass"] == "on", int(r["link"])) for r in link_rows]
    if got != expected:
        fail(f"{stem}.links.csv has links {got}, expected {expected}")
    with h5py.File(output, "r") as f:
        in_file = json.loads(f.attrs["ranks"])
        if [r["host"] for r in in_file] != [r["host"] for r in ranks]:
            fail(f"the file's ranks attribute holds {len(in_file)} ranks, expected {np_ranks}")
        for name in f["timings"]:
            text = f["timings"][name].attrs["pairs"]
            if len(re.findall(r"pair \d+: ranks", text)) != pairs:
                fail(f"/timings/{name}'s pairs attribute does not hold all {pairs} pairs")
    print(f"every rank ({np_ranks}) and pair ({pairs}) in the JSON, the side tables and the file")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--expect-exit", type=int, default=0)
    parser.add_argument("--expect-message", default="")
    parser.add_argument("--expect-stdout", default="")
    parser.add_argument("--expect-stdout-order", nargs="+", default=[], metavar="TEXT",
                        help="run without --quiet; each TEXT must start a line of stdout, in "
                             "this order")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="fail if the launch took longer (a bound the run promises)")
    parser.add_argument("--one-line", action="store_true",
                        help="exactly one 'gpurelay:' line on stderr (one rank names the failure)")
    parser.add_argument("--one-line-per-rank", action="store_true",
                        help="at most one 'gpurelay: error on rank R' line for each rank R (its "
                             "waits may run out together; one of them names the failure)")
    parser.add_argument("--existing-output", action="store_true",
                        help="create the output file first (it must survive untouched)")
    parser.add_argument("--write-file", action="append", default=[], metavar="NAME=TEXT",
                        help="create @TMP@/NAME holding TEXT first (it must survive untouched)")
    parser.add_argument("--make", action="append", default=[], metavar="NAME=KIND[:TARGET]",
                        help="make @TMP@/NAME first, a fifo, dir, chardev (as /dev/null) or "
                             "symlink:TARGET (@TMP@ allowed); it must survive untouched")
    parser.add_argument("--check-summary", action="store_true",
                        help="also check the JSON summary's step bounds (its verification totals are always checked)")
    parser.add_argument("--expect-timing", default="auto",
                        help="the timing each pass must have used (phases, sampled:K, steps, "
                             "auto: one of what auto picks, consistent with what it judged; "
                             "phases-by-auto: auto, and it chose phases)")
    parser.add_argument("--max-stdout-lines", type=int, default=None,
                        help="run without --quiet; fail if the program prints more lines (the "
                             "report at any rank count)")
    parser.add_argument("--check-every-rank-and-pair", action="store_true",
                        help="every rank and pair (pattern pairs) in the JSON, the CSV's side "
                             "tables and the file, however few the report names")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    args = [a for a in opts.args if a != "--"]

    with tempfile.TemporaryDirectory() as tmp:
        output = os.path.join(tmp, "out.h5")
        args = [a.replace("@TMP@", tmp) for a in args]
        opts.expect_message = opts.expect_message.replace("@TMP@", tmp)
        if not any(a == "--output" for a in args):
            args += ["--output", output]
        else:
            output = args[args.index("--output") + 1]
        summary = os.path.join(tmp, "summary.json")
        # Always: the timing each pass used is checked against the file's NaN pattern (unless the
        # case names its own summary: the checks of side outputs do).
        if "--summary-json" in args:
            summary = args[args.index("--summary-json") + 1]
        else:
            args += ["--summary-json", summary]
        # A relay's CSV row carries its figures too (checked against the JSON's).
        if ("relay" in args or opts.check_every_rank_and_pair) and "--results-csv" not in args:
            args += ["--results-csv", os.path.join(tmp, "results.csv")]
        prepared = {}
        for spec in opts.write_file:
            name, _, text = spec.partition("=")
            prepared[os.path.join(tmp, name)] = text + "\n"
        for path, text in prepared.items():
            with open(path, "w") as f:
                f.write(text)
        made = {}
        for spec in opts.make:
            name, _, kind = spec.partition("=")
            path = os.path.join(tmp, name)
            if kind == "fifo":
                os.mkfifo(path)
            elif kind == "dir":
                os.mkdir(path)
            elif kind == "chardev":
                if os.geteuid() != 0:
                    print("SKIP: making a device node needs root")
                    sys.exit(77)
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            elif kind.startswith("symlink:"):
                os.symlink(kind[len("symlink:"):].replace("@TMP@", tmp), path)
            else:
                fail(f"unknown --make kind {kind!r}")
            made[path] = os.lstat(path)
        if opts.existing_output:
            with open(output, "w") as f:
                f.write("precious")
        quiet = [] if opts.expect_stdout_order or opts.max_stdout_lines else ["--quiet"]
        command = shlex.split(opts.mpirun) + ["-n", str(opts.np), opts.binary] + args + quiet
        print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
        start = time.monotonic()
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=opts.timeout)
        except subprocess.TimeoutExpired:
            fail(f"no exit within {opts.timeout} s: a rank hangs")
        elapsed = time.monotonic() - start
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        if run.returncode != opts.expect_exit:
            fail(f"exit code {run.returncode}, expected {opts.expect_exit}")
        ours = [line for line in run.stderr.splitlines() if line.startswith("gpurelay:")]
        if opts.expect_exit == 2:
            if len(ours) != 1:
                fail(f"expected one error line from one rank, got {len(ours)}: {ours}")
            if opts.expect_message not in ours[0]:
                fail(f"error line {ours[0]!r} does not contain {opts.expect_message!r}")
            leftovers = [p for p in (output + ".partial",) if os.path.exists(p)]
            if opts.existing_output:
                if open(output).read() != "precious":
                    fail("the existing output file was changed")
            elif os.path.exists(output) and output not in made:
                leftovers.append(output)
            if leftovers:
                fail(f"bad input left files behind: {leftovers}")
            for path, text in prepared.items():
                if open(path).read() != text:
                    fail(f"bad input changed {path}")
            for path, before in made.items():
                after = os.lstat(path)
                if (after.st_mode, after.st_ino) != (before.st_mode, before.st_ino):
                    fail(f"bad input replaced {path}")
            strays = [n for n in os.listdir(tmp) if n.endswith((".tmp", ".partial", ".lock"))]
            if strays:
                fail(f"bad input left files behind: {strays}")
            if elapsed > 30:
                fail(f"bad input took {elapsed:.1f} s to end every rank")
        elif opts.expect_message and not any(opts.expect_message in line for line in ours):
            fail(f"no stderr line contains {opts.expect_message!r}")
        if opts.one_line and len(ours) != 1:
            fail(f"expected one 'gpurelay:' line, got {len(ours)}: {ours}")
        if opts.one_line_per_rank:
            ranks = [re.match(r"gpurelay: error on rank (\d+)", line) for line in ours]
            counts = collections.Counter(m.group(1) for m in ranks if m)
            if not counts or max(counts.values()) > 1:
                fail(f"expected one 'gpurelay: error on rank R' line a rank, got {dict(counts)}")
        if opts.max_seconds is not None and elapsed > opts.max_seconds:
            fail(f"the launch took {elapsed:.1f} s, more than its bound of {opts.max_seconds} s")
        if opts.expect_stdout and opts.expect_stdout not in run.stdout:
            fail(f"stdout does not contain {opts.expect_stdout!r}")
        lines = run.stdout.splitlines()
        if opts.max_stdout_lines is not None:
            if len(lines) > opts.max_stdout_lines:
                fail(f"{len(lines)} lines of output, more than {opts.max_stdout_lines}")
            print(f"{len(lines)} lines of output (at most {opts.max_stdout_lines})")
        at = -1
        for text in opts.expect_stdout_order:
            found = [i for i, line in enumerate(lines) if line.startswith(text)]
            if not found or found[0] <= at:
                fail(f"no line starting {text!r} after the one before it in stdout")
            at = found[0]
        if opts.expect_exit == 0 and "--print-config" not in args:
            check_file(output, rows_for, opts.np, json.load(open(summary)), opts.expect_timing)
            check_totals(summary, opts.np)
            if opts.check_summary:
                check_summary(summary)
            if opts.check_every_rank_and_pair:
                check_every_rank_and_pair(summary, output, args[args.index("--results-csv") + 1],
                                          opts.np)
            if os.path.exists(output + ".partial"):
                fail(".partial left after a complete run")
    print(f"ok ({elapsed:.2f} s)")


if __name__ == "__main__":
    main()
