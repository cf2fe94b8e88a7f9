"""The output a run writes, as the report's header names it: a run that names no output writes a
file of its own, one that names its output is refused over the last result, --resume without an
output continues the stop, and the header's size holds the file.

usage: output_case.py --binary B --mpirun "mpirun ..." --case NAME

Each case runs in a folder of its own as the working directory, with the outputs/ folder that
a clone has, and checks exit codes, the files left there (read back with h5py) and stderr.
  twice           the same command twice: both exit 0, two files named
                  outputs/gpurelay-YYYYMMDD-HHMMSS[-N].h5 in the report's header, the first
                  untouched by the second; in a Slurm job (SLURM_JOB_ID) the name carries -jobJ
  named_kept      --output named: the second run exits 2 with one line, the file untouched;
                  --overwrite replaces it
  same_second     the names of the next seconds already taken: the run takes the first free
                  count (-2) and leaves the others untouched
  resume_own      two jobs of other decks stopped by SIGUSR1 to the ranks (exit 138): each one's
                  --resume without an output continues its own .partial, a deck of neither is
                  refused listing both with the keys that differ, and the file resumed twice
                  (the second time by the stop line's command) lists its launches
  size            the header's "up to" figure against the complete file's size, for one size
                  and for several: at least the file, at most 1 MiB (its room for metadata) more
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch import fail, finish, with_keys  # noqa: E402
from needs import need_modules  # noqa: E402

need_modules("h5py")

import h5py  # noqa: E402

SMALL = ["--device", "cpu", "--elements", "3001", "--c-elements", "4096", "--c-iterations", "16",
         "--steps", "6", "--warmup", "1", "--write", "all", "--overlap", "on"]
# Steps of the runs that are stopped and resumed (C made 0.2 ms a step): a second or two on the
# CPU path, so the stop, within 256 steps of the signal, finds them in their steps.
RESUMED_STEPS = 5000
NAME = re.compile(r"^outputs/gpurelay-\d{8}-\d{6}(-job\d+)?(-\d+)?\.h5$")
HEADER = re.compile(r"^output: (\S+) \(up to [0-9.]+ [KMG]?i?B\)$", re.M)


class Launcher:
    def __init__(self, opts, work):
        self.mpirun = shlex.split(opts.mpirun)
        self.binary = os.path.abspath(opts.binary)
        self.work = work

    def start(self, args, env=None, binary=None):
        command = self.mpirun + ["-np", "2", binary or self.binary] + args
        print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
        return subprocess.Popen(command, cwd=self.work, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)

    def run(self, args, env=None, timeout=120):
        return finish(self.start(args, env), timeout)

    def outputs(self):
        return sorted(os.listdir(os.path.join(self.work, "outputs")))


def named_in_header(out):
    """The output the report's header names, checked against the default pattern."""
    names = HEADER.findall(out)
    if len(names) != 1 or not NAME.match(names[0]):
        fail(f"the header names {names}, not one outputs/gpurelay-YYYYMMDD-HHMMSS.h5")
    return names[0]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_complete(path):
    with h5py.File(path, "r") as f:
        if int(f.attrs["complete"]) != 1 or not bool(f.attrs["verified"]):
            fail(f"{path}: complete {f.attrs['complete']}, verified {f.attrs['verified']}")


def case_twice(launcher):
    names = []
    for attempt in (1, 2):
        code, out, _ = launcher.run(SMALL)
        if code != 0:
            fail(f"run {attempt} of the same command exited {code}")
        names.append(named_in_header(out))
        if attempt == 1:
            first = digest(os.path.join(launcher.work, names[0]))
    if names[0] == names[1]:
        fail(f"both runs named {names[0]}")
    if digest(os.path.join(launcher.work, names[0])) != first:
        fail(f"the second run changed the first's {names[0]}")
    for name in names:
        check_complete(os.path.join(launcher.work, name))
    if launcher.outputs() != sorted(os.path.basename(n) for n in names):
        fail(f"outputs/ holds {launcher.outputs()}, not the two files alone")
    # A Slurm job's id in the name: the file and the job's log find each other.
    code, out, _ = launcher.run(SMALL, env=dict(os.environ, SLURM_JOB_ID="4242"))
    if code != 0 or "-job4242" not in named_in_header(out):
        fail(f"in a Slurm job (exit {code}) the name does not carry -job4242")


