#!/usr/bin/env bash
# Session 6's device call 4: the real MPS control daemon as scripts/with-mps sees it, then
# gpurelay's ipc steps with and without overlap, time-sliced and under MPS, varying what the
# overlapped pass does differently (C, timing, depth), to find why its steps are slower.
# Usage (device machine, repository root, after `source .devdeps/setup.sh`):
#   docs/device-runs/session6/mps-steps.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out/json"
here="$(dirname "$0")"
log="$out/console.txt"
{
    echo "== no daemon: get_server_list"; echo get_server_list | timeout 5 nvidia-cuda-mps-control; echo "rc=$?"
    echo "== inside with-mps"
    # shellcheck disable=SC2016
    time scripts/with-mps --dir /tmp/wm bash -c 'echo get_server_list | nvidia-cuda-mps-control; echo "rc=$?"; ls -la "$CUDA_MPS_PIPE_DIRECTORY"'
    echo "== after: get_server_list at the ended daemon's folder"
    echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=/tmp/wm/pipe timeout 5 nvidia-cuda-mps-control; echo "rc=$?"
    ls -la /tmp/wm/pipe
} >> "$log" 2>&1
cmake --preset default -DGPURELAY_CUDA=ON > "$out/configure.log" 2>&1
cmake --build --preset default -j "$(nproc)" --target gpurelay > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
mpirun=(mpirun --allow-run-as-root --oversubscribe)
run() {  # LEG NAME NP ARGS...
    local leg="$1" name="$2" np="$3"; shift 3
    local wrap=(); [ "$leg" = mps ] && wrap=(scripts/with-mps)
    timeout 120 "${wrap[@]}" "${mpirun[@]}" -np "$np" build/app/gpurelay --quiet --overwrite \
        --output /tmp/s.h5 --summary-json "$out/json/$leg-$name.json" "$@" > "$out/json/$leg-$name.log" 2>&1
    local rc=$?
    if [ "$rc" = 0 ]; then
        python3 "$here/steps_line.py" "$leg $name" "$out/json/$leg-$name.json" | tee -a "$log"
    else
        echo "$leg $name: exit $rc: $(grep -m1 -i error "$out/json/$leg-$name.log")" | tee -a "$log"
    fi
}
base=(--transport ipc --overlap compare --steps 60 --warmup 5 --write none)
for leg in ts mps; do
    run "$leg" 1Mi_c1Mi 2 "${base[@]}" --elements 1Mi --depth 2 --c-elements 1Mi --c-iterations 16
    run "$leg" 1Mi_noc 2 "${base[@]}" --elements 1Mi --depth 2 --c-elements 0
    run "$leg" 1Mi_c1Mi_steps 2 "${base[@]}" --elements 1Mi --depth 2 --c-elements 1Mi --c-iterations 16 --timing steps
    run "$leg" 1Mi_c1Mi_phases 2 "${base[@]}" --elements 1Mi --depth 2 --c-elements 1Mi --c-iterations 16 --timing phases
    run "$leg" 1Mi_c1Mi_d1 2 "${base[@]}" --elements 1Mi --depth 1 --c-elements 1Mi --c-iterations 16
    run "$leg" 1Mi_c1Mi_d4 2 "${base[@]}" --elements 1Mi --depth 4 --c-elements 1Mi --c-iterations 16
    run "$leg" 16Mi_c1Mi 2 "${base[@]}" --elements 16Mi --depth 2 --c-elements 1Mi --c-iterations 16
    run "$leg" 16Mi_noc 2 "${base[@]}" --elements 16Mi --depth 2 --c-elements 0
    run "$leg" 16Mi_mpi 2 --transport mpi --overlap compare --steps 30 --warmup 5 --write none --elements 16Mi --depth 2 --c-elements 1Mi --c-iterations 16
    run "$leg" np4_1Mi 4 "${base[@]}" --elements 1000003 --depth 3
    run "$leg" np4_1Mi_noc 4 "${base[@]}" --elements 1000003 --depth 3 --c-elements 0
done
rm -f /tmp/s.h5
