"""Compares gpurelay results, NEW against BASE, telling a change from noise (help/compare.txt)."""
import argparse
import csv
import json
import math
import os
import statistics
import sys

from results import CONFIG_COLUMNS, cases, number
from stats import CONFIDENCE, median_interval
import tool
from tool import UsageError as Mismatch, counted, run

try:
    from scipy.stats import mannwhitneyu
except ImportError as missing:
    sys.exit(f"compare: {missing}; install python3-scipy (scripts/install-deps.sh) or point "
             "GPURELAY_PYTHON at a Python that has SciPy")

# Config keys of where a run's outputs went or how it was watched: not what it measured.
NOT_CONFIGURATION = {"output", "overwrite", "resume", "summary_json", "results_csv", "quiet",
                     "tag", "timeout_s", "profile_steps", "flush_every", "repeat"}
# The tests' knobs (debug_delay_us) stand for a change of code: never a reason not to compare.
DEBUG_PREFIX = "debug_"
# The results CSV's columns that make a row's configuration (those both files have), but the GPU's
# name and tensor_bytes (elements' bytes). Not timing: timing = auto's choice varies.
CSV_CONFIGURATION = [c for c in CONFIG_COLUMNS if c not in ("gpu_name", "tensor_bytes")]
PHASES = ["a", "send", "recv", "c", "wait", "b"]  # medians shown; the step's is the time per step
# Figures whose change decides the exit status; lower is better but in HIGHER_BETTER.
HEADLINE = ["time_per_step_ms", "transfer_gbps"]
HIGHER_BETTER = {"transfer_gbps"}
LABELS = {"time_per_step_ms": "time per step", "transfer_gbps": "transfer",
          **{f"{phase}_ms_median": f"{phase} (median)" for phase in PHASES}}
ALPHA = 0.05
PASS_NAMES = {False: "overlap off", True: "overlap on"}  # a JSON summary's "overlap"


def relative_spread(p50, p99):
    """2 x (p99 - p50) / p50: the step-to-step spread with its tail, as a fraction, or None."""
    p50, p99 = number(p50), number(p99)
    if p50 is None or p99 is None or p50 <= 0:
        return None
    return 2.0 * (p99 - p50) / p50


