"""gpurelay's collectives against nccl-tests' method, measured in the same run (lab/gpu-check).

usage: collectives_vs_plain.py OUT_DIR

Reads OUT_DIR/bench-collectives.json (bench_transport at -np 1: transport/nccl_broadcast_plain
and transport/nccl_allreduce_plain, with nccl-tests' algbw_gbps and busbw_gbps counters) and the
JSON summaries OUT_DIR/collective_{broadcast,allreduce}_np1_nccl.json, and prints, per pattern
and size, the plain loop's busbw and, at the size of gpurelay's run, gpurelay's busbw (its
overlap-off pass: the collective without C beside it) as a ratio to the plain loop's. A one-rank
all-reduce has a bus factor of 0 (busbw is 0 on both sides), so there the ratio is of algbw,
which is the same ratio wherever the factor is not 0. Exits 1 when the benchmark file is missing
or a plain loop failed its check; there is no target on one GPU.
"""
import json
import os
import sys

from bench_json import sized_runs
from gpu_check_dir import gpu_check_dir

PATTERNS = ("broadcast", "allreduce")


def plain_loops(path):
    """{(pattern, bytes): benchmark entry} from bench_transport's JSON; failed entries kept."""
    return {(pattern, size): run for (family, size), run in sized_runs(path).items()
            for pattern in PATTERNS if family == f"transport/nccl_{pattern}_plain"}


def gpurelay_pass(out, pattern):
    """(tensor bytes, overlap-off pass) of gpurelay's -np 1 NCCL run of `pattern`, or None."""
    path = os.path.join(out, f"collective_{pattern}_np1_nccl.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        summary = json.load(f)
    config = summary["config"]
    size = {"float32": 4, "float64": 8}[config["dtype"]]
    passes = [p for p in summary["passes"] if not p["overlap"]] or summary["passes"]
    return int(config["elements"]) * size, passes[0]


def main(argv):
    out = gpu_check_dir(argv, __doc__, "collectives")
    path = os.path.join(out, "bench-collectives.json")
    if not os.path.exists(path):
        print(f"collectives vs plain: {path} missing (bench_transport did not run)")
        return 1
    loops = plain_loops(path)
    status = 0
    for pattern in PATTERNS:
        ours = gpurelay_pass(out, pattern)
        sizes = sorted(b for (p, b) in loops if p == pattern)
        if not sizes:
            print(f"plain {pattern}: no benchmark in {path}")
            status = 1
        for size in sizes:
            run = loops[(pattern, size)]
            if run.get("error_occurred"):
                print(f"plain {pattern} {size} B: FAILED ({run.get('error_message', '')})")
                status = 1
                continue
            line = (f"plain {pattern} {size} B: algbw {run['algbw_gbps']:.2f} GB/s, "
                    f"busbw {run['busbw_gbps']:.2f} GB/s")
            if ours is not None and ours[0] == size:
                p = ours[1]
                if run["busbw_gbps"] > 0:
                    ratio, of = p["busbw_gbps"] / run["busbw_gbps"], "busbw"
                else:
                    ratio, of = p["algbw_gbps"] / run["algbw_gbps"], "algbw (bus factor 0)"
                line += (f"; gpurelay busbw {p['busbw_gbps']:.2f} GB/s, algbw "
                         f"{p['algbw_gbps']:.2f} GB/s: {ratio:.3f}x the plain loop's {of}")
            print(line)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
