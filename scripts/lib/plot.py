"""Plots a results CSV and a JSON summary's pairs as PNG figures (help/plot.txt says which)."""
import argparse
import math
import os
import statistics
import sys
import textwrap

import layout
import pair_plot
import tool
from results import CONFIG_COLUMNS, number, read_csv, size_text
from stats import median_interval
from tool import EXIT_USAGE, UsageError, run

# Config columns added after the first CSVs were written: a CSV without them still plots.
LATER_COLUMNS = {"graphs", "pattern", "group_size"}
# Columns that follow from others, never listed nor a reason to split a line: elements (sizes
# are shown in bytes), pairs (the receivers, from world_size and the pattern).
DERIVED = {"elements": "tensor_bytes", "pairs": "world_size"}
SIZE_COLUMNS = {"elements", "c_elements"}  # counts, shown as 256Ki
BYTE_COLUMNS = {"tensor_bytes", "chunk"}    # bytes, shown as 1 MiB
CROWDED = "oversubscribed"  # set on each row from its run's file (mark_oversubscribed)


def format_bytes(value):
    value = float(value)
    for suffix, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            count = value / scale
            return f"{count:.0f} {suffix}" if count == int(count) else f"{count:.3g} {suffix}"
    return f"{value:.0f} B"


def format_value(column, text):
    value = number(text)
    if value is not None and column in SIZE_COLUMNS:
        return size_text(value)
    if value is not None and column in BYTE_COLUMNS:
        return format_bytes(value).replace(" ", "")
    return text


def read_rows(path, include_failed):
    if not os.path.exists(path):
        raise UsageError(f"{path} not found")
    fieldnames, rows = read_csv(path)
    if fieldnames is None:
        raise UsageError(f"{path} is empty")
    if not rows:
        raise UsageError(f"{path} has a header but no rows")
    if not include_failed and "verified" in fieldnames:
        kept = [r for r in rows if r.get("verified") == "ok"]
        if len(kept) < len(rows):
            print(f"left out {len(rows) - len(kept)} rows whose verified is not 'ok' "
                  "(--include-failed keeps them)")
        if not kept:
            raise UsageError(f"{path}: no rows with verified=ok")
        rows = kept
    return rows, fieldnames


def distinct(rows, column):
    return sorted({r.get(column, "") for r in rows})


def other_columns(x_column):
    """The configuration columns but x and those that follow from x or from another column."""
    return [c for c in CONFIG_COLUMNS
            if c not in DERIVED and c not in (x_column, DERIVED.get(x_column))]


def fixed_config(rows, x_column):
    """'key=value ...' for the configuration columns that are the same in every row."""
    fixed = [(c, distinct(rows, c)) for c in other_columns(x_column)]
    return " ".join(f"{c}={format_value(c, values[0])}" for c, values in fixed
                    if len(values) == 1 and values[0] != "")


def split_columns(rows, x_column, base_columns):
    """The line key: base_columns, then every other config column that varies."""
    return list(base_columns) + [c for c in other_columns(x_column)
                                 if c not in base_columns and len(distinct(rows, c)) > 1]


# The figures whose 95% interval a row has of its own, from its steps, as NAME_lo and NAME_hi.
OWN_INTERVAL = {"time_per_step_ms", "transfer_gbps", "busbw_gbps", "aggregate_gbps",
                "overlap_speedup"}


class Point:
    """One configuration at one x: its launches' median, interval (`kind`: "ci95", "ratio" of two,
    "range", or None: one launch with none), how many launches, which MARKS they carry."""

    def __init__(self, x, median, low, high, rows, launches=None, kind="range"):
        self.x, self.median, self.low, self.high, self.kind = x, median, low, high, kind
        self.launches = len(rows) if launches is None else launches
        self.unstable = any(r.get("step_unstable") == "true" for r in rows)
        self.crowded = any(r.get(CROWDED) == "true" for r in rows)

    @classmethod
    def of(cls, x, values, rows, column):
        median = statistics.median(values)
        interval = median_interval(values)
        if interval:
            return cls(x, median, *interval, rows, kind="ci95")
        if len(values) == 1 and column in OWN_INTERVAL:
            low, high = (number(rows[0].get(f"{column}_{end}")) for end in ("lo", "hi"))
            if low is not None and high is not None:
                return cls(x, median, low, high, rows, kind="ci95")
        return cls(x, median, min(values), max(values), rows,
                   kind="range" if len(values) > 1 else None)


