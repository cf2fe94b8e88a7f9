#!/usr/bin/env bash
# Session 6's device calls 1 and 2: ipc_probe.cu's variants at 16, 64 and 256 MiB, time-sliced
# (two processes on the GPU as it is lent), then, where the machine has MPS, under an MPS
# control daemon started here (in /tmp) and stopped at the end.
# Usage (device machine, repository root): docs/device-runs/session6/probe.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out"
here="$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,compute_mode --format=csv > "$out/gpu.txt"
nvcc -O2 -std=c++17 -arch=sm_90 "$here/ipc_probe.cu" -lcuda -o /tmp/ipc_probe \
    > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
probe() {  # LABEL
    for bytes in 16777216 67108864 268435456; do
        echo "== $1" | tee -a "$out/probe.txt"
        timeout 60 /tmp/ipc_probe "$bytes" 9 2>&1 | tee -a "$out/probe.txt"
        echo "exit ${PIPESTATUS[0]}" | tee -a "$out/probe.txt"
    done
}
probe time-sliced
if command -v nvidia-cuda-mps-control > /dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        probe mps
        echo quit | nvidia-cuda-mps-control
        sleep 2
        cp "$CUDA_MPS_LOG_DIRECTORY"/*.log "$out/" 2>/dev/null
    else
        echo "mps: the control daemon did not start" | tee -a "$out/probe.txt"
    fi
else
    echo "mps: nvidia-cuda-mps-control is not on this machine" | tee -a "$out/probe.txt"
fi
