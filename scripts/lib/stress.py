"""Runs gpurelay's fault cases K at once, counting the hung or wrong ends (help/stress.txt)."""
import argparse
import concurrent.futures
import contextlib
import itertools
import os
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import tool
from layout import ROOT

FAULTS = ("stop", "kill", "stuck", "term")
TRANSPORTS = ("ipc", "ipc-sm", "mpi", "staged")
FLUSHES = ("0", "1", "5")
OVERLAPS = ("on", "compare")
PATTERNS = {"pair": 2, "relay": 3}  # ranks a launch has, by pattern
# The deck's device and C: a step of about 15 ms, so a fault lands mid-run (on the GPU C's
# iterations run a million values at once).
DECKS = {"cpu": ["--device", "cpu", "--c-elements", "64Ki", "--c-iterations", "400"],
         "gpu": ["--device", "cuda", "--c-elements", "1Mi", "--c-iterations", "200000"]}
# A stop or kill ends the run, whose steps need only outlast the fault; a SIGTERMed run's
# --resume runs the rest (2 CPU burners make 300 steps take a minute).
STEPS = {"stop": 3000, "kill": 3000, "stuck": 4, "term": 120}
EXPECTED = {"stop": (4,), "stuck": (4,), "kill": tuple(range(1, 256)), "term": (143, 0)}
TIMEOUT_LINE = "did not finish within"


@dataclass
class Case:
    index: int
    fault: str
    transport: str
    flush: str
    overlap: str
    pattern: str

    def name(self):
        return (f"{self.fault} {self.pattern} {self.transport} flush={self.flush} "
                f"overlap={self.overlap}")


@dataclass
class Outcome:
    verdict: str  # "ok", "wrong" or "hung"
    detail: str
    logs: list = field(default_factory=list)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scripts/stress", add_help=False,
        usage="scripts/stress [--runs N] [--jobs K] [--load M] [options]")
    parser.add_argument("-h", "--help", action=tool.Help)

    def choices(allowed):
        def parse(text):
            picked = [c for c in text.split(",") if c]
            if not picked or any(c not in allowed for c in picked):
                raise argparse.ArgumentTypeError(f"pick from {','.join(allowed)}")
            return picked
        return parse

    def positive(kind):
        def parse(text):
            if kind(text) <= 0:
                raise argparse.ArgumentTypeError("must be > 0")
            return kind(text)
        return parse

    parser.add_argument("--runs", type=positive(int), default=40)
    parser.add_argument("--jobs", type=positive(int), default=2)
    parser.add_argument("--load", type=int, default=0)
    for flag, allowed in (("--faults", FAULTS), ("--transports", TRANSPORTS), ("--flush", FLUSHES),
                          ("--overlap", OVERLAPS), ("--patterns", tuple(PATTERNS))):
        parser.add_argument(flag, type=choices(allowed), default=list(allowed))
    parser.add_argument("--device", choices=tuple(DECKS), default="cpu")
    # --term-timeout-s, a SIGTERMed launch's timeout_s: no rank stops, so a wait only outlasts a
    # peer starved of a core (3 s did not 4 times in 48: 3-stage relays, 2 burners, 2 cores).
    for flag, seconds in (("--timeout-s", 3.0), ("--grace", 30.0), ("--start-bound", 90.0),
                          ("--resume-bound", 180.0), ("--term-timeout-s", 30.0)):
        parser.add_argument(flag, type=positive(float), default=seconds)
    parser.add_argument("--spread", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=None)
    built = [os.path.join(ROOT, build, "app", "gpurelay") for build in ("build-cpu", "build")]
    parser.add_argument("--binary", default=next((p for p in built if os.path.exists(p)), built[0]))
    parser.add_argument("--mpirun", default="mpirun --oversubscribe"
                        + (" --allow-run-as-root" if os.geteuid() == 0 else ""))
    parser.add_argument("--out-dir", default=None)
    if any(arg == "--log-dir" or arg.startswith("--log-dir=") for arg in argv):
        parser.exit(2, "stress: --log-dir is now --out-dir DIR (a folder)\n")
    opts = parser.parse_args(argv)
    if opts.load < 0:
        parser.error("--load must be >= 0")
    if not os.access(opts.binary, os.X_OK):
        parser.error(f"no gpurelay at {opts.binary} (scripts/build --preset cpu)")
    opts.binary = os.path.abspath(opts.binary)
    opts.seed = int(time.time()) if opts.seed is None else opts.seed
    opts.made_out_dir = opts.out_dir is None
    opts.out_dir = opts.out_dir or tempfile.mkdtemp(prefix="gpurelay-stress-")
    os.makedirs(opts.out_dir, exist_ok=True)
    return opts


