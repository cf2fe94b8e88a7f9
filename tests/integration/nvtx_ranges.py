"""Runs gpurelay on the CPU path with the NVTX recorder injected and checks the ranges it emits:
every phase of every timed step, named by its phase with the step as the int64 payload,
properly nested per thread, steps in order, warm-up steps in the category named "warm-up",
one colour per phase, and each phase on the thread of the stream that runs it.

usage: nvtx_ranges.py --binary B --recorder LIB --mpirun "mpirun ..." --transport ipc|mpi
                      [-- EXTRA_GPURELAY_ARGS...]
"""
import argparse
import collections
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

STEPS, WARMUP = 6, 2
# Phase -> the stream (thread name suffix) whose worker thread opens its range; the receive's is
# the comm stream, or the compute stream for a receive that only waits after C (ipc).
PHASE_STREAM = {
    "A": "producer stream",
    "send": "producer stream",
    "recv": "comm stream",
    "C": "compute stream",
    "wait": "compute stream",
    "B": "compute stream",
    "verify": "compute stream",
    "write": "io stream",
}
WARMUP_CATEGORY = "1"


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def read_log(path):
    """Returns (ranges, names, categories): ranges as (tid, domain, colour, category, payload,
    message) in push order; categories as {(domain, id): name}."""
    stacks = collections.defaultdict(list)
    ranges, names, categories = [], {}, {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            where = f"{os.path.basename(path)}:{number}"
            parts = line.rstrip("\n").split(" ", 6)
            tid, kind = parts[0], parts[1]
            if kind == "name":
                names[parts[2]] = line.rstrip("\n").split(" ", 3)[3]
            elif kind == "category":
                domain, number, name = line.rstrip("\n").split(" ", 4)[2:]
                categories[(domain, number)] = name
            elif kind == "push":
                domain, colour, category, payload, message = parts[2:7]
                stacks[tid].append((domain, message))
                ranges.append((tid, domain, colour, category, payload, message))
            elif kind == "pop":
                if not stacks[tid]:
                    fail(f"{where}: pop with no open range on thread {tid}")
                domain, message = stacks[tid].pop()
                if domain != parts[2]:
                    fail(f"{where}: pop in domain {parts[2]} closes '{message}' of domain {domain}")
            else:
                fail(f"{where}: unexpected line {line!r}")
    for tid, stack in stacks.items():
        if stack:
            fail(f"{os.path.basename(path)}: thread {tid} left ranges open: {stack}")
    return ranges, names, categories


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--recorder", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--transport", choices=("ipc", "mpi"), required=True)
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    if args.transport == "ipc":
        PHASE_STREAM["recv"] = "compute stream"

    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "nvtx")
        command = shlex.split(args.mpirun) + [
            "-np", "2",
            "-x", f"NVTX_INJECTION64_PATH={args.recorder}",
            "-x", f"GPURELAY_NVTX_LOG={log}",
            args.binary, "--device", "cpu", "--steps", str(STEPS), "--warmup", str(WARMUP),
            "--overlap", "on", "--write", "all", "--elements", "3001", "--c-elements", "4096",
            "--c-iterations", "4", "--quiet", "--output", os.path.join(tmp, "out.h5"),
            "--transport", args.transport,
        ] + args.extra
        print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=150)
        if done.returncode != 0:
            print(done.stdout)
            fail(f"gpurelay exited {done.returncode}")

        logs = sorted(glob.glob(log + ".rank*"))
        if len(logs) != 2:
            fail(f"expected one log per rank, found {logs}: was the recorder loaded?")
        # phase -> steps in push order; phase -> colours; (phase, warm-up) seen
        steps = collections.defaultdict(list)
        colours = collections.defaultdict(set)
        thread_names = set()
        passes = 0
        for path in logs:
            ranges, names, categories = read_log(path)
            if categories.get(("gpurelay", WARMUP_CATEGORY)) != "warm-up":
                fail(f"{path}: category {WARMUP_CATEGORY} not named 'warm-up': {categories}")
            thread_names.update(names.values())
            rank = re.search(r"\.rank(\d+)\.", path).group(1)
            if f"rank {rank} main" not in names.values():
                fail(f"{path}: main thread not named 'rank {rank} main' (names: {names})")
            for tid, domain, colour, category, payload, message in ranges:
                if domain != "gpurelay":
                    continue
                if message == "pass overlap=on":
                    if not names.get(tid, "").endswith(" main"):
                        fail(f"{path}: '{message}' not on the main thread")
                    passes += 1
                    continue
                phase = message
                if phase not in PHASE_STREAM:
                    fail(f"{path}: range '{message}' is not named by a phase")
                if not payload.isdigit():
                    fail(f"{path}: range '{message}' has no int64 step payload ({payload})")
                step, warmup = int(payload), category == WARMUP_CATEGORY
                if category not in ("0", WARMUP_CATEGORY):
                    fail(f"{path}: range '{message}' in category {category}")
                if warmup != (step < WARMUP):
                    fail(f"{path}: '{message}': warm-up marking wrong for step {step}")
                thread = names.get(tid, f"unnamed thread {tid}")
                if not thread.endswith(": " + PHASE_STREAM[phase]):
                    fail(f"{path}: '{message}' opened on '{thread}', not the {PHASE_STREAM[phase]}")
                steps[(rank, phase)].append(step)
                colours[phase].add(colour)

        for phase in PHASE_STREAM:
            seen = [s for (rank, p), got in steps.items() if p == phase for s in got]
            # Warm-up steps too: with --write all every step has every phase.
            for step in range(STEPS):
                if seen.count(step) != 1:
                    fail(f"phase {phase}: step {step} seen {seen.count(step)} times (all: {seen})")
            if len(colours[phase]) != 1:
                fail(f"phase {phase}: colours {sorted(colours[phase])}, expected one")
        for (rank, phase), got in steps.items():
            if got != sorted(got) or len(set(got)) != len(got):
                fail(f"rank {rank} phase {phase}: steps out of order: {got}")
        if len({next(iter(c)) for c in colours.values()}) != len(PHASE_STREAM):
            fail(f"phases share colours: {dict(colours)}")
        if passes != len(logs):
            fail(f"expected one 'pass overlap=on' range per rank, found {passes}")
        if "rank 1 consumer: comm stream" not in thread_names:
            fail(f"no thread named 'rank 1 consumer: comm stream': {sorted(thread_names)}")
        total = sum(len(v) for v in steps.values())
        print(f"ok: {total} gpurelay ranges in {len(logs)} logs, threads {sorted(thread_names)}")


if __name__ == "__main__":
    main()
