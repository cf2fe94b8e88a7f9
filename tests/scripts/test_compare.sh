#!/usr/bin/env bash
# Tests scripts/compare on made-up JSON summaries (of one size, and of several: one case per
# size, matched by size) and results CSVs: exit 0 within the threshold, 1 when a figure is worse
# than it (each way round: a longer time, a lower bandwidth), 2 with a one-line reason for
# inputs that cannot be compared (a size that one side lacks among them).
# Usage: tests/scripts/test_compare.sh GPURELAY_BINARY REPO_ROOT   (the binary is not used)
set -euo pipefail

if [[ $# -ne 2 || "$1" == -h || "$1" == --help ]]; then
    echo "Usage: $0 GPURELAY_BINARY REPO_ROOT" >&2
    exit 2
fi
root="$(cd "$2" && pwd)"
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

# summary NAME TIME_PER_STEP B_P99 GBPS [ELEMENTS]: a JSON summary of two passes (the last is
# the one compared; the first is far slower, so comparing it would fail every case).
summary() {
    cat >"$tmp/$1" <<JSON
{"schema_version": 2, "world_size": 2,
 "config": {"elements": ${5:-1024}, "depth": 2, "output": "/tmp/$1.h5", "tag": "$1"},
 "passes": [
  {"overlap": false, "time_per_step_ms": 99.0, "transfer_gbps": 0.01,
   "phases_ms": {"b": {"median": 50.0, "p99": 90.0}}},
  {"overlap": true, "time_per_step_ms": $2, "transfer_gbps": $4,
   "phases_ms": {"b": {"median": 0.5, "p99": $3}, "c": {"median": null, "p99": null}}}]}
JSON
}
summary base.json 1.00 0.80 10.0
summary same.json 1.04 0.82 9.7
summary slower.json 1.10 0.80 10.0
summary tail.json 1.00 0.90 10.0
summary narrower.json 1.00 0.80 9.0
summary other.json 1.00 0.80 10.0 2048

expect 0 "none worse than 5%" "$tmp/base.json" "$tmp/same.json"
expect 0 "b_ms_p99" "$tmp/base.json" "$tmp/same.json"
expect 1 "WORSE by 10.0%" "$tmp/base.json" "$tmp/slower.json"
expect 0 "none worse than 15%" "$tmp/base.json" "$tmp/slower.json" --threshold 15
expect 1 "b_ms_p99" "$tmp/base.json" "$tmp/tail.json"
expect 1 "transfer_gbps      higher" "$tmp/base.json" "$tmp/narrower.json"
expect 0 "better by 9.1%" "$tmp/slower.json" "$tmp/base.json"
expect 2 "elements = 1024 in BASE, 2048 in NEW" "$tmp/base.json" "$tmp/other.json"

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
# The same configurations in another order, one run twice (its last row counts), within 5%.
printf '%s\n' "$header" "b,2,4096,2,2.5,2.0,1.0,20,1.5" "a,2,1024,2,1.02,1.0,0.5,10,0.8" \
    "b,2,4096,2,2.04,2.0,1.0,20,1.5" >"$tmp/same.csv"
printf '%s\n' "$header" "a,2,1024,2,1.0,1.0,0.5,10,0.8" "b,2,4096,2,2.0,2.0,1.0,17,1.5" \
    >"$tmp/narrower.csv"
printf '%s\n' "$header" "a,2,1024,2,1.0,1.0,0.5,10,0.8" >"$tmp/fewer.csv"
# An older header without the percentiles: the figures both have are compared.
printf '%s\n' "tag,world_size,elements,depth,time_per_step_ms,b_ms,transfer_gbps" \
    "a,2,1024,2,1.0,0.5,10" "b,2,4096,2,2.0,1.0,20" >"$tmp/old.csv"

expect 0 "elements=4096:" "$tmp/base.csv" "$tmp/same.csv"
expect 1 "WORSE by 15.0%" "$tmp/base.csv" "$tmp/narrower.csv"
expect 0 "b_ms_median" "$tmp/old.csv" "$tmp/base.csv"
expect 2 "no row in NEW for world_size=2 elements=4096 depth=2" "$tmp/base.csv" "$tmp/fewer.csv"
expect 2 "different kinds of file" "$tmp/base.json" "$tmp/base.csv"
echo "not a result" >"$tmp/junk.txt"
expect 2 "neither a gpurelay JSON summary nor a results CSV" "$tmp/base.csv" "$tmp/junk.txt"
expect 2 "cannot read" "$tmp/base.csv" "$tmp/missing.csv"
echo '{"passes": [' >"$tmp/broken.json"
expect 2 "not valid JSON" "$tmp/base.json" "$tmp/broken.json"
echo "scripts/compare: ok"
