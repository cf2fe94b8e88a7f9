#!/usr/bin/env bash
# Session 6's device call 3: gpu-check's ipc group, time-sliced and then under MPS (its new
# second leg), then ipc_probe at 64 and 256 MiB both ways (with the 2 MiB-aligned slots).
# Usage (device machine, repository root, after `source .devdeps/setup.sh`):
#   docs/device-runs/session6/check.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out/gc"
here="$(dirname "$0")"
git rev-parse HEAD > "$out/commit.txt" 2>/dev/null
scripts/gpu-check --quick --runs ipc --targets "gpurelay bench_transport" --out "$out/gc" \
    > "$out/gpu-check-console.txt" 2>&1
echo "gpu-check exit $?" | tee -a "$out/gpu-check-console.txt"
echo "daemon pipe folder after the MPS leg:" >> "$out/gpu-check-console.txt"
ls -la "$out/gc/mps/daemon/pipe" >> "$out/gpu-check-console.txt" 2>&1
nvcc -O2 -std=c++17 -arch=sm_90 "$here/ipc_probe.cu" -lcuda -o /tmp/ipc_probe > "$out/probe-build.log" 2>&1
for bytes in 67108864 268435456; do
    echo "== time-sliced" >> "$out/probe.txt"
    timeout 60 /tmp/ipc_probe "$bytes" 9 >> "$out/probe.txt" 2>&1
    echo "== mps" >> "$out/probe.txt"
    timeout 60 scripts/with-mps /tmp/ipc_probe "$bytes" 9 >> "$out/probe.txt" 2>&1
done
tar -czf "$out/gc.tar.gz" -C "$out" gc && rm -rf "$out/gc/mps" 
cat "$out/gc/ipc-summary.txt"
tar -xzf "$out/gc.tar.gz" -C /tmp gc/mps/ipc-summary.txt && cat /tmp/gc/mps/ipc-summary.txt
rm -rf "$out/gc"
