#!/usr/bin/env bash
# How much 4 KiB steps vary between runs in one call, after gpu-check's build: the floors
# three times each (bench_floor --benchmark_repetitions=3), then gpurelay's eager step (timing
# auto) and its graphs of 1, 4 and 16 steps three times each, interleaved, as in gpu-check
# --runs small; then the eager floor and step three times each with mpirun --bind-to none. Usage (device machine, repository root): docs/device-runs/session4/repeat.sh DIR
set -euo pipefail
out="$1"; mkdir -p "$out"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
"${mpirun[@]}" -np 1 build/bench/bench_floor --benchmark_repetitions=3 \
    --benchmark_filter='floor/np1/(eager|graph_k1|graph_k4|graph_k16)/4096/' \
    --benchmark_out="$out/bench-floor.json" --benchmark_out_format=json > "$out/bench-floor.txt" 2>&1
tiny=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 2000 --warmup 100
      --write none --c-elements 0 --quiet --overwrite)
for i in 1 2 3; do
    for v in "eager:" "g1:--graphs" "g4:--graphs --graph-steps 4" "g16:--graphs --graph-steps 16"; do
        name="${v%%:*}"; extra="${v#*:}"
        # shellcheck disable=SC2086
        "${mpirun[@]}" -np 1 build/app/gpurelay "${tiny[@]}" $extra --output "$out/r.h5" \
            --summary-json "$out/${name}_$i.json" > "$out/${name}_$i.log" 2>&1
    done
done
# The eager floor and step again with mpirun --bind-to none (by default mpirun binds one rank
# to one core, which its NCCL and CUDA threads then share).
"${mpirun[@]}" -np 1 --bind-to none build/bench/bench_floor --benchmark_repetitions=3 \
    --benchmark_filter='floor/np1/eager/4096/' --benchmark_out="$out/bench-floor-unbound.json" \
    --benchmark_out_format=json > "$out/bench-floor-unbound.txt" 2>&1
for i in 1 2 3; do
    "${mpirun[@]}" -np 1 --bind-to none build/app/gpurelay "${tiny[@]}" --output "$out/r.h5" \
        --summary-json "$out/unbound_eager_$i.json" > "$out/unbound_eager_$i.log" 2>&1
done
rm -f "$out/r.h5"
grep -E "floor/np1.*(mean|median|stddev)" "$out/bench-floor.txt" "$out/bench-floor-unbound.txt" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-100
python3 - "$out" <<'PY'
import json, sys, glob, os
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*_?.json"))):
    d = json.load(open(path)); p = d["passes"][0]; h = p["host_us_per_step"]
    print(f"{os.path.basename(path)[:-5]}: {p['time_per_step_ms'] * 1e3:.2f} us per step, "
          f"host queue {h['queue']:.1f} retire {h['retire']:.1f}, timing {p['timing']['used']}, "
          f"verified {d['verified']}")
PY
