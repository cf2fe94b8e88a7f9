"""scripts/plot --json: every pair's transfer bandwidth from a JSON summary, slowest first. A
withheld rate is on no axis: where any is, every pair's time is drawn instead, those hollow."""
import json
import statistics
import textwrap

from tool import UsageError

# Slow pairs named on the figure itself, slowest first; the terminal lists every one.
NAMED_ON_FIGURE = 10
SLOW_MARGIN = 0.10  # report/summary.cpp's kSlowPairMargin: the dashed line where slow begins


def read_summary(path):
    try:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: {err}")
    if not isinstance(summary, dict) or not any(main_pass(c) for c in cases(summary)):
        raise UsageError(f"{path}: no pass with pairs (is it a gpurelay JSON summary?)")
    return summary


def cases(summary):
    found = summary.get("cases") if isinstance(summary.get("cases"), list) else [summary]
    return [c for c in found if isinstance(c, dict)]


def main_pass(case):
    """The pass the report ends with (overlap on, of a compare run), if it has pairs."""
    passes = [p for p in case.get("passes") or [] if isinstance(p, dict) and p.get("pairs")]
    return passes[-1] if passes else None


def host_of(case, rank):
    ranks = case.get("ranks") or []
    return ranks[rank].get("host", "?") if 0 <= rank < len(ranks) else "?"


def pair_text(case, pair, axis):
    """'pair 17: ranks 34->35, node03->node04, 1.23 GB/s' (or its transfer time)."""
    producer, consumer = pair.get("producer", -1), pair.get("consumer", -1)
    return (f"pair {pair.get('pair')}: ranks {producer}->{consumer}, "
            f"{host_of(case, producer)}->{host_of(case, consumer)}, "
            f"{pair[axis.key]:.3g} {axis.unit}"
            + (f" (rate withheld: {pair['withheld']})" if pair.get("withheld") else ""))


class Axis:
    """What is drawn of each pair: its rate (GB/s), or where one is withheld its time (ms)."""

    def __init__(self, rates):
        self.rates = rates
        self.key, self.unit = ("transfer_gbps", "GB/s") if rates else ("transfer_ms", "ms")


def figure_name(summary, case, source=""):
    """pair_bandwidth[_SOURCE][_elements=N].png: SOURCE, the summary's file name, where several
    are drawn; N where it has several sizes."""
    name = "pair_bandwidth" + (f"_{source}" if source else "")
    if len(cases(summary)) > 1:
        name += f"_elements={(case.get('config') or {}).get('elements')}"
    return name + ".png"


def timed_pairs(name, case, p):
    """(the pass's pairs with a timed transfer, slowest first; the axis they are drawn on)."""
    axis = Axis(all(isinstance(q.get("transfer_gbps"), (int, float)) for q in p["pairs"]))
    pairs = [q for q in p["pairs"] if isinstance(q.get(axis.key), (int, float))]
    if len(pairs) < len(p["pairs"]):
        print(f"{name}: {len(p['pairs']) - len(pairs)} pair(s) without a timed transfer, not "
              "drawn: " + ", ".join(str(q.get("pair")) for q in p["pairs"] if q not in pairs))
    if not axis.rates:
        print(f"{name}: the judgement withholds the rate of pairs "
              + ", ".join(f"{q.get('pair')} ({q.get('withheld')})" for q in p["pairs"]
                          if q.get("withheld"))
              + ": every pair's transfer time drawn instead, those hollow")
    return sorted(pairs, key=lambda q: q[axis.key], reverse=not axis.rates), axis


def title(case, p, count, axis):
    config = case.get("config") or {}
    what = "bandwidth" if axis.rates else "time"
    text = (f"Transfer {what} of each of {count} pairs ({case.get('pattern', 'pairs')}), "
            f"slowest first\n{case.get('transport', '?')}, {case.get('world_size', '?')} ranks, "
            f"elements={config.get('elements')}, overlap "
            f"{'on' if p.get('overlap') else 'off'}")
    withheld = sorted({q["withheld"] for q in p["pairs"] if q.get("withheld")})
    if withheld:
        text += (f"\nrates withheld ({', '.join(withheld)}): each pair's transfer time, the "
                 "withheld hollow")
    if case.get("waiting_cause"):
        text += "\n" + "\n".join(textwrap.wrap(f"phases may measure waiting: "
                                               f"{case['waiting_cause']}", 100))
    return text


