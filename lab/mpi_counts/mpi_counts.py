"""The collective-call counts of a run (lab/mpi_counts/mpi_counts.cpp, preloaded): how to ask
mpirun for them, and reading back every rank's DIR/rank-R.json.

usage: mpi_counts.py DIR      prints each call's count per rank over the world and over fewer
                              ranks (the least and the most over the ranks), and rank 0's
                              gathered bytes
"""
import glob
import json
import os
import sys

VARIABLE = "GPURELAY_MPI_COUNTS"


def mpirun_flags(library, folder):
    """Open MPI's flags preloading the count into every rank, naming its folder (-x: ranks only)."""
    return ["-x", "LD_PRELOAD=" + os.path.abspath(library), "-x", VARIABLE + "=" + folder]


def read(folder, ranks=None):
    """Every rank's counts; ValueError for a missing rank file (no MPI_Finalize, or no preload)."""
    found = {}
    for path in glob.glob(os.path.join(folder, "rank-*.json")):
        with open(path) as f:
            counts = json.load(f)
        found[counts["rank"]] = counts
    if not found:
        raise ValueError(f"no rank-*.json in {folder}: was the count preloaded?")
    size = ranks if ranks is not None else next(iter(found.values()))["world_size"]
    missing = [r for r in range(size) if r not in found]
    if missing:
        raise ValueError(f"{folder}: no counts from rank(s) {missing} of {size}")
    return [found[r] for r in range(size)]


def spread(values):
    """"least..most" of the values over the ranks, or the one value they all have."""
    least, most = min(values), max(values)
    return str(least) if least == most else f"{least}..{most}"


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    counts = read(sys.argv[1])
    total = {side: [c[side + "_calls"] for c in counts] for side in ("world", "fewer")}
    print(f"{len(counts)} ranks; collective calls per rank over the world "
          f"{min(total['world'])}..{max(total['world'])}, over fewer ranks "
          f"{min(total['fewer'])}..{max(total['fewer'])}; "
          f"rank 0 gathered {counts[0]['gathered_bytes']} bytes")
    for side in ("world", "fewer"):
        for name in sorted({name for c in counts for name in c[side]}):
            print(f"  {side:5}  {name:28} {spread([c[side].get(name, 0) for c in counts])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
