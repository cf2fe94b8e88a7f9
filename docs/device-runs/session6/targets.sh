#!/usr/bin/env bash
# Session 6's device call 6: ipc_probe at 256 and 64 MiB, time-sliced and under MPS, with the
# producer's copies into 2 and 4 targets of its own in turn (d2d_local_N) beside 2 and 4 slots
# in the consumer's memory (ipc_2, ipc_4): whether 4 slots' loss at 256 MiB belongs to the
# mapping of the peer's memory or to any copy that cycles through 1 GiB of targets.
# Usage (device machine, repository root): docs/device-runs/session6/targets.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out"
here="$(dirname "$0")"
nvcc -O2 -std=c++17 -arch=sm_90 "$here/ipc_probe.cu" -lcuda -o /tmp/ipc_probe > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
for bytes in 268435456 67108864; do
    for leg in time-sliced mps; do
        wrap=(); [ "$leg" = mps ] && wrap=(scripts/with-mps)
        echo "== $leg" >> "$out/probe.txt"
        timeout 60 "${wrap[@]}" /tmp/ipc_probe "$bytes" 9 >> "$out/probe.txt" 2>&1
    done
done
cat "$out/probe.txt"
