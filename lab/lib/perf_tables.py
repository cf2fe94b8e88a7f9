"""The tables of docs/PERFORMANCE.md, made from a lab/gpu-check stage's folder.

DIR is a stage's folder (small, ipc, collectives, bench, pair) or one under docs/results/: its
bench-*.json, results CSVs, JSON summaries (NAME.json: the run tagged NAME) and mps/ (the ipc
stage under MPS). Prints each table between `<!-- table NAME -->` and `<!-- end table NAME -->`
(--update DOC replaces DOC's blocks), ending with its data's date and commit. Exits 2 when DIR
holds nothing to tabulate.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def size_name(n):
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} B"


def num(value):
    """A CSV or JSON field as a float (None where empty)."""
    return None if value is None or value == "" else float(value)


def fmt(value, digits=3):
    return "–" if value is None else f"{value:.{digits}f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def bench(path):
    """({(family, bytes): run}, context) less aggregates and failures ("fa/m/4096/...": fa/m)."""
    if not os.path.exists(path):
        return {}, {}
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for run in data["benchmarks"]:
        sized = re.match(r"(.*?)/(\d+)(/|$)", run["name"])
        if sized and run.get("run_type") != "aggregate" and not run.get("error_occurred"):
            runs[(sized[1], int(sized[2]))] = run
    return runs, data.get("context", {})


def runs_in(folder):
    """{tag: run} of the CSVs and NAME.json summaries; a tag at several sizes: "TAG elements=N"."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        size = "elements" if rows and "elements" in rows[0] else "tensor_bytes"
        sizes = {row["tag"]: {r[size] for r in rows if r["tag"] == row["tag"]} for row in rows}
        for row in rows:
            # The CSV has no graph_steps column; gpu-check tags graphs of N steps NAME_gN.
            steps = re.search(r"_g(\d+)(_|$)", row["tag"])
            row.setdefault("graph_steps", steps.group(1) if steps else "1")
            name = row["tag"] + (f" {size}={row[size]}" if len(sizes[row["tag"]]) > 1 else "")
            runs[name] = row
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name.startswith(("bench-", "torch_")):
            continue
        with open(path) as f:
            s = json.load(f)
        if "passes" not in s:
            continue
        # Older summaries hold the config as TOML literals ('"float32"'); newer ones typed.
        c = {k: v.strip('"') if isinstance(v, str) else v for k, v in s["config"].items()}
        last = s["passes"][-1]
        off = [p for p in s["passes"] if not p["overlap"]]
        runs[name] = {
            "tag": name, "timestamp": s.get("timestamp", ""), "git_hash": s.get("git_hash", ""),
            "world_size": s["world_size"], "transport": s["transport"],
            "tensor_bytes": int(c["elements"]) * (4 if c["dtype"] == "float32" else 8),
            **{key: c[key] for key in ("depth", "c_elements", "c_iterations", "overlap")},
            "graphs": str(c["graphs"]).lower(), "graph_steps": c.get("graph_steps", 1),
            "time_per_step_ms": last["time_per_step_ms"],
            "overlap_speedup": s.get("overlap_speedup"),
            **{key: last.get(key) for key in ("step_bound_ms", "transfer_gbps", "algbw_gbps")},
            "time_per_step_no_overlap_ms": off[0]["time_per_step_ms"] if off else None,
            "algbw_no_overlap_gbps": off[0].get("algbw_gbps") if off else None,
            "timing": last.get("timing", {}).get("used", ""),
            "verified": "ok" if s["verified"] else "FAILED",
        }
    return runs


def provenance(dates, hashes, commit):
    date = max((d for d in dates if d), default="")[:10] or "date unknown"
    hashes = sorted({h[:7] for h in hashes if h and h != "unknown"})
    where = f"`{commit}`" if commit else ", ".join(f"`{h}`" for h in hashes) or "an unknown commit"
    return f"Measured {date} on {where}."


def kernels(folder):
    runs, ctx = bench(os.path.join(folder, "bench-kernels.json"))
    rows = []
    for size in sorted({b for (fam, b) in runs if fam == "gpu/copy_d2d" and b >= MIB}):
        rate = {fam: runs[(fam, size)]["bytes_per_second"] / 1e9 for fam in
                ("gpu/copy_d2d", "gpu/a", "gpu/b") if (fam, size) in runs}
        if len(rate) < 3:
            continue
        copy = rate["gpu/copy_d2d"]
        rows.append([size_name(size), f"{copy:.0f}", f"{rate['gpu/a']:.0f}",
                     f"{rate['gpu/a'] / copy:.1%}", f"{rate['gpu/b']:.0f}",
                     f"{rate['gpu/b'] / copy:.1%}"])
    yield "kernels", ["size", "D2D copy GB/s", "A GB/s", "A / copy", "B GB/s", "B / copy"], rows, \
        [ctx.get("date")], [ctx.get("gpurelay_git")]