# What a point's launches may have been, drawn over it, named in the legend and on the terminal,
# so that no figure passes it off as ordinary: (Point attribute, marker style, legend text).
MARKS = [
    ("unstable", dict(marker="x", s=80, color="red", linewidths=1.5),
     "red x: a launch's step unstable (p90 over 1.10x its median)"),
    ("crowded", dict(marker="s", s=190, facecolors="none", edgecolors="black", linewidths=1),
     "square: oversubscribed (more ranks than a host's cores)"),
]
# Each line's marker and style in turn, the markers shrinking: lines that coincide stay visible.
LINE_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINE_STYLES = ["-", "--", "-.", ":"]


def withheld_rows(rows, y_column):
    """{reason: count} of the rows whose y_column the judgement withholds (an empty cell)."""
    reasons = {}
    for row in rows:
        if number(row.get(y_column)) is not None:
            continue
        named = dict(part.split(":", 1) for part in (row.get("withheld") or "").split(";")
                     if ":" in part)
        # The row's own rule, else the first reason its phase times (and all built on them) are out.
        reason = (named.get(y_column)
                  or (row.get("phase_times_unreadable_because") or "").split(";")[0])
        if reason:
            reasons[reason] = reasons.get(reason, 0) + 1
    return reasons


def say_withheld(ax, name, reasons, total):
    """Prints on the figure (and the terminal) how many points the judgement withheld, and why."""
    if not reasons:
        return
    count = sum(reasons.values())
    text = (f"{count} of {total} points withheld by gpurelay's judgement, not drawn: "
            + "; ".join(f"{reason} ({n})" for reason, n in reasons.items()))
    print(f"{name}: {text}")
    if count == total:  # nothing drawn: no scale to read either
        ax.set_xticks([])
        ax.set_yticks([])
    ax.text(0.5, 0.5 if count == total else 0.02,
            "\n".join(textwrap.wrap(text + " (the rules: docs/OUTPUT.md)", 70)),
            transform=ax.transAxes, ha="center", va="center" if count == total else "bottom",
            fontsize=9 if count == total else 8, color="dimgrey", gid="withheld")


def x_text(column, x):
    return format_value(column, str(int(x)) if x == int(x) else str(x))


def rows_on_lines(name, rows, x_column, y_column, base_columns):
    """The rows with x and y of configurations measured at two x or more; lone dots listed."""
    columns = split_columns(rows, x_column, base_columns)
    labels = line_labels(columns, list({tuple(r.get(c, "") for c in columns) for r in rows}))
    xs_of, missing = {}, []
    for row in rows:
        key = tuple(row.get(c, "") for c in columns)
        x, y = number(row.get(x_column)), number(row.get(y_column))
        if x is None or y is None:
            missing.append(labels[key])
        else:
            xs_of.setdefault(key, set()).add(x)
    if missing:
        print(f"{name}: left out {len(missing)} row(s) without a {x_column} and a {y_column}: "
              + "; ".join(missing))
    kept = {key for key, xs in xs_of.items() if len(xs) > 1}
    if not kept:
        print(f"{name}: no configuration was measured at two {x_column} values; "
              "plotting single points")
        return rows
    lone = sorted(set(xs_of) - kept, key=natural_key)
    if lone:
        print(f"{name}: left out {len(lone)} configuration(s) measured at one {x_column} only "
              "(a lone point each): " + "; ".join(
                  f"{labels[key]} at {x_text(x_column, min(xs_of[key]))}" for key in lone))
    return [r for r in rows if tuple(r.get(c, "") for c in columns) in kept]


