#!/usr/bin/env python3
"""The tables of lab/sizes: per size, one launch of every size beside each size
launched alone (medians over the repetitions), and the wall time of each way.
Usage: lab/sizes_table.py FOLDER   (the unpacked sizes.tgz: FOLDER/walls.txt, *.csv)"""
import argparse
import csv
import glob
import os
import re
import statistics


def rows(folder, way, name):
    """{elements: [row of each repetition]} from FOLDER/WAY_NAME_REP.csv."""
    found = {}
    for path in sorted(glob.glob(os.path.join(folder, f"{way}_{name}_*.csv"))):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                found.setdefault(int(row["elements"]), []).append(row)
    return found


def median(rows_of_size, column):
    values = [float(r[column]) for r in rows_of_size if r[column] not in ("", "nan")]
    return statistics.median(values) if values else float("nan")


def table(folder, name):
    one, sep = rows(folder, "one", name), rows(folder, "sep", name)
    if not one:
        return
    print(f"\n{name}: one launch / separate launches, medians over {len(next(iter(one.values())))} "
          "repetition(s)")
    print("| size | time per step, µs (one / separate) | ratio | transfer GB/s (one / separate) "
          "| transfer / ceiling (one / separate) | overlap speedup (one / separate) | verified |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for elements in sorted(one):
        a, b = one[elements], sep.get(elements, [])
        t1, t2 = median(a, "time_per_step_ms") * 1e3, median(b, "time_per_step_ms") * 1e3
        size = elements * 4
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        ok = all(r["verified"] == "ok" for r in a + b)
        print(f"| {label} | {t1:.2f} / {t2:.2f} | {t1 / t2:.3f} | "
              f"{median(a, 'transfer_gbps'):.2f} / {median(b, 'transfer_gbps'):.2f} | "
              f"{median(a, 'transfer_vs_ceiling'):.3f} / {median(b, 'transfer_vs_ceiling'):.3f} | "
              f"{median(a, 'overlap_speedup'):.3f} / {median(b, 'overlap_speedup'):.3f} | "
              f"{'yes' if ok else 'NO'} |")


def walls(folder):
    print("\nwall time of the launches (ms)")
    with open(os.path.join(folder, "walls.txt")) as f:
        for line in f:
            m = re.match(r"(\w+) (one launch|separate launches) rep (\d+).* wall_ms (\d+)", line)
            if m:
                print(f"  {m[1]} {m[2]}, repetition {m[3]}: {m[4]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="lab/sizes_table.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", metavar="FOLDER", help="the unpacked sizes.tgz of lab/sizes")
    folder = parser.parse_args().folder
    for name in ("nccl", "ipc"):
        table(folder, name)
    walls(folder)
