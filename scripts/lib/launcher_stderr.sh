#!/usr/bin/env bash
# The stderr of a launcher (mpirun, srun) running gpurelay, less its restatement (mpirun 4.1's two
# banners, its "Forwarding signal", srun's "Exited with exit code") of an exit a "gpurelay: ..."
# line explained; no launcher option drops these alone (docs/OPERATIONS.md). All else passes at
# once, in order; a restatement is held until the input ends (it may precede the ranks' last
# lines) and printed then if no gpurelay line came. Started as
#   LAUNCHER ... 2> >(trap '' INT TERM USR1 USR2 HUP; exec scripts/lib/launcher_stderr.sh >&2)
set -euo pipefail

# It outlives the signals meant for the launcher (Ctrl-C, timeout -s USR1 and Slurm's reach the
# process group), so the stop's line gets through; its callers ignore them before starting it.
trap '' INT TERM USR1 USR2 HUP

line="" block="" held="" in_block=0 explained=0
# Open MPI's help messages stand between two lines of dashes.
dashes='^-{20,}$'
restated='(Primary job +terminated normally, but|mpirun detected that one or more processes '
restated+='exited with non-zero status)'
srun_exit='^srun: error: [^ ]+: tasks? [0-9,-]+: Exited with exit code [0-9]+$'
forwarding='^mpirun: Forwarding signal [0-9]+ to job$'
while IFS= read -r line || [[ -n "$line" ]]; do
    if [[ "$line" =~ $dashes ]]; then
        block+="$line"$'\n'
        if ((in_block)); then
            if [[ "$block" =~ $restated ]]; then held+="$block"; else printf '%s' "$block"; fi
            block=""
        fi
        in_block=$((!in_block))
    elif ((in_block)); then
        block+="$line"$'\n'
    elif [[ "$line" =~ $srun_exit ]]; then
        held+="$line"$'\n'
    elif [[ ! "$line" =~ $forwarding ]]; then
        if [[ "$line" == "gpurelay: "* ]]; then explained=1; fi
        printf '%s\n' "$line"
    fi
done
printf '%s' "$block"
if ((!explained)); then printf '%s' "$held"; fi
