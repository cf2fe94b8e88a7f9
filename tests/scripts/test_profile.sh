#!/usr/bin/env bash
# Tests scripts/profile with the nsys on PATH (CI: Debian's 2022.4, scripts/install-deps.sh
# --nsys): the README's CPU-path command (2 ranks under mpirun, --trace nvtx,osrt,
# --no-capture-range) finishes in seconds with its reports (nsys 2022: a one-line note and one
# report from one nsys over mpirun; others: one report per rank); the same run with CPU
# sampling and context-switch tracing forced back on (what hangs nsys 2022) and a short
# --finish-timeout ends within its bounds either way; a run stopped with SIGTERM exits 143. Each time, no process of the run is left (nsys's agents leave its process group, so
# they are looked for by a marker in the environment, which they inherit).
# Usage: tests/scripts/test_profile.sh GPURELAY_BINARY REPO_ROOT   (nsys on PATH)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v nsys >/dev/null 2>&1 || fail "nsys not on PATH"
nsys --version

# Every process the profile runs below start carries this in its environment.
mark="GPURELAY_TEST_PROFILE=$$-$RANDOM"
export "${mark?}"
leftovers() {
    local pid line
    for pid in $({ grep -lzxF -- "$mark" /proc/[0-9]*/environ 2>/dev/null || true; } |
        sed -n 's#^/proc/\([0-9]*\)/environ$#\1#p'); do
        [[ "$pid" == "$$" ]] && continue
        line="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-120 || true)"
        # This shell's own helpers (the grep above, its subshells) carry the mark too.
        [[ -z "$line" || "$line" == grep\ * || "$line" == bash\ *test_profile.sh* ]] ||
            echo "$pid $line"
    done
    return 0
}
# check_no_leftovers WHAT: nothing of the run is still there (it has had 2 s to go), nor
# its ranks' scratch folders.
check_no_leftovers() {
    sleep 2
    [[ -z "$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'gpurelay-nsys.*' -newer "$tmp" 2>/dev/null)" ]] ||
        fail "$1: a scratch folder ${TMPDIR:-/tmp}/gpurelay-nsys.* is left"
    # nsys's session registry outlives no nsys (a stale one fails every later nsys here).
    if [[ -e "/dev/shm/NSys-$(nsys --version | sed -n 's/.*version \([0-9.]*\).*/\1/p')" ]] &&
        [[ -z "$(pgrep -x nsys; pgrep -x nsys-launcher)" ]]; then
        fail "$1: /dev/shm/NSys-* is left with no nsys running"
    fi
    local left
    left="$(leftovers | grep -v -e '^[0-9]* sleep ' || true)"
    if [[ -n "$left" ]]; then
        echo "$left"
        # Not left for the next test either: the agents ignore SIGTERM.
        leftovers | while read -r pid _; do kill -KILL "$pid" 2>/dev/null || true; done
        fail "$1: processes of the run are still there"
    fi
}

small=(--device cpu --steps 40 --elements 64Ki --c-elements 64Ki --c-iterations 4 --quiet)
profile=("$root/scripts/profile" --np 2 --binary "$binary")

echo "== the README's CPU-path command: two reports, in seconds"
# nsys 2022.4 now and then fails at start on a busy machine (an exception from its agent, in
# seconds, not a hang): such a failure gets one more try, a hang none.
for attempt in 1 2; do
    start=$SECONDS
    status=0
    timeout -k 5 150 "${profile[@]}" --trace nvtx,osrt --no-capture-range --overwrite \
        --out-dir "$tmp/p1" -- "${small[@]}" --output "$tmp/p1.h5" >"$tmp/log1" 2>&1 || status=$?
    grep -v '^\[' "$tmp/log1" || true
    [[ $status -ne 124 && $status -ne 137 ]] || fail "scripts/profile still running after 150 s"
    check_no_leftovers "the README's command (attempt $attempt)"
    ((status != 0 && attempt == 1)) || break
    echo "scripts/profile exited $status (nsys failed by itself); once more"
done
[[ $status -eq 0 ]] || fail "scripts/profile exited $status"
if [[ "$(nsys --version)" == *" version 2022."* ]]; then
    [[ "$(grep -c '^profile: nsys 2022.* cannot profile ranks one by one under mpirun: one nsys over mpirun instead.* --sample=none --cpuctxsw=none' "$tmp/log1")" -eq 1 ]] ||
        fail "no one-line note that nsys 2022 profiles mpirun as a whole, without sampling"
    [[ -s "$tmp/p1/gpurelay.nsys-rep" ]] || fail "no report gpurelay.nsys-rep"
else
    for rank in 0 1; do
        [[ -s "$tmp/p1/gpurelay.rank$rank.nsys-rep" ]] || fail "no report for rank $rank"
    done
fi
echo "done in $((SECONDS - start)) s"

