#!/usr/bin/env python3
"""The lab's stage tables, from what lab/gpu-check's stages wrote (docs/PERFORMANCE.md's
tables come from lab/lib/perf_tables.py).

usage: tables.py relay DIR             a line per launch (JSON summaries in DIR and below):
                                       period, each stage's step and host time, each hop's
                                       transfer and bare transfer, fill, cores, host waits
       tables.py mpiline DIR           bench_line's line against its pairs per size
       tables.py steps CSV             per launch and size: the step, overlap, A, B and C
       tables.py sizes CSV WALLS       one launch of nine sizes against one launch each
       tables.py matched-c JSON        C's iterations that take as long as the transfer did
                                       (in a launch where C ran 64)
"""
import argparse
import csv
import json
import pathlib
import statistics

from perf_tables import size_name


def us(ms):
    return "-" if ms is None else f"{1000 * ms:.1f}"


def relay(folder):
    print("launch | period µs | stage rank: step µs (host queue/retire/vote µs) | hop transfer "
          "µs | bare µs | fill ms | cores | host waits | verified")
    for path in sorted(pathlib.Path(folder).rglob("*.json")):
        s = json.loads(path.read_text())
        if "passes" not in s:
            continue
        p = s["passes"][-1]
        r = p.get("relay", {})
        stages = " ".join(
            f"{f['rank']}: {us(f['step_ms'])}" + (" ({queue:.1f}/{retire:.1f}/{callback:.1f})".format(
                **f["host_us_per_step"]) if "host_us_per_step" in f else "")
            for f in r.get("stage_figures", []))
        hops = " ".join(us(h.get("transfer_ms")) for h in p.get("pairs", []))
        bare = " ".join(us(h) for h in s.get("ceilings_ms", {}).get("hops", []))
        print(f"{path.relative_to(folder).with_suffix('')} | {us(p['time_per_step_ms'])} | {stages}"
              f" | {hops} | {bare} | {r.get('fill_ms', 0):.3f} | "
              f"{' '.join(str(rank.get('cores')) for rank in s.get('ranks', []))} | "
              f"{s.get('host_wait', '')} | {'yes' if s['verified'] else 'NO'}")


def mpiline(folder):
    print("launch | bytes | line µs | pairs µs | line / pairs")
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        runs = {}
        for b in json.loads(path.read_text())["benchmarks"]:
            pattern, _, size = b["name"].split("/")[:3]
            runs.setdefault(int(size), {})[pattern] = b["real_time"]
        for size, t in sorted(runs.items()):
            print(f"{path.stem} | {size} | {t['line']:.1f} | {t['pairs']:.1f} | "
                  f"{t['line'] / t['pairs']:.2f}")


def num(row, column):
    value = row.get(column, "")
    return float(value) if value not in ("", "nan") else None


def steps(path):
    print("launch | bytes | µs a step | overlap off | speedup | A µs | B µs | C µs | verified")
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            speedup = num(r, "overlap_speedup")
            print(f"{r['tag']} | {r['tensor_bytes']} | {us(num(r, 'time_per_step_ms'))} | "
                  f"{us(num(r, 'time_per_step_no_overlap_ms'))} | "
                  f"{'-' if speedup is None else f'{speedup:.3f}'} | {us(num(r, 'a_ms'))} | "
                  f"{us(num(r, 'b_ms'))} | {us(num(r, 'c_ms'))} | {r['verified']}")


def median(rows, column):
    values = [v for v in (num(r, column) for r in rows) if v is not None]
    return statistics.median(values) if values else float("nan")


def sizes(path, walls):
    """Per transport and size, the median step in one launch of nine sizes against one each."""
    runs = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            how, way = r["tag"].split("_")[:2]
            runs.setdefault((way, int(r["elements"])), {}).setdefault(how, []).append(r)
    print("| transport | size | µs a step, one / separate | ratio | verified |\n"
          "| --- | --- | --- | --- | --- |")
    for (way, elements), sides in sorted(runs.items()):
        one, sep = sides.get("one", []), sides.get("sep", [])
        t1, t2 = (1e3 * median(side, "time_per_step_ms") for side in (one, sep))
        ok = all(r["verified"] == "ok" for r in one + sep)
        print(f"| {way} | {size_name(4 * elements)} | {t1:.2f} / {t2:.2f} | {t1 / t2:.3f} | "
              f"{'yes' if ok else 'NO'} |")
    print("\nwall time of the launches (ms)\n" + open(walls).read())


def matched_c(path):
    # The transfer as measured (the judgement's figure), whatever its verdict.
    p = json.load(open(path))["passes"][0]
    transfer = p["figures"]["transfer_ms"]["value"]
    print(max(1, round(64 * transfer / p["phases_ms"]["c"]["median"])))


TABLES = {"relay": relay, "mpiline": mpiline, "steps": steps, "sizes": sizes,
          "matched-c": matched_c}


def main():
    parser = argparse.ArgumentParser(prog="lab/lib/tables.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", choices=TABLES)
    parser.add_argument("paths", nargs="+", metavar="PATH")
    args = parser.parse_args()
    TABLES[args.table](*args.paths)


if __name__ == "__main__":
    main()