def read_input(path):
    """('json', [case summary, ...]) or ('csv', (header, rows)); Mismatch if it is neither."""
    try:
        with open(path, newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Mismatch(f"cannot read {path}: {e}")
    if not text.lstrip().startswith("{"):
        rows = list(csv.DictReader(text.splitlines()))
        header = text.splitlines()[0].split(",") if text.strip() else []
        if "time_per_step_ms" not in header or not rows:
            raise Mismatch(f"{path}: neither a gpurelay JSON summary nor a results CSV with rows")
        return "csv", (header, rows)
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as e:
        raise Mismatch(f"{path}: not valid JSON ({e})")
    found = cases(summary) if isinstance(summary, dict) else [None]
    if not isinstance(found, list) or not found:
        raise Mismatch(f"{path}: a multi-size JSON summary without cases")
    if not all(isinstance(case, dict) and case.get("passes") for case in found):
        raise Mismatch(f"{path}: a JSON file without passes (not a gpurelay summary)")
    return "json", found


class Sample:
    """One launch's figures of one pass: {figure: value} and {figure: step-to-step spread}."""
    def __init__(self):
        self.values, self.spreads = {}, {}

    def add(self, figure, value, spread=None):
        if number(value) is not None:
            self.values[figure] = number(value)
            if spread is not None:
                self.spreads[figure] = spread


def json_pass_sample(p, readable):
    """A JSON pass's figures (null where withheld), spreads, and readable phases' medians."""
    phases = p.get("phases_ms") or {}
    spread = {name: relative_spread(s.get("p50", s.get("median")), s.get("p99"))
              for name, s in phases.items() if isinstance(s, dict)}
    transfer = [spread[k] for k in ("send", "recv") if spread.get(k) is not None]
    sample = Sample()
    sample.add("time_per_step_ms", p.get("time_per_step_ms"), spread.get("step"))
    sample.add("transfer_gbps", p.get("transfer_gbps"),
               max(transfer) if transfer else spread.get("step"))
    for name in PHASES if readable else []:
        sample.add(f"{name}_ms_median", (phases.get(name) or {}).get("median"), spread.get(name))
    return sample


def csv_row_samples(row):
    """{pass name: Sample} of a results-CSV row, in run order (a compare row's off pass first)."""
    def spread(phase, median_column):
        return relative_spread(row.get(f"{phase}_ms_p50") or row.get(median_column),
                               row.get(f"{phase}_ms_p99"))
    overlap = row.get("overlap", "")
    samples = {}
    if overlap == "compare":
        samples["overlap off"] = off = Sample()
        off.add("time_per_step_ms", row.get("time_per_step_no_overlap_ms"))
    main = Sample()
    main.add("time_per_step_ms", row.get("time_per_step_ms"), spread("step", "step_ms_median"))
    transfer = [s for s in (spread("send", "send_ms"), spread("recv", "recv_ms")) if s is not None]
    main.add("transfer_gbps", row.get("transfer_gbps"), max(transfer) if transfer else None)
    if row.get("phase_times_readable") != "false":
        for phase in PHASES:
            main.add(f"{phase}_ms_median", row.get(f"{phase}_ms"), spread(phase, f"{phase}_ms"))
    samples[{"off": "overlap off", "on": "overlap on", "compare": "overlap on"}.get(
        overlap, "main pass")] = main
    return samples


def check_configurations(first, first_name, other, other_name, across=()):
    """Mismatch naming the first config key (but NOT_CONFIGURATION, debug_, across) that differs."""
    def configuration(summary):
        return {**{k: v for k, v in (summary.get("config") or {}).items()
                   if k not in NOT_CONFIGURATION and k not in across
                   and not k.startswith(DEBUG_PREFIX)}, "world_size": summary.get("world_size")}
    a, b = configuration(first), configuration(other)
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if differ:
        k = differ[0]
        raise Mismatch(f"different configurations: {k} = {a.get(k)!r} in {first_name}, "
                       f"{b.get(k)!r} in {other_name}"
                       + (f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""))


def json_groups(sides, across=()):
    """[{case label: {pass: [Sample]}}] per side, from [(side name, [(path, cases)])], by size."""
    sizes = [{(c.get("config") or {}).get("elements") for _, found in files for c in found}
             for _, files in sides]
    # One size a side: compared as they are, so that a different size says so below.
    by_size = not all(len(s) == 1 for s in sizes)
    first_seen = {}
    result = []
    for side, files in sides:
        groups = {}
        for path, found in files:
            seen = set()
            for case in found:
                size = (case.get("config") or {}).get("elements")
                if size in seen:
                    raise Mismatch(f"{path} has two cases of elements = {size!r}")
                seen.add(size)
                label = f"elements={size}" if by_size else ""
                where = side if len(files) == 1 else f"{side} ({path})"
                # Within a side every key matches; between the sides all but --across.
                if (side, label) in first_seen:
                    check_configurations(*first_seen[side, label], case, where)
                if label in first_seen:
                    check_configurations(*first_seen[label], case, where, across)
                first_seen.setdefault(label, (case, where))
                first_seen.setdefault((side, label), (case, where))
                readable = (case.get("phase_times") or {}).get("readable", True)
                for p in case["passes"]:
                    groups.setdefault(label, {}).setdefault(
                        PASS_NAMES.get(p.get("overlap"), "main pass"), []).append(
                        json_pass_sample(p, readable))
        result.append(groups)
    check_same_labels(result, "different sizes: elements = {} in {} only",
                      lambda label: label.partition("=")[2])
    return result


def csv_groups(sides, across=()):
    """As json_groups, for CSVs: a row a launch, matched by the configuration columns all have."""
    headers = [h for _, files in sides for _, (h, _) in files]
    keys = [k for k in CSV_CONFIGURATION if k not in across and all(k in h for h in headers)]
    result = []
    for side, files in sides:
        groups = {}
        for _, (_, rows) in files:
            for row in rows:
                key = tuple(row.get(k, "") for k in keys)
                for pass_name, sample in csv_row_samples(row).items():
                    groups.setdefault(key, {}).setdefault(pass_name, []).append(sample)
        result.append(groups)
    check_same_labels(result, "different configurations: no row in {1} for {0}",
                      lambda key: " ".join(f"{k}={v}" for k, v in zip(keys, key)), flip=True)
    seen = {key for groups in result for key in groups}
    varying = [i for i, _ in enumerate(keys) if len({key[i] for key in seen}) > 1]
    return [{" ".join(f"{keys[i]}={key[i]}" for i in varying): passes
             for key, passes in groups.items()} for groups in result]


def check_same_labels(groups, message, describe, flip=False):
    """Mismatch when a case (size, configuration) is on one side only."""
    base, new = groups
    for ours, theirs, name, other in ((base, new, "BASE", "NEW"), (new, base, "NEW", "BASE")):
        missing = [label for label in ours if label not in theirs]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise Mismatch(message.format(describe(missing[0]), other if flip else name) + more)


class Row:
    """One figure of one pass compared: the medians, the change and whether it counts."""

    def __init__(self, figure, base, new, spreads, gating):
        self.figure, self.gating = figure, gating
        self.base, self.new = base, new
        self.base_median, self.new_median = statistics.median(base), statistics.median(new)
        self.change = (self.new_median / self.base_median - 1.0) * 100.0  # of the value
        self.worse = -self.change if figure in HIGHER_BETTER else self.change  # > 0: worse
        if len(base) >= 2 and len(new) >= 2:
            self.p = mann_whitney_p(base, new)  # adjusted, and changed decided, by holm()
        else:
            # One launch a side: a change only beyond the runs' step-to-step spread (and, in
            # verdict(), the threshold).
            self.p = None
            self.spread = 100.0 * max(spreads, default=0.0)

    def verdict(self, threshold):
        """(the words, whether the row fails the comparison)."""
        if self.p is None:
            self.changed = abs(self.change) > max(self.spread, threshold)
        if not self.changed:
            return "~", False
        if not self.gating:
            return "differs (not gating)", False
        if self.worse > threshold:
            return f"WORSE by {self.worse:.1f}%", True
        return (f"worse by {self.worse:.1f}% (under {threshold:g}%)" if self.worse > 0
                else f"better by {-self.worse:.1f}%"), False

    def cells(self, threshold):
        """figure, unit, both medians with intervals (in the natural unit), change, p, verdict."""
        unit, scale = natural_unit(self.figure, max(self.base_median, self.new_median))
        return [LABELS.get(self.figure, self.figure), unit,
                median_text(self.base, scale), median_text(self.new, scale),
                f"{self.change:+.1f}%", "-" if self.p is None else f"{self.p:.3f}",
                self.verdict(threshold)[0]]


def natural_unit(figure, value):
    """(unit, factor from the figure's own unit): a time in µs under 1 ms, in s from 1000 ms."""
    if not figure.endswith("_ms") and "_ms_" not in figure:
        return "GB/s", 1.0
    if abs(value) < 1.0:
        return "µs", 1e3
    return ("s", 1e-3) if abs(value) >= 1e3 else ("ms", 1.0)


def holm(rows):
    """Decides which rows changed, each p adjusted by Holm's method over all (else the rows' 5%
    false alarms add up: 16 rows of identical launches would mostly show one changed)."""
    tested = sorted((r for r in rows if r.p is not None), key=lambda r: r.p)
    largest = 0.0
    for k, row in enumerate(tested):
        largest = max(largest, min(1.0, (len(tested) - k) * row.p))
        row.p = largest
        row.changed = row.p <= ALPHA


def mann_whitney_p(x, y):
    """The two-sided Mann-Whitney U p: SciPy's "auto", named so that every SciPy agrees; 1 where
    all values are equal (SciPy 1.18's NaN would sort anywhere in Holm's order and hide every
    other row's change)."""
    values = list(x) + list(y)
    distinct = len(set(values))
    if distinct == 1:
        return 1.0
    exact = distinct == len(values) and min(len(x), len(y)) <= 8
    return float(mannwhitneyu(x, y, alternative="two-sided",
                              method="exact" if exact else "asymptotic").pvalue)


def smallest_p(n1, n2):
    """The smallest p-value samples of these sizes can give (completely separated, no ties)."""
    return mann_whitney_p(list(range(n1)), list(range(n1, n1 + n2)))


def median_text(values, scale=1.0):
    """'median [lo, hi]' (median_interval, or the median alone: notes() says why), 4 digits."""
    median = statistics.median(values) * scale
    decimals = min(max(3 - (math.floor(math.log10(abs(median))) if median else 0), 0), 9)
    interval = median_interval(values)
    if not interval:
        return f"{median:.{decimals}f}"
    return (f"{median:.{decimals}f} [{interval[0] * scale:.{decimals}f}, "
            f"{interval[1] * scale:.{decimals}f}]")


def compare_pass(b_samples, n_samples, opts):
    """One pass's rows, of the figures every launch shows (headline first); those left out."""
    every = b_samples + n_samples
    shown = set.intersection(*(set(s.values) for s in every))
    names = [f for f in HEADLINE + [f"{p}_ms_median" for p in PHASES] if f in shown]
    rows = []
    for figure in names:
        base = [s.values[figure] for s in b_samples]
        if statistics.median(base) != 0:
            rows.append(Row(figure, base, [s.values[figure] for s in n_samples],
                            [s.spreads[figure] for s in every if figure in s.spreads],
                            figure in HEADLINE or opts.gate_phases))
    return rows, sorted({f for s in every for f in s.values} - set(names))


HEAD = ["figure", "unit", "base [95% CI of the median]", "new [95% CI of the median]",
        "change", "p (Holm)", "verdict"]
RIGHT = [False, False, True, True, True, True, False]  # the numbers' cells align right


def aligned(lines_of_cells):
    widths = [max(len(cells[i]) for cells in lines_of_cells) for i in range(len(HEAD))]
    return ["  " + "  ".join(c.rjust(w) if right else c.ljust(w)
                            for c, w, right in zip(cells, widths, RIGHT)).rstrip()
            for cells in lines_of_cells]


def compare_groups(base, new, opts):
    """(lines, [(figure, where)] worse, passes, [(BASE, NEW launches)] a pass, rows tested)."""
    tables, passes, counts = [], [], []
    for label, b_passes in base.items():
        for pass_name, b_samples in b_passes.items():
            n_samples = new[label].get(pass_name)
            if not n_samples:
                continue
            where = pass_name + (f", {label}" if label else "")
            passes += [pass_name] if pass_name not in passes else []
            counts.append((len(b_samples), len(n_samples)))
            head = (f"{where}: BASE {counted(len(b_samples), 'launch', 'launches')}, "
                    f"NEW {counted(len(n_samples), 'launch', 'launches')}")
            rows, withheld = compare_pass(b_samples, n_samples, opts)
            if withheld:
                head += f" (withheld in some launches, not compared: {', '.join(withheld)})"
            tables.append((head, where, rows))
    if not passes:
        raise Mismatch("no pass that both sides ran (compare overlap = on with on, off with off)")
    rows = [row for _, _, table in tables for row in table]
    holm(rows)
    # One set of columns for every table, so that they align down the whole output.
    formatted = iter(aligned([HEAD] + [row.cells(opts.threshold) for row in rows]))
    head_line = next(formatted)
    out, failed = [], []
    for head, where, table in tables:
        out += [head, head_line] + [next(formatted) for _ in table]
        failed += [(row.figure, where) for row in table if row.verdict(opts.threshold)[1]]
    return out, failed, passes, counts, sum(row.p is not None for row in rows)


def notes(counts, tested):
    """What the numbers of launches [(BASE, NEW)] allow, before the table."""
    if min(min(pair) for pair in counts) < 2:
        return ["compare: one launch on a side: the noise between launches cannot be told from "
                "a change; a figure counts as changed only beyond its run's spread over its steps "
                "(2 x (p99 - p50) / p50) and the threshold. For an A/B comparison run 6 or more "
                "launches a side (scripts/sweep --repeat 6) and pass them all."]
    fewest = min(counts, key=min)
    needed = ALPHA / max(tested, 1)  # Holm's bar for the smallest p
    said = []
    if smallest_p(*fewest) > needed:
        enough = next(n for n in range(2, 64) if smallest_p(n, n) <= needed)
        said.append(f"compare: {fewest[0]} and {fewest[1]} launches cannot show a change in "
                    f"{tested} rows at p <= {ALPHA:g} (Holm's method: the smallest p "
                    f"must be <= {needed:.2g}; without ties {fewest[0]} and {fewest[1]} launches "
                    f"give {smallest_p(*fewest):.2g} at best): use {enough} or more a side")
    if median_interval([0.0] * min(fewest)) is None:
        enough = next(n for n in range(2, 64) if median_interval([0.0] * n) is not None)
        said.append(f"compare: a {CONFIDENCE:.0%} confidence interval of a median needs "
                    f"{enough} or more launches a side ({min(fewest)} here): none is printed")
    return said


SEPARATOR = "\0--"  # the "--" between the sides while argparse reads (no path holds a NUL)


def read_sides(base_paths, new_paths, across=()):
    sides, kinds = [], set()
    for name, paths in (("BASE", base_paths), ("NEW", new_paths)):
        files = []
        for path in paths:
            kind, content = read_input(path)
            if kinds and kind not in kinds:
                raise Mismatch(f"different kinds of file: {path} is a {kind.upper()}, the "
                               f"others {kinds.pop().upper()}s")
            kinds.add(kind)
            files.append((path, content))
        sides.append((name, files))
    return (json_groups if kinds == {"json"} else csv_groups)(sides, across)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scripts/compare", add_help=False,
        usage="%(prog)s BASE... -- NEW... [--threshold PCT] [--gate-phases] [--across KEYS]"
              "  (or BASE NEW)")
    parser.add_argument("-h", "--help", action=tool.Help)
    parser.add_argument("inputs", nargs="+", metavar="FILE")
    parser.add_argument("--threshold", type=float, default=5.0, metavar="PCT")
    parser.add_argument("--gate-phases", action="store_true")
    parser.add_argument("--across", default="", metavar="KEYS")
    # "--" ends argparse's options; here it separates the sides, so it is kept as a value.
    return parser.parse_intermixed_args([SEPARATOR if a == "--" else a for a in argv])


