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
    name="$(sed -n 's/^output: \(outputs\/gpurelay-[0-9-]*\.h5\) (up to .*)$/\1/p' \
        "$tmp/again$attempt")"
    [[ -n "$name" ]] && made+=("$root/$name")
    cat "$tmp/again$attempt"
    [[ $status -eq 0 ]] || fail "scripts/run, run $attempt, exited $status"
    [[ -s "$root/$name" ]] || fail "run $attempt names no file of its own in its header"
    if ((attempt == 1)); then first="$(sha256sum <"$root/$name")"; fi
done
[[ "${made[0]}" != "${made[1]}" ]] || fail "both runs wrote ${made[0]}"
[[ "$(sha256sum <"${made[0]}")" == "$first" ]] || fail "the second run changed ${made[0]}"

echo "== quiet ends: a usage error is gpurelay's line alone on stderr, no banner of mpirun's"
status=0
timeout 120 "${run[@]}" --dept 3 >"$tmp/usage.out" 2>"$tmp/usage.err" || status=$?
[[ $status -eq 2 ]] || fail "a usage error exited $status, not 2"
[[ "$(cat "$tmp/usage.err")" == "gpurelay: unknown option --dept (did you mean --depth?)" ]] ||
    fail "a usage error's stderr is not gpurelay's line alone: $(cat "$tmp/usage.err")"

echo "== quiet ends: a stop by SIGUSR1 is gpurelay's line alone on stderr, exit 138"
stop_args=(--device cpu --elements 3001 --c-elements 4096 --c-iterations 16 --steps 1000000
    --warmup 1 --overlap on --write none --output "$tmp/stopped.h5")
# Not under timeout(1), which a SIGUSR1 would end: $pid is scripts/run, which execs mpirun.
"${run[@]}" "${stop_args[@]}" >"$tmp/stop.out" 2>"$tmp/stop.err" &
pid=$!
# In its steps: the header's output line is printed just before them.
for _ in $(seq 600); do
    grep -q '^output: ' "$tmp/stop.out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
sleep 0.5
kill -USR1 "$pid" || fail "scripts/run ended before it was stopped: $(cat "$tmp/stop.err")"
for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
status=0
if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" # mpirun passes SIGTERM on: the ranks end too
    sleep 10
    kill -KILL "$pid" 2>/dev/null || true
    status="no end within 60 s"
else
    wait "$pid" || status=$?
fi
if [[ "$status" != 138 ]]; then
    # A launcher that keeps SIGUSR1 to itself (a setting of the machine's MPI) is a skip, named;
    # one that passes it on to a rank waiting for it leaves gpurelay to blame.
    probe=(mpirun -np 1)
    if ((EUID == 0)); then probe+=(--allow-run-as-root); fi
    if ! "$python" "$root/tests/integration/launch.py" --forwards SIGUSR1 -- "${probe[@]}"; then
        echo "SKIP: the stop by SIGUSR1 ($status): this mpirun does not pass SIGUSR1 on to its" \
            "ranks (a rank waiting for it, signalled through mpirun, went on): the machine's MPI" \
            "settings, not gpurelay"
        exit 77
    fi
    fail "the stop exited $status, not 138: $(cat "$tmp/stop.err")"
fi
pattern="^gpurelay: stopped by SIGUSR1 after step [0-9]+ of 1000000 \(overlap_on pass\); "
pattern+="completed steps are in $tmp/stopped.h5.partial \(complete = 0\); to finish it, run "
pattern+="under the same launcher: \S+/gpurelay --device cpu .* --output $tmp/stopped.h5 --resume$"
[[ "$(wc -l <"$tmp/stop.err")" -eq 1 && "$(cat "$tmp/stop.err")" =~ $pattern ]] ||
    fail "the stop's stderr is not gpurelay's line alone: $(cat "$tmp/stop.err")"

echo "== the filter keeps what gpurelay has not explained (scripts/lib/launcher_stderr.sh)"
dashes="--------------------------------------------------------------------------"
banner="$dashes
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
$dashes"
abort="$dashes
MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD
with errorcode 4.
$dashes"
killed="$dashes
mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).
$dashes"
srun_exit="srun: error: node1: tasks 0-1: Exited with exit code 2"
filtered() { printf '%s\n' "$@" | "$root/scripts/lib/launcher_stderr.sh"; }
[[ "$(filtered "gpurelay: bad" "$banner" "$srun_exit")" == "gpurelay: bad" ]] ||
    fail "an explained exit's banner and srun line are not dropped"
[[ "$(filtered "$killed" "$banner")" == "$killed"$'\n'"$banner" ]] ||
    fail "a killed rank's notice and the banner are not kept where gpurelay said nothing"
explained="gpurelay: error on rank 1"
[[ "$(filtered "$explained" "$abort")" == "$explained"$'\n'"$abort" ]] ||
    fail "MPI_Abort's banner is not kept"
[[ "$(filtered "$srun_exit" "warning")" == "warning"$'\n'"$srun_exit" ]] ||
    fail "srun's exit line is not kept where gpurelay said nothing"

echo "PASS: test_run"
