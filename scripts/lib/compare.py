"""Compares two gpurelay results: two JSON summaries (--summary-json) or two results CSVs
(--results-csv), the second against the first, figure by figure.

usage: scripts/compare BASE NEW [--threshold PCT]

For each figure it prints BASE, NEW, NEW / BASE and whether lower or higher is better: the time
per step, each phase's median and p99, and the transfer GB/s (of the last pass of a JSON summary;
of each row of a CSV, rows matched by their configuration columns). A summary of several sizes
(one launch of --elements S1,S2,...: its "cases") is compared case by case, cases matched by
their size; a single-size summary is one case. A figure either file lacks (an older file, a
phase that did not run) is left out.

Exit status: 0 when no figure is more than PCT percent worse (default 5), 1 when one is, 2 when
the inputs cannot be compared (unreadable, of different kinds, of different configurations, or
with a size that one of them lacks), with a one-line reason on stderr.
"""
import argparse
import csv
import json
import math
import sys

# Config keys that say where a run's outputs went or how it was watched, not what it measured:
# two runs that differ only in these are the same benchmark.
NOT_CONFIGURATION = {"output", "overwrite", "resume", "summary_json", "results_csv", "quiet",
                     "tag", "timeout_s", "profile_steps", "flush_every"}
# The results CSV's columns that make a row's configuration (those of them that both files have).
CSV_CONFIGURATION = ["world_size", "pairs", "backend", "transport", "dtype", "elements", "steps",
                     "warmup", "depth", "overlap", "blocking", "graphs", "c_elements",
                     "c_iterations", "pairing", "chunk", "pattern", "group_size", "timing"]
CSV_PHASES = ["a", "send", "recv", "c", "wait", "b"]


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


def json_figures(summary):
    """[(name, value, lower_is_better)] of the summary's last pass (the compare run's overlapped
    one)."""
    p = summary["passes"][-1]
    figures = [("time_per_step_ms", number(p.get("time_per_step_ms")), True)]
    for phase, stats in (p.get("phases_ms") or {}).items():
        for stat in ("median", "p99"):
            figures.append((f"{phase}_ms_{stat}", number(stats.get(stat)), True))
    figures.append(("transfer_gbps", number(p.get("transfer_gbps")), False))
    return figures


def json_configuration(summary):
    config = {k: v for k, v in (summary.get("config") or {}).items()
              if k not in NOT_CONFIGURATION}
    config["world_size"] = summary.get("world_size")
    return config


def csv_columns():
    """[(figure, column, lower_is_better)]: the CSV names a phase's median PHASE_ms."""
    columns = [("time_per_step_ms", "time_per_step_ms", True),
               ("step_ms_median", "step_ms_median", True), ("step_ms_p99", "step_ms_p99", True)]
    for phase in CSV_PHASES:
        columns.append((f"{phase}_ms_median", f"{phase}_ms", True))
        columns.append((f"{phase}_ms_p99", f"{phase}_ms_p99", True))
    return columns + [("transfer_gbps", "transfer_gbps", False)]


def csv_figures(row):
    return [(figure, number(row.get(column)), lower) for figure, column, lower in csv_columns()]


def compare_figures(base, new, threshold):
    """Table lines and whether any figure is more than `threshold` percent worse."""
    new_values = {name: value for name, value, _ in new}
    lines, worse = [], False
    for name, b, lower in base:
        n = new_values.get(name)
        if b is None or n is None or b == 0:
            continue
        ratio = n / b
        change = (ratio - 1.0) * 100.0 if lower else (1.0 - ratio) * 100.0
        verdict = ""
        if change > threshold:
            verdict, worse = f"WORSE by {change:.1f}%", True
        elif change < -threshold:
            verdict = f"better by {-change:.1f}%"
        lines.append(f"  {name:<18} {'lower' if lower else 'higher':<6} {b:>12.6g} {n:>12.6g}"
                     f" {ratio:>8.3f}  {verdict}".rstrip())
    return lines, worse


def table_head():
    return f"  {'figure':<18} {'better':<6} {'base':>12} {'new':>12} {'new/base':>8}"