def run_rows(runs, tags):
    """The compare-mode table (header, rows, dates, hashes) of the runs of `tags` there are."""
    used = [(tag, runs[tag]) for tag in tags if tag in runs]
    rows = [[tag, r["world_size"], r["transport"], size_name(int(r["tensor_bytes"])),
             fmt(num(r["time_per_step_no_overlap_ms"]), 4), fmt(num(r["time_per_step_ms"]), 4),
             fmt(num(r["overlap_speedup"]), 2), fmt(num(r["transfer_gbps"]), 0), r["verified"]]
            for tag, r in used]
    header = ["run", "ranks", "transport", "tensor", "ms/step, overlap off", "ms/step, on",
              "speedup", "transfer GB/s (on)", "verified"]
    return header, rows, [r["timestamp"] for _, r in used], [r["git_hash"] for _, r in used]


def small_steps(folder):
    floor, _ = bench(os.path.join(folder, "bench-floor.json"))
    runs = runs_in(folder)
    rows, dates, hashes = [], [], []
    for tag, r in sorted(runs.items(), key=lambda kv: (int(kv[1]["tensor_bytes"]), kv[0])):
        size = int(r["tensor_bytes"])
        if int(r["world_size"]) != 1 or r["transport"] != "nccl" or size > 16 * MIB \
                or r["overlap"] != "on" or int(r["c_elements"]) > 1024 \
                or r["timing"] == "phases" or tag.startswith(("small_mismatch", "small_graphs_")):
            continue
        graphs = r["graphs"] == "true"
        steps = int(r.get("graph_steps") or 1)
        floor_run = floor.get((f"floor/np1/{'graph_k' + str(steps) if graphs else 'eager'}", size))
        step_us = float(r["time_per_step_ms"]) * 1e3
        bound = num(r["step_bound_ms"])
        rows.append([tag, size_name(size), f"graphs of {steps}" if graphs else "eager",
                     r["timing"], "off" if int(r["c_elements"]) == 0 else
                     f"{r['c_elements']} × {r['c_iterations']}", f"{step_us:.1f}",
                     fmt(floor_run and step_us / floor_run["real_time"], 2),
                     fmt(bound and step_us / (bound * 1e3), 2), r["verified"]])
        dates.append(r["timestamp"])
        hashes.append(r["git_hash"])
    yield "small-steps", ["run", "tensor", "steps", "timing", "C", "µs per step", "× floor",
                          "× bound", "verified"], rows, dates, hashes


IPC = ("transport/ipc_gpu", "transport/ipc_gpu_4slots", "transport/ipc_gpu_copy_only")


def ipc(folder):
    rows, step_rows, dates, hashes = [], [], [], []
    for where, leg in ((folder, "time-sliced"), (os.path.join(folder, "mps"), "MPS")):
        runs, ctx = bench(os.path.join(where, "bench-transport-ipc.json"))
        for size in (64 * MIB, 256 * MIB):
            rate = {fam: runs[(fam, size)]["bytes_per_second"] for fam in IPC + ("gpu/copy_d2d",)
                    if (fam, size) in runs}
            if IPC[0] not in rate or "gpu/copy_d2d" not in rate:
                continue
            copy = rate["gpu/copy_d2d"]
            ratio = [fmt(rate.get(f) and rate[f] / copy, 3) for f in IPC]
            rows.append([leg, size_name(size), f"{copy / 1e9:.0f}"] + ratio)
            dates.append(ctx.get("date"))
            hashes.append(ctx.get("gpurelay_git"))
        steps = runs_in(where)
        for elements, size in (("16Mi", "64 MiB"), ("64Mi", "256 MiB")):
            ipc_run, sm_run, mpi_run = (steps.get(f"ipc_np2_{way}_{elements}")
                                        for way in ("ipc", "ipcsm", "mpi"))
            if not ipc_run or not mpi_run:
                continue
            cells = [leg, size]
            for key in ("time_per_step_no_overlap_ms", "time_per_step_ms"):
                cells += [fmt(num(ipc_run[key]), 3), fmt(sm_run and num(sm_run[key]), 3),
                          fmt(num(mpi_run[key]), 2),
                          f"{num(mpi_run[key]) / num(ipc_run[key]):.0f}×"]
            step_rows.append(cells)
    yield "ipc-transfer", ["ranks share the GPU", "size", "D2D copy GB/s", "ipc / copy (2 slots)",
                           "4 slots", "copy alone, no handshake"], rows, dates, hashes
    yield "ipc-steps", ["ranks share the GPU", "tensor", "ipc ms (off)", "ipc sm ms", "MPI ms",
                        "ipc vs MPI", "ipc ms (on)", "ipc sm ms", "MPI ms", "ipc vs MPI"], \
        step_rows, dates, hashes


