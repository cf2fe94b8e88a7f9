#!/usr/bin/env bash
# The stderr of a launcher running gpurelay (mpirun or srun), less what the launcher adds to an
# exit that gpurelay has explained; used by scripts/run and the Slurm templates as
#   LAUNCHER ... 2> >(trap '' INT TERM USR1 USR2 HUP; exec scripts/lib/launcher_stderr.sh >&2)
#
# When the ranks end with a code of their own (2 bad input, 3 verification, 138 or 143 after a
# stop), every rank has agreed on the outcome and one has said it in a line ("gpurelay: ...").
# The launchers then restate it, and the restatement reads as a crash: Open MPI 4.1's mpirun
# prints two banners after any non-zero exit ("Primary job terminated normally, but 1 process
# returned a non-zero exit code ..." and "mpirun detected that one or more processes exited
# with non-zero status ...") and "mpirun: Forwarding signal 10 to job" when it passes a SIGUSR1
# on; srun prints "srun: error: NODE: tasks 0-1: Exited with exit code N", a line per node.
# Nothing in Open MPI drops these alone (`mpirun -q` drops every message of its own, also the
# rank a signal killed and its own refusals; orte_abort_on_non_zero_status=0 makes mpirun exit
# 0 whatever the ranks returned), and srun --quiet keeps its line. So this drops exactly these
# restatements, only once gpurelay has said why it ended; all else passes at once and in order
# (MPI_Abort's banner, a rank killed by a signal, the launcher's own errors, warnings). A
# restatement is held until the input ends (a launcher may print it before the ranks' last
# lines reach it) and printed then if no gpurelay line came.
set -euo pipefail

# It outlives the signals meant for the launcher (Ctrl-C, timeout -s USR1 and Slurm's stop signal
# reach a whole process group), so the stop's own line gets through; its callers ignore them
# too, before they start it, so that none falls before this line.
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