def name_slow(ax, side, case, slow, axis):
    """Numbers the slowest slow pairs on the figure and names them beside it."""
    side.axis("off")
    lines = [f"{k + 1:>2}  {pair_text(case, pair, axis)}" for k, (_, pair) in
             enumerate(slow[:NAMED_ON_FIGURE])]
    for k, (i, pair) in enumerate(slow[:NAMED_ON_FIGURE]):
        ax.annotate(str(k + 1), xy=(i, pair[axis.key]), xytext=(5, 3),
                    textcoords="offset points", fontsize=7, color="red")
    if len(slow) > NAMED_ON_FIGURE:
        lines.append(f"and {len(slow) - NAMED_ON_FIGURE} more slow pairs (listed by scripts/plot)")
    heading = "slow pairs, slowest first:" if slow else "no slow pair"
    side.text(0, 1, "\n".join([heading] + lines), va="top", fontsize=7, family="monospace",
              color="red" if slow else "black", transform=side.transAxes)


def scatter(ax, points, axis, colour, label, **style):
    """The pairs at their places, filled, or hollow where the judgement withholds their rate."""
    for withheld in (False, True):
        chosen = [(i, q) for i, q in points if bool(q.get("withheld")) == withheld]
        if chosen:
            ax.scatter([i for i, _ in chosen], [q[axis.key] for _, q in chosen],
                       facecolors="white" if withheld else colour, edgecolors=colour,
                       label=label + (", rate withheld (hollow)" if withheld else ""), **style)


def draw_pairs(plt, case, p, order, axis):
    """Every pair in order, the slow ones red and named, the median and the report's slow line."""
    slow = [(i, q) for i, q in enumerate(order) if q.get("slow")]
    values = [q[axis.key] for q in order]
    median = statistics.median(values)
    fig, (ax, side) = plt.subplots(1, 2, figsize=(14, 5.5),
                                   gridspec_kw={"width_ratios": [3, 1.4]})
    size = 30 if len(order) <= 64 else 8
    scatter(ax, list(enumerate(order)), axis, "tab:blue",
            f"a pair ({len(order) - len(slow)} not slow)", s=size, gid="pairs")
    if slow:
        scatter(ax, slow, axis, "red",
                f"slow: over {SLOW_MARGIN:.0%} slower than the median pair in step or "
                f"transfer ({len(slow)})", s=3 * size, gid="slow")
    ax.axhline(median, color="grey", linewidth=1,
               label=f"the median pair, {median:.3g} {axis.unit}")
    ax.axhline(median / (1 + SLOW_MARGIN) if axis.rates else median * (1 + SLOW_MARGIN),
               color="red", linewidth=0.8, linestyle="--",
               label=f"{SLOW_MARGIN:.0%} slower than the median pair's transfer")
    name_slow(ax, side, case, slow, axis)
    if len(order) <= 32:
        ax.set_xticks(range(len(order)), [str(q.get("pair")) for q in order], fontsize=7)
        ax.set_xlabel("pair (number), slowest first")
    else:
        ax.set_xlabel(f"the {len(order)} pairs, slowest first")
    ax.set_ylabel("transfer bandwidth (GB/s, the pair's median step)" if axis.rates
                  else "transfer time (ms, the pair's median step)")
    ax.set_ylim(bottom=0, top=max(values) * 1.15)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right" if axis.rates else "upper right")
    ax.set_title(title(case, p, len(order), axis), fontsize=10)
    return fig, slow, median


def plot_pairs(path, summary, out_dir, plt, save, source=""):
    """A figure per size of the summary; their paths. source: see figure_name."""
    written = []
    for case in cases(summary):
        p = main_pass(case)
        name = figure_name(summary, case, source)
        order, axis = timed_pairs(name, case, p) if p else ([], None)
        if not order:
            print(f"skip {name}: {path} has no pair with a timed transfer")
            continue
        fig, slow, median = draw_pairs(plt, case, p, order, axis)
        print(f"{name}: {len(order)} pairs from {path}, median {median:.3g} {axis.unit}, "
              f"{len(slow)} slow" + (": " + "; ".join(pair_text(case, q, axis) for _, q in slow)
                                     if slow else ""))
        written.append(save(fig, out_dir, name, plt))
    return written
