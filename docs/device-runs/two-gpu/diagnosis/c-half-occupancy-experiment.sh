#!/usr/bin/env bash
# Device experiment: C on half the thread slots; the overlap runs of gpu-check's pair group.
set -u
out=$1; mkdir -p "$out"
mp=(mpirun --allow-run-as-root --oversubscribe)
bin=build/app/gpurelay
cmake --preset default -DGPURELAY_CUDA=ON -DGPURELAY_BENCH=ON -DGPURELAY_TESTS=OFF > "$out/configure.log" 2>&1
cmake --build --preset default -j 32 --target gpurelay bench_kernels > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
r() { local name=$1; shift; timeout 100 "${mp[@]}" -np 2 "$bin" --quiet --overwrite --output /tmp/e.h5 --write none --summary-json "$out/$name.json" "$@" > "$out/$name.log" 2>&1; echo "== $name exit $?"; grep -E "transfer |time per step|speedup|perfect" "$out/$name.log"; }
r pair_calibrate --transport nccl --elements 64Mi --depth 2 --overlap off --steps 20 --c-elements 64Mi --c-iterations 64
m=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["passes"][0]; print(max(1, round(64*p["transfer_ms"]/p["phases_ms"]["c"]["median"])))' "$out/pair_calibrate.json")
echo "c_iterations $m"
for d in 1 2; do r pair_overlap_d$d --transport nccl --elements 64Mi --depth $d --overlap compare --steps 60 --warmup 5 --c-elements 64Mi --c-iterations "$m"; done
r pair_overlap_d1_255 --transport nccl --elements 64Mi --depth 1 --overlap compare --steps 60 --warmup 5 --c-elements 64Mi --c-iterations 255
GPURELAY_BENCH_MAX_BYTES=1G timeout 60 build/bench/bench_kernels --benchmark_filter='gpu/c/' --benchmark_min_time=0.05 > "$out/bench-c.txt" 2>&1; sed 's/\x1b\[[0-9;]*m//g' "$out/bench-c.txt" | grep -E "gpu/c/(67108864|268435456|1073741824)"
