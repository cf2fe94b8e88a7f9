#!/usr/bin/env bash
# Session 6's device call 9: ipc_probe at 64 KiB and 1 MiB, time-sliced and under MPS: whether
# cuMemMap's mapping (ipc_N_vmm) costs small messages more than cudaIpcOpenMemHandle's (ipc_N),
# as bench_transport's small sizes under MPS suggested in call 8.
# Usage (device machine, repository root): docs/device-runs/session6/small-vmm.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out"
here="$(dirname "$0")"
nvcc -O2 -std=c++17 -arch=sm_90 "$here/ipc_probe.cu" -lcuda -o /tmp/ipc_probe > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
for bytes in 65536 1048576; do
    for round in 1 2; do
        for leg in time-sliced mps; do
            wrap=(); [ "$leg" = mps ] && wrap=(scripts/with-mps)
            echo "== $leg, round $round" >> "$out/probe.txt"
            timeout 60 "${wrap[@]}" /tmp/ipc_probe "$bytes" 9 >> "$out/probe.txt" 2>&1
            echo "exit $?" >> "$out/probe.txt"
        done
    done
done
cat "$out/probe.txt"
