"""Compares gpurelay results, NEW against BASE, telling a change from the noise between launches.

usage: scripts/compare BASE... -- NEW... [--threshold PCT] [--gate-phases] [--across KEYS]
       scripts/compare BASE NEW [--threshold PCT] [--gate-phases] [--across KEYS]

Each side is one or more JSON summaries (--summary-json) or results CSVs (--results-csv); every
launch is one sample: a file per launch, or a CSV row per launch (a CSV written by
scripts/sweep --repeat N holds N rows of each configuration, so it counts as N). A summary of
several sizes (one launch of --elements S1,S2,...: its "cases") gives one sample of each size;
cases are matched by size, CSV rows by their configuration columns. --across KEY[,KEY...]
names the keys the comparison is about (e.g. --across depth: depth 1 against depth 2): the
sides may differ in them, as two versions of the code may; every other key must match.

Every pass is compared (with overlap = compare: overlap off and overlap on; a CSV row holds the
on pass's figures and the off pass's time per step). Per figure it prints the median of each
side with a 95% confidence interval of that median, from the launches' order statistics (as
Go's benchstat does: with n launches the interval runs from the k-th least to the k-th largest,
k the largest whose chance of holding the median, 1 - 2 P(Binomial(n, 1/2) < k), is at least
95%; 6 launches are the fewest that can give one, their least and largest), the change of the
medians, and the two-sided p-value of a Mann-Whitney U test between the two sets of launches
(SciPy's mannwhitneyu); "~" where p > 0.05, where the launches do not show a difference (as
benchstat prints). With one launch on a side there is no test: a figure counts as changed only
when the change is beyond that figure's own spread over the run's steps (2 x (p99 - p50) / p50
of its phase, its tail both ways; the larger of the two runs') as well as beyond the threshold:
the noise between launches (a loaded machine, clocks, placement) is often larger than the
spread within one, so the test is the tail, and identical launches are not called worse.

Headline figures gate the verdict: the time per step and the transfer bandwidth (the tensor
over the median transfer time) of each pass. The phases' medians and p99s are shown, and gate
only with --gate-phases. The gating figures' p-values are adjusted by Holm's method over all
of them (of every pass and size), since the exit status is one decision over them all: the
chance that identical launches exit 1 stays at most 0.05, however many figures gate.

Exit status: 0 when no gating figure is significantly worse by more than PCT percent (default
5), 1 when one is, 2 when the inputs cannot be compared (unreadable, of different kinds, of
different configurations, or with a size or configuration that one side lacks), with a one-line
reason on stderr.
"""
import argparse
import csv
import json
import math
import statistics
import sys

try:
    from scipy.stats import binom, mannwhitneyu
except ImportError as missing:
    sys.exit(f"compare: {missing}; install python3-scipy (scripts/install-deps.sh) or point "
             "GPURELAY_PYTHON at a Python that has SciPy")

# Config keys that say where a run's outputs went or how it was watched, not what it measured:
# two runs that differ only in these are the same benchmark.
NOT_CONFIGURATION = {"output", "overwrite", "resume", "summary_json", "results_csv", "quiet",
                     "tag", "timeout_s", "profile_steps", "flush_every", "repeat"}
# The tests' knobs (debug_delay_us: a slow rank) stand for a change of code, which is what a
# comparison is for, so they never make two runs incomparable.
DEBUG_PREFIX = "debug_"
# The results CSV's columns that make a row's configuration (those of them that both files have).
# Not timing: the CSV holds the mode timing = auto chose, which differs between identical
# launches (the JSON's config holds "auto" itself).
CSV_CONFIGURATION = ["world_size", "pairs", "backend", "transport", "dtype", "elements", "steps",
                     "warmup", "depth", "overlap", "blocking", "graphs", "c_elements",
                     "c_iterations", "pairing", "chunk", "pattern", "group_size"]
CSV_PHASES = ["a", "send", "recv", "c", "wait", "b"]
# Figures whose change decides the exit status; lower is better unless listed in HIGHER_BETTER.
HEADLINE = ["time_per_step_ms", "transfer_gbps"]
HIGHER_BETTER = {"transfer_gbps"}
ALPHA = 0.05
# The confidence of the interval printed around each median.
CONFIDENCE = 0.95
# Passes as a JSON summary's "overlap" names them.
PASS_NAMES = {False: "overlap off", True: "overlap on"}


