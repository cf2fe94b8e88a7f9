#!/usr/bin/env bash
# The stderr of a launcher (mpirun, srun) running gpurelay, less its restatement of an exit that
# gpurelay explained; used by scripts/run and the Slurm templates as
#   LAUNCHER ... 2> >(trap '' INT TERM USR1 USR2 HUP; exec scripts/lib/launcher_stderr.sh >&2)
# Ending with a code of their own (2, 3, 138, 143), the ranks agreed and one said why
# ("gpurelay: ..."); the restatement reads as a crash: mpirun 4.1's two banners ("Primary job
# terminated normally, but ..." and "mpirun detected that one or more processes exited with
# non-zero status ..."), "mpirun: Forwarding signal 10 to job", srun's "srun: error: NODE: tasks
# 0-1: Exited with exit code N" a node. Nothing drops these alone (`mpirun -q` drops all its own
# messages, orte_abort_on_non_zero_status=0 the exit code; srun --quiet keeps its line). So only
# they are dropped, once gpurelay has said why; all else passes at once, in order. A
# restatement is held until the input ends (it may precede the ranks' last lines) and printed
# then if no gpurelay line came.
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