def points(rows, x_column, y_column, line_columns):
    """{line key: [Point, x ascending]} over the rows with both values."""
    groups = {}
    for row in rows:
        x, y = number(row.get(x_column)), number(row.get(y_column))
        if x is not None and y is not None:
            key = tuple(row.get(c, "") for c in line_columns)
            groups.setdefault(key, {}).setdefault(x, []).append((y, row))
    return {key: [Point.of(x, [y for y, _ in found], [r for _, r in found], y_column)
                  for x, found in sorted(by_x.items())] for key, by_x in groups.items()}


def labelled(groups, line_columns, label_keys=None, always=()):
    """{line label: [Point]} in natural order, labelled alike over label_keys (default: these)."""
    labels = line_labels(line_columns, list(label_keys if label_keys is not None else groups),
                         always)
    return {labels[key]: groups[key] for key in sorted(groups, key=natural_key)}


def on_off_speedup(rows, x_column, line_columns):
    """{line key: [Point]}: per configuration (without overlap) and x run both on and off, the
    median off time per step over the on one, from low off / high on to high off / low on."""
    columns = list(line_columns) + ["overlap"]
    times = points([r for r in rows if r.get("overlap") in ("on", "off")], x_column,
                   "time_per_step_ms", columns)
    with_rows = {}
    for row in rows:
        key = tuple(row.get(c, "") for c in columns)
        with_rows.setdefault((key, number(row.get(x_column))), []).append(row)
    result = {}
    for key, on_points in times.items():
        off = {p.x: p for p in times.get(key[:-1] + ("off",), [])} if key[-1] == "on" else {}
        for on in (p for p in on_points if p.x in off and p.low > 0):
            both = with_rows[(key, on.x)] + with_rows[(key[:-1] + ("off",), on.x)]
            kinds = {on.kind, off[on.x].kind}
            result.setdefault(key[:-1], []).append(Point(
                on.x, off[on.x].median / on.median, off[on.x].low / on.high,
                off[on.x].high / on.low, both, min(on.launches, off[on.x].launches),
                "ratio" if kinds == {"ci95"} else None if None in kinds else "range"))
    return result


def natural_key(values):
    """Sorts line keys with numbers in numeric order (c_iterations 8 before 64)."""
    return tuple((0, number(v), "") if number(v) is not None else (1, 0.0, v) for v in values)


def line_labels(columns, keys, always=()):
    """{key: "col=value ..."} of the columns in `always` and those that differ (the title holds
    the rest); every column when that leaves none."""
    varied = [i for i in range(len(columns))
              if columns[i] in always or len({key[i] for key in keys}) > 1]
    if not varied:
        varied = [i for i in range(len(columns)) if any(key[i] for key in keys)]
    return {key: " ".join(f"{columns[i]}={format_value(columns[i], key[i])}" for i in varied)
            or "all rows" for key in keys}


def title_text(ax_or_fig, title, fixed, is_figure=False):
    text = title + ("\n" + "\n".join(textwrap.wrap(fixed, 90)) if fixed else "")
    (ax_or_fig.suptitle if is_figure else ax_or_fig.set_title)(text, fontsize=10)


def bytes_axis(ax, xs):
    """log2 axis with KiB/MiB/GiB tick labels at powers of two (at most ~10 of them)."""
    from matplotlib.ticker import FixedLocator, NullLocator
    ax.set_xscale("log", base=2)
    low, high = math.floor(math.log2(min(xs))), math.ceil(math.log2(max(xs)))
    ticks = [2.0 ** e for e in range(low, high + 1, max(1, math.ceil((high - low + 1) / 10)))]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([format_bytes(t) for t in ticks], rotation=30, ha="right")