class Mismatch(Exception):
    """The inputs cannot be compared (exit 2)."""


def number(value):
    """A figure as a float, or None where there is none (null, empty, NaN, not a number)."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def relative_spread(p50, p99):
    """2 x (p99 - p50) / p50: the step-to-step spread with its tail, as a fraction, or None."""
    p50, p99 = number(p50), number(p99)
    if p50 is None or p99 is None or p50 <= 0:
        return None
    return 2.0 * (p99 - p50) / p50


def json_cases(path, summary):
    """A summary's cases: those of a multi-size summary, or the single-size summary itself."""
    if "cases" not in summary:
        cases = [summary]
    elif isinstance(summary["cases"], list) and summary["cases"]:
        cases = summary["cases"]
    else:
        raise Mismatch(f"{path}: a multi-size JSON summary without cases")
    for case in cases:
        if not isinstance(case, dict) or not case.get("passes"):
            raise Mismatch(f"{path}: a JSON file without passes (not a gpurelay summary)")
    return cases


def read_input(path):
    """('json', [case summary, ...]) or ('csv', (header, rows)); Mismatch if it is neither."""
    try:
        with open(path, newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Mismatch(f"cannot read {path}: {e}")
    if text.lstrip().startswith("{"):
        try:
            summary = json.loads(text)
        except json.JSONDecodeError as e:
            raise Mismatch(f"{path}: not valid JSON ({e})")
        if not isinstance(summary, dict):
            raise Mismatch(f"{path}: a JSON file without passes (not a gpurelay summary)")
        return "json", json_cases(path, summary)
    rows = list(csv.DictReader(text.splitlines()))
    header = text.splitlines()[0].split(",") if text.strip() else []
    if "time_per_step_ms" not in header or not rows:
        raise Mismatch(f"{path}: neither a gpurelay JSON summary nor a results CSV with rows")
    return "csv", (header, rows)


class Sample:
    """One launch's figures of one pass: {figure: value} and {figure: step-to-step spread}."""

    def __init__(self):
        self.values = {}
        self.spreads = {}

    def add(self, figure, value, spread=None):
        if number(value) is not None:
            self.values[figure] = number(value)
            if spread is not None:
                self.spreads[figure] = spread


def json_pass_sample(p):
    """The figures of one pass of a JSON summary, with the spreads of the phases behind them."""
    phases = p.get("phases_ms") or {}
    spread = {name: relative_spread(s.get("p50", s.get("median")), s.get("p99"))
              for name, s in phases.items() if isinstance(s, dict)}
    transfer = [spread[k] for k in ("send", "recv") if spread.get(k) is not None]
    sample = Sample()
    sample.add("time_per_step_ms", p.get("time_per_step_ms"), spread.get("step"))
    sample.add("transfer_gbps", p.get("transfer_gbps"),
               max(transfer) if transfer else spread.get("step"))
    for name, stats in phases.items():
        for stat in ("median", "p99"):
            sample.add(f"{name}_ms_{stat}", (stats or {}).get(stat), spread.get(name))
    return sample


def csv_row_samples(row):
    """{pass name: Sample} of a results-CSV row: its main pass (overlap = compare: the on pass),
    and for compare rows the off pass's time per step."""
    def spread(phase, median_column):
        return relative_spread(row.get(f"{phase}_ms_p50") or row.get(median_column),
                               row.get(f"{phase}_ms_p99"))
    overlap = row.get("overlap", "")
    main = Sample()
    main.add("time_per_step_ms", row.get("time_per_step_ms"), spread("step", "step_ms_median"))
    transfer = [s for s in (spread("send", "send_ms"), spread("recv", "recv_ms")) if s is not None]
    main.add("transfer_gbps", row.get("transfer_gbps"), max(transfer) if transfer else None)
    for phase, median_column in [("step", "step_ms_median")] + [(p, f"{p}_ms") for p in CSV_PHASES]:
        main.add(f"{phase}_ms_median", row.get(median_column), spread(phase, median_column))
        main.add(f"{phase}_ms_p99", row.get(f"{phase}_ms_p99"), spread(phase, median_column))
    name = {"off": "overlap off", "on": "overlap on", "compare": "overlap on"}.get(overlap, "")
    samples = {name or "main pass": main}
    if overlap == "compare":
        off = Sample()
        off.add("time_per_step_ms", row.get("time_per_step_no_overlap_ms"))
        samples["overlap off"] = off
    return samples


def json_configuration(summary, across=()):
    config = {k: v for k, v in (summary.get("config") or {}).items()
              if k not in NOT_CONFIGURATION and k not in across
              and not k.startswith(DEBUG_PREFIX)}
    config["world_size"] = summary.get("world_size")
    return config


def check_configurations(first, first_name, other, other_name, across=()):
    a, b = json_configuration(first, across), json_configuration(other, across)
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if differ:
        k = differ[0]
        raise Mismatch(f"different configurations: {k} = {a.get(k)!r} in {first_name}, "
                       f"{b.get(k)!r} in {other_name}"
                       + (f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""))


def add_sample(groups, label, pass_name, sample):
    groups.setdefault(label, {}).setdefault(pass_name, []).append(sample)


def json_groups(sides, across=()):
    """[{case label: {pass: [Sample]}}] per side, from [(side name, [(path, cases)])]: cases
    matched by size, every case of a size of the same configuration as the first one seen."""
    sizes = [{(c.get("config") or {}).get("elements") for _, cases in files for c in cases}
             for _, files in sides]
    # One size a side: compared as they are, so that a different size says so below.
    by_size = not all(len(s) == 1 for s in sizes)
    first_seen = {}
    result = []
    for side, files in sides:
        groups = {}
        for path, cases in files:
            seen = set()
            for case in cases:
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
                for p in case["passes"]:
                    add_sample(groups, label, PASS_NAMES.get(p.get("overlap"), "main pass"),
                               json_pass_sample(p))
        result.append(groups)
    check_same_labels(result, "different sizes: elements = {} in {} only",
                      lambda label: label.partition("=")[2])
    return result


def csv_groups(sides, across=()):
    """As json_groups, for results CSVs: rows matched by the configuration columns that every
    file has; each row is one launch."""
    headers = [h for _, files in sides for _, (h, _) in files]
    keys = [k for k in CSV_CONFIGURATION if k not in across and all(k in h for h in headers)]
    labels = {}
    result = []
    for side, files in sides:
        groups = {}
        for _, (_, rows) in files:
            for row in rows:
                key = tuple(row.get(k, "") for k in keys)
                labels[key] = key
                for pass_name, sample in csv_row_samples(row).items():
                    add_sample(groups, key, pass_name, sample)
        result.append(groups)
    varying = [i for i, _ in enumerate(keys) if len({key[i] for key in labels}) > 1]
    check_same_labels(result, "different configurations: no row in {1} for {0}",
                      lambda key: " ".join(f"{k}={v}" for k, v in zip(keys, key)),
                      flip=True)
    named = [{" ".join(f"{keys[i]}={key[i]}" for i in varying): passes
              for key, passes in groups.items()} for groups in result]
    return named


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
        self.lower = figure not in HIGHER_BETTER
        self.base, self.new = base, new
        self.base_median, self.new_median = statistics.median(base), statistics.median(new)
        ratio = self.new_median / self.base_median
        self.change = (ratio - 1.0) * 100.0  # of the value, as printed
        self.worse = self.change if self.lower else -self.change  # > 0: worse
        if len(base) >= 2 and len(new) >= 2:
            self.p = mann_whitney_p(base, new)  # adjusted by holm() where the row gates
            self.changed = None  # decided once every p is known
        else:
            # One launch a side: only a change beyond the runs' own step-to-step spread.
            self.p = None
            self.changed = abs(self.change) > 100.0 * max(spreads, default=0.0)

    def verdict(self, threshold):
        if not self.changed:
            return "~", False
        if self.worse > threshold and self.gating:
            return f"WORSE by {self.worse:.1f}%", True
        return (f"worse by {self.worse:.1f}%" if self.worse > 0
                else f"better by {-self.worse:.1f}%"), False

    def line(self, threshold):
        verdict, _ = self.verdict(threshold)
        p = "-" if self.p is None else f"{self.p:.3f}"
        return (f"  {self.figure:<18} {'lower' if self.lower else 'higher':<6} "
                f"{median_text(self.base):<28} {median_text(self.new):<28} {self.change:>+8.1f}% "
                f"{p:>6}  {verdict}")


def holm(rows):
    """Decides which rows changed. The gating rows' p-values are adjusted by Holm's method over
    all of them: the exit status is one decision over every gating figure of every pass and
    size, and without the adjustment each figure's 5% chance of a false alarm adds up (four
    independent figures of identical launches would call one worse up to 1 - 0.95^4 = 19% of
    the time)."""
    tested = sorted((r for r in rows if r.p is not None and r.gating), key=lambda r: r.p)
    largest = 0.0
    for k, row in enumerate(tested):
        largest = max(largest, min(1.0, (len(tested) - k) * row.p))
        row.p = largest
    for row in rows:
        if row.p is not None:
            row.changed = row.p <= ALPHA


def mann_whitney_p(x, y):
    """The two-sided p-value of the Mann-Whitney U test (SciPy's default method: exact without
    ties where a side has at most 8 values, else the normal approximation with the tie and
    continuity corrections)."""
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def smallest_p(n1, n2):
    """The smallest p-value samples of these sizes can give (completely separated, no ties)."""
    return mann_whitney_p(list(range(n1)), list(range(n1, n1 + n2)))


def median_interval(values):
    """(least, largest) of the CONFIDENCE interval of the median of the values, from their order
    statistics: the k-th least to the k-th largest for the largest k that holds the median with
    that chance; None where too few values can give one (fewer than 6 at 95%)."""
    n = len(values)
    k = max((k for k in range(1, n // 2 + 1) if 1 - 2 * binom.cdf(k - 1, n, 0.5) >= CONFIDENCE),
            default=None)
    if k is None:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[n - k]


def median_text(values):
    """'median [lo, hi]' with median_interval, or the median alone where there is none (notes()
    says why)."""
    interval = median_interval(values)
    text = f"{statistics.median(values):.5g}"
    return text + (f" [{interval[0]:.5g}, {interval[1]:.5g}]" if interval else "")


def figure_names(samples):
    names = []
    for sample in samples:
        names += [f for f in sample.values if f not in names]
    return sorted(names, key=lambda f: (f not in HEADLINE, HEADLINE.index(f) if f in HEADLINE
                                        else 0, f))


def compare_pass(b_samples, n_samples, opts):
    """The rows of one pass: every figure both sides have."""
    rows = []
    for figure in figure_names(b_samples):
        base = [s.values[figure] for s in b_samples if figure in s.values]
        new = [s.values[figure] for s in n_samples if figure in s.values]
        if not base or not new or statistics.median(base) == 0:
            continue
        spreads = [s.spreads[figure] for s in b_samples + n_samples if figure in s.spreads]
        rows.append(Row(figure, base, new, spreads, figure in HEADLINE or opts.gate_phases))
    return rows


def table_head():
    return (f"  {'figure':<18} {'better':<6} {'base [95% CI of the median]':<28} "
            f"{'new [95% CI of the median]':<28} {'change':>9} {'p':>6}  verdict")


def compare_groups(base, new, opts):
    """Every case and pass both sides have: (lines, [(figure, where)] worse, passes compared,
    [(BASE launches, NEW launches)] per pass, the number of gating figures tested)."""
    tables, passes, counts = [], [], []
    for label, b_passes in base.items():
        for pass_name, b_samples in b_passes.items():
            n_samples = new[label].get(pass_name)
            if not n_samples:
                continue
            where = pass_name + (f", {label}" if label else "")
            passes += [pass_name] if pass_name not in passes else []
            counts.append((len(b_samples), len(n_samples)))
            head = f"{where}: BASE {launches(len(b_samples))}, NEW {launches(len(n_samples))}"
            tables.append((head, where, compare_pass(b_samples, n_samples, opts)))
    if not passes:
        raise Mismatch("no pass that both sides ran (compare overlap = on with on, off with off)")
    rows = [row for _, _, table in tables for row in table]
    holm(rows)
    out, failed = [], []
    for head, where, table in tables:
        out += [head, table_head()] + [row.line(opts.threshold) for row in table]
        failed += [(row.figure, where) for row in table if row.verdict(opts.threshold)[1]]
    return out, failed, passes, counts, sum(row.gating and row.p is not None for row in rows)


def launches(count):
    return f"{count} launch" + ("" if count == 1 else "es")


def notes(counts, gates):
    """What the numbers of launches [(BASE, NEW)] allow, before the table."""
    if min(min(pair) for pair in counts) < 2:
        return ["compare: one launch on a side: the noise between launches cannot be told from "
                "a change; a figure counts as changed only beyond its run's spread over its steps "
                "(2 x (p99 - p50) / p50) and the threshold. For an A/B comparison run 6 or more "
                "launches a side (scripts/sweep --repeat 6) and pass them all."]
    fewest = min(counts, key=min)
    needed = ALPHA / max(gates, 1)  # Holm's bar for the smallest p
    said = []
    if smallest_p(*fewest) > needed:
        enough = next(n for n in range(2, 64) if smallest_p(n, n) <= needed)
        said.append(f"compare: {fewest[0]} and {fewest[1]} launches cannot show a change in "
                    f"{gates} gating figures at p <= {ALPHA:g} (Holm's method: the smallest p "
                    f"must be <= {needed:.2g}; without ties {fewest[0]} and {fewest[1]} launches "
                    f"give {smallest_p(*fewest):.2g} at best): use {enough} or more a side")
    if median_interval([0.0] * min(fewest)) is None:
        enough = next(n for n in range(2, 64) if median_interval([0.0] * n) is not None)
        said.append(f"compare: a {CONFIDENCE:.0%} confidence interval of a median needs "
                    f"{enough} or more launches a side ({min(fewest)} here): none is printed")
    return said


def split_sides(inputs):
    """BASE... -- NEW... (or BASE NEW) -> ([base paths], [new paths])."""
    if SEPARATOR in inputs:
        at = inputs.index(SEPARATOR)
        base, new = inputs[:at], inputs[at + 1:]
        if SEPARATOR in new or not base or not new:
            raise Mismatch("expected BASE... -- NEW...: one '--' with files on both sides")
        return base, new
    if len(inputs) != 2:
        raise Mismatch(f"{len(inputs)} files without '--': give BASE NEW, or BASE... -- NEW...")
    return inputs[:1], inputs[1:]


def read_sides(base_paths, new_paths, across=()):
    sides = []
    kinds = set()
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


# Stands for the "--" between the sides while argparse reads the options (a path cannot hold
# a NUL byte, so it cannot be a file's name).
SEPARATOR = "\0--"


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scripts/compare", description=__doc__,
        usage="%(prog)s BASE... -- NEW... [--threshold PCT] [--gate-phases] [--across KEYS]"
              "  (or BASE NEW)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="FILE",
                        help="BASE NEW, or BASE... -- NEW...: JSON summaries or results CSVs")
    parser.add_argument("--threshold", type=float, default=5.0, metavar="PCT",
                        help="how much worse (percent) a gating figure may be (default: 5)")
    parser.add_argument("--gate-phases", action="store_true",
                        help="the phases' medians and p99s gate the verdict too")
    parser.add_argument("--across", default="", metavar="KEYS",
                        help="comma-separated config keys the sides may differ in (what is "
                             "being compared, e.g. depth)")
    # "--" ends argparse's options; here it separates the sides, so it is kept as a value.
    return parser.parse_intermixed_args([SEPARATOR if a == "--" else a for a in argv])


def main(argv):
    opts = parse_args(argv)
    if not opts.threshold >= 0:
        print("compare: --threshold must be a percentage >= 0", file=sys.stderr)
        return 2
    try:
        base_paths, new_paths = split_sides(opts.inputs)
        across = {k.strip() for k in opts.across.split(",") if k.strip()}
        base, new = read_sides(base_paths, new_paths, across)
        lines, failed, passes, counts, gates = compare_groups(base, new, opts)
    except Mismatch as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    print("\n".join(notes(counts, gates) + lines))
    gating = ", ".join(HEADLINE) + (" and every phase's median and p99" if opts.gate_phases
                                    else " (phases shown, not gating: --gate-phases)")
    test = (f"p <= {ALPHA:g}, Holm over {gates} figures" if min(min(pair) for pair in counts) >= 2
            else "beyond the runs' spread")
    verdict = (f"WORSE than {opts.threshold:g}% ({test}): "
               + "; ".join(f"{f} ({w})" for f, w in failed) if failed
               else f"none worse than {opts.threshold:g}% ({test})")
    print(f"compare: {verdict}; gating: {gating} of {', '.join(passes)}; "
          f"NEW {' '.join(new_paths)} against BASE {' '.join(base_paths)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