def collectives(folder):
    runs, ctx = bench(os.path.join(folder, "bench-collectives.json"))
    ours = runs_in(folder)
    rows = []
    for pattern in ("broadcast", "allreduce"):
        mine = ours.get(f"collective_{pattern}_np1_nccl")
        for (fam, size), run in sorted(runs.items()):
            if fam != f"transport/nccl_{pattern}_plain" or size < 16 * MIB:
                continue
            cells = ["–", "–"]
            if mine and int(mine["tensor_bytes"]) == size:
                # The pass without overlap times the collective alone, as the loop does; a CSV
                # row has only the overlapped pass, with C beside the collective.
                for i, key in enumerate(("algbw_no_overlap_gbps", "algbw_gbps")):
                    if num(mine.get(key)):
                        ratio = num(mine[key]) / run["algbw_gbps"]
                        cells[i] = f"{num(mine[key]):.0f} ({ratio:.3f}×)"
            rows.append([pattern, size_name(size), f"{run['algbw_gbps']:.0f}"] + cells)
    yield "collectives", ["collective", "size", "plain NCCL loop algbw GB/s",
                          "gpurelay, overlap off: algbw GB/s (× the loop)",
                          "overlap on, C beside it"], rows, \
        [ctx.get("date")], [ctx.get("gpurelay_git")]


def two_gpus(folder):
    runs, ctx = bench(os.path.join(folder, "bench-transport-pair.json"))
    sweep = runs_in(folder)
    # The sweep's runs; pair_* are the calibrated-C runs, whose transfer C slows.
    by = {(int(r["tensor_bytes"]), int(r["depth"])): num(r["transfer_gbps"])
          for tag, r in sweep.items() if not tag.startswith("pair_") and r["transport"] == "nccl"
          and int(r["world_size"]) == 2 and r.get("transfer_gbps")}
    rows = []
    for (fam, size), run in sorted(runs.items()):
        if fam == "transport/nccl_plain" and size >= 64 * KIB:
            plain = run["bytes_per_second"] / 1e9
            d2 = by.get((size, 2))
            if not any(by.get((size, d)) for d in (1, 2, 4)):
                continue
            rows.append([size_name(size), f"{plain:.1f}"]
                        + [fmt(by.get((size, d)), 1) for d in (1, 2, 4)]
                        + [fmt(d2 and d2 / plain, 2)])
    yield "two-gpu-transfer", ["size", "plain NCCL loop GB/s", "depth 1", "depth 2", "depth 4",
                               "depth 2 / plain"], rows, [ctx.get("date")], \
        [ctx.get("gpurelay_git")]
    yield ("two-gpu-overlap",) + run_rows(sweep, ["pair_overlap_d1", "pair_overlap_d2"])


# Each yields its tables as (name, header, rows, dates, hashes); a table with no rows is left out.
MAKERS = (kernels, small_steps, ipc, collectives, two_gpus)


def blocks(folder, commit):
    return {name: f"{table(header, rows)}\n\n{provenance(dates, hashes, commit)}"
            for maker in MAKERS for name, header, rows, dates, hashes in maker(folder) if rows}


def fenced(name, text):
    return f"<!-- table {name} -->\n{text}\n<!-- end table {name} -->"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--update", metavar="DOC")
    parser.add_argument("--commit")
    parser.add_argument("--only", metavar="NAMES",
                        help="comma-separated table names: make only these")
    args = parser.parse_args()
    made = blocks(args.dir, args.commit)
    if args.only:
        made = {name: text for name, text in made.items() if name in args.only.split(",")}
    if not made:
        print(f"perf_tables: nothing to tabulate in {args.dir}", file=sys.stderr)
        return 2
    if not args.update:
        for name, text in made.items():
            print(fenced(name, text) + "\n")
        return 0
    with open(args.update) as f:
        doc = f.read()
    block = r"<!-- table ([\w-]+) -->\n.*?<!-- end table \1 -->"
    replaced = [name for name in re.findall(block, doc, flags=re.S) if name in made]
    doc = re.sub(block, lambda m: fenced(m[1], made[m[1]]) if m[1] in made else m[0], doc,
                 flags=re.S)
    with open(args.update, "w") as f:
        f.write(doc)
    print(f"perf_tables: updated {', '.join(replaced) or 'nothing'} in {args.update}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
