#!/usr/bin/env bash
# The stderr of a launcher running gpurelay (mpirun or srun), less what the launcher adds to an
# exit that gpurelay has explained; used by scripts/run and the Slurm templates as
#   LAUNCHER ... 2> >(trap '' INT TERM USR1 USR2 HUP; exec scripts/lib/launcher_stderr.sh >&2)
#
# When the ranks end with a code of their own (2 for bad input, 3 verification, 138 or 143 after a
# stop), every rank has agreed on the outcome and one of them has said it in a line of its own
# ("gpurelay: ..."). The launchers then restate it, and the restatement reads as a crash:
# - Open MPI 4.1's mpirun, after any rank exits non-zero: two banners, "Primary job terminated
#   normally, but 1 process returned a non-zero exit code ... the job has been aborted" and
#   "mpirun detected that one or more processes exited with non-zero status ..." (10 lines); and
#   "mpirun: Forwarding signal 10 to job" when it passes a SIGUSR1 on.
# - srun: "srun: error: NODE: tasks 0-1: Exited with exit code N", a line per node.
# Open MPI offers no switch for these alone: `mpirun -q` drops every message of its own, also the
# rank a signal killed and its own refusals (a missing program exits 132, too few slots 1, each
# in silence), and orte_abort_on_non_zero_status=0 makes mpirun exit 0 whatever the ranks
# returned. srun --quiet keeps its "Exited with exit code" line. So this drops exactly these
# restatements, and only once gpurelay has said why it ended; everything else passes at once
# and in order: the banner of MPI_Abort (a failure that one rank saw, which ends the job), a rank
# killed by a signal, the launcher's own errors, warnings. A restatement is held until the input
# ends (a launcher may print it before the last lines of the ranks reach it) and printed then if
# no gpurelay line came.
set -euo pipefail

# It outlives the signals meant for the launcher (Ctrl-C, timeout -s USR1 and Slurm's stop signal
# reach a whole process group), so the stop's own line still gets through. The callers ignore
# them before they start it too, so that no signal falls before this line.
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
