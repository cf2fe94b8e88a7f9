"""The ipc group's figures as ratios to ceilings measured in the same run (lab/gpu-check).

usage: ipc_summary.py OUT_DIR

Reads OUT_DIR/bench-transport-ipc.json (bench_transport: transport/ipc_gpu beside gpu/copy_d2d
and transport/mpi_staged_gpu), the JSON summaries of the ipc_np2_{ipc,ipcsm,mpi}_{16Mi,64Mi}
runs (float32: 64 MiB and 256 MiB steps; ipcsm: ipc_engine = sm, where run) and, where run, of
ipc_overlap_d{1,2} (C as long as the transfer). Prints, per size, ipc's bandwidth as a fraction
of a device-to-device copy of the same bytes; per step size, how many times faster the ipc
step is than the MPI one; and the overlap runs' speedup and step against perfect overlap. Exits 1 when a target is missed: ipc >= 0.80 of the copy from 64 MiB
up, and the 256 MiB step >= 50x faster than MPI's. The first line names the link as the benchmark
reported it: whether the two processes were time-sliced or shared the GPU through MPS.
"""
import json
import os
import sys

from bench_json import sized_runs
from gpu_check_dir import gpu_check_dir

MIB = 1 << 20


def bench_rates(path):
    """{(family, bytes): bytes_per_second} from a Google Benchmark JSON file."""
    return {key: run["bytes_per_second"] for key, run in sized_runs(path).items()
            if "bytes_per_second" in run}


def step_ms(out, name):
    """Time per step of each pass ({"off": ms, "on": ms}) in run `name`'s summary."""
    with open(os.path.join(out, name + ".json")) as f:
        summary = json.load(f)
    return {("on" if p["overlap"] else "off"): p["time_per_step_ms"] for p in summary["passes"]}


def main(argv):
    out = gpu_check_dir(argv, __doc__, "ipc")
    bench = os.path.join(out, "bench-transport-ipc.json")
    rates = bench_rates(bench)
    missed = []
    with open(bench) as f:
        # "ipc (same GPU, time-sliced)" or "ipc (same GPU, shared through MPS)"
        link = json.load(f)["context"].get("ipc", "ipc (link unknown)")
    print(f"bench_transport, two ranks on one GPU, {link} (GB/s = 1e9 bytes moved per second):")
    print("  ipc = 2 slots (as depth 2), ipc4 = 4 slots, copy-only = rank 0 copying into the")
    print("  mapped slot with no handshake (a diagnosis); ratios are to the d2d copy")
    print(f"{'bytes':>10} {'ipc':>8} {'ipc4':>8} {'copy-only':>9} {'d2d copy':>9} "
          f"{'ipc/copy':>8} {'ipc4/copy':>9} {'only/copy':>9} {'mpi staged':>10}")
    nan = float("nan")
    for (family, size), ipc in sorted(rates.items()):
        if family != "transport/ipc_gpu":
            continue
        copy = rates.get(("gpu/copy_d2d", size), nan)
        wide = rates.get(("transport/ipc_gpu_4slots", size), nan)
        only = rates.get(("transport/ipc_gpu_copy_only", size), nan)
        staged = rates.get(("transport/mpi_staged_gpu", size), nan)
        ratio = ipc / copy
        print(f"{size:>10} {ipc / 1e9:>8.1f} {wide / 1e9:>8.1f} {only / 1e9:>9.1f} "
              f"{copy / 1e9:>9.1f} {ratio:>8.3f} {wide / copy:>9.3f} {only / copy:>9.3f} "
              f"{staged / 1e9:>10.2f}")
        if size >= 64 * MIB and not ratio >= 0.80:
            missed.append(f"ipc at {size // MIB} MiB is {ratio:.3f} of the copy (target 0.80)")
    print("gpurelay steps, two ranks on one GPU, depth 2 (ms per step, overlap off / on):")
    for elements, mib in (("16Mi", 64), ("64Mi", 256)):
        ipc = step_ms(out, f"ipc_np2_ipc_{elements}")
        mpi = step_ms(out, f"ipc_np2_mpi_{elements}")
        for mode in ("off", "on"):
            speedup = mpi[mode] / ipc[mode]
            print(f"  {mib} MiB overlap {mode}: ipc {ipc[mode]:.3f}, mpi {mpi[mode]:.3f}: "
                  f"ipc {speedup:.1f}x faster")
            if mib == 256 and not speedup >= 50:
                missed.append(f"256 MiB step (overlap {mode}) only {speedup:.1f}x faster than MPI")
        # ipc_engine = sm (A writes into the consumer's slot), where it was run.
        if os.path.exists(os.path.join(out, f"ipc_np2_ipcsm_{elements}.json")):
            sm = step_ms(out, f"ipc_np2_ipcsm_{elements}")
            for mode in ("off", "on"):
                print(f"  {mib} MiB overlap {mode}: ipc_engine sm {sm[mode]:.3f}: "
                      f"{ipc[mode] / sm[mode]:.2f}x the copy engine's speed, "
                      f"{mpi[mode] / sm[mode]:.1f}x MPI's")
    # Overlap with C as long as the transfer (where run): whether overlap made the step faster,
    # and the overlapped step against perfect overlap (the longer of C and A + transfer + B).
    for depth in (1, 2):
        path = os.path.join(out, f"ipc_overlap_d{depth}.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            summary = json.load(f)
        on = step_ms(out, f"ipc_overlap_d{depth}")["on"]
        # The values as measured (the judgement's figures), whatever their verdicts.
        figures = summary["figures"]
        print(f"  64 MiB, C as long as the transfer, depth {depth}: overlap speedup "
              f"{figures['overlap_speedup']['value']:.2f}x, step {on:.3f} ms = "
              f"{on / figures['overlap_ideal_ms']['value']:.2f}x perfect overlap")
    for line in missed:
        print("target missed: " + line)
    if not missed:
        print("targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
