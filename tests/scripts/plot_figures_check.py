"""What scripts/plot's figures must show of a results CSV, whatever the machine's speed, counted
from the CSV itself: every configuration measured at two x values a line; no point the judgement
withholds (an empty cell), and the figure saying so where a row withholds one; each point with
an unstable launch a red x, one run with more ranks than CORES a square, each mark named in the
legend exactly when drawn; each line's label naming every column that varies between the lines
drawn; an interval bar on every point; a speedup axis that shows 1.0 and every point's interval.

usage: plot_figures_check.py REPO_ROOT RESULTS.csv CORES
  CORES  the cores the CSV's runs had on their host (nproc), or 0 where their files say nothing
         (a hand-written CSV): no point is then oversubscribed
"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "scripts", "lib"))
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import plot  # noqa: E402

CSV, CORES = sys.argv[2], int(sys.argv[3])
TESTS = {
    "unstable": lambda r: r.get("step_unstable") == "true",
    "crowded": lambda r: CORES > 0 and int(r["world_size"]) > CORES,
}
LEGEND = {mark: text for mark, _, text in plot.MARKS}


def line_columns(x_column):
    """The configuration columns a line of x_column's figure is told by."""
    skip = {x_column, plot.DERIVED.get(x_column)} | set(plot.DERIVED)
    return [c for c in plot.CONFIG_COLUMNS if c not in skip]


def configurations(rows, x_column, y_column):
    """{configuration: {x: [rows]}} over every configuration column but x (and what follows
    from x), for the configurations measured at two x values or more (a lone point is left
    out, by plot's rule, and listed)."""
    columns = line_columns(x_column)
    found = {}
    for r in rows:
        if r.get(y_column) in (None, ""):
            continue
        key = tuple(r.get(c, "") for c in columns)
        found.setdefault(key, {}).setdefault(float(r[x_column]), []).append(r)
    return {k: v for k, v in found.items() if len(v) > 1}


def drawn(ax, gid):
    return sum(len(c.get_offsets()) for c in ax.collections if c.get_gid() == gid)


def withheld(rows, y_column):
    """Whether a row withholds y_column: an empty cell with the reason the row gives."""
    return any(r.get(y_column) == "" and (r.get("phase_times_unreadable_because")
                                           or f"{y_column}:" in (r.get("withheld") or ""))
               for r in rows)


def check_axes(name, ax, configs, x_column, extra_lines=0, said=False):
    lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")
             and "1.0" not in line.get_label()]
    assert len(lines) == len(configs) + extra_lines, (name, len(lines), len(configs))
    columns = line_columns(x_column)
    varied = [c for i, c in enumerate(columns) if len({key[i] for key in configs}) > 1]
    for line in lines[:len(configs)]:
        unnamed = [c for c in varied if f"{c}=" not in line.get_label()]
        assert not unnamed, (name, "a line's label names every column that varies", unnamed,
                             line.get_label())
    told = any(t.get_gid() == "withheld" for t in ax.texts)
    assert told == said, (name, "the withheld points said on the figure", told, said)
    legend = [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else []
    for mark, test in TESTS.items():
        expected = sum(1 for by_x in configs.values() for found in by_x.values()
                       if any(test(r) for r in found))
        assert drawn(ax, mark) == expected, (name, mark, drawn(ax, mark), expected)
        assert (LEGEND[mark] in legend) == (expected > 0), (name, mark, legend)
        print(f"{name}: {len(lines)} lines, {expected} point(s) marked {mark}")
    points = sum(len(by_x) for by_x in configs.values())
    bars = sum(len(c.lines[2][0].get_segments()) for c in ax.containers if c.has_yerr)
    assert bars >= points, (name, "an interval on every point", bars, points)


def check_speedup(ax):
    """1.0 in sight, with every point's range."""
    low, high = ax.get_ylim()
    values = [y for line in ax.get_lines() for y in line.get_ydata()]
    values += [y for c in ax.containers if c.has_yerr
               for segment in c.lines[2][0].get_segments() for _, y in segment]
    assert low < 1.0 < high, (low, high)
    assert all(low <= v <= high for v in values), (low, high, values)
    print(f"overlap.png: the speedup axis {low:.3f} to {high:.3f} holds 1.0 and "
          f"{len(values)} values")


def main():
    rows, _ = plot.read_rows(CSV, False)
    plot.mark_oversubscribed(rows, CSV)
    plot.save = lambda fig, out_dir, name, plt: fig  # keep the figure to look at
    figures = [(plot.plot_bandwidth, "tensor_bytes", "transfer_gbps"),
               (plot.plot_scaling, "world_size", "aggregate_gbps")]
    for function, x_column, y_column in figures:
        fig = function(rows, "", plt)
        configs = configurations(rows, x_column, y_column)
        said = withheld(rows, y_column)
        if fig is None:  # x of one value: nothing to plot against
            assert not configs, f"{function.__name__}: no figure for {len(configs)} lines"
            continue
        check_axes(function.__name__, fig.axes[0], configs, x_column, said=said)
    fig = plot.plot_overlap(rows, "", plt)
    if fig is not None:
        configs = configurations(rows, "c_iterations", "time_per_step_ms")
        compare = sum(1 for key in configurations(
            [r for r in rows if r["overlap"] == "compare"], "c_iterations",
            "time_per_step_no_overlap_ms"))
        check_axes("plot_overlap", fig.axes[0], configs, "c_iterations", compare)
        if fig.axes[1].get_lines():
            check_speedup(fig.axes[1])


main()
