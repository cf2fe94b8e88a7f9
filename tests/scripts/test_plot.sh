#!/usr/bin/env bash
# Tests scripts/plot: a hand-written results CSV (the exact gpurelay header, rows across
# elements, c_iterations and pairs) gives three valid PNGs; a missing or empty CSV is refused
# with exit 2; a figure whose x has one value is skipped; only what the judgement shows is drawn:
# a withheld figure (an empty cell) is on no axis, and the figure says how many and why;
# unstable launches get a red x and runs with more ranks than cores (from their HDF5 files) a
# square, each named in the legend and listed, every point an interval, every
# configuration a line (tests/scripts/plot_figures_check.py counts what each figure must show
# from the CSV itself, so a real sweep is checked whatever the machine's speed); a CSV written
# by a real sweep with the gpurelay binary plots too; the README's example sweep gives all three
# figures it shows (sane sizes, legends naming each varied key, a speedup from overlap on/off
# rows on an axis that shows 1.0); compare and on/off rows both give speedup lines; a sweep over
# pattern gives the bus bandwidth figure, one line per pattern, with busbw = algbw x nccl-tests'
# factor, and no scaling figure (its runs all had 4 ranks); every pair's bandwidth from a JSON
# summary (--json): made-up with 300 pairs, of several sizes, and a real run of 8 ranks, the
# slow pairs (the JSON's flag) red and named with their hosts.
# Usage: tests/scripts/test_plot.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_modules matplotlib h5py numpy
plot="$root/scripts/plot"
check_figures="$(dirname "${BASH_SOURCE[0]}")/plot_figures_check.py"