def cases(opts):
    combos = list(itertools.product(opts.faults, opts.transports, opts.flush, opts.overlap,
                                    opts.patterns))
    random.Random(opts.seed).shuffle(combos)
    return [Case(i, *combos[i % len(combos)]) for i in range(opts.runs)]


def case_timeout(case, opts):
    """gpurelay's timeout_s for the case: short where a rank stops or a step sticks."""
    return opts.term_timeout_s if case.fault == "term" else opts.timeout_s


def gpurelay_args(case, opts, output):
    """The deck (DECKS), C endless if stuck."""
    deck = DECKS[opts.device][:-1] + ["4000000000" if case.fault == "stuck"
                                      else DECKS[opts.device][-1]]
    args = deck + ["--elements", "20000", "--steps", str(STEPS[case.fault]), "--warmup", "2",
                   "--write", "all", "--quiet", "--flush-every", case.flush,
                   "--overlap", case.overlap, "--timeout-s", str(case_timeout(case, opts)),
                   "--output", output,
                   "--transport", "ipc" if case.transport.startswith("ipc") else "mpi",
                   "--pattern", "relay" if case.pattern == "relay" else "pairs"]
    if case.transport == "ipc-sm":
        args += ["--ipc-engine", "sm"]
    if case.transport == "staged":
        args += ["--staging", "on", "--chunk", "16Ki"]  # 5 pieces a tensor
    return args


def proc_read(pid, name, mode="r"):
    """/proc/PID/NAME, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/{name}", mode) as f:
            return f.read()
    except OSError:
        return None


def rank_pids(binary, output):
    """The gpurelay processes of one launch (not mpirun): argv[0] the binary, the output in argv."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        argv = (proc_read(entry, "cmdline", "rb") or b"").split(b"\0")
        if argv[0].decode(errors="replace") == binary and output.encode() in argv:
            pids.append(int(entry))
    return sorted(pids)


def rank_of(pid):
    for item in (proc_read(pid, "environ", "rb") or b"").split(b"\0"):
        if item.startswith(b"OMPI_COMM_WORLD_RANK="):
            return item.split(b"=", 1)[1].decode()
    return "?"


class Launch:
    """One mpirun in its own session, with its output in files (a pipe could fill and block it)."""

    def __init__(self, opts, args, folder, label, ranks):
        self.opts, self.folder, self.label = opts, folder, label
        self.output = args[args.index("--output") + 1]
        command = shlex.split(opts.mpirun) + ["-np", str(ranks), opts.binary] + args
        self.out_path = os.path.join(folder, label + ".out")
        self.err_path = os.path.join(folder, label + ".err")
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            out.write("+ " + shlex.join(command) + "\n")
            out.flush()
            self.proc = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
        self.fault_at = time.monotonic()

    def wait_for(self, path, until):
        """True once `path` exists; False if the launch ended first or `until` passed."""
        while not os.path.exists(path):
            if self.proc.poll() is not None or time.monotonic() > until:
                return False
            time.sleep(0.02)
        return True

    def wait(self, until):
        """The exit code, or None if the launch is still running at `until`."""
        try:
            return self.proc.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def dump_and_kill(self, name):
        """Stacks of every rank into out_dir/name.stacks, then the whole launch killed."""
        stacks = os.path.join(self.opts.out_dir, name + ".stacks")
        with open(stacks, "w") as out:
            for pid in rank_pids(self.opts.binary, self.output):
                state = (proc_read(pid, "stat") or ")gone").rsplit(")", 1)[1].split()[0]
                out.write(f"=== rank {rank_of(pid)} pid {pid} state {state}\n")
                out.flush()
                try:
                    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex",
                                    "thread apply all bt"], stdout=out, stderr=subprocess.STDOUT,
                                   timeout=60)
                except (subprocess.TimeoutExpired, OSError) as e:
                    out.write(f"gdb: {e}\n")
        self.kill()
        return stacks

    def kill(self):
        for pid in rank_pids(self.opts.binary, self.output):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def keep_logs(opts, case, launch, detail):
    """Copies a failed launch's output beside its stacks; returns the paths kept."""
    kept = []
    for path in (launch.out_path, launch.err_path):
        target = os.path.join(opts.out_dir, f"run{case.index:04d}-{os.path.basename(path)}")
        with open(path, errors="replace") as src, open(target, "w") as dst:
            dst.write(f"# {case.name()}: {detail}\n" + src.read())
        kept.append(target)
    return kept