def count_axis(ax, xs):
    """log2 for a wide range of positive values, else linear; ticks at the values used."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter
    values = sorted(set(xs))
    if values[0] > 0 and values[-1] / values[0] >= 8:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
    if len(values) <= 12:
        ax.xaxis.set_major_locator(FixedLocator(values))
    formatter = ScalarFormatter()
    formatter.set_scientific(False)
    ax.xaxis.set_major_formatter(formatter)


def every_point(*datas):
    return [p for data in datas for line in data.values() for p in line]


def skip_single(name, x_column, rows, y_column):
    """True (said) when the rows hold fewer than two values of x_column."""
    xs = sorted({number(r.get(x_column)) for r in rows
                 if number(r.get(x_column)) is not None and number(r.get(y_column)) is not None})
    if len(xs) > 1:
        return False
    shown = f" ({x_text(x_column, xs[0])})" if xs else ""
    print(f"skip {name}: {x_column} has {len(xs)} distinct value{shown} in the rows; "
          "nothing to plot against")
    return True


def draw_line(ax, label, line, index=0, **style):
    """A line through the medians, each interval a bar, MARKS over their points; its colour."""
    style = {"marker": LINE_MARKERS[index % len(LINE_MARKERS)], "markersize": 9 - 1.5 * (index % 4),
             "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
             "markerfacecolor": "none" if index % 2 else None, **style}
    (drawn,) = ax.plot([p.x for p in line], [p.median for p in line], label=label, **style)
    colour = drawn.get_color()
    ax.errorbar([p.x for p in line], [p.median for p in line],
                yerr=[[p.median - p.low for p in line], [p.high - p.median for p in line]],
                fmt="none", ecolor=colour, capsize=3, gid="interval")
    for mark, mark_style, _ in MARKS:
        chosen = [p for p in line if getattr(p, mark)]
        if chosen:
            ax.scatter([p.x for p in chosen], [p.median for p in chosen], zorder=3, gid=mark,
                       **mark_style)
    return colour


# What each kind of Point's bar means, in the legend where one is drawn.
BARS = [("ci95", "bar: 95% interval of the median (6 or more launches: of their median; one "
                 "launch: from its steps)"),
        ("ratio", "bar: the off point's interval over the on point's (at least 90%)"),
        ("range", "bar: least to largest (2 to 5 launches: no 95% interval)")]


def legend(ax, shown, below=False):
    """The lines, then what each bar and mark on `shown` means, beside (or below) the axes."""
    from matplotlib.lines import Line2D
    handles, labels = ax.get_legend_handles_labels()
    for kind, text in BARS:
        if any(p.kind == kind for p in shown):
            handles.append(Line2D([], [], color="grey", marker="_", markersize=10))
            labels.append(text)
    for mark, mark_style, text in MARKS:
        if any(getattr(p, mark) for p in shown):
            handles.append(ax.scatter([], [], **mark_style))
            labels.append(text)
    if handles:
        ax.legend(handles, labels, fontsize=7,
                  **(dict(loc="upper center", bbox_to_anchor=(0.5, -0.1)) if below
                     else dict(loc="upper left", bbox_to_anchor=(1.01, 1.0))))


def note_points(name, data, x_column):
    """Which points are medians of repeats, and which carry each mark, named."""
    shown = every_point(data)
    medians = sum(1 for p in shown if p.launches > 1)
    if medians:
        print(f"{name}: {medians} points are medians of repeated runs, with their 95% intervals "
              f"({sum(1 for p in shown if p.launches > 1 and p.kind == 'range')} of them, of 2 "
              "to 5 launches, least to largest)")
    for mark, _, text in MARKS:
        found = {label: [x_text(x_column, p.x) for p in line if getattr(p, mark)]
                 for label, line in data.items()}
        count = sum(len(xs) for xs in found.values())
        if count:
            print(f"{name}: {text}, {count} point(s): " + "; ".join(
                f"{label} at {', '.join(xs)}" for label, xs in found.items() if xs))


def plot_lines(rows, out_dir, plt, name, x_column, y_column, axis, labels,
               line_base=("transport", "backend")):
    """A line per line_base (and varying column): y against x; labels: (x, y, title)."""
    if skip_single(name, x_column, rows, x_column):
        return None
    withheld = withheld_rows(rows, y_column)
    shown_rows = [r for r in rows if number(r.get(y_column)) is not None]
    data = {}
    if shown_rows and not skip_single(name, x_column, shown_rows, y_column):
        shown_rows = rows_on_lines(name, shown_rows, x_column, y_column, list(line_base))
        lines = split_columns(shown_rows, x_column, list(line_base))
        data = labelled(points(shown_rows, x_column, y_column, lines), lines)
    if not data and not withheld:
        return None
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for index, (label, line) in enumerate(data.items()):
        draw_line(ax, label, line, index)
    shown = every_point(data)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ys = [v for p in shown for v in (p.low, p.high)]
    if shown:
        axis(ax, sorted({p.x for p in shown}))
        # y from 0, or logarithmic where the values, all positive, span two decades or more.
        if min(ys) > 0 and max(ys) / min(ys) >= 100:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    say_withheld(ax, name, withheld, len(rows))
    legend(ax, shown)
    title_text(ax, labels[2], fixed_config(rows, x_column))
    note_points(name, data, x_column)
    print(f"{name}: lines: " + "; ".join(data))
    return save(fig, out_dir, name, plt)


def plot_bandwidth(rows, out_dir, plt):
    return plot_lines(rows, out_dir, plt, "bandwidth_vs_size.png", "tensor_bytes",
                      "transfer_gbps", bytes_axis,
                      ("tensor size (bytes, log2 scale)",
                       "transfer bandwidth (GB/s, 1 GB = 1e9 bytes)",
                       "Transfer bandwidth vs tensor size"))


def plot_bus_bandwidth(rows, out_dir, plt):
    """nccl-tests' bus bandwidth against size, a line per pattern (rows with a busbw_gbps)."""
    rows = [r for r in rows if r.get("busbw_gbps") is not None]
    name = "bus_bandwidth_vs_size.png"
    # Where the judgement withholds every busbw, the patterns say whether it would differ.
    shown = [r for r in rows if r["busbw_gbps"]]
    if (all(r["busbw_gbps"] == r.get("algbw_gbps", r["transfer_gbps"]) for r in shown) if shown
            else all(r.get("pattern", "pairs") != "allreduce" for r in rows)):
        print(f"skip {name}: the bus bandwidth equals the algorithm bandwidth in every row "
              "(pairs, broadcast); bandwidth_vs_size.png shows it")
        return None
    return plot_lines(rows, out_dir, plt, name, "tensor_bytes", "busbw_gbps", bytes_axis,
                      ("tensor size (bytes, log2 scale)", "bus bandwidth (GB/s, nccl-tests' busbw)",
                       "Bus bandwidth vs tensor size, per pattern"),
                      line_base=("pattern", "transport", "backend"))


