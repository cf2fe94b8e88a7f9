#!/usr/bin/env bash
# Tests scripts/with-mps against tests/scripts/fake_mps_control.py, a stand-in for
# nvidia-cuda-mps-control that logs its starts and quits and, as the real one, makes a control
# socket, answers while it runs and leaves the socket behind when it ends: the command sees the
# daemon's pipe folder, runs between the start and the quit, and its status is with-mps's;
# --out-dir is kept and a temporary folder is not; a daemon already running is used and left
# alone; a socket left by an ended one is not a daemon; a signal to the job's process group
# still stops the daemon; no tool gives one line and exit 2.
# Usage: tests/scripts/test_mps.sh GPURELAY_BINARY REPO_ROOT   (the binary is not used)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

with_mps="$root/scripts/with-mps"
export FAKE_MPS_CALLS="$tmp/calls"
calls="$FAKE_MPS_CALLS"
mkdir -p "$tmp/bin"
cp "$root/tests/scripts/fake_mps_control.py" "$tmp/bin/nvidia-cuda-mps-control"
chmod +x "$tmp/bin/nvidia-cuda-mps-control"
fake_path="$tmp/bin:$PATH"
# No daemon of the machine's own may answer for the stand-in.
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
[ -S /tmp/nvidia-mps/control ] && { echo "an MPS daemon may run at /tmp/nvidia-mps: skipped"; exit 0; }
state() { cat "$1/state"; }
bind_socket() { "$python" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"; }

# The command runs with the daemon up, sees its folder, and gives its status.
rm -f "$calls"
status=0
# shellcheck disable=SC2016  # expanded by the command's own shell
PATH="$fake_path" "$with_mps" bash -c \
    'echo "$CUDA_MPS_PIPE_DIRECTORY" > "$0"; [ "$(cat "$CUDA_MPS_PIPE_DIRECTORY/state")" = up ] || exit 9
     [ -d "$CUDA_MPS_LOG_DIRECTORY" ] || exit 8; exit 7' "$tmp/seen" || status=$?
[ "$status" = 7 ] || fail "with-mps exited $status, not the command's 7"
seen="$(cat "$tmp/seen")"
[ "$(cat "$calls")" = "start $seen"$'\n'"quit" ] || fail "calls were: $(cat "$calls")"
[ ! -e "$seen" ] || fail "the temporary folder $seen was left behind"
echo "command status, start and quit, temporary folder removed: ok"

# --out-dir: kept, with pipe/ and log/.
rm -f "$calls"
PATH="$fake_path" "$with_mps" --out-dir "$tmp/mine" true || fail "with-mps --out-dir DIR true failed"
if [ ! -d "$tmp/mine/pipe" ] || [ ! -d "$tmp/mine/log" ]; then fail "--out-dir lost pipe/ or log/"; fi
[ "$(state "$tmp/mine/pipe")" = down ] || fail "the daemon was not stopped"
grep -qx "start $tmp/mine/pipe" "$calls" || fail "--out-dir: calls were: $(cat "$calls")"
echo "--out-dir kept: ok"

# A daemon already running: used, not started or stopped.
rm -f "$calls"
mkdir -p "$tmp/running" "$tmp/stale"
bind_socket "$tmp/running/control"
echo up > "$tmp/running/state"
# shellcheck disable=SC2016  # expanded by the command's own shell
out="$(CUDA_MPS_PIPE_DIRECTORY="$tmp/running" PATH="$fake_path" "$with_mps" \
    bash -c 'echo "pipe $CUDA_MPS_PIPE_DIRECTORY"' 2> "$tmp/err")" ||
    fail "with-mps under a running daemon failed"
[ "$out" = "pipe $tmp/running" ] || fail "the command saw '$out'"
[ ! -e "$calls" ] || fail "a running daemon was started or stopped: $(cat "$calls")"
grep -q "already at $tmp/running" "$tmp/err" || fail "no word of the running daemon"
[ "$(state "$tmp/running")" = up ] || fail "the running daemon was stopped"
echo "a running daemon is used and left: ok"

# A control socket that no daemon answers (one that ended): a new daemon is started.
bind_socket "$tmp/stale/control"
echo down > "$tmp/stale/state"
rm -f "$calls"
CUDA_MPS_PIPE_DIRECTORY="$tmp/stale" PATH="$fake_path" "$with_mps" true ||
    fail "with-mps beside a stale socket failed"
[ "$(head -c 6 "$calls")" = "start " ] || fail "stale socket: calls were: $(cat "$calls")"
echo "a stale control socket is not a daemon: ok"

# SIGTERM to the process group (as Slurm and mpirun send it): the daemon is still stopped.
rm -f "$calls"
PATH="$fake_path" setsid "$with_mps" --out-dir "$tmp/term" sleep 60 &
job=$!
# Started means logged: the stand-in logs last, after its socket and its state.
for _ in $(seq 100); do grep -q '^start ' "$calls" 2> /dev/null && break; sleep 0.1; done
grep -q '^start ' "$calls" 2> /dev/null || fail "the daemon never started"
kill -TERM -- "-$job"
status=0
wait "$job" 2> /dev/null || status=$?
[ "$status" = 143 ] || fail "with-mps ended $status after SIGTERM, not 143"
[ "$(tail -n 1 "$calls")" = quit ] || fail "SIGTERM: calls were: $(cat "$calls")"
echo "SIGTERM stops the daemon: ok"

# Without the tool: one line, exit 2 (skipped where the machine has the real one).
if ! command -v nvidia-cuda-mps-control > /dev/null; then
    status=0
    "$with_mps" true 2> "$tmp/err" || status=$?
    [ "$status" = 2 ] || fail "without the tool: exit $status, not 2"
    if [ "$(wc -l < "$tmp/err")" != 1 ] || ! grep -q "not on PATH" "$tmp/err"; then
        fail "without the tool: '$(cat "$tmp/err")'"
    fi
    echo "no tool: one line, exit 2: ok"
fi
status=0
"$with_mps" 2> "$tmp/err" || status=$?
if [ "$status" != 2 ] || ! grep -q "no command" "$tmp/err"; then fail "no command: exit $status"; fi
echo "PASS: test_mps"
