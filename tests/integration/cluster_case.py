"""What a run does over the whole world, counted: each launch is a run_case.py run (exit 0, every
element of /y against the formula, the JSON's totals) with the collective-call count preloaded
(lab/mpi_counts), and the counts are then held to the rule.

usage: cluster_case.py --binary B --mpirun "mpirun ..." --library LIB
                       --check per-step --np N --steps SHORT LONG -- GPURELAY_ARGS...
                       --check setup --np N1 N2 ... --transports T1 T2 ... -- GPURELAY_ARGS...

per-step: the same run of SHORT and of LONG steps (one pass: overlap on); on every rank the
  collectives over the world that the LONG run adds, over the steps it adds, are at most 1/64
  a step (the stop vote every cadence, and nothing else).
setup: the same short run at each rank count over each transport; on every rank the collectives
  over the world but the stop vote's are the same number at every rank count and over every
  transport (a pair's transport adds none over the world: it is made over its own two ranks),
  those over fewer ranks the same number at every rank count, and what rank 0 receives in
  gathers grows in proportion to the ranks (the same bytes per rank).
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "lab", "mpi_counts"))
from needs import need_modules  # noqa: E402

need_modules("numpy", "h5py")

import mpi_counts  # noqa: E402

MOST_PER_STEP = 1 / 64


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def counted_run(opts, np_ranks, args, tmp, name):
    """One verified run under run_case.py with the count preloaded: every rank's counts."""
    folder = os.path.join(tmp, name)
    os.mkdir(folder)
    mpirun = opts.mpirun + " " + " ".join(mpi_counts.mpirun_flags(opts.library, folder))
    command = [sys.executable, os.path.join(HERE, "run_case.py"), "--binary", opts.binary,
               "--mpirun", mpirun, "--np", str(np_ranks), "--timeout", str(opts.timeout),
               "--"] + args
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout[-6000:])
        print(run.stderr[-3000:], file=sys.stderr)
        fail(f"{name}: the run failed (run_case.py exit {run.returncode})")
    try:
        return mpi_counts.read(folder, np_ranks)
    except ValueError as e:
        fail(f"{name}: {e}")


def per_step(opts, args, tmp):
    short, long = opts.steps
    counts = {steps: counted_run(opts, opts.np[0], args + ["--steps", str(steps)], tmp,
                                 f"steps{steps}") for steps in (short, long)}
    worst = 0.0
    for rank in range(opts.np[0]):
        added = counts[long][rank]["world_calls"] - counts[short][rank]["world_calls"]
        per = added / (long - short)
        print(f"rank {rank}: {counts[short][rank]['world_calls']} collectives over the world in "
              f"{short} steps, {counts[long][rank]['world_calls']} in {long}: {per:.5f} a step")
        worst = max(worst, per)
    if worst > MOST_PER_STEP:
        fail(f"{worst:.5f} collectives over the world per rank per step, more than 1/64")
    # Rank 0 gathers nothing that grows with the steps (histograms are reduced, not gathered).
    gathered = [counts[steps][0]["gathered_bytes"] for steps in (short, long)]
    if gathered[0] != gathered[1]:
        fail(f"rank 0 gathered {gathered[0]} bytes in {short} steps, {gathered[1]} in {long}")
    print(f"ok: at most {worst:.5f} collectives over the world per rank per step (1/64 allowed); "
          f"rank 0 gathered {gathered[0]} bytes at either length")


def set_up_calls(counts):
    """A rank's collectives over the world less the stop vote's (the only non-blocking all-reduce
    over the world in a run of pairs or relays): how many votes a short run casts follows its
    steps' times (stop_request.hpp), which the per-step check holds to its bound."""
    return counts["world_calls"] - counts["world"].get("MPI_Iallreduce", 0)


def setup(opts, args, tmp):
    world, fewer, per_rank_bytes = {}, {}, {}
    for transport in opts.transports:
        for np_ranks in opts.np:
            name = f"{transport}_np{np_ranks}"
            counts = counted_run(opts, np_ranks, args + ["--transport", transport], tmp, name)
            world[name] = sorted({set_up_calls(c) for c in counts})
            fewer[(transport, np_ranks)] = sorted({c["fewer_calls"] for c in counts})
            per_rank_bytes[name] = counts[0]["gathered_bytes"] / np_ranks
            print(f"{name}: collectives per rank over the world {world[name]} (and "
                  f"{counts[0]['world'].get('MPI_Iallreduce', 0)} stop votes), over fewer ranks "
                  f"{fewer[(transport, np_ranks)]}; rank 0 gathered {counts[0]['gathered_bytes']}"
                  f" bytes ({per_rank_bytes[name]:.0f} a rank)")
    if len({tuple(w) for w in world.values()}) != 1 or len(next(iter(world.values()))) != 1:
        fail(f"collectives over the world differ between ranks, rank counts or transports: "
             f"{world}")
    for transport in opts.transports:
        seen = {tuple(fewer[(transport, n)]) for n in opts.np}
        if len(seen) != 1:
            fail(f"{transport}: collectives over fewer ranks differ between rank counts: {seen}")
        bytes_seen = {per_rank_bytes[f"{transport}_np{n}"] for n in opts.np}
        if len(bytes_seen) != 1:
            fail(f"{transport}: rank 0's gathered bytes per rank differ between rank counts: "
                 f"{bytes_seen}")
    print(f"ok: {world[next(iter(world))][0]} collectives over the world per rank at "
          f"{', '.join(map(str, opts.np))} ranks over {', '.join(opts.transports)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--library", required=True, help="libgpurelay_mpi_counts.so")
    parser.add_argument("--timeout", type=float, default=600, help="each launch's bound")
    parser.add_argument("--check", choices=["per-step", "setup"], required=True)
    parser.add_argument("--np", type=int, nargs="+", required=True)
    parser.add_argument("--steps", type=int, nargs=2, metavar=("SHORT", "LONG"))
    parser.add_argument("--transports", nargs="+", default=["mpi"])
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    args = [a for a in opts.args if a != "--"]
    if opts.check == "per-step" and (not opts.steps or len(opts.np) != 1):
        fail("per-step needs --steps SHORT LONG and one --np")
    with tempfile.TemporaryDirectory() as tmp:
        (per_step if opts.check == "per-step" else setup)(opts, args, tmp)


if __name__ == "__main__":
    main()
