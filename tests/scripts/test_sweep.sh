#!/usr/bin/env bash
# Tests scripts/sweep against a gpurelay binary: a 2x2 grid (elements x c_iterations) runs 4
# points in 2 launches, one per combination with both sizes inside (a row per size, an HDF5 file
# per launch with a group per size), a second run skips all 4, new sizes run alone in each
# combination, a launch cut short after a size counts that size done and resumes with the
# others, rows of older sweeps (a launch per size) still count, a deck's sizes resume the same
# way, the sweep counts sizes as gpurelay does, a launch's JSON summary (--summary-json)
# compares case by case, a failing point makes the sweep fail, a grid whose points all fail the
# same way (the README's overlap sweep on a deck that wants a GPU, with none visible) stops
# after the launches that take every value once and says why, a tag too long for a file name
# gets a shortened name, --repeat N runs a configuration N times (rows tagged repeat=0..N-1, a
# median and range at the end; in a grid in turn; an array task each), and a malformed KEY=V
# argument or list of sizes is refused with exit 2.
# Usage: tests/scripts/test_sweep.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_modules h5py

# The CSV's data rows as "TAG|ELEMENTS", one per line (parsed as CSV: a tag holds spaces and may
# be quoted).
csv_points() {
    "$python" -c 'import csv, sys
for row in csv.DictReader(open(sys.argv[1])): print(row["tag"] + "|" + row["elements"])' "$1"
}
csv_rows() {
    csv_points "$1" | wc -l
}
# h5_cases FILE: the elements attribute of each group /cases/N, in N's order, one per line.
h5_cases() {
    "$python" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    for n in sorted(f["cases"], key=int): print(int(f["cases"][n].attrs["elements"]))' "$1"
}

# Tiny, CPU-only, nothing written to HDF5 but the file itself: seconds per point.
cat >"$tmp/deck.toml" <<'EOF'
device = "cpu"
transport = "mpi"
elements = "1Ki"
steps = 4
warmup = 1
depth = 2
overlap = "on"
c_elements = "1Ki"
c_iterations = 1
write = "none"
timeout_s = 60.0
EOF

csv="$tmp/results.csv"
sweep=("$root/scripts/sweep" --deck "$tmp/deck.toml" --csv "$csv" --np 2 --binary "$binary"
    --out-dir "$tmp/out")

echo "== 2x2 grid: 4 points in 2 launches, one per combination, its sizes inside"
"${sweep[@]}" elements=1Ki,2Ki c_iterations=1,2 | tee "$tmp/log1" ||
    fail "first sweep exited non-zero"
[[ "$(csv_rows "$csv")" -eq 4 ]] || fail "expected 4 rows, got $(csv_rows "$csv")"
# Rows in run order: each launch's sizes in the order given, tagged with its combination.
expected_points="$(printf '%s\n' "c_iterations=1|1024" "c_iterations=1|2048" \
    "c_iterations=2|1024" "c_iterations=2|2048")"
[[ "$(csv_points "$csv")" == "$expected_points" ]] ||
    fail "rows (tag|elements) differ: got [$(csv_points "$csv" | tr '\n' ' ')]"
[[ "$(grep -c '^run \[' "$tmp/log1")" -eq 2 ]] || fail "expected 2 'run' lines (launches)"
grep -qx 'run \[1/2\]: elements=1Ki,2Ki c_iterations=1' "$tmp/log1" ||
    fail "the first launch is not elements=1Ki,2Ki c_iterations=1"
grep -q '^sweep: 4 done, 0 skipped, 0 failed (of 4); ' "$tmp/log1" || fail "no summary of 4 points"
[[ "$(find "$tmp/out" -name '*.h5' | wc -l)" -eq 2 ]] || fail "expected 2 HDF5 files in $tmp/out"
for name in elements=1Ki_2Ki,c_iterations=1 elements=1Ki_2Ki,c_iterations=2; do
    [[ -s "$tmp/out/$name.h5" ]] || fail "no $name.h5 (files named by the launch) in $tmp/out"
    [[ "$(h5_cases "$tmp/out/$name.h5" | tr '\n' ' ')" == "1024 2048 " ]] ||
        fail "$name.h5: cases $(h5_cases "$tmp/out/$name.h5" | tr '\n' ' '), not 1024 2048"
