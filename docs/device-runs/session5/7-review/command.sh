#!/usr/bin/env bash
# Session 5's call 7, the command it ran (on the device machine, repository root, after
# `source .devdeps/setup.sh`), as a script: OUT_DIR gets the benchmark and the runs' summaries.
set -uo pipefail
o="$1"; mkdir -p "$o"
cmake --preset default -DGPURELAY_CUDA=ON -DGPURELAY_BENCH=ON > /dev/null 2>&1 &&
    cmake --build --preset default -j 16 --target gpurelay bench_floor > /dev/null 2>&1 || exit 1
m=(mpirun --allow-run-as-root --oversubscribe -np 1)
"${m[@]}" build/bench/bench_floor --benchmark_filter='/4096/' --benchmark_out="$o/bench-floor.json" \
    --benchmark_out_format=json > "$o/bench-floor.txt" 2>&1
echo "bench_floor exit $?"
t=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 2000 --warmup 100 --write none
   --c-elements 0 --quiet --overwrite --output "$o/r.h5")
for v in "eager:" "g1:--graphs" "g1steps:--graphs --timing steps" "g2:--graphs --graph-steps 2" \
         "g4:--graphs --graph-steps 4"; do
    n=${v%%:*}
    # shellcheck disable=SC2086
    "${m[@]}" build/app/gpurelay "${t[@]}" ${v#*:} --summary-json "$o/$n.json" > "$o/$n.log" 2>&1
    echo "$n exit $?"
done
"${m[@]}" build/app/gpurelay --transport nccl --graphs --elements 100003 --depth 2 --overlap compare \
    --steps 40 --warmup 3 --write all --quiet --overwrite --output "$o/w.h5" > "$o/write_all.log" 2>&1
echo "g1 write all exit $?"
"${m[@]}" build/app/gpurelay --transport nccl --graphs --graph-steps 2 --elements 1Mi --depth 1 \
    --overlap on --c-elements 16Mi --c-iterations 4000 --steps 17 --warmup 1 --timing steps \
    --debug-skip-reuse-wait --quiet --overwrite --output "$o/m.h5" > "$o/mismatch_g2.log" 2>&1
echo "mismatch g2 exit $? (expected 3)"
rm -f "$o"/*.h5
