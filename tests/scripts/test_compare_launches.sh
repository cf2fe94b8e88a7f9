#!/usr/bin/env bash
# The acceptance test of scripts/compare against the noise between launches, with the real
# binary on the CPU path: three sets of 5 identical launches (scripts/sweep --repeat 5
# --summary-json) compare as no change (exit 0), as their JSON summaries and as their CSVs, but
# for at most one false alarm among the three pairs; a
# set slowed by a known delay per step (debug_delay_us on the consumer) is found worse (exit 1,
# naming time_per_step_ms); one launch a side of identical configurations exits 0 and says it
# cannot tell noise from a change.
# Usage: tests/scripts/test_compare_launches.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
compare="$root/scripts/compare"

# Small and short: the point is the comparison, not the figures. write = none keeps the disk
# out of the step times.
cat >"$tmp/deck.toml" <<'TOML'
device = "cpu"
transport = "mpi"
steps = 40
warmup = 2
c_elements = "4Ki"
c_iterations = 1
write = "none"
timeout_s = 60.0
TOML

# launches NAME KEY=V...: 5 repeats of the grid KEY=V... at elements=64Ki into $tmp/NAME/ (a
# JSON each) and $tmp/NAME.csv. The sweep runs the grid's points in turn in each repeat, so two
# points are interleaved in time: a load that comes or goes during the test slows both alike.
launches() {
    local name="$1"
    shift
    "$root/scripts/sweep" --deck "$tmp/deck.toml" --binary "$binary" --out-dir "$tmp/$name" \
        --csv "$tmp/$name.csv" --summary-json --repeat 5 --any-key elements=64Ki "$@" \
        >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "the $name launches failed"; }
}

# expect CODE TEXT ARGS...: scripts/compare ARGS exits CODE and its output holds TEXT.
expect() {
    local code="$1" text="$2" status=0
    shift 2
    "$compare" "$@" >"$tmp/out" 2>&1 || status=$?
    cat "$tmp/out"
    [[ "$status" == "$code" ]] || fail "compare exited $status, expected $code"
    grep -qF -- "$text" "$tmp/out" || fail "no '$text' in the output"
}

# split NAME POINT SET: the launches of POINT (KEY=V, in their file names and tags) into $tmp/SET/
# and $tmp/SET.csv.
split() {
    mkdir -p "$tmp/$3"
    find "$tmp/$1" -name "*$2*.json" -exec cp {} "$tmp/$3/" \;
    [[ "$(find "$tmp/$3" -name '*.json' | wc -l)" -eq 5 ]] || fail "$3: not 5 JSON summaries"
    "$python" - "$tmp/$1.csv" "$2" "$tmp/$3.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[3], "w", newline="") as f:
    out = csv.DictWriter(f, fieldnames=list(rows[0]))
    out.writeheader()
    out.writerows(r for r in rows if sys.argv[2] in r["tag"].split())
PY
}

# Three identical configurations (timeout_s says only when to give up; compare leaves it out of
# the configuration), interleaved; then the same slowed by 20 ms before each receive of the
# consumer (rank 1): every step at least that much longer. The slow set runs after the others, so
# its delay must stand above what a busy machine adds to a step meanwhile: on CI's two cores,
# beside another test and a build, identical launches have taken 2 ms a step where they take
# 0.3 ms alone, and a 2 ms delay was then not told apart.
launches identical timeout_s=60,61,62
split identical timeout_s=60 base
split identical timeout_s=61 same
split identical timeout_s=62 third
launches slow timeout_s=60 debug_delay_us=20000 debug_delay_rank=1
[[ "$(find "$tmp/slow" -name '*.json' | wc -l)" -eq 5 ]] || fail "slow: not 5 JSON summaries"

echo "== identical launches: no change"
# A false alarm is the chance that compare's test allows (p <= 0.05 over all its gating figures:
# with 5 launches a side about 1 in 50), so one alarm in the three pairs of identical sets is
# tolerated and two fail: the odds of that without a fault are about 1 in 300, while a compare
# that ignored the noise (gating on every figure's median at 5%) would alarm on nearly every pair.
alarms=0
for pair in "base same" "base third" "same third"; do
    read -r one other <<<"$pair"
    for form in json csv; do
        if [[ $form == json ]]; then sides=("$tmp/$one"/*.json -- "$tmp/$other"/*.json)
        else sides=("$tmp/$one.csv" -- "$tmp/$other.csv"); fi
        status=0
        "$compare" "${sides[@]}" >"$tmp/out" 2>&1 || status=$?
        cat "$tmp/out"
        ((status <= 1)) || fail "compare $one $other ($form) exited $status"
        grep -q "BASE 5 launches, NEW 5 launches" "$tmp/out" || fail "not 5 launches a side"
        [[ $form == csv ]] || grep -q "^overlap off: BASE 5 launches" "$tmp/out" ||
            fail "the off pass not compared"
        if ((status == 1)); then alarms=$((alarms + 1)); echo "(a false alarm: $one $other)"; break; fi
        grep -qF "none worse than 5% (p <= 0.05, Holm over" "$tmp/out" || fail "no verdict line"
    done
done
((alarms <= 1)) || fail "$alarms of 3 pairs of identical sets called worse"

echo "== a delay per step: worse"
expect 1 "time_per_step_ms (overlap on" "$tmp"/base/*.json -- "$tmp"/slow/*.json
expect 1 "time_per_step_ms (overlap on" "$tmp/base.csv" -- "$tmp/slow.csv"

echo "== one launch a side, identical: no change, and a note that it cannot tell"
first() { find "$tmp/$1" -name '*repeat=0.json'; }
expect 0 "one launch on a side" "$(first base)" "$(first same)"
expect 0 "none worse than 5% (beyond the runs' spread)" "$(first base)" "$(first same)"
echo "PASS: test_compare_launches"
