#!/usr/bin/env bash
# What the shell tools of scripts/ share (`source lib/tool.sh NAME`): root (the checkout's, or
# PREFIX/libexec installed); die, bad input said as "NAME: reason" on stderr and exit 2.
set -euo pipefail
tool_name="$1"
# shellcheck disable=SC2034  # the tools'
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() {
    echo "$tool_name: $*" >&2
    exit 2
}

# $2, the value given to option $1, where it is not empty (and matches the pattern $4, if any);
# else die "$1 needs $3". As x="$(value_of "$1" "${2-}" WHAT)": set -e ends the tool on the die.
value_of() {
    [[ -n "$2" && (-z "${4-}" || "$2" =~ $4) ]] || die "$1 needs $3"
    printf '%s\n' "$2"
}

# launcher=(mpirun -np NP), told to start as root (containers, CI) and more ranks than cores.
mpirun_launcher() {
    launcher=(mpirun -np "$1")
    if ((EUID == 0)); then launcher+=(--allow-run-as-root); fi
    if (($(nproc) < $1)); then launcher+=(--oversubscribe); fi
}

# Whether process $1 runs: not a zombie (where pid 1 reaps nobody), which kill -0 still finds.
alive() {
    local state
    state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)"
    [[ -n "$state" && "$state" != Z ]]
}

# The processes whose environment holds the line $1 (a marker that what a run starts inherits).
marked() {
    { grep -lzxF -- "$1" /proc/[0-9]*/environ 2>/dev/null || true; } |
        sed -n 's#^/proc/\([0-9]*\)/environ$#\1#p'
}

# end_marked MARKER TERM_AT TRIES SAY SAY2: ends the processes marked MARKER, looking every 0.1 s
# TRIES times: SIGTERM at try TERM_AT, SIGKILL (said) after the last. `ended`: every pid it saw.
end_marked() {
    local pids=() tries
    ended=()
    for ((tries = 0; tries < $3; tries++)); do
        mapfile -t pids < <(marked "$1")
        ((${#pids[@]})) || break
        ended+=("${pids[@]}")
        ((tries != $2)) || kill -TERM "${pids[@]}" 2>/dev/null || true
        sleep 0.1
    done
    if ((${#pids[@]})); then
        echo "$4 ${#pids[@]} leftover process(es) $5 with SIGKILL (pids ${pids[*]})" >&2
        kill -KILL "${pids[@]}" 2>/dev/null || true
        sleep 0.5
    fi
    ((${#ended[@]} == 0)) || mapfile -t ended < <(printf '%s\n' "${ended[@]}" | sort -u)
}