def overlap_speedups(rows, x_column, lines):
    """{label: [Point]} of compare rows' overlap_speedup and of on rows against off rows, one
    legend for both."""
    speedup_lines = [c for c in lines if c != "overlap"]
    compare_rows = [r for r in rows if r.get("overlap") == "compare"]
    groups = {key + ("compare",): line for key, line in
              points(compare_rows, x_column, "overlap_speedup", speedup_lines).items()}
    for key, line in on_off_speedup(rows, x_column, speedup_lines).items():
        groups[key + ("on/off",)] = line
    return labelled(groups, speedup_lines + ["from"], always=("from",))


def plot_overlap(rows, out_dir, plt):
    name = "overlap.png"
    x_column = "c_iterations"
    if skip_single(name, x_column, rows, "time_per_step_ms"):
        return None
    rows = rows_on_lines(name, rows, x_column, "time_per_step_ms", ["overlap", "transport"])
    lines = split_columns(rows, x_column, ["overlap", "transport"])
    times = points(rows, x_column, "time_per_step_ms", lines)
    data = labelled(times, lines)
    # A compare run's no-overlap time, labelled as its own line is, in its colour, dashed.
    sequential = labelled(points([r for r in rows if r.get("overlap") == "compare"], x_column,
                                 "time_per_step_no_overlap_ms", lines), lines, label_keys=times)
    fig, (time_ax, speedup_ax) = plt.subplots(1, 2, figsize=(13, 8), layout="constrained")
    colours = {}
    for index, (label, line) in enumerate(data.items()):
        shown = label + (" (overlapped)" if label in sequential else "")
        colours[label] = draw_line(time_ax, shown, line, index)
    for index, (label, line) in enumerate(sequential.items()):
        draw_line(time_ax, label + " (no overlap)", line, index, linestyle="--",
                  color=colours.get(label))
    time_ax.set_ylabel("time per step (ms)")
    time_ax.set_ylim(bottom=0)
    time_ax.set_title("Time per step", fontsize=10)
    speedup = overlap_speedups(rows, x_column, lines)
    for index, (label, line) in enumerate(speedup.items()):
        draw_line(speedup_ax, label, line, index)
    if speedup:
        # 1.0 in sight, every point's range and at least 0.9 to 1.1: a few percent stays a few.
        low = min([p.low for p in every_point(speedup)] + [0.9])
        high = max([p.high for p in every_point(speedup)] + [1.1])
        speedup_ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        speedup_ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":",
                           label="1.0: overlap gains nothing")
    else:
        speedup_ax.text(0.5, 0.5, "no overlap=compare rows, nor on and off rows of one "
                        "configuration", ha="center", va="center", wrap=True,
                        transform=speedup_ax.transAxes)
    speedup_ax.set_ylabel("speedup (no-overlap time / overlapped time)")
    speedup_ax.set_title("Overlap speedup (from: compare rows, or on/off rows)", fontsize=10)
    for ax, shown in ((time_ax, every_point(data, sequential)), (speedup_ax, every_point(speedup))):
        count_axis(ax, sorted({p.x for p in every_point(data)}))
        ax.set_xlabel("kernel C iterations (c_iterations)")
        ax.grid(True, alpha=0.3)
        legend(ax, shown, below=True)
    title_text(fig, "Overlap of the transfer with kernel C", fixed_config(rows, x_column),
               is_figure=True)
    note_points(name, {**data, **{k + " (no overlap)": v for k, v in sequential.items()}}, x_column)
    print(f"{name}: lines: " + "; ".join(data))
    note_points(name + " speedup", speedup, x_column)
    print(f"{name}: speedup lines: " + "; ".join(speedup))
    return save(fig, out_dir, name, plt)


