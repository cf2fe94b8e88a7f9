#!/usr/bin/env bash
# Session 6's device call 7: ipc_probe at 256 and 64 MiB, time-sliced and under MPS, with its
# ipc_N_vmm variants: the slots in memory made with cuMemCreate, passed as a file descriptor and
# mapped with cuMemMap, beside cudaIpcOpenMemHandle's mapping (ipc_2, ipc_4): whether that
# mapping is what 4 slots lose at 256 MiB.
# Usage (device machine, repository root): docs/device-runs/session6/vmm.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out"
here="$(dirname "$0")"
nvcc -O2 -std=c++17 -arch=sm_90 "$here/ipc_probe.cu" -lcuda -o /tmp/ipc_probe > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
for bytes in 268435456 67108864; do
    for leg in time-sliced mps; do
        wrap=(); [ "$leg" = mps ] && wrap=(scripts/with-mps)
        echo "== $leg" >> "$out/probe.txt"
        timeout 60 "${wrap[@]}" /tmp/ipc_probe "$bytes" 9 >> "$out/probe.txt" 2>&1
        echo "exit $?" >> "$out/probe.txt"
    done
done
cat "$out/probe.txt"
