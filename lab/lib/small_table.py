"""The table of lab/gpu-check --runs small: each run's time per step against its floor
(bench_floor, same call) or its step bound, with the host line and the timing it used.

usage: small_table.py OUT_DIR    (reads OUT_DIR/bench-floor.json and OUT_DIR/small_*.json;
the JSON summaries' config values are typed: numbers, booleans, strings)
"""
import glob
import json
import os
import re
import sys

from gpu_check_dir import gpu_check_dir


def floors(path):
    """Per-step time in µs of each floor benchmark, by name ("floor/np1/graph_k4/4096")."""
    runs = json.load(open(path))["benchmarks"]
    return {re.sub(r"/(iterations:\d+|manual_time)", "", r["name"]): r["real_time"] for r in runs
            if r.get("run_type") != "aggregate" and "error_occurred" not in r}


def floor_name(config, bytes_):
    if not config["graphs"]:
        return f"floor/np1/eager/{bytes_}"
    return f"floor/np1/graph_k{config['graph_steps']}/{bytes_}"


def main(argv):
    out = gpu_check_dir(argv, __doc__, "small")
    floor = floors(os.path.join(out, "bench-floor.json"))
    print("run | pass | C values | timing (phase-timed steps) | µs per step | floor µs | x floor | "
          "bound µs | x bound | host queue/retire/vote µs | verified")
    for path in sorted(glob.glob(os.path.join(out, "small_*.json"))):
        s = json.load(open(path))
        c = s["config"]
        bytes_ = int(c["elements"]) * (4 if c["dtype"] == "float32" else 8)
        name = os.path.basename(path)[:-5]
        for p in s["passes"]:
            step_us = p["time_per_step_ms"] * 1e3
            f = floor.get(floor_name(c, bytes_))
            bound = p["step_bound_ms"]
            host = p["host_us_per_step"]
            t = p["timing"]
            print(f"{name} | {'on' if p['overlap'] else 'off'} | {c['c_elements']} | {t['used']}"
                  f"{' (auto)' if t['auto'] else ''} ({t['phase_timed_steps']}) | {step_us:.1f} | "
                  f"{'-' if f is None else f'{f:.1f}'} | "
                  f"{'-' if f is None else f'{step_us / f:.2f}'} | "
                  f"{'-' if bound is None else f'{bound * 1e3:.1f}'} | "
                  f"{'-' if bound is None else f'{step_us / (bound * 1e3):.2f}'} | "
                  f"{host['queue']:.1f}/{host['retire']:.1f}/{host['callback']:.1f} | "
                  f"{p['verification']['passed']}")


if __name__ == "__main__":
    main(sys.argv[1:])