done

echo "== same grid again: all 4 skipped"
"${sweep[@]}" elements=1Ki,2Ki c_iterations=1,2 | tee "$tmp/log2" ||
    fail "second sweep exited non-zero"
[[ "$(grep -c '^skip (done): ' "$tmp/log2")" -eq 4 ]] || fail "expected 4 'skip (done)' lines"
grep -qx 'skip (done): elements=2Ki c_iterations=1' "$tmp/log2" || fail "points are not named"
if grep -q '^run \[' "$tmp/log2"; then fail "a point ran again"; fi
[[ "$(csv_rows "$csv")" -eq 4 ]] || fail "expected still 4 rows, got $(csv_rows "$csv")"

echo "== new sizes: each combination runs with only its missing sizes"
# The new sizes run in the order given (1e3 after 4Ki), in a file of their own: the first
# launch's file is left as it was.
"${sweep[@]}" elements=4Ki,1Ki,2Ki,1e3 c_iterations=1,2 | tee "$tmp/log3" ||
    fail "third sweep exited non-zero"
[[ "$(grep -c '^skip (done): ' "$tmp/log3")" -eq 4 ]] || fail "expected 4 skips"
[[ "$(grep -c '^run \[' "$tmp/log3")" -eq 2 ]] || fail "expected 2 launches"
grep -qx 'run \[1/2\]: elements=4Ki,1e3 c_iterations=1' "$tmp/log3" ||
    fail "the first combination did not run with its two missing sizes alone"
[[ "$(csv_rows "$csv")" -eq 8 ]] || fail "expected 8 rows, got $(csv_rows "$csv")"
[[ "$(csv_points "$csv" | tail -n 4 | tr '\n' ' ')" == \
    "c_iterations=1|4096 c_iterations=1|1000 c_iterations=2|4096 c_iterations=2|1000 " ]] ||
    fail "the new rows are not the missing sizes: $(csv_points "$csv" | tail -n 4 | tr '\n' ' ')"
[[ "$(h5_cases "$tmp/out/elements=4Ki_1e3,c_iterations=1.h5" | tr '\n' ' ')" == "4096 1000 " ]] ||
    fail "elements=4Ki_1e3,c_iterations=1.h5 does not hold the two new sizes"
[[ "$(h5_cases "$tmp/out/elements=1Ki_2Ki,c_iterations=1.h5" | tr '\n' ' ')" == "1024 2048 " ]] ||
    fail "the earlier launch's file was changed"
# Sizes are matched by their count: 1048576 is 1Mi written otherwise.
status=0
"${sweep[@]}" elements=1Mi,1048576 >"$tmp/out.txt" 2>"$tmp/err.txt" || status=$?
[[ $status -eq 2 ]] || fail "elements=1Mi,1048576: exit $status, not 2"
grep -qx "sweep: elements: the size 1048576 is given twice in '1Mi,1048576'" "$tmp/err.txt" ||
    fail "no one-line reason for a size given twice: $(cat "$tmp/err.txt")"

echo "== a CSV from sweeps of one launch per size (rows tagged elements=S ...): still done"
mpirun_np 2 "$binary" --input "$tmp/deck.toml" --elements 8Ki --c-iterations 1 \
    --results-csv "$csv" --tag "elements=8Ki c_iterations=1" --output "$tmp/old.h5" --quiet ||
    fail "the run tagged as an older sweep's point failed"
"${sweep[@]}" elements=1Ki,8Ki c_iterations=1 | tee "$tmp/log3b" ||
    fail "the sweep over an old row failed"
grep -qx 'skip (done): elements=8Ki c_iterations=1' "$tmp/log3b" || fail "the old row is not done"
if grep -q '^run \[' "$tmp/log3b"; then fail "a point ran again"; fi

echo "== a launch that ends after its first size: that point done, the rest failed, then resumed"
# A stand-in launcher: mpirun with the launch's first size only, then exit 3, as a job that
# is killed between two sizes would end.
cat >"$tmp/first-size-only.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
command=()
for arg in "$@"; do
    if [[ "$arg" == --elements=* ]]; then arg="${arg%%,*}"; fi
    command+=("$arg")