def plot_scaling(rows, out_dir, plt):
    # Against the ranks, alike in every pattern: pairs counts receivers (3 for a 4-rank broadcast).
    return plot_lines(rows, out_dir, plt, "scaling.png", "world_size", "aggregate_gbps",
                      count_axis,
                      ("ranks (world_size)",
                       "aggregate bandwidth into all receivers (GB/s, 1 GB = 1e9 bytes)",
                       "Aggregate bandwidth vs ranks"),
                      line_base=("pattern", "transport", "backend"))


def file_oversubscribed(path, world_size):
    """'true'/'false': whether a host ran more ranks than its cores (the run's file); '' unknown."""
    try:
        import h5py
        with h5py.File(path, "r") as f:
            if int(f.attrs["world_size"]) != world_size:
                return ""  # the name was reused by a later run
            hosts, cores = (str(f.attrs[k], "utf-8") if isinstance(f.attrs[k], bytes)
                            else str(f.attrs[k]) for k in ("rank_hosts", "rank_cores"))
    except (ImportError, OSError, KeyError, ValueError):
        return ""
    ranks, usable = {}, {}
    for host, allowed in zip(hosts.split(","), cores.split(";")):
        ranks[host] = ranks.get(host, 0) + 1
        host_cores = usable.setdefault(host, set())
        for part in filter(None, allowed.split(",")):  # "0-3,8"
            first, _, last = part.partition("-")
            host_cores.update(range(int(first), int(last or first) + 1))
    if not all(usable.values()):
        return ""
    return "true" if any(ranks[h] > len(usable[h]) for h in ranks) else "false"


