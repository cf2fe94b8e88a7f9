#!/usr/bin/env bash
# Session 5's calls 5 and 6 (one machine, warm): whether the eager floor's two levels follow the
# CPU core. bench_floor built alone (cmake --build --preset default --target bench_floor), then
# its 4 KiB eager and one-graph floors under taskset on eight cores, twice, and four times with
# mpirun's default binding. Usage (device machine, repository root, after the build):
#   docs/device-runs/session5/5-cores/command.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out"
(nvidia-smi topo -m; lscpu | grep -iE "numa|model name|^CPU\(s\)|Thread|Socket") > "$out/topo.txt" 2>&1
summary() {
    python3 -c 'import json, sys
d = json.load(sys.stdin)
print(" ".join(b["name"].split("/")[2] + "=" + format(b["real_time"], ".2f") for b in d["benchmarks"]))'
}
floors=(build/bench/bench_floor --benchmark_filter='floor/np1/(eager|graph_k1)/4096/' --benchmark_format=json)
for round in 1 2; do
    for core in 0 1 4 7 8 11 12 15; do
        r=$(mpirun --allow-run-as-root --bind-to none -np 1 taskset -c "$core" "${floors[@]}" 2>/dev/null | summary)
        echo "round $round core $core: $r" | tee -a "$out/cores.txt"
    done
done
for i in 1 2 3 4; do
    r=$(mpirun --allow-run-as-root -np 1 "${floors[@]}" 2>/dev/null | summary)
    echo "mpirun default binding, run $i: $r" | tee -a "$out/cores.txt"
done