def case_named_kept(launcher):
    output = os.path.join(launcher.work, "named.h5")
    code, _, _ = launcher.run(SMALL + ["--output", output])
    if code != 0:
        fail(f"the first run exited {code}")
    before = digest(output)
    code, _, err = launcher.run(SMALL + ["--output", output])
    lines = [line for line in err.splitlines() if line.startswith("gpurelay:")]
    if code != 2 or len(lines) != 1 or "exists (use --overwrite" not in lines[0]:
        fail(f"the second run exited {code} with {lines}, not 2 and one line 'exists (use "
             "--overwrite ...'")
    if digest(output) != before:
        fail("the refused run changed the named output")
    code, _, _ = launcher.run(SMALL + ["--output", output, "--overwrite"])
    if code != 0 or digest(output) == before:
        fail(f"--overwrite exited {code} and did not replace the file")


def case_same_second(launcher):
    # The names of this second and the next 20 without a count are taken (a file and a
    # .partial), so the run starts inside that window with its own second's taken.
    now = datetime.datetime.now()
    taken = {}
    for ahead in range(21):
        stamp = (now + datetime.timedelta(seconds=ahead)).strftime("%Y%m%d-%H%M%S")
        for suffix in (".h5", "-2.h5.partial"):
            path = os.path.join(launcher.work, "outputs", f"gpurelay-{stamp}{suffix}")
            with open(path, "w") as f:
                f.write(f"taken {stamp}{suffix}")
            taken[path] = f"taken {stamp}{suffix}"
    code, out, _ = launcher.run(SMALL)
    name = named_in_header(out)
    if code != 0 or not name.endswith("-3.h5"):
        fail(f"exit {code}, named {name}: not the first free name (-3) of its second")
    for path, text in taken.items():
        if open(path).read() != text:
            fail(f"the run changed {path}")
    check_complete(os.path.join(launcher.work, name))


def stopped(launcher, command):
    """Runs `command` (the binary and its flags) and stops it with SIGUSR1 to its ranks, as
    scancel --signal=USR1 sends it, once the header names its output (the handlers are in place,
    its steps next): what a launcher does with the signal is fault_mpirun_sigusr1's test, and some
    mpirun keep SIGUSR1 to themselves. Returns the output the stop line names, the step it stopped
    after, and the command the line gives to finish it."""
    proc = launcher.start(command[1:], binary=command[0])
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while not any(line.startswith("output: ") for line in list(lines)):
        if time.monotonic() > deadline or proc.poll() is not None:
            fail("the run printed no header within 60 s, or ended")
        time.sleep(0.02)
    # The ranks are mpirun's children on one node.
    ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                           text=True).stdout.split()
    if not ranks:
        fail(f"no ranks under the launcher (pid {proc.pid}) to signal")
    for rank in ranks:
        os.kill(int(rank), signal.SIGUSR1)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the stopped run did not end within 60 s")
    reader.join()
    err = proc.stderr.read()
    print("".join(lines) + err)
    stops = re.findall(rf"^gpurelay: stopped by SIGUSR1 after step (\d+) of {RESUMED_STEPS} .* are in "
                       r"(outputs/gpurelay-\S+\.h5)\.partial .* same launcher: (.*)$", err, re.M)
    if proc.returncode != 138 or len(stops) != 1:
        fail(f"the stop exited {proc.returncode} with {err!r}, not 138 and the stop's line")
    step, output, finish_command = stops[0]
    if shlex.split(finish_command)[-3:] != ["--output", output, "--resume"]:
        fail(f"the stop line's command {finish_command!r} does not end in --output {output} --resume")
    return output, int(step), shlex.split(finish_command)


def attributes(launcher, output):
    with h5py.File(os.path.join(launcher.work, output), "r") as f:
        return {k: f.attrs[k] for k in ("tag", "depth", "transport", "git_hash", "launches")}


