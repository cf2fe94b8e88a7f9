#!/usr/bin/env bash
# Session 6's device call 10, after the review's refactor of the driver-call lookup: gpurelay
# with ipc, two ranks on the GPU, time-sliced and under MPS, and one rank.
# Usage (device machine, repository root, after `source .devdeps/setup.sh`):
#   docs/device-runs/session6/review.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out"
here="$(dirname "$0")"
cmake --preset default -DGPURELAY_CUDA=ON > "$out/configure.log" 2>&1
cmake --build --preset default -j "$(nproc)" --target gpurelay > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
mpirun=(mpirun --allow-run-as-root --oversubscribe)
args=(--transport ipc --elements 64Mi --depth 4 --overlap compare --steps 30 --warmup 5 --write last --quiet --overwrite --output /tmp/r.h5)
for leg in ts mps np1; do
    wrap=(); np=2
    [ "$leg" = mps ] && wrap=(scripts/with-mps)
    [ "$leg" = np1 ] && np=1
    timeout 120 "${wrap[@]}" "${mpirun[@]}" -np "$np" build/app/gpurelay "${args[@]}" \
        --summary-json "$out/$leg.json" > "$out/$leg.log" 2>&1
    echo "$leg exit $?" | tee -a "$out/console.txt"
    python3 "$here/steps_line.py" "$leg" "$out/$leg.json" | tee -a "$out/console.txt"
done
rm -f /tmp/r.h5
