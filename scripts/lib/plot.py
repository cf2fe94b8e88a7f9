"""Plots a gpurelay results CSV (one row per run and size: a run of several sizes, such as each
launch of scripts/sweep, writes a row per size, all with its tag) as PNG figures.

  bandwidth_vs_size.png  transfer_gbps vs tensor_bytes, one line per transport/backend
  overlap.png            time_per_step_ms and the overlap speedup vs c_iterations, one line
                         per overlap mode / transport; the speedup from overlap=compare rows
                         (their overlap_speedup) and from overlap=on and =off rows of the same
                         configuration (off's time per step / on's)
  scaling.png            aggregate_gbps (the bytes all receivers get per step over the time per
                         step) vs world_size (ranks), one line per transport/backend, and
                         per pattern where it varies
  bus_bandwidth_vs_size.png
                         busbw_gbps (nccl-tests' bus bandwidth: the algorithm bandwidth
                         bytes / time, x 1 for pairs and broadcast, x 2(n-1)/n for an
                         all-reduce over n ranks) vs tensor_bytes, one line per pattern
                         (pairs, broadcast, allreduce) and transport/backend

Each title lists the configuration held fixed in the plotted rows; a configuration column that
varies and is not the x axis splits the lines further (shown in the legend), so no point mixes
different configurations. Legends name every key that varies between the lines (key=value).
Repeated runs of one configuration (scripts/sweep --repeat: rows tagged repeat=K) are plotted
as their median, with a bar from the least to the largest of them. Sizes are shown in bytes
(tensor_bytes), on the axes and in the legends; an axis whose values span two decades or more
is logarithmic. The bus bandwidth figure is left out when it would repeat the transfer
bandwidth (every row's busbw equals its algbw: pairs and broadcasts).
A figure whose x column has a single value is skipped with a message.
"""

import argparse
import csv
import math
import os
import statistics
import sys
import textwrap

EXIT_USAGE = 2

# The columns that describe a run's configuration (the rest are measurements or provenance).
CONFIG_COLUMNS = [
    "world_size", "pairs", "backend", "transport", "gpu_name", "dtype", "elements",
    "tensor_bytes", "steps", "warmup", "depth", "overlap", "blocking", "graphs", "c_elements",
    "c_iterations", "pairing", "chunk", "pattern", "group_size",
]
# Config columns added after the first CSVs were written: a CSV without them still plots.
LATER_COLUMNS = {"graphs", "pattern", "group_size"}
# Columns that follow from others: elements = tensor_bytes / dtype size (sizes are shown in
# bytes), and pairs (the receivers: world_size / 2 for pairs, the ranks but each group's root
# for a broadcast, every rank for an all-reduce) from world_size and the pattern. Never listed
# on their own, never a reason to split a line.
DERIVED = {"elements": "tensor_bytes", "pairs": "world_size"}
SIZE_COLUMNS = {"elements", "c_elements"}  # counts, shown as 256Ki
BYTE_COLUMNS = {"tensor_bytes", "chunk"}    # bytes, shown as 1 MiB


class UsageError(Exception):
    pass


