#!/usr/bin/env bash
# Tests scripts/with-mps against a stand-in nvidia-cuda-mps-control that logs its calls and
# makes and removes the control pipe as the real one does: the command sees the daemon's pipe
# folder, runs between the start and the quit, and its status is with-mps's; --dir is kept and a
# temporary folder is not; a daemon already running is used and left alone; a signal to the
# job's process group still stops the daemon; no tool gives one line and exit 2.
# Usage: tests/scripts/test_mps.sh GPURELAY_BINARY REPO_ROOT   (the binary is not used)
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

with_mps="$root/scripts/with-mps"
calls="$tmp/calls"
mkdir -p "$tmp/bin"
cat > "$tmp/bin/nvidia-cuda-mps-control" <<EOF
#!/usr/bin/env bash
set -euo pipefail
if [ "\${1:-}" = -d ]; then
    [ -d "\$CUDA_MPS_PIPE_DIRECTORY" ] && [ -d "\$CUDA_MPS_LOG_DIRECTORY" ]
    mkfifo "\$CUDA_MPS_PIPE_DIRECTORY/control"
    echo "start \$CUDA_MPS_PIPE_DIRECTORY" >> "$calls"
else
    read -r command
    echo "\$command" >> "$calls"
    [ "\$command" = quit ] && rm -f "\$CUDA_MPS_PIPE_DIRECTORY/control"
fi
EOF
chmod +x "$tmp/bin/nvidia-cuda-mps-control"
fake_path="$tmp/bin:$PATH"
# No daemon of the machine's own may answer for the stand-in.
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
[ -p /tmp/nvidia-mps/control ] && { echo "an MPS daemon runs at /tmp/nvidia-mps: skipped"; exit 0; }

# The command runs with the daemon up, sees its folder, and gives its status.
rm -f "$calls"
status=0
# shellcheck disable=SC2016  # expanded by the command's own shell
PATH="$fake_path" "$with_mps" bash -c \
    'echo "$CUDA_MPS_PIPE_DIRECTORY" > "$0"; [ -p "$CUDA_MPS_PIPE_DIRECTORY/control" ] || exit 9
     [ -d "$CUDA_MPS_LOG_DIRECTORY" ] || exit 8; exit 7' "$tmp/seen" || status=$?
[ "$status" = 7 ] || fail "with-mps exited $status, not the command's 7"
seen="$(cat "$tmp/seen")"
[ "$(cat "$calls")" = "start $seen"$'\n'"quit" ] || fail "calls were: $(cat "$calls")"
[ ! -e "$seen" ] || fail "the temporary folder $seen was left behind"
echo "command status, start and quit, temporary folder removed: ok"

# --dir: kept, with pipe/ and log/.
rm -f "$calls"
PATH="$fake_path" "$with_mps" --dir "$tmp/mine" true || fail "with-mps --dir DIR true failed"
if [ ! -d "$tmp/mine/pipe" ] || [ ! -d "$tmp/mine/log" ]; then fail "--dir lost pipe/ or log/"; fi
[ ! -e "$tmp/mine/pipe/control" ] || fail "the daemon was not stopped"
grep -qx "start $tmp/mine/pipe" "$calls" || fail "--dir: calls were: $(cat "$calls")"
echo "--dir kept: ok"

# A daemon already running: used, not started or stopped.
rm -f "$calls"
mkdir -p "$tmp/running"
mkfifo "$tmp/running/control"
# shellcheck disable=SC2016  # expanded by the command's own shell
out="$(CUDA_MPS_PIPE_DIRECTORY="$tmp/running" PATH="$fake_path" "$with_mps" \
    bash -c 'echo "pipe $CUDA_MPS_PIPE_DIRECTORY"' 2> "$tmp/err")" ||
    fail "with-mps under a running daemon failed"
[ "$out" = "pipe $tmp/running" ] || fail "the command saw '$out'"
[ ! -e "$calls" ] || fail "a running daemon was started or stopped: $(cat "$calls")"
grep -q "already at $tmp/running" "$tmp/err" || fail "no word of the running daemon"
echo "a running daemon is used and left: ok"

# SIGTERM to the process group (as Slurm and mpirun send it): the daemon is still stopped.
rm -f "$calls"
PATH="$fake_path" setsid "$with_mps" --dir "$tmp/term" sleep 60 &
job=$!
for _ in $(seq 100); do [ -p "$tmp/term/pipe/control" ] && break; sleep 0.1; done
[ -p "$tmp/term/pipe/control" ] || fail "the daemon never started"
kill -TERM -- "-$job"
status=0
wait "$job" || status=$?
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
