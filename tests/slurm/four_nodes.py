"""16 ranks over the test cluster's 4 nodes, under scripts/slurm/time-limit.sbatch with srun:

- pairs with pairing = "split", Slurm's block distribution (ranks 0-3 on node1, ...): rank k
  pairs with k + 8, so every pair crosses two nodes;
- a relay of 16 stages, distributed cyclically (rank k on node k mod 4): every hop crosses two
  nodes.

transport = "auto" must pick MPI (pairs across nodes rule out ipc). Each job is stopped the way
the time limit stops it, at once (`scancel --batch --signal=TERM`, as slurm.stop_resume does)
once its first rows are in its .partial; it must end by the signal (exit 143) with every rank's
last step the one before stopped_at_step, and a second job with --resume must complete the file,
every element of /y by OUTPUT.md's formula, on node[1-4].

usage: four_nodes.py --binary B --root REPO_ROOT       (SLURM_CONF set; run by ctest)
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from time_limit import (check_stopped, fail, read_y, stop_when_stepping,  # noqa: E402
                        submit_folder)
from interrupt_case import check_ranks_stopped_together, check_y_by_formula  # noqa: E402

import h5py  # noqa: E402

STEPS = 400
RANKS = 16
# 4 nodes of 4 tasks; the template's 4 cores a task fill a node's 16 CPUs.
LAYOUT = ["--time=10", "--nodes=4", "--ntasks-per-node=4"]
CASES = {
    "pairs_split": (LAYOUT, ["--pairing", "split"]),
    "relay_cyclic": (LAYOUT + ["--distribution=cyclic"], ["--pattern", "relay"]),
}


def flags(name):
    return ["--device", "cpu", "--elements", "4096", "--c-elements", "4096", "--c-iterations",
            "16", "--steps", str(STEPS), "--warmup", "2", "--overlap", "on", "--write", "all",
            "--flush-every", "5", "--quiet", "--output", f"outputs/{name}.h5",
            "--summary-json", f"outputs/{name}.json"] + CASES[name][1]


def check_resumed(cluster, work, name, job):
    if cluster.field(job, "JobState") != "COMPLETED":
        print(cluster.log(job))
        fail(f"{name}: the --resume job {job} ended {cluster.field(job, 'JobState')}")
    nodes = cluster.field(job, "NodeList")
    if nodes != "node[1-4]":
        fail(f"{name}: job {job} ran on {nodes}, not node[1-4]")
    summary = json.load(open(os.path.join(work, "outputs", f"{name}.json")))
    if not summary["transport"].startswith("mpi") or summary["world_size"] != RANKS:
        fail(f"{name}: transport {summary['transport']!r} over {summary['world_size']} ranks, "
             f"expected MPI (auto, across nodes) over {RANKS}")
    path = os.path.join(work, "outputs", f"{name}.h5")
    read_y(path)  # complete and verified
    with h5py.File(path, "r") as f:
        elements = check_y_by_formula(f)
    print(f"{name}: resumed by job {job} on {nodes} over {summary['transport']}; every element "
          f"of /y by the formula ({elements})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--root", required=True)
    opts = parser.parse_args()
    with submit_folder(opts.binary, opts.root) as (cluster, work):
        # One job at a time: 16 ranks each on a 2-core machine.
        for name, (sbatch_args, _) in CASES.items():
            job = cluster.submit(sbatch_args, flags(name))
            stop_when_stepping(cluster, work, name, job, 240)
            cluster.wait([job], 180)
            output = os.path.join(work, "outputs", f"{name}.h5")
            check_stopped(cluster, job, output, STEPS, f"{name}, scancel --batch", "SIGUSR1")
            with h5py.File(output + ".partial", "r") as f:
                check_ranks_stopped_together(f, int(f.attrs["stopped_at_step"]))
            resumed = cluster.submit(sbatch_args, flags(name) + ["--resume"])
            cluster.wait([resumed], 600)
            check_resumed(cluster, work, name, resumed)
    print("PASS: four_nodes")


if __name__ == "__main__":
    main()
