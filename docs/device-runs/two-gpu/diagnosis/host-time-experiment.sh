#!/usr/bin/env bash
# Throwaway device experiment: host time per step, and overlap contention knobs.
set -u
out=$1; mkdir -p "$out"
mp=(mpirun --allow-run-as-root --oversubscribe)
bin=build/app/gpurelay
cmake --preset default -DGPURELAY_CUDA=ON -DGPURELAY_BENCH=OFF -DGPURELAY_TESTS=OFF > "$out/configure.log" 2>&1
cmake --build --preset default -j 32 --target gpurelay > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
r() { local name=$1 np=$2; shift 2; timeout 120 "${mp[@]}" -np "$np" "$bin" --quiet --overwrite --output /tmp/e.h5 --write none --summary-json "$out/$name.json" "$@" > "$out/$name.log" 2>&1; echo "== $name exit $?"; grep -E "time per step|host per|speedup|perfect|transfer " "$out/$name.log"; }
small=(--elements 1Ki --depth 2 --overlap compare --steps 3000 --warmup 200)
for g in "" --graphs; do
  for rep in 1 2; do
    r "np2_nccl_4k${g}_$rep" 2 --transport nccl "${small[@]}" $g
    r "np1_nccl_4k${g}_$rep" 1 --transport nccl "${small[@]}" $g
  done
done
r np2_mpi_4k 2 --transport mpi --elements 1Ki --depth 2 --overlap compare --steps 300 --warmup 20
r np2_mpi_1m 2 --transport mpi --elements 256Ki --depth 2 --overlap compare --steps 300 --warmup 20
r np2_mpi_4k_blocking 2 --transport mpi --elements 1Ki --depth 2 --overlap compare --steps 300 --warmup 20 --blocking
ov=(--transport nccl --elements 64Mi --overlap compare --steps 60 --warmup 5 --c-elements 64Mi --c-iterations 255)
for d in 1 2; do
  r "ov_d$d" 2 "${ov[@]}" --depth $d
  export NCCL_P2P_USE_CUDA_MEMCPY=1
  r "ov_d${d}_cemem" 2 "${ov[@]}" --depth $d
  unset NCCL_P2P_USE_CUDA_MEMCPY
done
