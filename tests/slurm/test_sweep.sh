#!/usr/bin/env bash
# scripts/sweep --slurm on the test cluster: one task per combination, its sizes inside; the
# array is throttled (%1 by default, --throttle N), a re-run while its tasks are queued submits
# nothing (held tasks: deterministic), a re-run once they are done skips them all, a grid with
# one new size submits only that point, a new size of a queued combination is submitted alone,
# a point whose task failed is submitted again, and two re-runs while a task runs (under a job
# id of its own in squeue) and the next waits submit nothing.
# Usage: tests/slurm/test_sweep.sh GPURELAY_BINARY REPO_ROOT   (SLURM_CONF set)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cat >"$tmp/deck.toml" <<'TOML'
device = "cpu"
transport = "mpi"
elements = "1Ki"
steps = 4
warmup = 1
overlap = "on"
c_elements = "1Ki"
c_iterations = 1
write = "none"
timeout_s = 60.0
TOML
csv="$tmp/results.csv"
out="$tmp/out"
sweep=("$root/scripts/sweep" --slurm --deck "$tmp/deck.toml" --csv "$csv" --binary "$binary"
    --out-dir "$out")
grid=("elements=1Ki,2Ki" "c_iterations=1,2")

# job_of LOG: the job id a sweep printed ("submitted job N: ...").
job_of() {
    sed -n 's/^submitted job \([0-9]*\):.*/\1/p' "$1"
}
rows() {
    "$python" -c 'import csv, sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' "$1"
}

echo "== submit 4 points as 2 tasks (one per combination), held: throttled to one at a time"
"${sweep[@]}" --sbatch-args=--hold "${grid[@]}" | tee "$tmp/log1" || fail "first sweep failed"
job="$(job_of "$tmp/log1")"
[[ -n "$job" ]] || fail "no 'submitted job' line"
submitted+=("$job")
[[ "$(job_field "$job" ArrayTaskThrottle | sort -u)" == 1 ]] ||
    fail "array $job: ArrayTaskThrottle $(job_field "$job" ArrayTaskThrottle | sort -u), not 1"
grep -q -- "--array=0-1%1" "$out/sweep.sbatch" || fail "sweep.sbatch has no --array=0-1%1"
grep -q -- "--elements=1Ki,2Ki --c-iterations=1 " "$out/sweep.sbatch" ||
    fail "task 0 does not run both sizes of c_iterations=1"

echo "== the same sweep while they are queued: nothing submitted"
"${sweep[@]}" "${grid[@]}" | tee "$tmp/log2" || fail "second sweep failed"
[[ "$(grep -c "^skip (queued or running as ${job}_[0-1] (PENDING)): " "$tmp/log2")" -eq 4 ]] ||
    fail "expected 4 'skip (queued or running as ${job}_N (PENDING))' lines"
if grep -q '^submitted job' "$tmp/log2"; then fail "queued points were submitted again"; fi

echo "== a new size of the queued combinations: a task for it alone (dry run)"
"${sweep[@]}" --dry-run elements=1Ki,2Ki,8Ki c_iterations=1,2 | tee "$tmp/log2b" ||
    fail "the dry run with a new size failed"
grep -q "^skip (queued or running as ${job}_0 (PENDING)): elements=2Ki c_iterations=1$" \
    "$tmp/log2b" || fail "a queued point is not skipped as ${job}_0"
grep -q -- "--elements=8Ki --c-iterations=1 " "$tmp/log2b" || fail "8Ki does not run alone"
[[ "$(grep -c '^    [0-9]) ntasks=' "$tmp/log2b")" -eq 2 ]] ||
    fail "expected 2 tasks for the new size"

echo "== released: all 4 run; the same sweep then skips them as done"
scontrol release "$job"
wait_job "$job" 300
[[ "$(rows "$csv")" -eq 4 ]] || fail "expected 4 rows, got $(rows "$csv")"
"${sweep[@]}" "${grid[@]}" | tee "$tmp/log3" || fail "third sweep failed"
[[ "$(grep -c '^skip (done): ' "$tmp/log3")" -eq 4 ]] || fail "expected 4 'skip (done)' lines"
if grep -q '^submitted job' "$tmp/log3"; then fail "done points were submitted again"; fi

