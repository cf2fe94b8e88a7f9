"""The count's own test: mpi_counts_probe under mpirun -np 4 with the count preloaded; every
rank's JSON must hold exactly the calls the probe makes (counts_probe.cpp), split by whether
they span the world, the bytes each rank received in gathers, a time inside each call, first
times in the order the probe calls them, and MPI_Init's time.

usage: check_counts.py --library LIB --probe PROBE --mpirun "mpirun ..."
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lab",
                                "mpi_counts"))
import mpi_counts  # noqa: E402

WORLD = {"MPI_Barrier": 3, "MPI_Bcast": 1, "MPI_Allreduce": 1, "MPI_Iallreduce": 3,
         "MPI_Gather": 1, "MPI_Allgather": 1, "MPI_Comm_dup": 1, "MPI_Comm_free": 1,
         "MPI_Comm_split": 1, "MPI_File_open": 1, "MPI_File_write_at_all": 1,
         "MPI_File_close": 1}
FEWER = {"MPI_Barrier": 2, "MPI_Allreduce": 1, "MPI_Gather": 1, "MPI_Ibcast": 1,
         "MPI_Win_allocate_shared": 1, "MPI_Win_free": 1, "MPI_Comm_create_group": 1,
         "MPI_Comm_free": 2, "MPI_File_open": 1, "MPI_File_close": 1}


def gathered(rank):
    """An all-gather of 2 doubles from each of 4 ranks on every rank; the world's gather of 3
    ints a rank on rank 0; the pair's gather of an int a rank on each pair's first rank."""
    return 4 * 2 * 8 + (4 * 3 * 4 if rank == 0 else 0) + (2 * 4 if rank % 2 == 0 else 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--mpirun", required=True)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counts_dir = os.path.join(tmp, "counts")
        os.mkdir(counts_dir)
        command = (shlex.split(opts.mpirun) + ["-np", "4"] +
                   mpi_counts.mpirun_flags(opts.library, counts_dir) + [opts.probe, tmp])
        print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
        subprocess.run(command, check=True, timeout=100)
        counts = mpi_counts.read(counts_dir, 4)
    failures = []
    for c in counts:
        r = c["rank"]
        for side, expected in (("world", WORLD), ("fewer", FEWER)):
            if c[side] != expected:
                failures.append(f"rank {r} {side}: {c[side]}, expected {expected}")
        if c["world_calls"] != sum(WORLD.values()) or c["fewer_calls"] != sum(FEWER.values()):
            failures.append(f"rank {r}: totals {c['world_calls']} and {c['fewer_calls']}")
        if set(c["seconds"]) != set(WORLD) | set(FEWER) or min(c["seconds"].values()) < 0:
            failures.append(f"rank {r}: seconds inside the calls {c['seconds']}")
        first = c["first_seconds"]
        if not 0 <= first["MPI_Barrier"] <= first["MPI_Comm_split"] <= first["MPI_Win_free"]:
            failures.append(f"rank {r}: the calls' first times out of order: {first}")
        if not c["init_seconds"] > 0:
            failures.append(f"rank {r}: MPI_Init took {c['init_seconds']} s")
        if c["gathered_bytes"] != gathered(r):
            failures.append(f"rank {r}: gathered {c['gathered_bytes']} bytes, expected "
                            f"{gathered(r)}")
    for line in failures:
        print("FAIL: " + line)
    if failures:
        return 1
    print(f"PASS: every rank counted {sum(WORLD.values())} calls over the world, "
          f"{sum(FEWER.values())} over fewer ranks, and its gathered bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