def check_configurations(base, new):
    b_config, n_config = json_configuration(base), json_configuration(new)
    differ = sorted(k for k in set(b_config) | set(n_config) if b_config.get(k) != n_config.get(k))
    if differ:
        k = differ[0]
        raise Mismatch(f"different configurations: {k} = {b_config.get(k)!r} in BASE, "
                       f"{n_config.get(k)!r} in NEW" + (f" (and {len(differ) - 1} more)"
                                                        if len(differ) > 1 else ""))


def cases_by_size(cases, name):
    """{config.elements: case}, in the file's order."""
    by_size = {}
    for case in cases:
        size = (case.get("config") or {}).get("elements")
        if size in by_size:
            raise Mismatch(f"{name} has two cases of elements = {size!r}")
        by_size[size] = case
    return by_size


def compare_json(base, new, threshold):
    """Case by case, matched by size; every size must be in both."""
    b_by, n_by = cases_by_size(base, "BASE"), cases_by_size(new, "NEW")
    if len(b_by) == 1 and len(n_by) == 1:
        # One size each: compared as they are, so that a different size says so below.
        b_by, n_by = {None: base[0]}, {None: new[0]}
    for ours, theirs, name in ((b_by, n_by, "BASE"), (n_by, b_by, "NEW")):
        missing = [size for size in ours if size not in theirs]
        if missing:
            raise Mismatch(f"different sizes: elements = {missing[0]!r} in {name} only"
                           + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    out, worse = [], False
    for size, b_case in b_by.items():
        check_configurations(b_case, n_by[size])
        if size is not None:
            out.append(f"elements={size}:")
        lines, case_worse = compare_figures(json_figures(b_case), json_figures(n_by[size]),
                                            threshold)
        out += [table_head()] + lines
        worse = worse or case_worse
    return out, worse


def compare_csv(base, new, threshold):
    (b_header, b_rows), (n_header, n_rows) = base, new
    keys = [k for k in CSV_CONFIGURATION if k in b_header and k in n_header]
    def by_key(rows):
        # A configuration run twice: its last row (sweeps append) is the one compared.
        return {tuple(r.get(k, "") for k in keys): r for r in rows}
    b_by, n_by = by_key(b_rows), by_key(n_rows)
    for ours, theirs, name in ((b_by, n_by, "NEW"), (n_by, b_by, "BASE")):
        missing = [key for key in ours if key not in theirs]
        if missing:
            described = " ".join(f"{k}={v}" for k, v in zip(keys, missing[0]))
            raise Mismatch(f"different configurations: no row in {name} for {described}")
    varying = [i for i, k in enumerate(keys) if len({key[i] for key in b_by}) > 1]
    out, worse = [], False
    for key, b_row in b_by.items():
        if varying:
            out.append(" ".join(f"{keys[i]}={key[i]}" for i in varying) + ":")
        lines, row_worse = compare_figures(csv_figures(b_row), csv_figures(n_by[key]),
                                           threshold)
        out += [table_head()] + lines
        worse = worse or row_worse
    return out, worse


def main(argv):
    parser = argparse.ArgumentParser(
        prog="scripts/compare",
        description="Compare two gpurelay JSON summaries or two results CSVs (NEW against BASE).",
        epilog="Exit status: 0 none worse, 1 a figure worse than the threshold, 2 inputs that "
               "cannot be compared.")
    parser.add_argument("base", metavar="BASE")
    parser.add_argument("new", metavar="NEW")
    parser.add_argument("--threshold", type=float, default=5.0, metavar="PCT",
                        help="how much worse (percent) a figure may be (default: 5)")
    opts = parser.parse_args(argv)
    if not opts.threshold >= 0:
        print("compare: --threshold must be a percentage >= 0", file=sys.stderr)
        return 2
    try:
        b_kind, base = read_input(opts.base)
        n_kind, new = read_input(opts.new)
        if b_kind != n_kind:
            raise Mismatch(f"different kinds of file: BASE is a {b_kind.upper()}, "
                           f"NEW a {n_kind.upper()}")
        compare = compare_json if b_kind == "json" else compare_csv
        lines, worse = compare(base, new, opts.threshold)
    except Mismatch as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    verdict = f"worse than {opts.threshold:g}%" if worse else f"none worse than {opts.threshold:g}%"
    print(f"compare: {verdict} (NEW {opts.new} against BASE {opts.base})")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