echo "== one new size (and --throttle 2): only it is submitted"
"${sweep[@]}" --throttle 2 elements=1Ki,2Ki,4Ki c_iterations=1 | tee "$tmp/log4" ||
    fail "fourth sweep failed"
job4="$(job_of "$tmp/log4")"
submitted+=("$job4")
grep -q 'tasks 0-0, at most 2 at a time' "$tmp/log4" || fail "expected one task, throttle 2"
[[ "$(job_field "$job4" ArrayTaskThrottle)" == 2 ]] || fail "array $job4: throttle not 2"
wait_job "$job4" 120
[[ "$(rows "$csv")" -eq 5 ]] || fail "expected 5 rows, got $(rows "$csv")"

echo "== a point that fails (bad value: exit 2) is submitted again by the next run"
"${sweep[@]}" --any-key depth=0 | tee "$tmp/log5" || fail "fifth sweep failed"
job5="$(job_of "$tmp/log5")"
submitted+=("$job5")
wait_job "$job5" 120
[[ "$(job_field "$job5" JobState)" == FAILED ]] || fail "array $job5 did not fail"
"${sweep[@]}" --any-key depth=0 | tee "$tmp/log6" || fail "sixth sweep failed"
job6="$(job_of "$tmp/log6")"
[[ -n "$job6" ]] || fail "the failed point was not submitted again"
submitted+=("$job6")
wait_job "$job6" 120

echo "== two re-runs while task 0 runs and task 1 waits: nothing submitted"
# Task 0 takes about 15 ms of kernel C a step for 1500 steps: it is still running (and task 1,
# throttled, still pending) while the sweeps below ask squeue; cancelled once they have.
sed -e 's/^c_elements = .*/c_elements = "64Ki"/' -e 's/^c_iterations = .*/c_iterations = 400/' \
    "$tmp/deck.toml" >"$tmp/slow.toml"
slow=("$root/scripts/sweep" --slurm --deck "$tmp/slow.toml" --csv "$tmp/slow.csv"
    --binary "$binary" --out-dir "$tmp/slow-out" "steps=1500,4")
"${slow[@]}" | tee "$tmp/log7" || fail "slow sweep failed"
job7="$(job_of "$tmp/log7")"
[[ -n "$job7" ]] || fail "no 'submitted job' line"
submitted+=("$job7")
start=$SECONDS
until [[ "$(squeue -h -r -j "$job7" -o '%K %T' 2>/dev/null | sort | tr '\n' ' ')" == \
    "0 RUNNING 1 PENDING " ]]; do
    ((SECONDS - start < 60)) || fail "array $job7: task 0 not running after 60 s: $(squeue -r -j "$job7")"
    sleep 1
done
for again in 1 2; do
    "${slow[@]}" | tee "$tmp/log8" || fail "re-run $again of the slow sweep failed"
    grep -qx "skip (queued or running as ${job7}_0 (RUNNING)): steps=1500" "$tmp/log8" ||
        fail "re-run $again: the running task 0 is not skipped as ${job7}_0 (RUNNING)"
    grep -qx "skip (queued or running as ${job7}_1 (PENDING)): steps=4" "$tmp/log8" ||
        fail "re-run $again: the pending task 1 is not skipped as ${job7}_1 (PENDING)"
    if grep -q '^submitted job' "$tmp/log8"; then
        submitted+=("$(job_of "$tmp/log8")")
        fail "re-run $again submitted points that are running or queued"
    fi
done
[[ "$(squeue -h -r -j "$job7" -o '%K %T' | sort | tr '\n' ' ')" == "0 RUNNING 1 PENDING " ]] ||
    fail "array $job7: task 0 ended before the re-runs were done; make it slower"
scancel "$job7"
wait_job "$job7" 60
echo "PASS: slurm test_sweep"