# A PNG starts with the 8 bytes 89 50 4E 47 0D 0A 1A 0A.
check_png() {
    [[ -s "$1" ]] || fail "$1 missing or empty"
    [[ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] ||
        fail "$1 is not a PNG"
}

header='tag,timestamp,git_hash,world_size,pairs,backend,transport,gpu_name,dtype'
header+=',elements,tensor_bytes,steps,warmup,depth,overlap,blocking,graphs,c_elements'
header+=',c_iterations,pairing,chunk,time_per_step_ms,step_ms_median,step_ms_min'
header+=',step_ms_max,steps_per_s,a_ms,send_ms,recv_ms,c_ms,wait_ms,b_ms,transfer_gbps'
header+=',aggregate_gbps,a_gbps,b_gbps,cold_step_ms,time_per_step_no_overlap_ms'
header+=',overlap_speedup,x_checked,x_mismatches,c_mismatches,verified,step_bound_ms'
header+=',overlap_ideal_ms'
# The hand-written rows below predate the collectives' columns (a CSV without them still plots);
# gpurelay's own CSV has them at the end.
real_expected_header="$header,pattern,group_size,algbw_gbps,busbw_gbps,timing,phase_timed_steps"
real_expected_header+=",ceiling_transfer_ms,transfer_vs_ceiling,a_vs_copy,b_vs_copy,c_vs_alone"
real_expected_header+=",output,slow_steps,slow_pairs"
# The distributions, by percentile then cv, each over the phases in their table's order.
for stat in ms_p50 ms_p90 ms_p99 cv; do
    for phase in a send recv c wait b step; do
        real_expected_header+=",${phase}_${stat}"
    done
done
# Whether the figures can be trusted: an unstable step, and the GPU's clocks (empty on the CPU
# path).
real_expected_header+=",step_unstable,sm_clock_start_mhz,sm_clock_end_mhz"
real_expected_header+=",sm_clock_max_mhz,clock_slowdowns"
# The launch's repeat number, and a relay's figures (empty here).
real_expected_header+=",repeat,relay_stages,relay_slowest_hop_ms,relay_period_over_slowest_hop"
real_expected_header+=",relay_fill_ms"
# Who queued the steps.
real_expected_header+=",launch"
# Whether the run's phase times can be read, and why not; the time per step's and the speedup's
# intervals, the mean step, and the figures withheld by rules of their own.
real_expected_header+=",phase_times_readable,phase_times_unreadable_because,mean_step_ms,withheld"
for end in lo hi; do
    for figure in time_per_step_ms transfer_gbps busbw_gbps aggregate_gbps overlap_speedup; do
        real_expected_header+=",${figure}_$end"
    done
done

# row TAG WORLD PAIRS TRANSPORT ELEMENTS OVERLAP C_ITER TIME_MS NO_OVERLAP_MS SPEEDUP GBPS AGG_GBPS
row() {
    local tag=$1 world=$2 pairs=$3 transport=$4 elements=$5 overlap=$6 citer=$7
    local t=$8 seq=$9 speedup=${10} gbps=${11} agg=${12}
    printf '"%s",2025-01-01T00:00:00Z,0123456789ab,%s,%s,cuda,%s,NVIDIA H200,float32,%s,%s,' \
        "$tag" "$world" "$pairs" "$transport" "$elements" "$((elements * 4))"
    printf '50,5,2,%s,false,false,16777216,%s,adjacent,4194304,' "$overlap" "$citer"
    printf '%s,%s,%s,%s,%s,0.1,%s,%s,%s,0.0,0.1,%s,%s,300,300,%s,%s,%s,%s,0,0,ok,%s,%s\n' \
        "$t" "$t" "$t" "$t" "100" "$t" "$t" "$t" "$gbps" "$agg" "$t" "$seq" "$speedup" "$elements" \
        "$t" "$t"
}

csv="$tmp/results.csv"
{
    echo "$header"
    # Bandwidth study: elements across 2^10..2^26, nccl and mpi, overlap off, one pair.
    for e in 1024 16384 262144 4194304 67108864; do
        nccl_gbps=$((e / 1048576 + 5)) mpi_gbps=$((e / 2097152 + 2))
        row "bw nccl $e" 2 1 nccl "$e" off 64 1.0 "" "" "$nccl_gbps" "$nccl_gbps"
        row "bw mpi $e" 2 1 mpi "$e" off 64 2.0 "" "" "$mpi_gbps" "$mpi_gbps"
    done
    # Overlap study: c_iterations across 8..512 at 64Mi elements, overlap on and compare.
    for c in 8 32 128 512; do
        row "ov on $c" 2 1 nccl 67108864 on "$c" "$((c / 8 + 3))" "" "" 40 40
        row "ov cmp $c" 2 1 nccl 67108864 compare "$c" "$((c / 8 + 3))" "$((c / 4 + 6))" 1.6 40 40
    done
    # Scaling: pairs 1..4 at 64Mi elements.
    for p in 2 4; do
        row "sc $p" "$((2 * p))" "$p" nccl 67108864 off 64 3.0 "" "" 40 "$((40 * p))"
    done
} >"$csv"

echo "== three figures from a hand-written CSV"
"$plot" --csv "$csv" --out-dir "$tmp/plots" | tee "$tmp/log1" || fail "plot exited non-zero"
for png in bandwidth_vs_size overlap scaling; do
    check_png "$tmp/plots/$png.png"
    grep -q "$tmp/plots/$png.png" "$tmp/log1" || fail "$png.png not listed as written"
done

echo "== --where narrows the rows; one-valued x columns are skipped, not errors"
"$plot" --csv "$csv" --out-dir "$tmp/where" --where overlap=off --where pairs=1 |
    tee "$tmp/log2" || fail "plot --where exited non-zero"
check_png "$tmp/where/bandwidth_vs_size.png"
grep -q '^skip overlap.png' "$tmp/log2" || fail "overlap.png not reported as skipped"
grep -q '^skip scaling.png' "$tmp/log2" || fail "scaling.png not reported as skipped"
[[ ! -e "$tmp/where/scaling.png" ]] || fail "scaling.png written from one value of pairs"

echo "== repeated runs: medians with their intervals; a log y axis over decades; no busbw for pairs"
{
    echo "$header,pattern,group_size,algbw_gbps,busbw_gbps"
    for repeat in 0 1 2; do
        for e in 1024 262144 67108864; do
            gbps=$((e / 65536 + repeat + 1))
            row "repeat=$repeat" 2 1 nccl "$e" off 64 1.0 "" "" "$gbps" "$gbps" |
                sed "s/\$/,pairs,0,$gbps,$gbps/"
        done
    done
} >"$tmp/repeats.csv"
"$plot" --csv "$tmp/repeats.csv" --out-dir "$tmp/repeats" | tee "$tmp/log-repeats" ||
    fail "plot of repeated rows exited non-zero"
check_png "$tmp/repeats/bandwidth_vs_size.png"
grep -qx 'bandwidth_vs_size.png: 3 points are medians of repeated runs, with their 95% intervals (3 of them, of 2 to 5 launches, least to largest)' \
    "$tmp/log-repeats" || fail "the repeats are not plotted as medians with their intervals"
grep -q '^skip bus_bandwidth_vs_size.png: the bus bandwidth equals the algorithm bandwidth' \
    "$tmp/log-repeats" || fail "the bus bandwidth of pairs is drawn again"
"$python" - "$tmp/repeats.csv" "$root/scripts/lib" <<'PY' || fail "the figure's axes are not as expected"
import sys
sys.path.insert(0, sys.argv[2])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import plot
rows, _ = plot.read_rows(sys.argv[1], False)
plot.save = lambda fig, out_dir, name, plt: fig  # keep the figure to look at
fig = plot.plot_bandwidth(rows, "", plt)
ax = fig.axes[0]
assert ax.get_xscale() == "log" and ax.get_yscale() == "log", (ax.get_xscale(), ax.get_yscale())
labels = [t.get_text() for t in ax.get_xticklabels()]
assert "1 KiB" not in labels and "4 KiB" in labels and "256 MiB" in labels, labels
bars = [c for c in ax.containers if c.has_yerr]
assert len(bars) == 1, ax.containers
print("log x (bytes) and log y, one line with min-max bars; ticks", labels)
PY

echo "== missing and empty CSVs: exit 2"
for bad in "$tmp/none.csv" "$tmp/empty.csv" "$tmp/header-only.csv"; do
    : >"$tmp/empty.csv"
    echo "$header" >"$tmp/header-only.csv"
    status=0
    "$plot" --csv "$bad" --out-dir "$tmp/bad" 2>"$tmp/err.txt" || status=$?
    [[ $status -eq 2 ]] || fail "$bad: expected exit 2, got $status"
    cat "$tmp/err.txt"
done

echo "== withheld rates left out and said, unstable launches x, oversubscribed runs squares"
# The runs' files, as gpurelay writes their placement: 2 and 4 ranks on 4 cores of host a, 8 on
# the same 4 (oversubscribed).
"$python" - "$tmp" <<'PY'
import sys, h5py
for ranks in (2, 4, 8):
    with h5py.File(f"{sys.argv[1]}/np{ranks}.h5", "w") as f:
        f.attrs["world_size"] = ranks
        f.attrs["rank_hosts"] = ",".join(["a"] * ranks)
        f.attrs["rank_cores"] = ";".join(["0-3"] * ranks)
PY
# marked ROW UNREADABLE UNSTABLE: ROW with the three columns the judgement and the marks come
# from.
marked() { echo "$1,$2,$3,$tmp/np$(cut -d, -f4 <<<"$1").h5"; }
{
    echo "$header,phase_times_unreadable_because,step_unstable,output"
    for e in 1024 16384 262144 4194304; do
        waiting="" gbps=0.01 unstable=false
        # mpi's two smallest sizes measured waiting: their rates withheld, the cells empty.
        ((e > 16384)) || { waiting=transfer_waiting; gbps=""; }
        marked "$(row "bw mpi $e" 2 1 mpi "$e" off 64 2.0 "" "" "$gbps" "$gbps")" "$waiting" false
        ((e != 4194304)) || unstable=true
        marked "$(row "bw nccl $e" 2 1 nccl "$e" off 64 1.0 "" "" 20 20)" false "$unstable"
    done
    for p in 1 2 4; do
        marked "$(row "sc $p" "$((2 * p))" "$p" nccl 67108864 off 64 3.0 "" "" 40 "$((40 * p))")" \
            false false
    done
} >"$tmp/marks.csv"
"$plot" --csv "$tmp/marks.csv" --out-dir "$tmp/marks" | tee "$tmp/log-marks" ||
    fail "plot of the marked rows exited non-zero"
check_png "$tmp/marks/bandwidth_vs_size.png"
# Both transports drawn, mpi's waiting sizes left out and said, on the figure and here.
grep -qx 'bandwidth_vs_size.png: lines: transport=mpi; transport=nccl' "$tmp/log-marks" ||
    fail "a transport whose transfer measured waiting is not drawn"
grep -qx "bandwidth_vs_size.png: 2 of 11 points withheld by gpurelay's judgement, not drawn: transfer_waiting (2)" \
    "$tmp/log-marks" || fail "the withheld points are not said"
grep -q '^bandwidth_vs_size.png: red x: .*, 1 point(s): transport=nccl at 16MiB$' "$tmp/log-marks" ||
    fail "the unstable launch is not listed"
grep -q '^scaling.png: square: oversubscribed .*, 1 point(s): .* at 8$' "$tmp/log-marks" ||
    fail "the oversubscribed run (8 ranks on 4 cores) is not listed"
"$python" "$check_figures" "$root" "$tmp/marks.csv" 4 || fail "the marks are not drawn as counted"

echo "== a CSV written by gpurelay itself (through scripts/sweep)"
cat >"$tmp/deck.toml" <<'EOF'
device = "cpu"
transport = "mpi"
steps = 4
warmup = 1
overlap = "compare"
c_elements = "1Ki"
c_iterations = 1
write = "none"
timeout_s = 60.0
EOF
"$root/scripts/sweep" --deck "$tmp/deck.toml" --csv "$tmp/real.csv" --np 2 --binary "$binary" \
    --out-dir "$tmp/sweep" elements=1Ki,4Ki || fail "sweep for the real CSV failed"
# One launch of both sizes: a row per size, in the order given, with the launch's one tag.
"$python" - "$tmp/real.csv" <<'PY' || fail "the sweep's CSV is not one launch's row per size"
import csv, sys
rows = [(r["tag"], r["elements"]) for r in csv.DictReader(open(sys.argv[1]))]
print(rows)
sys.exit(0 if rows == [("sweep", "1024"), ("sweep", "4096")] else 1)
PY
real_header="$(head -n 1 "$tmp/real.csv" | tr -d '\r')"
[[ "$real_header" == "$real_expected_header" ]] ||
    fail "gpurelay's CSV header differs from the documented one: $real_header"
"$plot" --csv "$tmp/real.csv" --out-dir "$tmp/real" | tee "$tmp/log3" ||
    fail "plot of the real CSV exited non-zero"
check_png "$tmp/real/bandwidth_vs_size.png"
# A line of the launch's two sizes, or (phase times that cannot be read here) both withheld.
grep -Eq "^bandwidth_vs_size.png: (lines: .|2 of 2 points withheld by gpurelay's judgement)" \
    "$tmp/log3" || fail "no line of the launch's two sizes, nor the reason"

# check_figure PNG: a PNG of sane pixel size (from its IHDR chunk) and file size.
check_figure() {
    check_png "$1"
    "$python" - "$1" <<'PY' || fail "$1: not a sane figure"
import os, struct, sys
with open(sys.argv[1], "rb") as f:
    width, height = struct.unpack(">II", f.read(24)[16:24])
size = os.path.getsize(sys.argv[1])
print(f"{os.path.basename(sys.argv[1])}: {width} x {height} pixels, {size} bytes")
sys.exit(0 if 800 <= width <= 4000 and 500 <= height <= 3000 and 10_000 < size < 5_000_000 else 1)
PY
}

echo "== the README's example sweep (on a CPU deck): all three figures it shows"
# README: scripts/sweep --deck inputs/overlap-study.toml --csv outputs/study.csv \
#             np=2,4 elements=64Ki,1Mi overlap=on,off c_iterations=4,16 c_elements=1Mi
sed -e 's/^overlap = .*/overlap = "on"/' "$tmp/deck.toml" >"$tmp/study.toml"
"$root/scripts/sweep" --deck "$tmp/study.toml" --csv "$tmp/study.csv" --binary "$binary" \
    --out-dir "$tmp/study-sweep" np=2,4 elements=1Ki,4Ki overlap=on,off c_iterations=1,2 \
    >"$tmp/study-sweep.log" || { cat "$tmp/study-sweep.log"; fail "the README's sweep failed"; }
"$plot" --csv "$tmp/study.csv" --out-dir "$tmp/study" | tee "$tmp/log4" ||
    fail "plot of the README's sweep exited non-zero"
for png in bandwidth_vs_size overlap scaling; do
    check_figure "$tmp/study/$png.png"
done
# Every configuration drawn and every waiting, unstable and oversubscribed point marked, as the
# CSV says this machine ran them (whether a tiny CPU transfer waited or not).
"$python" "$check_figures" "$root" "$tmp/study.csv" "$(nproc)" ||
    fail "the README's figures do not show what the CSV holds"
# Legends name every key that varies between lines, as key=value: the time per step's always
# here; the rates' figures where the judgement shows them (which lines those are depends on the
# machine's cores), checked by plot_figures_check.py against the lines drawn.
for key in overlap= tensor_bytes= world_size=; do
    grep "^overlap.png: lines: " "$tmp/log4" | grep -q "$key" ||
        fail "overlap.png's legend does not name $key"
done
# overlap = on and off rows of one configuration give a speedup line, with no compare rows.
grep "^overlap.png: speedup lines: " "$tmp/log4" | grep -q "from=on/off" ||
    fail "overlap.png: no speedup from the on/off rows"

echo "== overlap=compare rows and on/off rows: both kinds of speedup"
{
    echo "$header"
    for c in 8 32 128; do
        row "cmp $c" 2 1 nccl 67108864 compare "$c" "$((c / 8 + 3))" "$((c / 4 + 6))" 1.6 40 40
        row "on $c" 2 1 nccl 67108864 on "$c" "$((c / 8 + 3))" "" "" 40 40
        row "off $c" 2 1 nccl 67108864 off "$c" "$((c / 4 + 6))" "" "" 40 40
    done
} >"$tmp/speedup.csv"
"$plot" --csv "$tmp/speedup.csv" --out-dir "$tmp/speedup" | tee "$tmp/log5" ||
    fail "plot of compare and on/off rows exited non-zero"
check_figure "$tmp/speedup/overlap.png"
speedup_lines="$(grep "^overlap.png: speedup lines: " "$tmp/log5")"
[[ "$speedup_lines" == *"from=compare"* && "$speedup_lines" == *"from=on/off"* ]] ||
    fail "overlap.png: expected a compare and an on/off speedup line: $speedup_lines"
# Every speedup here is above 1.5: the axis still shows 1.0.
"$python" "$check_figures" "$root" "$tmp/speedup.csv" 0 || fail "overlap.png's speedup axis"


echo "== bus bandwidth per pattern (a collectives sweep, on a CPU deck)"
# As a user would: scripts/sweep --csv outputs/collectives.csv np=4 pattern=pairs,broadcast,allreduce \
#             elements=64Ki,1Mi
"$root/scripts/sweep" --deck "$tmp/deck.toml" --csv "$tmp/patterns.csv" --binary "$binary" \
    --out-dir "$tmp/patterns-sweep" np=4 pattern=pairs,broadcast,allreduce elements=1Ki,4Ki \
    >"$tmp/patterns-sweep.log" ||
    { cat "$tmp/patterns-sweep.log"; fail "the pattern sweep failed"; }
"$plot" --csv "$tmp/patterns.csv" --out-dir "$tmp/patterns" | tee "$tmp/log6" ||
    fail "plot of the pattern sweep exited non-zero"
check_figure "$tmp/patterns/bus_bandwidth_vs_size.png"
bus_lines="$(grep "^bus_bandwidth_vs_size.png: lines: " "$tmp/log6")"
# A line for each pattern whose busbw the judgement shows; the others said withheld.
for pattern in pairs broadcast allreduce; do
    if grep -q ",$pattern,[0-9]*,[0-9.e+-]*,[0-9]" "$tmp/patterns.csv"; then
        [[ "$bus_lines" == *"pattern=$pattern"* ]] || fail "bus_bandwidth_vs_size.png: no $pattern line: $bus_lines"
    else
        grep -q "^bus_bandwidth_vs_size.png: .* withheld by gpurelay's judgement" "$tmp/log6" ||
            fail "bus_bandwidth_vs_size.png: $pattern's withheld busbw not said"
    fi
done
"$python" "$check_figures" "$root" "$tmp/patterns.csv" "$(nproc)" ||
    fail "the pattern sweep's figures do not show what the CSV holds"
# Every run had 4 ranks (receivers: 2 pairs' consumers, 3 for the broadcast, 4 for the
# all-reduce): there is no scaling to plot, rather than 2, 3 and 4 "pairs" on an axis.
grep -qx 'skip scaling.png: world_size has 1 distinct value (4) in the rows; nothing to plot against' \
    "$tmp/log6" || fail "scaling.png is not skipped for runs that all had 4 ranks"
[[ ! -e "$tmp/patterns/scaling.png" ]] || fail "scaling.png drawn for runs that all had 4 ranks"
"$python" - "$tmp/patterns.csv" <<'PY' || fail "the pattern sweep's busbw is not algbw x nccl-tests' factor"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 6, len(rows)
for r in (r for r in rows if r["busbw_gbps"] or r["algbw_gbps"]):  # withheld: both empty
    factor = {"pairs": 1.0, "broadcast": 1.0, "allreduce": 2.0 * 3 / 4}[r["pattern"]]
    busbw, algbw = float(r["busbw_gbps"]), float(r["algbw_gbps"])
    assert abs(busbw - algbw * factor) <= 1e-5 * busbw, r  # the CSV has 6 digits
    assert r["group_size"] == ("0" if r["pattern"] == "pairs" else "4"), r
print("busbw = algbw x", "1 (pairs, broadcast), 1.5 (allreduce over 4)")
PY

echo "== every pair's bandwidth from a JSON summary: 300 made-up pairs on 75 hosts"
# Pairs of ranks 2p -> 2p+1 on 75 hosts; bandwidths spread around 10 GB/s, a few links slow
# in their transfer and two pairs slow in their step only; slow flagged by the report's rule
# (over 10% slower than the median pair in step or transfer), as gpurelay writes it.
"$python" - "$tmp/pairs.json" <<'PY'
import json, sys
import numpy as np
rng = np.random.default_rng(3)
count = 300
transfer = 0.1 * rng.uniform(0.95, 1.05, count)
slow_links = [3, 17, 60, 61, 101, 102, 150, 199, 200, 201, 250, 298, 299]
transfer[slow_links] *= np.linspace(1.2, 3.0, len(slow_links))
step = 1.0 * rng.uniform(0.98, 1.02, count)
step[[40, 41]] *= 1.25
slow = (transfer > 1.1 * np.median(transfer)) | (step > 1.1 * np.median(step))
pairs = [{"pair": p, "producer": 2 * p, "consumer": 2 * p + 1, "step_ms": step[p],
          "transfer_ms": transfer[p], "transfer_gbps": 4 * 2**18 / transfer[p] / 1e6,
          "slow": bool(slow[p])} for p in range(count)]
ranks = [{"host": f"node{r * 7 % 75:02d}", "role": "producer" if r % 2 == 0 else "consumer"}
         for r in range(2 * count)]
summary = {"schema_version": 2, "world_size": 2 * count, "transport": "nccl",
           "pattern": "pairs", "config": {"elements": 262144}, "ranks": ranks,
           "passes": [{"overlap": True, "pairs": pairs}]}
json.dump(summary, open(sys.argv[1], "w"))
print(f"{int(slow.sum())} slow pairs: {list(np.flatnonzero(slow))}")
PY
"$plot" --json "$tmp/pairs.json" --out-dir "$tmp/pairs" | tee "$tmp/log-pairs" ||
    fail "plot --json exited non-zero"
check_figure "$tmp/pairs/pair_bandwidth.png"
"$python" - "$tmp/pairs.json" "$root/scripts/lib" "$tmp/log-pairs" <<'PY' || fail "the pairs' figure does not show the slow pairs"
import json, sys
sys.path.insert(0, sys.argv[2])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pair_plot
summary = json.load(open(sys.argv[1]))
pairs = summary["passes"][0]["pairs"]
host = lambda r: summary["ranks"][r]["host"]
slow = sorted((q for q in pairs if q["slow"]), key=lambda q: q["transfer_gbps"])
written = pair_plot.plot_pairs(sys.argv[1], summary, "", plt, lambda fig, d, name, plt: fig)
ax = written[0].axes[0]
every = [tuple(o) for c in ax.collections if c.get_gid() == "pairs" for o in c.get_offsets()]
red = [tuple(o) for c in ax.collections if c.get_gid() == "slow" for o in c.get_offsets()]
# Every pair, slowest first; the slow ones, and only they, red at their place in that order.
order = sorted(pairs, key=lambda q: q["transfer_gbps"])
assert [y for _, y in every] == [q["transfer_gbps"] for q in order], "not every pair, in order"
assert red == [(order.index(q), q["transfer_gbps"]) for q in slow], (red, slow)
# The slowest 10 of them numbered on the figure and named beside it with their ranks and hosts,
# the rest counted.
numbers = {t.get_text(): t.xy for t in ax.texts}
names = "\n".join(t.get_text() for t in written[0].axes[1].texts)
for k, q in enumerate(slow[:10]):
    assert numbers[str(k + 1)] == red[k], (k, numbers, red)
    name = f"pair {q['pair']}: ranks {q['producer']}->{q['consumer']}, {host(q['producer'])}->{host(q['consumer'])}"
    assert f"{k + 1:>2}  {name}" in names, (name, names)
assert len(numbers) == 10 and f"and {len(slow) - 10} more slow pairs" in names, names
# Every slow pair listed on the terminal with its hosts.
log = open(sys.argv[3]).read()
assert f"300 pairs from {sys.argv[1]}" in log and f"{len(slow)} slow: " in log, log
for q in slow:
    assert f"pair {q['pair']}: ranks {q['producer']}->{q['consumer']}, {host(q['producer'])}->{host(q['consumer'])}" in log, q
print(f"300 pairs in order; {len(slow)} slow, red and named:", [q["pair"] for q in slow])
PY

echo "== a summary of several sizes: a figure per size"
"$python" - "$tmp/pairs.json" "$tmp/sizes.json" <<'PY'
import copy, json, sys
case = json.load(open(sys.argv[1]))
other = copy.deepcopy(case)
other["config"]["elements"] = 1024
json.dump({"schema_version": 2, "cases": [case, other]}, open(sys.argv[2], "w"))
PY
"$plot" --json "$tmp/sizes.json" --out-dir "$tmp/sizes" >"$tmp/log-sizes" ||
    fail "plot --json of several sizes exited non-zero"
for size in 262144 1024; do check_figure "$tmp/sizes/pair_bandwidth_elements=$size.png"; done
echo '{"passes": []}' >"$tmp/no-pairs.json"
for bad in "$tmp/no-pairs.json" "$tmp/missing.json"; do
    status=0
    "$plot" --json "$bad" --out-dir "$tmp/bad" 2>"$tmp/err.txt" || status=$?
    [[ $status -eq 2 && "$(wc -l <"$tmp/err.txt")" -eq 1 ]] ||
        fail "$bad: expected exit 2 and one line, got $status: $(cat "$tmp/err.txt")"
done

echo "== every pair's bandwidth of a real run of 8 ranks (4 pairs, CPU path)"
mpirun_np 8 "$binary" --input "$tmp/deck.toml" --overlap on --elements 64Ki \
    --output "$tmp/run8.h5" --summary-json "$tmp/np8.json" --quiet >"$tmp/np8.log" 2>&1 ||
    { cat "$tmp/np8.log"; fail "the 8-rank run failed"; }
"$plot" --json "$tmp/np8.json" --out-dir "$tmp/np8" | tee "$tmp/log-np8" ||
    fail "plot --json of the 8-rank run exited non-zero"
check_figure "$tmp/np8/pair_bandwidth.png"
slow="$("$python" -c 'import json, sys; print(sum(q["slow"] for q in json.load(open(sys.argv[1]))["passes"][-1]["pairs"]))' "$tmp/np8.json")"
# Their rates, or where the judgement withholds them (phase times that cannot be read on a few
# cores), their transfer times.
grep -Eq "^pair_bandwidth.png: 4 pairs from $tmp/np8.json, median .* (GB/s|ms), $slow slow" \
    "$tmp/log-np8" || fail "the 8-rank run's figure is not of its 4 pairs and $slow slow ones"

echo "== pairs whose rate is withheld: every pair's transfer time, those hollow"
"$python" - "$tmp/pairs.json" "$tmp/withheld.json" "$root/scripts/lib" <<'PY' ||
import json, sys
sys.path.insert(0, sys.argv[3])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pair_plot
summary = json.load(open(sys.argv[1]))
pairs = summary["passes"][0]["pairs"]
for q in pairs[:5]:
    q["transfer_gbps"], q["withheld"] = None, "above_ceiling"
json.dump(summary, open(sys.argv[2], "w"))
fig = pair_plot.plot_pairs(sys.argv[2], summary, "", plt, lambda fig, d, name, plt: fig)[0]
ax = fig.axes[0]
assert "transfer time" in ax.get_ylabel(), ax.get_ylabel()
hollow = [c for c in ax.collections if c.get_gid() == "pairs" and
          tuple(c.get_facecolors()[0][:3]) == (1.0, 1.0, 1.0)]
drawn = sorted(y for c in hollow for _, y in c.get_offsets())
assert drawn == sorted(q["transfer_ms"] for q in pairs[:5]), (drawn, pairs[:5])
print("5 withheld pairs drawn hollow at their transfer times; no GB/s axis")
PY
    fail "withheld pairs are not drawn hollow at their transfer times"

echo "PASS: test_plot"