def end_of(launch, opts, case, until, expected, needs_line):
    """Waits for the launch to end by `until`; the outcome against the expected exit codes."""
    code = launch.wait(until)
    if code is None:
        stacks = launch.dump_and_kill(f"run{case.index:04d}-{launch.label}")
        detail = f"{launch.label}: still running {until - launch.fault_at:.0f} s after the fault"
        return Outcome("hung", detail, [stacks] + keep_logs(opts, case, launch, detail))
    launch.kill()  # a SIGSTOPped rank that the launcher left behind
    took = time.monotonic() - launch.fault_at
    detail = f"{launch.label}: exit {code} {took:.1f} s after the fault"
    if code not in expected or (needs_line and TIMEOUT_LINE not in launch.stderr()):
        detail += f" (expected {'/'.join(map(str, expected))}" + (
            f" and a line '{TIMEOUT_LINE}')" if needs_line else ")")
        return Outcome("wrong", detail, keep_logs(opts, case, launch, detail))
    return Outcome("ok", detail)


def fault_moment(case, opts, launch, rng):
    """Waits for the steps, then a random moment, and sends the fault: "sent"; "early" when the
    launch ended or lost a rank before it; "never" when it did not reach its steps in time."""
    if not launch.wait_for(launch.output + ".partial", time.monotonic() + opts.start_bound):
        return "early" if launch.proc.poll() is not None else "never"
    if case.fault != "stuck":
        time.sleep(rng.uniform(0.0, opts.spread))
    pids = rank_pids(opts.binary, launch.output)
    launch.fault_at = time.monotonic()
    if case.fault in ("stop", "kill"):
        if len(pids) < PATTERNS[case.pattern]:
            return "early"
        os.kill(rng.choice(pids), signal.SIGSTOP if case.fault == "stop" else signal.SIGKILL)
    elif case.fault == "term":
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
    return "sent"


def run_case(case, opts):
    rng = random.Random(opts.seed * 100003 + case.index)
    with tempfile.TemporaryDirectory(prefix="stress-") as tmp:
        args = gpurelay_args(case, opts, os.path.join(tmp, "out.h5"))
        launch = Launch(opts, args, tmp, "launch", PATTERNS[case.pattern])
        moment = fault_moment(case, opts, launch, rng)
        if moment == "never":  # a hang in set-up
            return end_of(launch, opts, case, time.monotonic(), (), False)
        bound = launch.fault_at + case_timeout(case, opts) + opts.grace
        if moment == "early":
            # Ended, or ending (a rank already gone), on its own: held to the same bound.
            code = launch.wait(bound)
            if code is None:
                return end_of(launch, opts, case, time.monotonic(), (), False)
            launch.kill()
            ours = [line for line in launch.stderr().splitlines() if line.startswith("gpurelay:")]
            return Outcome("ok", f"ended (exit {code}) before the fault: {(ours or [''])[0]}")
        outcome = end_of(launch, opts, case, bound, EXPECTED[case.fault],
                         case.fault in ("stop", "stuck"))
        if case.fault != "term" or outcome.verdict != "ok" or launch.proc.returncode != 143:
            return outcome
        resumed = Launch(opts, args + ["--resume"], tmp, "resume", PATTERNS[case.pattern])
        # The set-up and the rest of the steps (up to 120 per pass), on a loaded machine.
        return end_of(resumed, opts, case, resumed.fault_at + opts.resume_bound, (0,), False)


def main(argv):
    opts = parse_args(argv)
    print(f"stress: {opts.runs} launches, {opts.jobs} at once, {opts.load} burners, seed "
          f"{opts.seed}, bound timeout_s {opts.timeout_s:g} ({opts.term_timeout_s:g} for term) + "
          f"{opts.grace:g} s; logs in {opts.out_dir}", flush=True)
    counts = {"ok": 0, "wrong": 0, "hung": 0}
    # M processes that keep a core busy each, for the length of the stress.
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(opts.load)]
    try:
        with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
            futures = {pool.submit(run_case, case, opts): case for case in cases(opts)}
            for future in concurrent.futures.as_completed(futures):
                case, outcome = futures[future], future.result()
                counts[outcome.verdict] += 1
                logs = "; " + ", ".join(outcome.logs) if outcome.logs else ""
                print(f"[{sum(counts.values())}/{opts.runs}] {outcome.verdict.upper():5} run "
                      f"{case.index} {case.name()}: {outcome.detail}{logs}", flush=True)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    print(f"stress: ran {opts.runs}, ended in bound with the expected exit code {counts['ok']}, "
          f"wrong {counts['wrong']}, hung {counts['hung']} (seed {opts.seed}; logs in "
          f"{opts.out_dir})", flush=True)
    if opts.made_out_dir and not os.listdir(opts.out_dir):
        os.rmdir(opts.out_dir)  # nothing failed: no folder left behind
    return 0 if counts["ok"] == opts.runs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
