#!/usr/bin/env bash
# Session 6's device call 8, on the final code (ipc's memory as file descriptors, cuMemMap):
# gpu-check's ipc group, time-sliced and then under MPS.
# Usage (device machine, repository root, after `source .devdeps/setup.sh`):
#   docs/device-runs/session6/final-vmm.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out/gc"
scripts/gpu-check --quick --runs ipc --targets "gpurelay bench_transport" --out "$out/gc" \
    > "$out/gpu-check-console.txt" 2>&1
echo "gpu-check exit $?" | tee -a "$out/gpu-check-console.txt"
rm -rf "$out/gc/mps/daemon/pipe"
cp "$out/gc/ipc-summary.txt" "$out/ipc-summary.txt"
cp "$out/gc/mps/ipc-summary.txt" "$out/ipc-summary-mps.txt"
tar -czf "$out/gc.tar.gz" -C "$out" gc && rm -rf "$out/gc"