echo "== CPU sampling and context switches forced on, --finish-timeout 5: bounded either way"
start=$SECONDS
status=0
timeout -k 5 120 "${profile[@]}" --trace nvtx,osrt --no-capture-range --finish-timeout 5 \
    --nsys-args "--sample=cpu --cpuctxsw=process-tree" --out-dir "$tmp/p2" \
    -- "${small[@]}" --output "$tmp/p2.h5" >"$tmp/log2" 2>&1 || status=$?
grep -v '^\[' "$tmp/log2" || true
# (124 is also scripts/profile's own exit after --finish-timeout: told apart by the time.)
if ((status == 137 || (status == 124 && SECONDS - start >= 120))); then
    fail "scripts/profile still running after 120 s"
fi
echo "exit $status after $((SECONDS - start)) s"
if ((status == 0)); then
    compgen -G "$tmp/p2/gpurelay*.nsys-rep" >/dev/null || fail "exit 0 without a report"
elif grep -q 'after gpurelay ended (--finish-timeout)' "$tmp/log2"; then
    echo "(nsys hung after gpurelay, and was stopped)"
fi
check_no_leftovers "the run with CPU sampling"

echo "== SIGTERM mid-run: exit 143, nothing left"
# Until scripts/profile (PID), sent SIGTERM, has ended: at most 30 s, then it is killed and the
# test fails.
ends_after_sigterm() {
    local waited
    for ((waited = 0; waited < 60; waited++)); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.5
    done
    kill -0 "$1" 2>/dev/null || return 0
    kill -KILL "$1"
    fail "scripts/profile still running 30 s after SIGTERM"
}

# One profiled run stopped with SIGTERM mid-run; sets `status` to scripts/profile's exit.
sigterm_run() {
    # As above, an nsys that fails to start gpurelay (it happens on a busy machine) gets one more
    # try.
    for attempt in 1 2; do
        "${profile[@]}" --trace nvtx,osrt --no-capture-range --finish-timeout 10 --overwrite \
            --out-dir "$tmp/p3" -- --device cpu --steps 100000 --elements 64Ki --c-elements 64Ki \
            --c-iterations 4 --quiet --output "$tmp/p3.h5" >"$tmp/log3" 2>&1 &
        pid=$!
        # Until gpurelay runs under nsys (its ranks carry the mark too), at most 30 s.
        for ((tries = 0; tries < 60; tries++)); do
            # (not "leftovers | grep -q": grep's early exit fails the pipeline under pipefail)
            grep -q ' /[^ ]*/gpurelay --device' <<<"$(leftovers)" && break
            sleep 0.5
        done
        ((tries == 60)) || break
        echo "gpurelay did not start under nsys in 30 s (attempt $attempt): the run must end by itself"
        kill -TERM "$pid" 2>/dev/null || true
        ends_after_sigterm "$pid"
        wait "$pid" || true
        grep -v '^\[' "$tmp/log3" || true
        check_no_leftovers "a run whose gpurelay did not start"
        ((attempt == 1)) || fail "gpurelay did not start under nsys, twice"
    done
    sleep 2
    kill -TERM "$pid" 2>/dev/null || { cat "$tmp/log3"; fail "scripts/profile ended before SIGTERM"; }
    status=0
    ends_after_sigterm "$pid"
    wait "$pid" || status=$?
    grep -v '^\[' "$tmp/log3" | tail -n 5 || true
    check_no_leftovers "the run stopped with SIGTERM"
}
sigterm_run
# Debian's nsys 2022.4 itself may throw while it writes the ended process's status (a
# WriteStreamException from its ProcessWaiter, seen on a busy machine): nsys failed, not the
# script or gpurelay, so that gets one more run too.
if [[ $status -ne 143 ]] && grep -q 'QuadDCommon::WriteStreamException' "$tmp/log3"; then
    echo "(nsys threw while recording the end: one more run)"
    sigterm_run
fi
[[ $status -eq 143 ]] || fail "scripts/profile exited $status after SIGTERM, not 143"

echo "== an nsys that records the whole run but writes no report: exit 1, one line saying so"
# A stand-in nsys first on PATH: it answers --version and runs nothing.
mkdir -p "$tmp/fake-nsys"
cat >"$tmp/fake-nsys/nsys" <<'NSYS'
#!/bin/sh
[ "$1" = --version ] && echo "NVIDIA Nsight Systems version 2022.4.2.1"
exit 0
NSYS
chmod +x "$tmp/fake-nsys/nsys"
status=0
PATH="$tmp/fake-nsys:$PATH" timeout 60 "${profile[@]}" --no-capture-range --out-dir "$tmp/p4" \
    -- "${small[@]}" --output "$tmp/p4.h5" >"$tmp/log4" 2>&1 || status=$?
[[ $status -eq 1 ]] || { cat "$tmp/log4"; fail "exit $status without a report, not 1"; }
grep -q '^profile: nsys wrote no report of the whole run' "$tmp/log4" ||
    { cat "$tmp/log4"; fail "no line saying nsys wrote no report"; }

echo "PASS: test_profile"