done
"${command[@]}"
exit 3
EOF
mpirun=(mpirun -np "{np}")
if ((EUID == 0)); then mpirun+=(--allow-run-as-root); fi
status=0
"${sweep[@]}" --csv "$tmp/cut.csv" --out-dir "$tmp/cut" elements=1Ki,2Ki,4Ki transport=mpi \
    --launcher "bash $tmp/first-size-only.sh ${mpirun[*]}" >"$tmp/log-cut" 2>&1 || status=$?
cat "$tmp/log-cut"
[[ $status -eq 1 ]] || fail "a launch that ended early: exit $status, not 1"
grep -qx '  failed: exit 3 after .* s (1 of 3 sizes done)' "$tmp/log-cut" ||
    fail "no 'failed: exit 3 ... (1 of 3 sizes done)' line"
grep -q '^sweep: 1 done, 0 skipped, 2 failed (of 3); ' "$tmp/log-cut" ||
    fail "no summary of 1 done and 2 failed"
grep -qx '  3: elements=4Ki transport=mpi' "$tmp/log-cut" || fail "4Ki is not listed as failed"
"${sweep[@]}" --csv "$tmp/cut.csv" --out-dir "$tmp/cut" elements=1Ki,2Ki,4Ki transport=mpi |
    tee "$tmp/log-cut2" || fail "the resumed sweep failed"
grep -qx 'run \[1/1\]: elements=2Ki,4Ki transport=mpi' "$tmp/log-cut2" ||
    fail "the resumed sweep did not run the two missing sizes alone"
[[ "$(csv_points "$tmp/cut.csv" | tr '\n' ' ')" == \
    "transport=mpi|1024 transport=mpi|2048 transport=mpi|4096 " ]] ||
    fail "rows after the resume: $(csv_points "$tmp/cut.csv" | tr '\n' ' ')"

echo "== elements not swept: the deck's sizes, one launch per combination, resumed by size"
sed -e 's/^elements = .*/elements = "1Ki"/' "$tmp/deck.toml" >"$tmp/list.toml"
list_sweep=("$root/scripts/sweep" --deck "$tmp/list.toml" --csv "$tmp/list.csv"
    --binary "$binary" --out-dir "$tmp/list-out")
"${list_sweep[@]}" depth=2 >"$tmp/log-list1" || fail "the sweep of a one-size deck failed"
sed -i -e 's/^elements = .*/elements = "1Ki:4Ki:x2"/' "$tmp/list.toml"
"${list_sweep[@]}" depth=2 | tee "$tmp/log-list2" || fail "the sweep of a three-size deck failed"
grep -qx 'skip (done): depth=2 elements=1Ki' "$tmp/log-list2" || fail "1Ki of the deck not done"
grep -qx 'run \[1/1\]: depth=2 elements=2Ki,4Ki' "$tmp/log-list2" ||
    fail "the deck's missing sizes did not run alone"
[[ "$(csv_points "$tmp/list.csv" | tr '\n' ' ')" == "depth=2|1024 depth=2|2048 depth=2|4096 " ]] ||
    fail "rows of the deck's sizes: $(csv_points "$tmp/list.csv" | tr '\n' ' ')"
[[ -s "$tmp/list-out/depth=2.h5" && -s "$tmp/list-out/depth=2,elements=2Ki_4Ki.h5" ]] ||
    fail "files: $(ls "$tmp/list-out")"

echo "== the sweep's sizes are gpurelay's: it asks the binary (--print-sizes)"
# What the sweep matches the CSV's elements column with: its counts of each value, as the run
# itself resolves them (--print-config), a list mixing sizes and ranges included.
for value in 4Ki:256Ki:x4 1Ki:8Ki:+1Ki 1e3,2k,1Ki,3 1Ki:5Ki:x2 1Ki:1Gi:x1Ki 3:3:+1 64Mi 1.5e3 \
    3,1Ki:4Ki:x2,5; do
    ours="$(PYTHONPATH="$root/scripts/lib" "$python" -c 'import sys, sweep
