#!/usr/bin/env bash
# Tests scripts/compare on made-up JSON summaries (of one size, and of several: one case per
# size, matched by size) and results CSVs: one launch a side, exit 0 within the threshold, 1
# when a headline figure is worse than it (each way round: a longer time, a lower bandwidth);
# several launches a side (BASE... -- NEW..., and a CSV's repeated rows), exit 0 and "~" for the
# same distribution, 1 naming the figure for a shifted one, phases "differs (not gating)" and
# gating only with --gate-phases, Holm over every row; withheld figures (null, unreadable phase
# times) not compared; passes in run order and columns aligned for JSON and CSV alike; each
# median with its 95% confidence interval from order statistics (against the binomial's, 1 to
# 40 launches; none under 6); 2 with a one-line reason for inputs that cannot be compared.
# Usage: tests/scripts/test_compare.sh GPURELAY_BINARY REPO_ROOT   (the binary is not used)
set -euo pipefail

if [[ $# -ne 2 || "$1" == -h || "$1" == --help ]]; then
    echo "Usage: $0 GPURELAY_BINARY REPO_ROOT" >&2
    exit 2
fi
root="$(cd "$2" && pwd)"
python="${GPURELAY_PYTHON:-/usr/bin/python3}"
compare="$root/scripts/compare"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect CODE TEXT ARGS...: scripts/compare ARGS exits CODE and its output holds TEXT.
expect() {
    local code="$1" text="$2" status=0
    shift 2
    "$compare" "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    [[ "$status" == "$code" ]] ||
        fail "compare $* exited $status, expected $code: $(cat "$tmp/out" "$tmp/err")"
    grep -qF -- "$text" "$tmp/out" "$tmp/err" || fail "compare $*: no '$text' in: $(cat "$tmp/out" "$tmp/err")"
    if [[ "$code" == 2 ]]; then
        [[ "$(wc -l <"$tmp/err")" == 1 ]] || fail "compare $*: not one line of reason: $(cat "$tmp/err")"
    fi
    echo "compare $*: exit $code ok"
}

# summary NAME TIME_PER_STEP B_P99 GBPS [ELEMENTS [B_MEDIAN [DEPTH]]]: a JSON summary of two
# passes, both compared (the off pass the same in every file).
summary() {
    cat >"$tmp/$1" <<JSON
{"schema_version": 2, "world_size": 2,
 "config": {"elements": ${5:-1024}, "depth": ${7:-2}, "output": "/tmp/$1.h5", "tag": "$1"},
 "passes": [
  {"overlap": false, "time_per_step_ms": 99.0, "transfer_gbps": 0.01,
   "phases_ms": {"b": {"median": 50.0, "p99": 90.0}}},
  {"overlap": true, "time_per_step_ms": $2, "transfer_gbps": $4,
   "phases_ms": {"b": {"median": ${6:-0.5}, "p99": $3}, "c": {"median": null, "p99": null}}}]}
JSON
}
summary base.json 1.00 0.80 10.0
summary same.json 1.04 0.82 9.7
summary slower.json 1.10 0.80 10.0
# One launch a side: B's median 4x, beyond the runs' step-to-step spread (2 x (p99 - p50) / p50
# = 120% in base.json).
summary tail.json 1.00 2.4 10.0 1024 2.0
summary narrower.json 1.00 0.80 9.0
summary other.json 1.00 0.80 10.0 2048

expect 0 "none worse than 5%" "$tmp/base.json" "$tmp/same.json"
expect 0 "b (median)" "$tmp/base.json" "$tmp/same.json"
# Within the threshold, one launch a side is no change.
expect 0 "time per step  ms                          1.000                       1.040   +4.0%         -  ~" "$tmp/base.json" "$tmp/same.json"
expect 1 "WORSE by 10.0%" "$tmp/base.json" "$tmp/slower.json"
expect 0 "none worse than 15%" "$tmp/base.json" "$tmp/slower.json" --threshold 15
# A phase's median is shown, and gates only when asked.
expect 0 "differs (not gating)" "$tmp/base.json" "$tmp/tail.json"
expect 1 "b_ms_median (overlap on)" "$tmp/base.json" "$tmp/tail.json" --gate-phases
expect 1 "transfer_gbps (overlap on)" "$tmp/base.json" "$tmp/narrower.json"
expect 0 "better by 9.1%" "$tmp/slower.json" "$tmp/base.json"
expect 2 "elements = 1024 in BASE, 2048 in NEW" "$tmp/base.json" "$tmp/other.json"
# What is compared may differ (--across), and only that: depth 1 against depth 2.
summary depth1.json 1.10 0.80 10.0 1024 0.5 1
expect 2 "different configurations: depth = 2 in BASE, 1 in NEW" "$tmp/base.json" "$tmp/depth1.json"
expect 1 "WORSE by 10.0%" "$tmp/base.json" "$tmp/depth1.json" --across depth
expect 2 "different configurations: elements = 1024 in BASE, 2048 in NEW" \
    "$tmp/base.json" "$tmp/other.json" --across depth
expect 2 "different configurations: depth = 1 in NEW" \
    "$tmp/base.json" "$tmp/same.json" -- "$tmp/depth1.json" "$tmp/slower.json" --across depth

# sizes NAME CASE... : a multi-size summary (one launch of --elements S1,S2,...) of the cases,
# each the summary of one size.
sizes() {
    local name="$1" cases="" part
    shift
    for part in "$@"; do cases+="${cases:+,}$(cat "$tmp/$part")"; done
    echo "{\"schema_version\": 2, \"sizes\": [], \"verified\": true, \"cases\": [$cases]}" \
        >"$tmp/$name"
}
summary big.json 2.00 1.60 20.0 4096
summary big-slower.json 2.30 1.60 20.0 4096
summary big-same.json 2.02 1.61 19.9 4096
sizes sweep.json base.json big.json
sizes sweep-same.json big-same.json same.json # the same sizes in another order
sizes sweep-slower.json base.json big-slower.json
sizes sweep-fewer.json big.json

expect 0 "elements=4096:" "$tmp/sweep.json" "$tmp/sweep-same.json"
expect 0 "none worse than 5%" "$tmp/sweep.json" "$tmp/sweep-same.json"
expect 1 "WORSE by 15.0%" "$tmp/sweep.json" "$tmp/sweep-slower.json"
expect 2 "different sizes: elements = 1024 in BASE only" "$tmp/sweep.json" "$tmp/sweep-fewer.json"
expect 2 "different sizes: elements = 1024 in NEW only" "$tmp/sweep-fewer.json" "$tmp/sweep.json"
# A single-size summary is one case: it matches the case of its size, and no other.
expect 0 "time_per_step_ms" "$tmp/big.json" "$tmp/sweep-fewer.json"
expect 2 "different sizes: elements = 4096 in NEW only" "$tmp/base.json" "$tmp/sweep.json"
echo '{"schema_version": 2, "sizes": [], "cases": []}' >"$tmp/no-cases.json"
expect 2 "a multi-size JSON summary without cases" "$tmp/sweep.json" "$tmp/no-cases.json"

header="tag,world_size,elements,depth,time_per_step_ms,step_ms_median,b_ms,transfer_gbps,b_ms_p99"
printf '%s\n' "$header" "a,2,1024,2,1.0,1.0,0.5,10,0.8" "b,2,4096,2,2.0,2.0,1.0,20,1.5" \
    >"$tmp/base.csv"
# The same configurations in another order, one run twice (both rows are its launches: their
# median counts), within 5%.
printf '%s\n' "$header" "b,2,4096,2,1.98,2.0,1.0,20,1.5" "a,2,1024,2,1.02,1.0,0.5,10,0.8" \
    "b,2,4096,2,2.04,2.0,1.0,20,1.5" >"$tmp/same.csv"
printf '%s\n' "$header" "a,2,1024,2,1.0,1.0,0.5,10,0.8" "b,2,4096,2,2.0,2.0,1.0,17,1.5" \
    >"$tmp/narrower.csv"
printf '%s\n' "$header" "a,2,1024,2,1.0,1.0,0.5,10,0.8" >"$tmp/fewer.csv"
# An older header without the percentiles: the figures both have are compared.
printf '%s\n' "tag,world_size,elements,depth,time_per_step_ms,b_ms,transfer_gbps" \
    "a,2,1024,2,1.0,0.5,10" "b,2,4096,2,2.0,1.0,20" >"$tmp/old.csv"

expect 0 "elements=4096:" "$tmp/base.csv" "$tmp/same.csv"
expect 1 "WORSE by 15.0%" "$tmp/base.csv" "$tmp/narrower.csv"
expect 0 "b (median)" "$tmp/old.csv" "$tmp/base.csv"
expect 2 "no row in NEW for world_size=2 elements=4096 depth=2" "$tmp/base.csv" "$tmp/fewer.csv"
expect 2 "different kinds of file" "$tmp/base.json" "$tmp/base.csv"
echo "not a result" >"$tmp/junk.txt"
expect 2 "neither a gpurelay JSON summary nor a results CSV" "$tmp/base.csv" "$tmp/junk.txt"
expect 2 "cannot read" "$tmp/base.csv" "$tmp/missing.csv"
echo '{"passes": [' >"$tmp/broken.json"
expect 2 "not valid JSON" "$tmp/base.json" "$tmp/broken.json"

# A compare row's passes in run order, as a JSON summary's: overlap off, then overlap on.
printf '%s\n' "tag,world_size,elements,overlap,time_per_step_ms,time_per_step_no_overlap_ms" \
    "a,2,1024,compare,1.0,1.2" >"$tmp/compare.csv"
"$compare" "$tmp/compare.csv" "$tmp/compare.csv" >"$tmp/out"
[[ "$(grep -o '^overlap o[nf]*' "$tmp/out" | tr '\n' ' ')" == "overlap off overlap on " ]] ||
    fail "a CSV's passes out of run order: $(cat "$tmp/out")"

echo "== several launches a side"
# Five launches a side: the same values in another order, then every one about 12% slower, then
# B's median alone 2x.
for i in 1 2 3 4 5; do
    summary "r$i.json" "1.0$i" 0.80 10.0
    summary "s$i.json" "1.0$((6 - i))" 0.80 10.0
    summary "slow$i.json" "1.1$((i + 2))" 0.80 10.0
    summary "bslow$i.json" "1.0$i" 0.80 10.0 1024 "1.0$i"
done
r=("$tmp"/r?.json) s=("$tmp"/s?.json) slow=("$tmp"/slow?.json) bslow=("$tmp"/bslow?.json)
# Six rows: each pass's time per step, transfer and B's median (C's is null: not compared). The
# off pass's rows and the transfer are the same in every launch: p 1 on every SciPy (1.18 gives
# NaN by itself, which hid the slowed set's row below).
expect 0 "none worse than 5% (p <= 0.05, Holm over 6 rows)" "${r[@]}" -- "${s[@]}"
expect 0 "+0.0%     1.000  ~" "${r[@]}" -- "${s[@]}"
expect 0 "overlap on: BASE 5 launches, NEW 5 launches" "${r[@]}" -- "${s[@]}"
expect 1 "WORSE than 5% (p <= 0.05, Holm over 6 rows): time_per_step_ms (overlap on)" "${r[@]}" -- "${slow[@]}"
# Completely separated: p = 0.0079, times the 6 rows (Holm's method) 0.048.
expect 1 "0.048  WORSE by 11.7%" "${r[@]}" -- "${slow[@]}"
# One launch out of order: p = 0.016 alone, 0.095 over the 6 rows: no change, as identical
# launches give one time in 63 for one row, and the rows' alarms must not add.
for i in 1 2 3 4 5; do summary "near$i.json" "$( ((i == 1)) && echo 1.045 || echo "1.1$((i + 2))")" 0.80 10.0; done
expect 0 "0.095  ~" "${r[@]}" -- "$tmp"/near?.json
expect 0 "none worse than 15%" "${r[@]}" -- "${slow[@]}" --threshold 15
# A phase that changes: "differs (not gating)", or with --gate-phases WORSE.
expect 0 "b (median)     ms                         0.5000                       1.030  +106.0%     0.045  differs (not gating)" \
    "${r[@]}" -- "${bslow[@]}"
expect 1 "b_ms_median (overlap on)" "${r[@]}" -- "${bslow[@]}" --gate-phases
# The lines after the table: the verdict, which rows gate, the files summarised.
expect 0 "compare: gating: time_per_step_ms, transfer_gbps of overlap off, overlap on; the phases' medians shown, not gating (--gate-phases)" \
    "${r[@]}" -- "${s[@]}"
expect 0 "compare: NEW 5 files ($tmp/s…) against BASE 5 files ($tmp/r…)" "${r[@]}" -- "${s[@]}"
expect 0 "3 and 3 launches cannot show a change in 6 rows" "${r[@]:0:3}" -- "${slow[@]:0:3}"
expect 0 "use 5 or more a side" "${r[@]:0:3}" -- "${slow[@]:0:3}"
expect 2 "one '--' with files on both sides" "${r[@]}" --
expect 2 "3 files without '--'" "${r[@]:0:3}"
# A figure withheld (null) in one launch is compared in none, and the phases only where every
# launch's phase times can be read.
sed 's/"transfer_gbps": 10.0/"transfer_gbps": null/' "$tmp/s1.json" >"$tmp/s1w.json"
sed 's/"passes"/"phase_times": {"readable": false}, "passes"/' "$tmp/s2.json" >"$tmp/s2u.json"
expect 0 "overlap on: BASE 5 launches, NEW 5 launches (withheld in some launches, not compared: b_ms_median, transfer_gbps)" \
    "${r[@]}" -- "$tmp/s1w.json" "$tmp/s2u.json" "${s[@]:2}"

# A CSV with repeats: each configuration's rows are its launches.
{
    echo "$header"
    for i in 1 2 3 4 5; do echo "a,2,1024,2,1.0$i,1.0,0.5,10,0.8"; done
} >"$tmp/repeats.csv"
{
    echo "$header"
    for i in 5 4 3 2 1; do echo "a,2,1024,2,1.0$i,1.0,0.5,10,0.8"; done
} >"$tmp/repeats-same.csv"
sed 's/,1\.0\([0-9]\),1\.0,/,1.2\1,1.0,/' "$tmp/repeats.csv" >"$tmp/repeats-slow.csv"
expect 0 "BASE 5 launches, NEW 5 launches" "$tmp/repeats.csv" "$tmp/repeats-same.csv"
expect 1 "time_per_step_ms (main pass)" "$tmp/repeats.csv" "$tmp/repeats-slow.csv"

echo "== each median's 95% confidence interval, from the launches' order statistics"
# 5 launches a side cannot give one (the least and largest of 5 hold the median with 94%).
expect 0 "time per step  ms                          1.030                       1.030   +0.0%" \
    "${r[@]}" -- "${s[@]}"
expect 0 "a 95% confidence interval of a median needs 6 or more launches a side (5 here)" \
    "${r[@]}" -- "${s[@]}"
# 6 can: their least and largest (97%); r1..r6 take 1.01 to 1.06 ms a step.
summary r6.json 1.06 0.80 10.0
expect 0 "1.035 [1.010, 1.060]" "${r[@]}" "$tmp/r6.json" -- "${s[@]}" "$tmp/r6.json"
"$python" - "$root/scripts/lib" <<'PY' || fail "the intervals differ from the binomial's"
import math, sys
sys.path.insert(0, sys.argv[1])
from compare import median_interval
# With n values the k-th least to the k-th largest hold the median unless k or more fall on one
# side of it: chance 1 - 2 x sum_{i<k} C(n, i) / 2^n; k the largest that keeps it >= 95%.
for n in range(1, 41):
    holds = lambda k: 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    ks = [k for k in range(1, n // 2 + 1) if holds(k) >= 0.95]
    expected = (ks[-1], n + 1 - ks[-1]) if ks else None
    got = median_interval([10.0 * v for v in range(n, 0, -1)])
    assert got == (None if expected is None else (10.0 * expected[0], 10.0 * expected[1])), (n, got)
print("median intervals of 1 to 40 values: none below 6; 6 to 8: least to largest; 9:",
      median_interval(list(range(1, 10))), "; 40:", median_interval(list(range(1, 41))))
PY
echo "scripts/compare: ok"