def files_text(paths):
    """'6 files (/tmp/run/base/…)': how many, and the path they all start with."""
    if len(paths) == 1:
        return paths[0]
    prefix = os.path.commonprefix(paths)
    return f"{len(paths)} files" + (f" ({prefix}…)" if prefix else "")


def main(argv):
    opts = parse_args(argv)
    if not opts.threshold >= 0:
        raise Mismatch("--threshold must be a percentage >= 0")
    inputs = opts.inputs  # BASE... -- NEW..., or BASE NEW
    at = inputs.index(SEPARATOR) if SEPARATOR in inputs else 1
    base_paths, new_paths = inputs[:at], inputs[at + (SEPARATOR in inputs):]
    if SEPARATOR not in inputs and len(inputs) != 2:
        raise Mismatch(f"{len(inputs)} files without '--': give BASE NEW, or BASE... -- NEW...")
    if SEPARATOR in new_paths or not base_paths or not new_paths:
        raise Mismatch("expected BASE... -- NEW...: one '--' with files on both sides")
    across = {k.strip() for k in opts.across.split(",") if k.strip()}
    base, new = read_sides(base_paths, new_paths, across)
    lines, failed, passes, counts, tested = compare_groups(base, new, opts)
    print("\n".join(notes(counts, tested) + lines))
    test = (f"p <= {ALPHA:g}, Holm over {tested} rows" if min(min(pair) for pair in counts) >= 2
            else "beyond the runs' spread")
    verdict = (f"WORSE than {opts.threshold:g}% ({test}): "
               + "; ".join(f"{f} ({w})" for f, w in failed) if failed
               else f"none worse than {opts.threshold:g}% ({test})")
    print(f"compare: {verdict}")
    print(f"compare: gating: {', '.join(HEADLINE)} of {', '.join(passes)}"
          + ("; and every phase's median" if opts.gate_phases
             else "; the phases' medians shown, not gating (--gate-phases)"))
    print(f"compare: NEW {files_text(new_paths)} against BASE {files_text(base_paths)}")
    return 1 if failed else 0


if __name__ == "__main__":
    run("compare", main)
