#!/usr/bin/env bash
# Session 5's first device call: what the step word's copy node, the end event and reading it
# back each cost one graph a step, and what sharing one end event among 4 steps saves, eager
# and as graphs (bench_floor's new variants, three repetitions), beside gpurelay's own 4 KiB
# steps at the same commit.
# Usage (device machine, repository root): docs/device-runs/session5/probe.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out/json"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
cmake --preset default -DGPURELAY_CUDA=ON -DGPURELAY_BENCH=ON > "$out/configure.log" 2>&1
cmake --build --preset default -j "$(nproc)" --target gpurelay bench_floor \
    > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
git rev-parse HEAD 2>/dev/null > "$out/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt"
run() {  # NAME GPURELAY-OPTIONS...
    local name="$1"; shift
    echo "== $name: gpurelay $*" | tee -a "$out/console.txt"
    timeout 300 "${mpirun[@]}" -np 1 build/app/gpurelay --overwrite --output "$out/r.h5" \
        --summary-json "$out/json/$name.json" "$@" >> "$out/console.txt" 2>&1
    echo "== $name: exit $?" | tee -a "$out/console.txt"
}
timeout 300 "${mpirun[@]}" -np 1 build/bench/bench_floor --benchmark_filter='/4096/' \
    --benchmark_repetitions=3 --benchmark_out="$out/bench-floor.json" \
    --benchmark_out_format=json > "$out/bench-floor.txt" 2>&1
echo "bench_floor exit $?"
tiny=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 2000 --warmup 100
      --write none --c-elements 0)
run eager_auto "${tiny[@]}"
run eager_steps "${tiny[@]}" --timing steps
run graphs_g1 "${tiny[@]}" --graphs
run graphs_g1_steps "${tiny[@]}" --graphs --timing steps
run graphs_g4 "${tiny[@]}" --graphs --graph-steps 4
rm -f "$out/r.h5"
grep -E "^floor/" "$out/bench-floor.txt" | grep -v -E "_(mean|stddev|cv)" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-100
python3 - "$out" <<'PY'
import json, sys, glob, os
for path in sorted(glob.glob(os.path.join(sys.argv[1], "json", "*.json"))):
    d = json.load(open(path))
    for p in d["passes"]:
        h = p["host_us_per_step"]
        print(f"{os.path.basename(path)[:-5]} overlap={p['overlap']}: {p['time_per_step_ms'] * 1e3:.1f} us/step, "
              f"host queue {h['queue']:.1f} retire {h['retire']:.1f} cb {h['callback']:.1f}, "
              f"timing {p['timing']['used']}, verified {d.get('verified', '?')}")
PY