def as_float(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def format_count(value):
    value = int(value)
    for suffix, scale in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return str(value)


def format_bytes(value):
    value = float(value)
    for suffix, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            number = value / scale
            text = f"{number:.0f}" if number == int(number) else f"{number:.3g}"
            return f"{text} {suffix}"
    return f"{value:.0f} B"


def format_value(column, text):
    number = as_float(text)
    if column in SIZE_COLUMNS and not math.isnan(number):
        return format_count(number)
    if column in BYTE_COLUMNS and not math.isnan(number):
        return format_bytes(number).replace(" ", "")
    return text


def read_rows(path, include_failed):
    if not os.path.exists(path):
        raise UsageError(f"{path} not found")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            raise UsageError(f"{path} is empty")
        rows = list(reader)
    if not rows:
        raise UsageError(f"{path} has a header but no rows")
    if not include_failed and "verified" in reader.fieldnames:
        kept = [r for r in rows if r.get("verified") == "ok"]
        if len(kept) < len(rows):
            print(f"left out {len(rows) - len(kept)} rows whose verified is not 'ok' "
                  "(--include-failed keeps them)")
        if not kept:
            raise UsageError(f"{path}: no rows with verified=ok")
        rows = kept
    return rows, reader.fieldnames


def select_rows(rows, fieldnames, conditions, path):
    for condition in conditions:
        column, equals, value = condition.partition("=")
        if not equals or not column:
            raise UsageError(f"--where '{condition}': expected COLUMN=VALUE")
        if column not in fieldnames:
            raise UsageError(f"--where '{condition}': no column {column} in {path}")
        rows = [r for r in rows if r.get(column) == value]
        if not rows:
            raise UsageError(f"--where '{condition}': no rows left")
    return rows


def require(fieldnames, columns, path):
    missing = [c for c in columns if c not in fieldnames]
    if missing:
        raise UsageError(f"{path}: missing column(s) {', '.join(missing)}; is it a gpurelay "
                         "results CSV?")


def distinct(rows, column):
    return sorted({r.get(column, "") for r in rows})


def fixed_config(rows, x_column):
    """'key=value ...' for the configuration columns that are the same in every row."""
    parts = []
    for column in CONFIG_COLUMNS:
        if column == x_column or column in DERIVED or DERIVED.get(x_column) == column:
            continue
        values = distinct(rows, column)
        if len(values) == 1 and values[0] != "":
            parts.append(f"{column}={format_value(column, values[0])}")
    return " ".join(parts)


def split_columns(rows, x_column, base_columns):
    """The line key: base_columns, then every other config column that varies."""
    columns = list(base_columns)
    for column in CONFIG_COLUMNS:
        if column in columns or column == x_column or column in DERIVED:
            continue
        if DERIVED.get(x_column) == column:
            continue
        if len(distinct(rows, column)) > 1:
            columns.append(column)
    return columns


def rows_on_lines(name, rows, x_column, y_column, base_columns):
    """The rows of configurations measured at two or more x values: a configuration seen at
    one x only (another study's row in a shared CSV) would be a lone dot, so it is left out."""
    columns = split_columns(rows, x_column, base_columns)
    xs_of = {}
    for row in rows:
        x, y = as_float(row.get(x_column)), as_float(row.get(y_column))
        if not (math.isnan(x) or math.isnan(y)):
            xs_of.setdefault(tuple(row.get(c, "") for c in columns), set()).add(x)
    kept_keys = {key for key, xs in xs_of.items() if len(xs) > 1}
    if not kept_keys:
        # Every configuration is a lone dot: show them all rather than nothing.
        print(f"{name}: no configuration was measured at two {x_column} values; "
              "plotting single points")
        return rows
    left_out = len(xs_of) - len(kept_keys)
    if left_out:
        print(f"{name}: left out {left_out} configuration(s) measured at one {x_column} only")
    return [r for r in rows if tuple(r.get(c, "") for c in columns) in kept_keys]


def grouped(rows, x_column, y_column, line_columns):
    """{line key: {x: [y, ...]}} over the rows with both values."""
    groups = {}
    for row in rows:
        x, y = as_float(row.get(x_column)), as_float(row.get(y_column))
        if math.isnan(x) or math.isnan(y):
            continue
        key = tuple(row.get(c, "") for c in line_columns)
        groups.setdefault(key, {}).setdefault(x, []).append(y)
    return groups


def labelled(groups, line_columns, label_keys=None, always=(), with_range=False):
    """{line label: ([x], [median y])}, x ascending, from grouped(); and how many points were
    medians of repeated runs. The labels name the columns that vary over label_keys (default:
    the groups' keys), so that two panels can label their lines alike. with_range adds each
    point's least and largest y: ([x], [median], [min], [max])."""
    result = {}
    medians = 0
    labels = line_labels(line_columns, list(label_keys if label_keys is not None else groups),
                         always)
    for key in sorted(groups, key=natural_key):
        points = groups[key]
        xs = sorted(points)
        medians += sum(1 for x in xs if len(points[x]) > 1)
        result[labels[key]] = (xs, [statistics.median(points[x]) for x in xs])
        if with_range:
            result[labels[key]] += ([min(points[x]) for x in xs], [max(points[x]) for x in xs])
    return result, medians


def series(rows, x_column, y_column, line_columns):
    """{line label: ([x], [median y], [min y], [max y])}, x ascending; and how many points were
    medians."""
    return labelled(grouped(rows, x_column, y_column, line_columns), line_columns,
                    with_range=True)


def value_axis(ax, ys):
    """y from 0, or logarithmic where the positive values span two decades or more."""
    positive = [y for y in ys if y > 0]
    if positive and len(positive) == len(ys) and max(positive) / min(positive) >= 100:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


def on_off_speedup(rows, x_column, line_columns):
    """{line key: {x: [speedup]}}: for each configuration (line_columns, without overlap) and x
    run with both overlap=on and overlap=off, the median off time per step over the median on
    time per step."""
    columns = list(line_columns) + ["overlap"]
    times = grouped([r for r in rows if r.get("overlap") in ("on", "off")], x_column,
                    "time_per_step_ms", columns)
    result = {}
    for key, points in times.items():
        if key[-1] != "on":
            continue
        off = times.get(key[:-1] + ("off",), {})
        for x, on_times in points.items():
            if x in off and statistics.median(on_times) > 0:
                result.setdefault(key[:-1], {})[x] = [
                    statistics.median(off[x]) / statistics.median(on_times)]
    return result


def natural_key(values):
    """Sorts line keys with numbers in numeric order (c_iterations 8 before 64)."""
    return tuple((0, as_float(v), "") if not math.isnan(as_float(v)) else (1, 0.0, v)
                 for v in values)


def line_labels(columns, keys, always=()):
    """{key: "col=value ..."} naming the columns whose value differs between the keys (those
    held by every line are in the title), and the columns in `always`; every column when that
    leaves none."""
    varied = [i for i in range(len(columns))
              if columns[i] in always or len({key[i] for key in keys}) > 1]
    if not varied:
        varied = list(range(len(columns)))
    return {key: " ".join(f"{columns[i]}={format_value(columns[i], key[i])}" for i in varied)
            or "all rows" for key in keys}


def title_text(ax_or_fig, title, fixed, is_figure=False):
    text = title
    if fixed:
        text += "\n" + "\n".join(textwrap.wrap(fixed, 90))
    if is_figure:
        ax_or_fig.suptitle(text, fontsize=10)
    else:
        ax_or_fig.set_title(text, fontsize=10)


def bytes_axis(ax, xs):
    """log2 axis with KiB/MiB/GiB tick labels at powers of two (at most ~10 of them)."""
    from matplotlib.ticker import FixedLocator, NullLocator
    ax.set_xscale("log", base=2)
    low = math.floor(math.log2(min(xs)))
    high = math.ceil(math.log2(max(xs)))
    step = max(1, math.ceil((high - low + 1) / 10))
    ticks = [2.0 ** e for e in range(low, high + 1, step)]
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


def x_values(all_series):
    return sorted({x for xs, *_ in all_series.values() for x in xs})


def skip_single(name, x_column, rows, y_column):
    """True (with a message) when the rows hold fewer than two values of x_column."""
    xs = sorted({as_float(r.get(x_column)) for r in rows
                 if not math.isnan(as_float(r.get(x_column)))
                 and not math.isnan(as_float(r.get(y_column)))})
    if len(xs) <= 1:
        shown = ""
        if xs:
            value = int(xs[0]) if xs[0] == int(xs[0]) else xs[0]
            shown = f" ({format_value(x_column, str(value))})"
        print(f"skip {name}: {x_column} has {len(xs)} distinct value{shown} in the rows; "
              "nothing to plot against")
        return True
    return False


def note_lines(name, data, what="lines"):
    print(f"{name}: {what}: " + "; ".join(data))


def note_medians(name, medians, bars=False):
    if medians:
        print(f"{name}: {medians} points are medians of repeated runs"
              + (", with bars from the least to the largest" if bars else ""))


def plot_lines(rows, out_dir, plt, name, x_column, y_column, axis, xlabel, ylabel, title,
               line_base=("transport", "backend")):
    """One line per transport and backend (or the columns of line_base): y_column against
    x_column."""
    if skip_single(name, x_column, rows, y_column):
        return None
    rows = rows_on_lines(name, rows, x_column, y_column, list(line_base))
    lines = split_columns(rows, x_column, list(line_base))
    data, medians = series(rows, x_column, y_column, lines)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for label, (x, y, low, high) in data.items():
        if medians:
            errors = [[m - lo for m, lo in zip(y, low)], [hi - m for m, hi in zip(y, high)]]
            ax.errorbar(x, y, yerr=errors, marker="o", capsize=3, label=label)
        else:
            ax.plot(x, y, marker="o", label=label)
    axis(ax, x_values(data))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    value_axis(ax, [v for _, _, low, high in data.values() for v in low + high])
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    title_text(ax, title, fixed_config(rows, x_column))
    note_medians(name, medians, bars=True)
    note_lines(name, data)
    return save(fig, out_dir, name, plt)


def moving(rows):
    """Rows whose transfer measured moving, not waiting (gpurelay flags the others in
    transfer_is_waiting; CSVs from before the flag have no such column)."""
    return [r for r in rows if r.get("transfer_is_waiting") != "true"]


def plot_bandwidth(rows, out_dir, plt):
    rows = moving(rows)
    return plot_lines(rows, out_dir, plt, "bandwidth_vs_size.png", "tensor_bytes",
                      "transfer_gbps", bytes_axis, "tensor size (bytes, log2 scale)",
                      "transfer bandwidth (GB/s, 1 GB = 1e9 bytes)",
                      "Transfer bandwidth vs tensor size")


def plot_bus_bandwidth(rows, out_dir, plt):
    """nccl-tests' bus bandwidth against size, one line per pattern; rows of a CSV written before
    the collectives have no busbw_gbps and are left out."""
    rows = [r for r in moving(rows) if r.get("busbw_gbps") not in (None, "")]
    name = "bus_bandwidth_vs_size.png"
    if rows and all(r["busbw_gbps"] == r.get("algbw_gbps", r["transfer_gbps"]) for r in rows):
        print(f"skip {name}: the bus bandwidth equals the algorithm bandwidth in every row "
              "(pairs, broadcast); bandwidth_vs_size.png shows it")
        return None
    return plot_lines(rows, out_dir, plt, "bus_bandwidth_vs_size.png", "tensor_bytes",
                      "busbw_gbps", bytes_axis, "tensor size (bytes, log2 scale)",
                      "bus bandwidth (GB/s, nccl-tests' busbw)",
                      "Bus bandwidth vs tensor size, per pattern",
                      line_base=("pattern", "transport", "backend"))


def plot_overlap(rows, out_dir, plt):
    name = "overlap.png"
    x_column = "c_iterations"
    if skip_single(name, x_column, rows, "time_per_step_ms"):
        return None
    rows = rows_on_lines(name, rows, x_column, "time_per_step_ms", ["overlap", "transport"])
    lines = split_columns(rows, x_column, ["overlap", "transport"])
    compare_rows = [r for r in rows if r.get("overlap") == "compare"]
    times = grouped(rows, x_column, "time_per_step_ms", lines)
    data, medians = labelled(times, lines)
    # A compare run's no-overlap time, labelled as its own line is.
    sequential, _ = labelled(grouped(compare_rows, x_column, "time_per_step_no_overlap_ms",
                                     lines), lines, label_keys=times)
    xs = x_values(data)
    fig, (time_ax, speedup_ax) = plt.subplots(1, 2, figsize=(12, 5.5))
    # A compare run's no-overlap time shares its line's colour, dashed.
    colours = {}
    for label, (x, y) in data.items():
        shown = label + (" (overlapped)" if label in sequential else "")
        (line,) = time_ax.plot(x, y, marker="o", label=shown)
        colours[label] = line.get_color()
    for label, (x, y) in sequential.items():
        time_ax.plot(x, y, marker="s", linestyle="--", color=colours.get(label),
                     label=label + " (no overlap)")
    time_ax.set_xlabel("kernel C iterations (c_iterations)")
    time_ax.set_ylabel("time per step (ms)")
    time_ax.set_ylim(bottom=0)
    time_ax.set_title("Time per step", fontsize=10)

    # The speedup, from both kinds of rows: a compare run's own overlap_speedup, and an on run
    # against the off run of the same configuration. One set of line columns (without overlap)
    # for both, so the legend names the same keys.
    speedup_lines = [c for c in lines if c != "overlap"]
    groups = {}
    for key, points in grouped(compare_rows, x_column, "overlap_speedup",
                               speedup_lines).items():
        groups[key + ("compare",)] = points
    for key, points in on_off_speedup(rows, x_column, speedup_lines).items():
        groups[key + ("on/off",)] = points
    speedup, _ = labelled(groups, speedup_lines + ["from"], always=("from",))
    for label, (x, y) in speedup.items():
        speedup_ax.plot(x, y, marker="o", label=label)
    if speedup:
        speedup_ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        speedup_ax.legend(fontsize=8)
    else:
        speedup_ax.text(0.5, 0.5, "no overlap=compare rows, nor on and off rows of one "
                        "configuration", ha="center", va="center", wrap=True,
                        transform=speedup_ax.transAxes)
    speedup_ax.set_xlabel("kernel C iterations (c_iterations)")
    speedup_ax.set_ylabel("overlap speedup (no-overlap time / overlapped time, ×)")
    speedup_ax.set_title("Overlap speedup (from: compare rows, or on/off rows)", fontsize=10)
    for ax in (time_ax, speedup_ax):
        count_axis(ax, xs)
        ax.grid(True, alpha=0.3)
    time_ax.legend(fontsize=8)
    title_text(fig, "Overlap of the transfer with kernel C", fixed_config(rows, x_column),
               is_figure=True)
    note_medians(name, medians)
    note_lines(name, data)
    note_lines(name, speedup, "speedup lines")
    return save(fig, out_dir, name, plt)


def plot_scaling(rows, out_dir, plt):
    # Against the ranks, which every pattern has alike: the CSV's pairs column counts receivers
    # (3 for a broadcast over 4 ranks, 4 for an all-reduce), so runs on 4 ranks would stand at
    # 2, 3 and 4 on an axis of "pairs".
    return plot_lines(rows, out_dir, plt, "scaling.png", "world_size", "aggregate_gbps",
                      count_axis, "ranks (world_size)",
                      "aggregate bandwidth into all receivers (GB/s, 1 GB = 1e9 bytes)",
                      "Aggregate bandwidth vs ranks",
                      line_base=("pattern", "transport", "backend"))


def save(fig, out_dir, name, plt):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    parser = argparse.ArgumentParser(
        prog="scripts/plot", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 figures written (or skipped), 2 missing/empty CSV or bad "
               "arguments.\nexample: scripts/plot --csv outputs/sweep/results.csv")
    parser.add_argument("--csv", required=True, help="results CSV written by gpurelay")
    parser.add_argument("--out-dir", default=os.path.join(root, "outputs", "plots"),
                        help="where the PNGs go (default: outputs/plots in the repository)")
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                        help="plot only rows whose COLUMN is VALUE, as written in the CSV "
                             "(repeatable), e.g. --where transport=nccl --where world_size=2")
    parser.add_argument("--include-failed", action="store_true",
                        help="also plot rows whose verified column is not 'ok'")
    args = parser.parse_args(argv)

    try:
        rows, fieldnames = read_rows(args.csv, args.include_failed)
        rows = select_rows(rows, fieldnames, args.where, args.csv)
        require(fieldnames, [c for c in CONFIG_COLUMNS if c not in LATER_COLUMNS] + [
            "transfer_gbps", "aggregate_gbps", "time_per_step_ms",
            "time_per_step_no_overlap_ms", "overlap_speedup"], args.csv)
    except UsageError as err:
        print(f"plot: {err}", file=sys.stderr)
        return EXIT_USAGE

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
    for plot in (plot_bandwidth, plot_overlap, plot_scaling, plot_bus_bandwidth):
        path = plot(rows, args.out_dir, plt)
        if path:
            written.append(path)
    if written:
        print("wrote:")
        for path in written:
            print(f"  {path}")
    else:
        print("no figures written: every x column has a single value in these rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
