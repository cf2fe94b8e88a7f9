#!/usr/bin/env bash
# How 4 KiB steps compare with their floors after gpu-check's build, repeated: every 4 KiB
# bench_floor variant three times (--benchmark_repetitions=3), then gpurelay's eager step (timing
# auto and steps) and its graphs of 1 (auto and steps), 4 and 16 steps, three times each,
# interleaved. Usage (device machine, repository root): docs/device-runs/session5/repeat.sh DIR
set -euo pipefail
out="$1"; mkdir -p "$out"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
"${mpirun[@]}" -np 1 build/bench/bench_floor --benchmark_repetitions=3 --benchmark_filter='/4096/' \
    --benchmark_out="$out/bench-floor.json" --benchmark_out_format=json > "$out/bench-floor.txt" 2>&1
tiny=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 2000 --warmup 100
      --write none --c-elements 0 --quiet --overwrite)
for i in 1 2 3; do
    for v in "eager:" "eagersteps:--timing steps" "g1:--graphs" "g1steps:--graphs --timing steps" \
             "g4:--graphs --graph-steps 4" "g16:--graphs --graph-steps 16"; do
        name="${v%%:*}"; extra="${v#*:}"
        # shellcheck disable=SC2086
        "${mpirun[@]}" -np 1 build/app/gpurelay "${tiny[@]}" $extra --output "$out/r.h5" \
            --summary-json "$out/${name}_$i.json" > "$out/${name}_$i.log" 2>&1
    done
done
rm -f "$out/r.h5"
python3 - "$out" <<'PY'
import json, sys, glob, os, re, statistics
out = sys.argv[1]
runs = {}
for b in json.load(open(os.path.join(out, "bench-floor.json")))["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    name = re.sub(r"/(iterations:\d+|manual_time)", "", b["run_name"])
    runs.setdefault(name, []).append((b["real_time"], b.get("host_queue_us", float("nan"))))
for name, v in runs.items():
    print(f"{name}: {' '.join(f'{t:.2f}' for t, _ in v)} us (median {statistics.median(t for t, _ in v):.2f}); "
          f"host queue {statistics.median(q for _, q in v):.2f} us")
for path in sorted(glob.glob(os.path.join(out, "*_?.json"))):
    d = json.load(open(path)); p = d["passes"][0]; h = p["host_us_per_step"]; t = p["timing"]
    print(f"{os.path.basename(path)[:-5]}: {p['time_per_step_ms'] * 1e3:.2f} us per step, "
          f"host queue {h['queue']:.1f} retire {h['retire']:.1f} vote {h['callback']:.1f}, "
          f"timing {t['used']} ({t['phase_timed_steps']} phase-timed, {t.get('grouped_steps')} grouped), "
          f"verified {d['verified']}")
PY