def case_resume_own(launcher):
    """Two jobs of other decks stopped without --output: each one's --resume continues its own
    .partial (the other is newer for one of them), a deck that matches neither is refused with
    both listed, and the file resumed twice keeps all three launches. (A changed key with
    --output, and the refusal's every word: tests/io/resume_test.cpp.)"""
    base = [launcher.binary] + with_keys(SMALL, "--steps", str(RESUMED_STEPS), "--write", "last",
                                         "--c-iterations", "50")
    jobs = {"jobX": ["--depth", "2", "--transport", "mpi"],
            "jobY": ["--depth", "3", "--transport", "ipc"]}
    own = {tag: base + keys + ["--tag", tag] for tag, keys in jobs.items()}
    x_output, x_step, _ = stopped(launcher, own["jobX"])
    y_output, _, _ = stopped(launcher, own["jobY"])
    partials = {name: digest(os.path.join(launcher.work, "outputs", name))
                for name in launcher.outputs()}

    code, _, err = launcher.run(base[1:] + ["--depth", "4", "--transport", "mpi", "--tag", "jobX",
                                            "--resume"])
    for output, differs in ((x_output, "depth 2 (this run: 4)"),
                            (y_output, 'transport "ipc" (this run: "mpi")')):
        if code != 2 or not re.search(rf"^  {output}\.partial: tag .*; differs: .*{re.escape(differs)}"
                                      rf".*; continued by: .* --output {output} --resume$", err, re.M):
            fail(f"a deck of neither exited {code}, without {output} listed with {differs!r} and "
                 "its command")
    if {n: digest(os.path.join(launcher.work, "outputs", n)) for n in launcher.outputs()} != partials:
        fail("the refused resume changed the outputs")

    # jobX's own command: its own file, though jobY's is newer; stopped again.
    resumed, x_again, finish_x = stopped(launcher, own["jobX"] + ["--resume"])
    if resumed != x_output or x_again <= x_step:
        fail(f"jobX's --resume continued {resumed} after step {x_again}, not {x_output} on from "
             f"{x_step}")
    code, out, _ = launcher.run(own["jobY"][1:] + ["--resume"], timeout=300)
    if code != 0 or named_in_header(out) != y_output:
        fail(f"jobY's --resume exited {code}, continuing {HEADER.findall(out)}, not {y_output}")
    code, _, _ = launcher.run(finish_x[1:], timeout=300)  # the stop line's command, as printed
    if code != 0:
        fail(f"the stop line's command exited {code}")
    for output, tag in ((x_output, "jobX"), (y_output, "jobY")):
        check_complete(os.path.join(launcher.work, output))
        attrs = attributes(launcher, output)
        if (attrs["tag"], str(attrs["depth"]), attrs["transport"]) != (tag, jobs[tag][1],
                                                                      jobs[tag][3]):
            fail(f"{output}: tag {attrs['tag']}, depth {attrs['depth']}, transport "
                 f"{attrs['transport']}: not {tag}'s")
    x_attrs = attributes(launcher, x_output)
    launches = json.loads(x_attrs["launches"])
    spans = [(launch["from_step"], launch["end_step"], launch["ended"]) for launch in launches]
    if spans != [(0, x_step, "SIGUSR1"), (x_step, x_again, "SIGUSR1"), (x_again, RESUMED_STEPS,
                                                                       "complete")]:
        fail(f"{x_output}'s launches are {spans}, not its three from 0, {x_step} and {x_again}")
    if any(not launch["started_utc"] or launch["git_hash"] != x_attrs["git_hash"]
           for launch in launches):
        fail(f"a launch of {x_output} without its start or git hash: {launches}")


def header_bytes(out):
    """The header's size of the output, in bytes (report/text_report.cpp's human_bytes)."""
    found = re.findall(r"^output: \S+ \(up to ([0-9.]+) (B|KiB|MiB|GiB)\)$", out, re.M)
    if len(found) != 1:
        fail(f"no one 'output: PATH (up to SIZE)' line in the header: {found}")
    value, unit = found[0]
    return float(value) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]


def case_size(launcher):
    # Each size's datasets, and 1 MiB of room for metadata per size.
    for name, sizes, args in (
            ("one size", 1, ["--elements", "256Ki", "--steps", "40", "--overlap", "compare"]),
            ("several sizes", 3, ["--elements", "4Ki,64Ki,256Ki", "--steps", "12", "--write",
                                  "every:2"])):
        output = os.path.join(launcher.work, "sized.h5")
        code, out, _ = launcher.run(with_keys(SMALL, *args) + ["--output", output, "--overwrite"])
        if code != 0:
            fail(f"{name}: exit {code}")
        said, actual = header_bytes(out), os.path.getsize(output)
        # The header rounds to 0.01 of its unit.
        print(f"{name}: the header says up to {said:.0f} bytes, the file has {actual}")
        if not actual <= said * 1.0001 or said - actual > sizes * (1 << 20) * 1.01:
            fail(f"{name}: the header's {said:.0f} bytes against the file's {actual}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--case", required=True,
                        choices=["twice", "named_kept", "same_second", "resume_own", "size"])
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        os.mkdir(os.path.join(work, "outputs"))
        globals()["case_" + opts.case](Launcher(opts, work))
    print(f"PASS: {opts.case}")


if __name__ == "__main__":
    main()
