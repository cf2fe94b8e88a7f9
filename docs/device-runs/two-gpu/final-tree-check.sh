#!/usr/bin/env bash
# Final check of the tree on the GPU: build, then eager and graph runs on 1 and 2 ranks.
set -u
mp=(mpirun --allow-run-as-root --oversubscribe)
cmake --preset default -DGPURELAY_CUDA=ON -DGPURELAY_BENCH=OFF -DGPURELAY_TESTS=OFF > /tmp/configure.log 2>&1
cmake --build --preset default -j 32 --target gpurelay > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
r() { local name=$1 np=$2; shift 2; timeout 60 "${mp[@]}" -np "$np" build/app/gpurelay --quiet --overwrite --output /tmp/f.h5 "$@" > "/tmp/$name.log" 2>&1; echo "== $name: exit $? $(grep -E '^verification' /tmp/$name.log | grep -oE 'PASSED|FAILED')"; grep -E "time per step|graphs:" "/tmp/$name.log" | head -2; }
r np1_eager 1 --elements 100003 --depth 2 --overlap compare --steps 50 --write all
r np1_graphs 1 --elements 100003 --depth 2 --overlap compare --steps 50 --write all --graphs
r np2_nccl_graphs 2 --transport nccl --elements 100003 --depth 4 --overlap compare --steps 50 --write all --graphs
r np2_mpi 2 --transport mpi --elements 1Mi --depth 2 --overlap compare --steps 50 --write last
r np2_nccl_64Mi 2 --transport nccl --elements 16Mi --depth 2 --overlap compare --steps 30 --write last
