# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this
# Shared set-up of the Slurm tests, sourced by each: tests/scripts/common.sh ($binary, $root,
# $python, $tmp, fail), a submit directory $work laid out like the repository root (inputs/ and
# scripts/ linked, outputs/ made, GPURELAY_BINARY for the binary), and helpers to submit and
# wait. Jobs a test submitted are cancelled when it exits, so a failed test leaves none queued.
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
[[ -n "${SLURM_CONF:-}" && -f "$SLURM_CONF" ]] ||
    fail "SLURM_CONF does not name a cluster's slurm.conf (run under ctest: the fixture sets it)"

work="$tmp/work"
# outputs/ as in a clone (outputs/README.md is tracked): the templates' logs go there, and Slurm
# does not make the folder.
mkdir -p "$work/outputs"
ln -s "$root/inputs" "$work/inputs"
ln -s "$root/scripts" "$work/scripts"
export GPURELAY_BINARY="$binary"
submitted=()
trap '((${#submitted[@]} == 0)) || scancel "${submitted[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT

# submit SBATCH_ARGS... : sbatch from $work, prints the job id.
submit() {
    local id
    id="$(cd "$work" && sbatch --parsable "$@")" || fail "sbatch $* failed"
    id="${id%%;*}"
    submitted+=("$id")
    echo "$id"
}

# wait_job ID SECONDS: until squeue no longer lists the job (or any task of an array).
wait_job() {
    local id="$1" seconds="$2" start=$SECONDS
    # A failed squeue (a busy slurmctld) counts as still listed.
    while [[ -n "$(squeue -h -j "$id" -o %i 2>/dev/null || echo busy)" ]]; do
        ((SECONDS - start < seconds)) || fail "job $id still queued or running after $seconds s"
        sleep 1
    done
}

# job_field ID FIELD: FIELD's value in scontrol's record of the job (a finished job's record
# stays for MinJobAge); one line per array task for an array job.
job_field() {
    scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# csv_column CSV TAG COLUMN: COLUMN of the row tagged TAG ("" when none).
csv_column() {
    "$python" -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["tag"] == sys.argv[2]]
print(rows[-1][sys.argv[3]] if rows else "")' "$1" "$2" "$3"
}

# show_log FILE: the job's log, for the test output.
show_log() {
    echo "--- $1"
    cat "$1" 2>/dev/null || echo "(no log)"
}