def mark_oversubscribed(rows, csv_path):
    """Sets each row's CROWDED from its run's file (output column, as given or beside the CSV)."""
    known = {}
    for row in rows:
        path = row.get("output") or ""
        if not os.path.isabs(path) and not os.path.exists(path):
            path = os.path.join(os.path.dirname(os.path.abspath(csv_path)), path)
        key = (path, row.get("world_size"))
        if key not in known:
            known[key] = file_oversubscribed(path, int(number(row.get("world_size")) or 0))
        row[CROWDED] = known[key]
    unknown = sum(1 for r in rows if r[CROWDED] == "")
    if unknown:
        print(f"oversubscription not known for {unknown} of {len(rows)} rows: their files (the "
              "output column) are gone, another run's, or h5py is missing")


def save(fig, out_dir, name, plt):
    path = os.path.join(out_dir, name)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    # "tight": the legends beside and below the axes are part of the figure.
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="scripts/plot", add_help=False)
    parser.add_argument("-h", "--help", action=tool.Help)
    parser.add_argument("--csv")
    parser.add_argument("--json", action="append", default=[], metavar="SUMMARY")
    parser.add_argument("--out-dir", default=layout.outputs("plots"))
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE")
    parser.add_argument("--include-failed", action="store_true")
    args = parser.parse_args(argv)
    if not args.csv and not args.json:
        parser.error("give --csv RESULTS.csv, --json SUMMARY.json, or both")
    return args


def csv_rows(args):
    """The rows to plot: verified (unless --include-failed), those --where picks."""
    rows, fieldnames = read_rows(args.csv, args.include_failed)
    for condition in args.where:
        column, equals, value = condition.partition("=")
        if not equals or not column:
            raise UsageError(f"--where '{condition}': expected COLUMN=VALUE")
        if column not in fieldnames:
            raise UsageError(f"--where '{condition}': no column {column} in {args.csv}")
        rows = [r for r in rows if r.get(column) == value]
        if not rows:
            raise UsageError(f"--where '{condition}': no rows left")
    required = [c for c in CONFIG_COLUMNS if c not in LATER_COLUMNS] + [
        "transfer_gbps", "aggregate_gbps", "time_per_step_ms", "time_per_step_no_overlap_ms",
        "overlap_speedup"]
    missing = [c for c in required if c not in fieldnames]
    if missing:
        raise UsageError(f"{args.csv}: missing column(s) {', '.join(missing)}; is it a gpurelay "
                         "results CSV?")
    return rows


def main(argv):
    args = parse_args(argv)
    rows = csv_rows(args) if args.csv else []
    summaries = [pair_plot.read_summary(path) for path in args.json]
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display on clusters and CI
        import matplotlib.pyplot as plt
    except ImportError as err:
        print(f"plot: {err}; install python3-matplotlib (scripts/install-deps.sh) or point "
              "GPURELAY_PYTHON at a Python that has it", file=sys.stderr)
        return EXIT_USAGE

    os.makedirs(args.out_dir, exist_ok=True)
    written = []
    if rows:
        mark_oversubscribed(rows, args.csv)
        for plot in (plot_bandwidth, plot_overlap, plot_scaling, plot_bus_bandwidth):
            written.append(plot(rows, args.out_dir, plt))
    for path, summary in zip(args.json, summaries):
        source = os.path.splitext(os.path.basename(path))[0] if len(args.json) > 1 else ""
        written += pair_plot.plot_pairs(path, summary, args.out_dir, plt, save, source)
    written = [path for path in written if path]
    if written:
        print("wrote:\n" + "\n".join(f"  {path}" for path in written))
    else:
        print("no figures written: every x column has a single value in these rows")
    return 0


if __name__ == "__main__":
    run("plot", main)
