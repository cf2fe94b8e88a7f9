#!/usr/bin/env bash
# Session 6's device call 5, on the final code: gpu-check's pipeline, reliability and ipc groups
# (the ipc group time-sliced, then under MPS), with the pass's timed wall ending at its last
# step (the --write last runs' overlapped pass no longer pays the copy-out of the last y).
# Usage (device machine, repository root, after `source .devdeps/setup.sh`):
#   docs/device-runs/session6/final.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out/gc"
git rev-parse HEAD > "$out/commit.txt" 2>/dev/null
scripts/gpu-check --quick --runs pipeline,reliability,ipc --targets "gpurelay bench_transport" \
    --out "$out/gc" > "$out/gpu-check-console.txt" 2>&1
echo "gpu-check exit $?" | tee -a "$out/gpu-check-console.txt"
rm -rf "$out/gc/mps/daemon/pipe"
cp "$out/gc/ipc-summary.txt" "$out/ipc-summary.txt"
cp "$out/gc/mps/ipc-summary.txt" "$out/ipc-summary-mps.txt"
tar -czf "$out/gc.tar.gz" -C "$out" gc && rm -rf "$out/gc"
