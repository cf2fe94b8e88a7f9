#!/usr/bin/env bash
# Tests scripts/sweep against a gpurelay binary: a 2x2 grid runs 4 points, each writing a file
# named by its keys and values, a second run skips all 4, a grid with one new point runs only
# it, a failing point makes the sweep fail, a grid whose points all fail the same way (the
# README's overlap sweep on a deck that wants a GPU, with none visible) stops after the points
# that take every value once and says why, a tag too long for a file name gets a shortened
# name, and a malformed KEY=V argument is refused with exit 2.
# Usage: tests/scripts/test_sweep.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Tags of the CSV's data rows, one per line (parsed as CSV: a tag holds spaces and may be quoted).
csv_tags() {
    "$python" -c 'import csv, sys
for row in csv.DictReader(open(sys.argv[1])): print(row["tag"])' "$1"
}
csv_rows() {
    csv_tags "$1" | wc -l
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

echo "== 2x2 grid: 4 points run"
"${sweep[@]}" elements=1Ki,2Ki c_iterations=1,2 | tee "$tmp/log1" ||
    fail "first sweep exited non-zero"
[[ "$(csv_rows "$csv")" -eq 4 ]] || fail "expected 4 rows, got $(csv_rows "$csv")"
expected_tags="$(printf '%s\n' \
    "elements=1Ki c_iterations=1" "elements=1Ki c_iterations=2" \
    "elements=2Ki c_iterations=1" "elements=2Ki c_iterations=2")"
[[ "$(csv_tags "$csv" | sort)" == "$(sort <<<"$expected_tags")" ]] ||
    fail "tags differ: got [$(csv_tags "$csv" | tr '\n' '|')]"
[[ "$(grep -c '^run \[' "$tmp/log1")" -eq 4 ]] || fail "expected 4 'run' lines"
[[ "$(find "$tmp/out" -name '*.h5' | wc -l)" -eq 4 ]] || fail "expected 4 HDF5 files in $tmp/out"
for name in elements=1Ki,c_iterations=1 elements=1Ki,c_iterations=2 elements=2Ki,c_iterations=1 \
    elements=2Ki,c_iterations=2; do
    [[ -s "$tmp/out/$name.h5" ]] || fail "no $name.h5 (files named by the point) in $tmp/out"
done

echo "== same grid again: all 4 skipped"
"${sweep[@]}" elements=1Ki,2Ki c_iterations=1,2 | tee "$tmp/log2" ||
    fail "second sweep exited non-zero"
[[ "$(grep -c '^skip (done): ' "$tmp/log2")" -eq 4 ]] || fail "expected 4 'skip (done)' lines"
if grep -q '^run \[' "$tmp/log2"; then fail "a point ran again"; fi
[[ "$(csv_rows "$csv")" -eq 4 ]] || fail "expected still 4 rows, got $(csv_rows "$csv")"

echo "== one new point: only it runs"
"${sweep[@]}" elements=1Ki,2Ki,4Ki c_iterations=1 | tee "$tmp/log3" ||
    fail "third sweep exited non-zero"
[[ "$(grep -c '^skip (done): ' "$tmp/log3")" -eq 2 ]] || fail "expected 2 skips"
[[ "$(grep -c '^run \[' "$tmp/log3")" -eq 1 ]] || fail "expected 1 run"
grep -qx 'run \[1/1\]: elements=4Ki c_iterations=1' "$tmp/log3" || fail "the new point did not run"
[[ "$(csv_rows "$csv")" -eq 5 ]] || fail "expected 5 rows, got $(csv_rows "$csv")"
csv_tags "$csv" | grep -qx 'elements=4Ki c_iterations=1' || fail "no row for the new point"

echo "== a failing point: the sweep goes on and exits non-zero, naming it"
status=0
"${sweep[@]}" dtype=float16,float32 >"$tmp/log4" 2>&1 || status=$?
cat "$tmp/log4"
[[ $status -ne 0 ]] || fail "a sweep with a failing point exited 0"
grep -q '^  [0-9].*: dtype=float16$' "$tmp/log4" || fail "the failed point is not listed"
csv_tags "$csv" | grep -qx 'dtype=float32' || fail "the point after the failure did not run"

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
    fail "expected 2 points run before stopping, got $(grep -c '^run \[' "$tmp/log5")"
grep -q '^run \[2/16\]: np=4 elements=2Ki overlap=off c_iterations=2$' "$tmp/log5" ||
    fail "the second point run is not the one with every other value"
grep -q '^sweep: stopped: the 2 points run, .* all failed the same way (exit 2: gpurelay: .*GPU.*); the other 14 would too' \
    "$tmp/log5" || fail "no 'stopped ... (exit 2: gpurelay: ...)' line naming the reason"
if grep -q 'results in' "$tmp/log5"; then fail "the sweep claims results it never wrote"; fi
[[ ! -e "$tmp/cuda.csv" ]] || fail "$tmp/cuda.csv exists"

echo "== a failing first value does not stop a sweep whose other values run"
status=0
CUDA_VISIBLE_DEVICES="" "${sweep[@]}" device=cuda,cpu elements=1Ki,2Ki >"$tmp/log6" 2>&1 ||
    status=$?
cat "$tmp/log6"
[[ $status -eq 1 ]] || fail "expected exit 1 (the cuda points fail), got $status"
[[ "$(grep -c '^run \[' "$tmp/log6")" -eq 4 ]] || fail "expected all 4 points run"
grep -q '^sweep: 2 done, 0 skipped, 2 failed (of 4); results in ' "$tmp/log6" ||
    fail "no summary line with 2 done and 2 failed"

echo "== a tag too long for a file name: a shortened name with a hash"
long="$(printf 'v%.0s' {1..300})"
"${sweep[@]}" --dry-run --any-key "zz=$long,w" >"$tmp/log7" || fail "dry run exited non-zero"
grep -q -- "--output $tmp/out/zz=$long" "$tmp/log7" && fail "a 300-character file name"
grep -Eq -- "--output $tmp/out/zz=v{140,}-[0-9a-f]{12}\.h5 " "$tmp/log7" ||
    fail "no shortened name with a hash: $(grep -- --output "$tmp/log7" | head -n 1)"
grep -q -- "--output $tmp/out/zz=w.h5 " "$tmp/log7" || fail "the short tag's name is not zz=w.h5"

echo "== bad arguments: exit 2 with one line"
for bad in elements= elements=1Ki,,2Ki elements notakey=1; do
    status=0
    "${sweep[@]}" "$bad" >"$tmp/out.txt" 2>"$tmp/err.txt" || status=$?
    [[ $status -eq 2 ]] || fail "'$bad': expected exit 2, got $status"
    [[ "$(wc -l <"$tmp/err.txt")" -eq 1 ]] || fail "'$bad': expected one error line"
    cat "$tmp/err.txt"
done

echo "PASS: test_sweep"