print(",".join(str(count) for _, count in sweep.sizes_of(sys.argv[1].split(","), "elements", sys.argv[2])))' \
        "$value" "$binary")"
    theirs=""
    for part in $(tr , ' ' <<<"$value"); do  # gpurelay's --elements takes a list or a range
        theirs+="${theirs:+,}$(mpirun_np 1 "$binary" --elements "$part" --print-config |
            sed -n 's/^elements = "*\([0-9,]*\)"*$/\1/p')"
    done
    [[ "$ours" == "$theirs" ]] || fail "elements=$value: the sweep counts $ours, gpurelay $theirs"
    echo "elements=$value: $ours"
done
# The sweep parses no size itself: a stand-in binary's answer is what it runs, and gpurelay's
# one line is its reason for refusing a spec.
cat >"$tmp/fake-gpurelay" <<'SH'
#!/bin/sh
[ "$1" = --print-sizes ] && printf '5\n6\n'
SH
chmod +x "$tmp/fake-gpurelay"
"$root/scripts/sweep" --binary "$tmp/fake-gpurelay" --out-dir "$tmp/fake" --dry-run \
    elements=1Ki:2Ki:x2 >"$tmp/log-fake" || fail "the dry run with a stand-in binary failed"
grep -q -- '--elements=5,6 ' "$tmp/log-fake" || fail "the sweep did not run the binary's sizes: $(cat "$tmp/log-fake")"
for bad in 4Kx 1Ki:4Ki:x1 1:100:+1; do
    status=0
    "${sweep[@]}" "elements=$bad" >"$tmp/out.txt" 2>"$tmp/err.txt" || status=$?
    reason="$(mpirun_np 1 "$binary" --print-sizes "$bad" 2>&1 | sed -n 's/^gpurelay: --print-sizes: //p' || true)"
    [[ $status -eq 2 && -n "$reason" && "$(cat "$tmp/err.txt")" == "sweep: elements: $reason" ]] ||
        fail "elements=$bad: exit $status, $(cat "$tmp/err.txt") (gpurelay: $reason)"
    echo "elements=$bad: $(cat "$tmp/err.txt")"
done

echo "== a sweep's JSON summary (--summary-json): scripts/compare case by case, exit 0, 1 and 2"
"${sweep[@]}" --summary-json --csv "$tmp/json.csv" --out-dir "$tmp/json" transport=mpi \
    elements=1Ki,4Ki >"$tmp/log-json" || fail "the sweep with --summary-json failed"
summary="$tmp/json/transport=mpi,elements=1Ki_4Ki.json"
"$python" - "$summary" "$tmp" <<'PY' || fail "$summary is not a summary of both sizes"
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["sizes"] == [1024, 4096] and summary["verified"] is True, summary.keys()
assert [case["config"]["elements"] for case in summary["cases"]] == [1024, 4096]
# NEW with one size's time per step 20% longer, and NEW without the 4096 case.
# One launch a side counts only a change beyond the runs' own spread over their steps, which
# is wide in 4 steps on the CPU: both sides' steps made steady (p90 = p99 = p50), then NEW's
# second size 20% slower.
steady = json.loads(json.dumps(summary))
for case in steady["cases"]:
    for stats in case["passes"][-1]["phases_ms"].values():
        stats["p90"] = stats["p99"] = stats["p50"]
