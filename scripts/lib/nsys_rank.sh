#!/usr/bin/env bash
# shellcheck disable=SC2317  # cleanup runs from the EXIT trap
# One rank of scripts/profile in the launcher's place: NSYS_COMMAND with a TMPDIR of its own (no
# shared nsys session manager), one nsys starting at a time on a node (nsys starting at once
# collide: "Agent launcher failed", a hang); FINISH_TIMEOUT s after gpurelay ends, nsys is stopped.
# Every way out ends each process marked as this rank's (nsys's agent leaves its process group).
# Exit status: nsys's (gpurelay's), 124 when nsys hung after gpurelay, 143/130 on a signal.
set -euo pipefail
shopt -s extglob

# shellcheck source=tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/tool.sh" nsys_rank.sh

# The ended agents' shared memory, and, once no nsys runs here, nsys's registry
# (/dev/shm/NSys-VERSION): a killed nsys may hold its lock, failing every later nsys on the node.
remove_agent_state() {
    local pid p
    for pid in "$@"; do rm -f "/dev/shm/quadd-agent-instance-$pid" "/dev/shm/sem.nsys_sem_$pid"; done
    for p in /proc/[0-9]*; do
        [[ "$(cat "$p/comm" 2>/dev/null)" == @(nsys|nsys-launcher) ]] && alive "${p#/proc/}" &&
            return 0
    done
    find /dev/shm -maxdepth 1 -name 'NSys-*' -user "$(id -u)" -delete 2>/dev/null || true
}

case "${1:-}" in
    -h | --help)
        echo "usage: nsys_rank.sh FINISH_TIMEOUT NSYS_COMMAND...  (one rank of scripts/profile)"
        echo "       nsys_rank.sh --remove-agent-state PID...   (its clean-up after SIGKILL)"
        exit 0 ;;
    --remove-agent-state) shift; remove_agent_state "$@"; exit 0 ;;
esac
[[ $# -ge 2 && "$1" == +([0-9]) ]] ||
    die "expected FINISH_TIMEOUT (whole seconds) and a command (see --help)"

finish_timeout="$1"
shift
rank="${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMIX_RANK:-0}}}"
marker="GPURELAY_PROFILE_RANK=${GPURELAY_PROFILE_RUN:-$$}/$rank"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/gpurelay-nsys.XXXXXX")"

# The scratch folder first (scripts/profile may end this script too); then the marked processes,
# SIGKILL after 3 s for those that ignore SIGTERM (nsys's agent does).
cleanup() {
    rm -rf "$scratch"
    end_marked "$marker" 0 31 "profile: rank $rank: ending" "of nsys"
    ((${#ended[@]} == 0)) || remove_agent_state "${ended[@]}"
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# The start lock: this script's file, open to every rank; 60 s at most (slow beats none).
exec 9<"${BASH_SOURCE[0]}"
flock -w 60 9 || echo "profile: rank $rank: starting nsys without waiting longer for" \
    "the other ranks' nsys to start" >&2

TMPDIR="$scratch" GPURELAY_PROFILE_RANK="${marker#*=}" "$@" 9<&- &
nsys_pid=$!

# Whether the profiled program runs: a marked process neither nsys's nor this script's (the fork
# that becomes nsys carries the marker before its exec).
app_runs() {
    local pid comm
    for pid in $(marked "$marker"); do
        comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
        [[ -z "$comm" || "$comm" == @(nsys|nsys-launcher|nsys-tee|nsys_rank.sh) ]] || return 0
    done
    return 1
}

started=0
ended_at=""
while alive "$nsys_pid"; do
    if app_runs; then
        ((started)) || flock -u 9 # gpurelay runs under nsys: the next rank's nsys may start
        started=1
    elif ((started)) && [[ -z "$ended_at" ]]; then
        ended_at=$SECONDS
    fi
    if [[ -n "$ended_at" ]] && ((SECONDS - ended_at >= finish_timeout)); then
        echo "profile: rank $rank: nsys still running ${finish_timeout} s after gpurelay" \
            "ended (--finish-timeout); stopped it, no report for this rank" >&2
        exit 124
    fi
    sleep 0.5
done
flock -u 9
status=0
wait "$nsys_pid" || status=$?
exit "$status"
