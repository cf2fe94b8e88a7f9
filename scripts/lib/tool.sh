#!/usr/bin/env bash
# What the shell tools of scripts/ share (`source lib/tool.sh NAME`): die, bad input said as one
# line "NAME: reason" on stderr and exit 2; mpirun_launcher NP.
set -euo pipefail
tool_name="$1"
die() {
    echo "$tool_name: $*" >&2
    exit 2
}

# launcher=(mpirun -np NP), with what Open MPI needs to start as root (containers, CI) and more
# ranks than cores (a 2-core laptop or CI runner), which it refuses unless told.
mpirun_launcher() {
    launcher=(mpirun -np "$1")
    if ((EUID == 0)); then launcher+=(--allow-run-as-root); fi
    if (($(nproc) < $1)); then launcher+=(--oversubscribe); fi
}