json.dump(steady, open(sys.argv[2] + "/steady.json", "w"))
slower = json.loads(json.dumps(steady))
slower["cases"][1]["passes"][-1]["time_per_step_ms"] *= 1.2
json.dump(slower, open(sys.argv[2] + "/slower.json", "w"))
fewer = json.loads(json.dumps(summary))
fewer["sizes"], fewer["cases"] = fewer["sizes"][:1], fewer["cases"][:1]
json.dump(fewer, open(sys.argv[2] + "/fewer.json", "w"))
PY
"$root/scripts/compare" "$summary" "$summary" >"$tmp/cmp" || fail "a summary against itself: not 0"
grep -q '^overlap on, elements=4096: BASE 1 launch, NEW 1 launch$' "$tmp/cmp" || fail "no table for elements=4096: $(cat "$tmp/cmp")"
status=0
"$root/scripts/compare" "$tmp/steady.json" "$tmp/slower.json" >"$tmp/cmp" || status=$?
[[ $status -eq 1 ]] || fail "a time per step 20% longer: exit $status, not 1"
grep -q 'time per step .* WORSE by 20.0%' "$tmp/cmp" || fail "no WORSE line: $(cat "$tmp/cmp")"
status=0
"$root/scripts/compare" "$summary" "$tmp/fewer.json" >"$tmp/cmp" 2>"$tmp/err.txt" || status=$?
[[ $status -eq 2 ]] || fail "a size missing from NEW: exit $status, not 2"
grep -qx 'compare: different sizes: elements = 4096 in BASE only' "$tmp/err.txt" ||
    fail "no one-line reason for the missing size: $(cat "$tmp/err.txt")"

echo "== a failing point: the sweep goes on and exits non-zero, naming it"
status=0
"${sweep[@]}" dtype=float16,float32 >"$tmp/log4" 2>&1 || status=$?
cat "$tmp/log4"
[[ $status -ne 0 ]] || fail "a sweep with a failing point exited 0"
grep -q '^  [0-9].*: dtype=float16$' "$tmp/log4" || fail "the failed point is not listed"
csv_points "$csv" | grep -qx 'dtype=float32|1024' || fail "the point after the failure did not run"

echo "== every point fails the same way: the sweep stops early, says why, exits 1"
# The README's overlap sweep on a deck that asks for a GPU, with none visible: 16 points, which
# the first and the last take every value of (2 per key) between them.
sed -e 's/^device = .*/device = "cuda"/' "$tmp/deck.toml" >"$tmp/cuda.toml"
status=0
CUDA_VISIBLE_DEVICES="" "$root/scripts/sweep" --deck "$tmp/cuda.toml" --csv "$tmp/cuda.csv" \
    --binary "$binary" --out-dir "$tmp/cuda-out" \
    np=2,4 elements=1Ki,2Ki overlap=on,off c_iterations=1,2 >"$tmp/log5" 2>&1 || status=$?
cat "$tmp/log5"
[[ $status -eq 1 ]] || fail "a sweep whose points all fail exited $status, not 1"
[[ "$(grep -c '^run \[' "$tmp/log5")" -eq 2 ]] ||
    fail "expected 2 launches run before stopping, got $(grep -c '^run \[' "$tmp/log5")"
grep -q '^run \[2/8\]: np=4 elements=1Ki,2Ki overlap=off c_iterations=2$' "$tmp/log5" ||
    fail "the second launch run is not the one with every other value"
grep -q '^sweep: stopped: the 2 launches run, .* all failed the same way (exit 2: gpurelay: .*GPU.*); the other 6 (12 points) would too and were not run; nothing written' \
    "$tmp/log5" || fail "no 'stopped ... (exit 2: gpurelay: ...)' line naming the reason"
if grep -q 'results in' "$tmp/log5"; then fail "the sweep claims results it never wrote"; fi
[[ ! -e "$tmp/cuda.csv" ]] || fail "$tmp/cuda.csv exists"

echo "== a failing first value does not stop a sweep whose other values run"
status=0
CUDA_VISIBLE_DEVICES="" "${sweep[@]}" device=cuda,cpu elements=1Ki,2Ki >"$tmp/log6" 2>&1 ||
    status=$?
cat "$tmp/log6"
[[ $status -eq 1 ]] || fail "expected exit 1 (the cuda points fail), got $status"
[[ "$(grep -c '^run \[' "$tmp/log6")" -eq 2 ]] || fail "expected both launches run"
grep -q '^sweep: 2 done, 0 skipped, 2 failed (of 4); results in ' "$tmp/log6" ||
    fail "no summary line with 2 done and 2 failed"

