#!/usr/bin/env bash
# Session 4's first device call: where a 4 KiB step's time goes, and what overlap costs ipc on
# one GPU. Builds gpurelay, bench_floor and bench_transport, then runs (one H200, one call):
#   - bench_floor -np 1 (the floors, and the eager and graph steps plus gpurelay's extras);
#   - gpurelay at 4 KiB, depth 2, overlap on, C off: eager with timing auto, sampled:32,
#     sampled:64 and steps; graphs of 1, 4 and 16 steps with auto and sampled:64;
#   - the eager floor and gpurelay's eager step with mpirun --bind-to none (mpirun binds one
#     rank to one core by default, which its NCCL and CUDA threads then share);
#   - ipc with two ranks on the GPU at 256 MiB, overlap compare, light C and no C, and MPI;
#   - the PyTorch pipeline (bench/torch_pipeline.py) at 4 KiB, when it is there.
# Usage (device machine, repository root): docs/device-runs/session4/probe.sh OUT_DIR
set -uo pipefail
out="$1"; mkdir -p "$out/json"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
cmake --preset default -DGPURELAY_CUDA=ON -DGPURELAY_BENCH=ON > "$out/configure.log" 2>&1
cmake --build --preset default -j "$(nproc)" --target gpurelay bench_floor bench_transport \
    > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
git rev-parse HEAD 2>/dev/null > "$out/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt"
run() {  # NAME LAUNCH-OPTIONS... -- GPURELAY-OPTIONS...
    local name="$1"; shift
    local launch=(); while [ "$1" != "--" ]; do launch+=("$1"); shift; done; shift
    echo "== $name: ${launch[*]} gpurelay $*" | tee -a "$out/console.txt"
    timeout 300 "${mpirun[@]}" "${launch[@]}" build/app/gpurelay --overwrite --output "$out/r.h5" \
        --summary-json "$out/json/$name.json" "$@" >> "$out/console.txt" 2>&1
    echo "== $name: exit $?" | tee -a "$out/console.txt"
}
timeout 240 "${mpirun[@]}" -np 1 build/bench/bench_floor --benchmark_out="$out/bench-floor.json" \
    --benchmark_out_format=json > "$out/bench-floor.txt" 2>&1
echo "bench_floor exit $?"
tiny=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 2000 --warmup 100
      --write none --c-elements 0)
for t in auto sampled:32 sampled:64 steps; do
    run "eager_${t/:/}" -np 1 -- "${tiny[@]}" --timing "$t"
done
for g in 1 4 16; do
    run "graphs_g$g" -np 1 -- "${tiny[@]}" --graphs --graph-steps "$g"
    run "graphs_g${g}_sampled64" -np 1 -- "${tiny[@]}" --graphs --graph-steps "$g" --timing sampled:64
done
run graphs_g1_steps -np 1 -- "${tiny[@]}" --graphs --timing steps
timeout 120 "${mpirun[@]}" -np 1 --bind-to none build/bench/bench_floor \
    --benchmark_filter='floor/np1/(eager|graph_k1)/4096/' \
    --benchmark_out="$out/bench-floor-unbound.json" --benchmark_out_format=json \
    > "$out/bench-floor-unbound.txt" 2>&1
run eager_auto_unbound -np 1 --bind-to none -- "${tiny[@]}"
run graphs_g1_unbound -np 1 --bind-to none -- "${tiny[@]}" --graphs
big=(--elements 64Mi --depth 2 --overlap compare --warmup 3 --write none)
run ipc_256M_lightc -np 2 -- "${big[@]}" --steps 30 --transport ipc --c-elements 1Mi --c-iterations 16
run ipc_256M_noc -np 2 -- "${big[@]}" --steps 30 --transport ipc --c-elements 0
run mpi_256M_lightc -np 2 -- "${big[@]}" --steps 12 --transport mpi --c-elements 1Mi --c-iterations 16
if [ -f bench/torch_pipeline.py ]; then
    for mode in "" "--graphs"; do
        # shellcheck disable=SC2086
        timeout 120 python3 bench/torch_pipeline.py --elements 1Ki --depth 2 --c-elements 0 \
            --steps 2000 --warmup 100 $mode --json "$out/json/torch_4k${mode:+_graphs}.json" \
            2>&1 | tee -a "$out/console.txt"
    done
fi
rm -f "$out/r.h5"
grep -E "^floor/" "$out/bench-floor.txt" "$out/bench-floor-unbound.txt" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-110
python3 - "$out" <<'PY'
import json, sys, glob, os
for path in sorted(glob.glob(os.path.join(sys.argv[1], "json", "*.json"))):
    d = json.load(open(path))
    if "passes" not in d:
        print(f"{os.path.basename(path)[:-5]}: {d.get('time_per_step_ms', float('nan')) * 1e3:.1f} us per step, wrong {d.get('wrong')}")
        continue
    for p in d["passes"]:
        h = p["host_us_per_step"]
        print(f"{os.path.basename(path)[:-5]} overlap={p['overlap']}: {p['time_per_step_ms'] * 1e3:.1f} us/step, "
              f"host queue {h['queue']:.1f} retire {h['retire']:.1f} cb {h['callback']:.1f}, "
              f"timing {p['timing']['used']}, verified {d.get('verified', '?')}")
PY
