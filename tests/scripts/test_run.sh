#!/usr/bin/env bash
# Tests scripts/run (the README's first command) without installing or building: a deck of the
# user's own (--input my.toml, or --input=my.toml) replaces the quick-start deck instead of
# being refused as a second --input, and runs; with no --input the quick-start deck is used.
# Usage: tests/scripts/test_run.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
run=("$root/scripts/run" --no-install --binary "$binary")

# Tiny and CPU-only: a second or two.
cat >"$tmp/my.toml" <<TOML
device = "cpu"
elements = "1Ki"
steps = 4
warmup = 1
c_elements = "1Ki"
c_iterations = 1
write = "none"
output = "$tmp/my.h5"
results_csv = "$tmp/my.csv"
tag = "my deck"
timeout_s = 60.0
TOML

echo "== scripts/run --input my.toml: runs that deck alone"
status=0
timeout 120 "${run[@]}" --input "$tmp/my.toml" >"$tmp/log1" 2>&1 || status=$?
cat "$tmp/log1"
[[ $status -eq 0 ]] || fail "scripts/run --input my.toml exited $status"
if grep -q 'given more than once' "$tmp/log1"; then fail "--input was passed twice"; fi
[[ -s "$tmp/my.h5" ]] || fail "the deck's output $tmp/my.h5 was not written"
"$python" - "$tmp/my.csv" <<'PY' || fail "no verified row tagged 'my deck' (the deck did not apply)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["tag"], r["verified"], r["elements"]) for r in rows] == [("my deck", "ok", "1024")], rows
PY

echo "== the command line: one --input, the user's, in either form"
for form in "--input $tmp/my.toml" "--input=$tmp/my.toml"; do
    # shellcheck disable=SC2086  # the form is two words or one, on purpose
    "${run[@]}" --dry-run $form --steps 3 >"$tmp/dry" || fail "--dry-run $form exited non-zero"
    line="$(grep '^+ ' "$tmp/dry")"
    [[ "$(grep -o -- '--input' <<<"$line" | wc -l)" -eq 1 ]] || fail "$form: not one --input: $line"
    [[ "$line" != *quickstart.toml* ]] || fail "$form: the quick-start deck is still passed: $line"
done

echo "== no --input: the quick-start deck"
"${run[@]}" --dry-run --steps 3 >"$tmp/dry" || fail "--dry-run exited non-zero"
grep -q -- "^+ .* --input inputs/quickstart.toml --steps 3$" "$tmp/dry" ||
    fail "the quick-start deck is not passed: $(cat "$tmp/dry")"

echo "== the README's command twice: both exit 0, each run its own file, the first kept"
# Their files land in the clone's outputs/ (ignored by git): removed at the end.
made=()
trap 'rm -rf "$tmp" "${made[@]}"' EXIT
for attempt in 1 2; do
    status=0
    timeout 120 "${run[@]}" --device cpu --elements 1Ki --c-elements 1Ki --c-iterations 1 \
        --steps 3 --warmup 1 >"$tmp/again$attempt" 2>&1 || status=$?
    name="$(sed -n 's/^output: \(outputs\/gpurelay-[0-9-]*\.h5\) (up to .*)$/\1/p' "$tmp/again$attempt")"
    [[ -n "$name" ]] && made+=("$root/$name")
    cat "$tmp/again$attempt"
    [[ $status -eq 0 ]] || fail "scripts/run, run $attempt, exited $status"
    [[ -s "$root/$name" ]] || fail "run $attempt names no file of its own in its header"
    if ((attempt == 1)); then first="$(sha256sum <"$root/$name")"; fi
done
[[ "${made[0]}" != "${made[1]}" ]] || fail "both runs wrote ${made[0]}"
[[ "$(sha256sum <"${made[0]}")" == "$first" ]] || fail "the second run changed ${made[0]}"

echo "PASS: test_run"