echo "== a tag too long for a file name: a shortened name with a hash"
long="$(printf 'v%.0s' {1..300})"
"${sweep[@]}" --dry-run --any-key "zz=$long,w" >"$tmp/log7" || fail "dry run exited non-zero"
grep -q -- "--output $tmp/out/zz=$long" "$tmp/log7" && fail "a 300-character file name"
grep -Eq -- "--output $tmp/out/zz=v{140,}-[0-9a-f]{12}\.h5 " "$tmp/log7" ||
    fail "no shortened name with a hash: $(grep -- --output "$tmp/log7" | head -n 1)"
grep -q -- "--output $tmp/out/zz=w.h5 " "$tmp/log7" || fail "the short tag's name is not zz=w.h5"

echo "== --repeat: one configuration, N launches, rows tagged repeat=0..N-1"
"${sweep[@]}" --csv "$tmp/repeat.csv" --out-dir "$tmp/repeat" --repeat 3 elements=1Ki |
    tee "$tmp/log8" || fail "the repeated sweep failed"
[[ "$(csv_points "$tmp/repeat.csv" | tr '\n' ' ')" == "repeat=0|1024 repeat=1|1024 repeat=2|1024 " ]] ||
    fail "rows of the repeats: $(csv_points "$tmp/repeat.csv" | tr '\n' ' ')"
# ... and each row its launch's repeat number in the CSV's repeat column (gpurelay's key).
repeats=$("$python" -c 'import csv, sys
print(" ".join(row["repeat"] for row in csv.DictReader(open(sys.argv[1]))))' "$tmp/repeat.csv")
[[ "$repeats" == "0 1 2" ]] || fail "the repeat column: '$repeats', expected '0 1 2'"
[[ "$(grep -c '^run \[' "$tmp/log8")" -eq 3 ]] || fail "expected 3 launches"
grep -Eq '^  sweep elements=1024, 3 repeats: time_per_step_ms [0-9.e+-]+ \[[0-9.e+-]+ to [0-9.e+-]+\]' \
    "$tmp/log8" || fail "no median and range over the repeats at the end"
"${sweep[@]}" --csv "$tmp/repeat.csv" --out-dir "$tmp/repeat" --repeat 3 elements=1Ki |
    tee "$tmp/log9" || fail "the repeated sweep run again failed"
[[ "$(grep -c '^skip (done): ' "$tmp/log9")" -eq 3 ]] || fail "the 3 repeats are not done"
# In a grid, the repeats of every combination in turn; the Slurm array a task per repeat.
"${sweep[@]}" --dry-run --repeat 2 c_iterations=1,2 >"$tmp/log10" || fail "dry run exited non-zero"
[[ "$(grep '^run \[' "$tmp/log10" | tr '\n' ' ')" == "run [1/4]: c_iterations=1 repeat=0 run [2/4]: c_iterations=2 repeat=0 run [3/4]: c_iterations=1 repeat=1 run [4/4]: c_iterations=2 repeat=1 " ]] ||
    fail "the repeats are not in turn: $(grep '^run \[' "$tmp/log10" | tr '\n' ' ')"
"${sweep[@]}" --dry-run --slurm --out-dir "$tmp/repeat-slurm" --repeat 2 c_iterations=1 \
    >"$tmp/log11" || fail "the Slurm dry run exited non-zero"
grep -q "^    1) .*--repeat=1 .*--tag 'c_iterations=1 repeat=1' .*c_iterations=1,repeat=1.h5" "$tmp/log11" ||
    fail "no array task for repeat 1: $(grep '^    [0-9])' "$tmp/log11")"

echo "== bad arguments: exit 2 with one line"
for bad in repeat=1,2 elements= elements=1Ki,,2Ki elements notakey=1 elements=1Ki,1024 elements=4Ki:1Ki:x2 \
    elements=1Ki:1Mi:x1 elements=1Ki:1Gi:+1Ki elements=1Kb; do
    status=0
    "${sweep[@]}" "$bad" >"$tmp/out.txt" 2>"$tmp/err.txt" || status=$?
    [[ $status -eq 2 ]] || fail "'$bad': expected exit 2, got $status"
    [[ "$(wc -l <"$tmp/err.txt")" -eq 1 ]] || fail "'$bad': expected one error line"
    cat "$tmp/err.txt"
done

echo "PASS: test_sweep"
