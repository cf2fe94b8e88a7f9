"""Runs gpurelay over a Cartesian grid of deck keys, skipping the points done (help/sweep.txt)."""

import argparse
import csv
import difflib
import hashlib
import itertools
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

import layout
import tool
from results import read_csv, size_text
from tool import UsageError, counted, run

# Deck keys a sweep may vary. The others are set by the sweep itself (output, overwrite, quiet,
# results_csv, tag) or name a per-run file (summary_json) that every point would overwrite.
SWEEPABLE_KEYS = [
    "device", "transport", "elements", "dtype", "steps", "warmup", "depth", "overlap",
    "blocking", "graphs", "c_elements", "c_iterations", "alpha", "seed", "pairing", "chunk",
    "staging", "write", "flush_every", "timeout_s", "pattern", "group_size",
]
RESERVED_KEYS = ["output", "overwrite", "quiet", "results_csv", "tag", "summary_json"]
NP_KEY = "np"  # the ranks: to the launcher and the tag, never to gpurelay
REPEAT_KEY = "repeat"  # --repeat's number: in the tag and file name, and gpurelay's key repeat
ELEMENTS_KEY = "elements"  # one launch runs every size of a combination
NO_KEYS_TAG = "sweep"  # the rows' tag where elements alone is swept: no key names them
# Values go into a space-separated tag and a command line: keep them to plain tokens.
VALUE_PATTERN = re.compile(r"^[A-Za-z0-9_.:+\-]+$")
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")


def parse_axis(text, allow_any_key):
    """KEY=V1,V2,... -> (key, [values]); the key with '-' spelled as '_'."""
    if "=" not in text:
        raise UsageError(f"'{text}': expected KEY=V1,V2,... (e.g. elements=1Mi,16Mi)")
    key, _, values_text = text.partition("=")
    key = key.strip().replace("-", "_")
    if not KEY_PATTERN.match(key):
        raise UsageError(f"'{text}': '{key}' is not a key name (lower case, digits, _)")
    if key == REPEAT_KEY:
        raise UsageError(f"'{text}': repeats are not an axis; use --repeat N")
    if key in RESERVED_KEYS:
        raise UsageError(f"'{text}': {key} is set by the sweep itself and cannot be swept")
    if key not in SWEEPABLE_KEYS and key != NP_KEY and not allow_any_key:
        close = difflib.get_close_matches(key, SWEEPABLE_KEYS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(f"'{text}': unknown key {key}{hint}; sweepable keys: "
                         f"{' '.join(SWEEPABLE_KEYS)}, and np (--any-key allows others)")
    if values_text == "":
        raise UsageError(f"'{text}': no values after '=' for {key}")
    values = values_text.split(",")
    for value in values:
        if value == "":
            raise UsageError(f"'{text}': empty value in the list for {key}")
        if not VALUE_PATTERN.match(value):
            raise UsageError(f"'{text}': value '{value}' for {key} may only hold letters, "
                             "digits and _ . : + -")
    if key == NP_KEY and not all(re.fullmatch(r"[1-9][0-9]*", v) for v in values):
        raise UsageError(f"'{text}': np takes positive integers (ranks)")
    duplicates = sorted({v for v in values if values.count(v) > 1})
    if duplicates:
        raise UsageError(f"'{text}': {key} lists {', '.join(duplicates)} more than once")
    return key, values


def binary_sizes(binary, spec, source):
    """The counts gpurelay --print-sizes reads `spec` as (the grammar is the binary's alone)."""
    try:
        asked = subprocess.run([binary, "--print-sizes", spec], capture_output=True, text=True,
                               timeout=120, check=False)
    except OSError as err:
        raise UsageError(f"{source}: cannot ask {binary} for the sizes of '{spec}' "
                         f"({err.strerror}); build it (scripts/build) or pass --binary")
    except subprocess.TimeoutExpired:
        raise UsageError(f"{source}: {binary} --print-sizes {spec} did not answer in 120 s")
    said = [line for line in asked.stderr.splitlines() if line.startswith("gpurelay: ")]
    if asked.returncode != 0:
        reason = (said[0].removeprefix("gpurelay: ").removeprefix("--print-sizes: ") if said
                  else f"exit {asked.returncode}")
        raise UsageError(f"{source}: {reason}")
    return [int(line) for line in asked.stdout.split()]


def sizes_of(values, source, binary):
    """Sizes and ranges as written -> [(text, count)] in order (a range's as size_text writes
    them); after several questions the binary is asked for all, to refuse repeats and excess."""
    values = [value.strip() for value in values]
    sizes_alone = [value for value in values if ":" not in value]
    counts = dict(zip(sizes_alone, binary_sizes(binary, ",".join(sizes_alone), source)
                      if sizes_alone else []))
    sizes = []
    for value in values:
        if value in counts:
            sizes.append((value, counts[value]))
        else:
            sizes += [(size_text(count), count) for count in binary_sizes(binary, value, source)]
    if len(values) > len(sizes_alone) and len(values) > 1:
        binary_sizes(binary, ",".join(str(count) for _, count in sizes), source)
    return sizes


def deck_sizes(deck, binary):
    """The deck's sizes [(text, count)]; None when it sets none or Python < 3.11 has no tomllib."""
    if not deck:
        return None
    try:
        import tomllib
    except ImportError:
        return None
    with open(deck, "rb") as f:
        try:
            value = tomllib.load(f).get(ELEMENTS_KEY)
        except tomllib.TOMLDecodeError as err:
            raise UsageError(f"deck {deck}: {err}")
    if isinstance(value, int) and not isinstance(value, bool):
        return [(str(value), value)]
    if isinstance(value, str):
        counts = binary_sizes(binary, value, f"the elements of {deck}")
        if ":" in value:
            return [(size_text(count), count) for count in counts]
        return list(zip((text.strip() for text in value.split(",")), counts))
    return None


def tag_of(point):
    return " ".join(f"{key}={value}" for key, value in point)


def combination_tag(combination):
    """The tag of every row of a combination's launches (elements is the row's own column)."""
    return tag_of(combination) or NO_KEYS_TAG


class Grid:
    """The sweep's points: each combination of the keys other than elements, with each size."""

    def __init__(self, axes, deck, binary, repeats=1):
        self.keys = [key for key, _ in axes]
        self.swept = ELEMENTS_KEY in self.keys
        self.sizes = (sizes_of(dict(axes)[ELEMENTS_KEY], ELEMENTS_KEY, binary) if self.swept
                      else deck_sizes(deck, binary))
        others = [(key, values) for key, values in axes if key != ELEMENTS_KEY]
        # The Cartesian product, first key outermost; repeats outermost of all (grid, then again).
        grid = [list(zip([key for key, _ in others], combination))
                for combination in itertools.product(*(values for _, values in others))]
        self.combinations = grid if repeats == 1 else [
            combination + [(REPEAT_KEY, str(k))] for k in range(repeats) for combination in grid]

    def points(self):
        """[(combination, size (text, count) or None: the deck's, unknown here)] in order."""
        return [(combination, size) for combination in self.combinations
                for size in (self.sizes or [None])]

    def with_elements(self, combination, value):
        """The combination with elements=value in its place among the keys (last if unswept)."""
        at = self.keys.index(ELEMENTS_KEY) if self.swept else len(combination)
        return combination[:at] + [(ELEMENTS_KEY, value)] + combination[at:]

    def label(self, point):
        """A point's name: its combination, with its size where elements is swept or has several."""
        combination, size = point
        if size is None or (not self.swept and len(self.sizes) == 1):
            return tag_of(combination)
        return tag_of(self.with_elements(combination, size[0]))

    def launch_keys(self, combination, sizes, separator=","):
        """The (key, value) list a launch of these sizes sets: elements if swept or partly done."""
        if sizes is None or (not self.swept and len(sizes) == len(self.sizes)):
            return combination
        return self.with_elements(combination, separator.join(text for text, _ in sizes))


class Launch:
    """One run of gpurelay: a combination with the sizes of it still to run."""

    def __init__(self, grid, combination, points):
        self.combination = combination
        self.points = points
        self.sizes = None if points[0][1] is None else [size for _, size in points]
        self.tag = combination_tag(combination)
        self.keys = grid.launch_keys(combination, self.sizes)
        self.name_keys = grid.launch_keys(combination, self.sizes, separator="_")
        # The values it tries, for run_here's next launch after a failure (not a repeat's).
        self.values = [(k, v) for k, v in combination if k != REPEAT_KEY] + [
            (ELEMENTS_KEY, text) for text, _ in (self.sizes if grid.swept else [])]


READABLE_NAME_MAX = 160  # of the 255 bytes a name may have: room for a hash and side files


def output_name(tag):
    """Its HDF5 file, "np=2,elements=1Ki_4Ki.h5"; one too long keeps what fits, plus a hash."""
    name = tag.replace(" ", ",")
    if len(name) <= READABLE_NAME_MAX:
        return name + ".h5"
    digest = hashlib.sha1(tag.encode("utf-8")).hexdigest()[:12]
    return f"{name[:READABLE_NAME_MAX - 13]}-{digest}.h5"


def launch_args(launch, args):
    argv = ["--input", args.deck] if args.deck else []
    # --key=value rather than "--key value": a boolean flag takes its value only in this form,
    # and a value that starts with '-' (alpha=-1) cannot be mistaken for a flag.
    argv += [f"--{key.replace('_', '-')}={value}" for key, value in launch.keys
             if key != NP_KEY]
    output = os.path.join(args.out_dir, output_name(tag_of(launch.name_keys)))
    argv += ["--results-csv", args.csv, "--tag", launch.tag, "--output", output]
    if args.summary_json:
        argv += ["--summary-json", output[:-len(".h5")] + ".json"]
    return argv + ["--overwrite", "--quiet"]


class Records:
    """By (tag, size) and by tag: rows' verified values, or queued tasks' "JOB_TASK (STATE)"."""

    def __init__(self):
        self.by_size, self.by_tag = {}, {}
        self.whole_tag = {}  # entries for every size of their tag (no elements recorded)

    def add(self, tag, count, value):
        if count is None:
            self.whole_tag[tag] = value
        else:
            self.by_size[(tag, count)] = value
        self.by_tag[tag] = value

    def find(self, grid, point):
        """The value recorded for a point of the grid (by its tags and count), or None."""
        count = point[1][1] if point[1] else None
        # Its combination's tag, or its label, as sweeps that ran a launch per size gave it.
        for tag in (combination_tag(point[0]), grid.label(point)):
            if count is not None and (tag, count) in self.by_size:
                return self.by_size[(tag, count)]
            if tag in self.whole_tag:
                return self.whole_tag[tag]
            if count is None and tag in self.by_tag:
                return self.by_tag[tag]
        return None


def count_of(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def read_done(csv_path):
    """The results CSV's rows by (tag, elements) -> their 'verified' value ('' when absent)."""
    done = Records()
    if not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0:
        return done
    fieldnames, rows = read_csv(csv_path)
    if fieldnames is None or "tag" not in fieldnames:
        raise UsageError(f"{csv_path}: no 'tag' column in the header; is it a gpurelay "
                         "results CSV?")
    for row in rows:
        done.add(row["tag"], count_of(row.get(ELEMENTS_KEY)), row.get("verified") or "")
    return done


def point_np(combination, default):
    return int(dict(combination).get(NP_KEY, default))


def launcher_for(combination, args):
    np = point_np(combination, args.np)
    if args.launcher:
        return shlex.split(args.launcher.replace("{np}", str(np)))
    return layout.mpirun(np)


# Array tasks submitted by --slurm, for a later run to ask squeue which still run; elements: the
# counts separated by spaces, empty for the deck's size.
SUBMITTED_FILE = "slurm-jobs.csv"
SUBMITTED_COLUMNS = ["job_id", "task", "tag", "elements"]


def read_submitted(out_dir):
    """(job id, task index) -> (tag, [counts], or None: every size) of each task submitted."""
    path = os.path.join(out_dir, SUBMITTED_FILE)
    if not os.path.exists(path):
        return {}
    return {(row["job_id"], row["task"]):
            (row["tag"], [int(c) for c in row.get("elements", "").split()] or None)
            for row in read_csv(path)[1]}


def record_submitted(out_dir, job_id, launches):
    path = os.path.join(out_dir, SUBMITTED_FILE)
    # A file from before the elements column gets it (empty: every size of the row's tag).
    rows = [[row.get(column) or "" for column in SUBMITTED_COLUMNS]
            for row in (read_csv(path)[1] if os.path.exists(path) else [])]
    rows += [[job_id, str(index), launch.tag,
              " ".join(str(count) for _, count in launch.sizes or [])]
             for index, launch in enumerate(launches)]
    with open(path + ".new", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([SUBMITTED_COLUMNS] + rows)
    os.replace(path + ".new", path)


def active_points(out_dir):
    """Records, as "JOB_TASK (STATE)", of the submitted tasks that squeue still lists."""
    active = Records()
    submitted = read_submitted(out_dir)
    if not submitted:
        return active
    if shutil.which("squeue") is None:
        raise UsageError(f"{os.path.join(out_dir, SUBMITTED_FILE)} lists Slurm jobs, but squeue "
                         "is not on PATH to say which still run; run this where Slurm is, or "
                         "remove that file once the jobs have ended")
    # -r: a line per array task, pending ones too; %F the array's job id (sbatch printed it), %K
    # the task index. Not %A: a task that has started is listed under a job id of its own there.
    result = subprocess.run(["squeue", "--me", "-h", "-r", "-o", "%F %K %T"],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise UsageError("squeue failed, so the points still queued are not known: "
                         + (result.stderr.strip() or f"exit {result.returncode}"))
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and (fields[0], fields[1]) in submitted:
            tag, counts = submitted[(fields[0], fields[1])]
            for count in counts or [None]:
                active.add(tag, count, f"{fields[0]}_{fields[1]} ({fields[2]})")
    return active


def sbatch_script(launches, args):
    """A job-array script: task i runs pending launch i with srun."""
    srun = ["srun"] + shlex.split(args.srun_args)
    max_np = max(point_np(launch.combination, args.np) for launch in launches)
    lines = [
        "#!/bin/bash",
        "# Written by scripts/sweep: one array task per pending combination of the sweep, its",
        "# sizes still missing in one launch (--elements).",
        "# Options given to sbatch on the command line (--sbatch-args) override these.",
        "#SBATCH --job-name=gpurelay-sweep",
        f"# %{args.throttle}: at most {args.throttle} task(s) at a time (scripts/sweep --throttle), "
        "so that timed points",
        "# do not share a node; above 1, --sbatch-args --exclusive gives each its own node.",
        f"#SBATCH --array=0-{len(launches) - 1}%{args.throttle}",
        f"#SBATCH --ntasks={max_np}",
        f"#SBATCH --output={os.path.join(args.out_dir, 'slurm-%A_%a.out')}",
        "# GPUs, partition, time: pass them with --sbatch-args (cluster specific), e.g.",
        "#   --sbatch-args \"--partition=gpu --ntasks-per-node=2 --gpus-per-node=2 "
        "--time=00:20:00\"",
        "# (GPUs per node rather than per task: scripts/slurm/one-node-two-gpus.sbatch says why)",
        "# See scripts/slurm/*.sbatch for the NCCL and Open MPI settings worth exporting.",
        "set -euo pipefail",
        "",
        "# Every task appends to the same CSV; gpurelay takes an flock on it for each row.",
        'case "${SLURM_ARRAY_TASK_ID:?run this with sbatch (it is a job array)}" in',
    ]
    for index, launch in enumerate(launches):
        lines.append(f"    {index}) ntasks={point_np(launch.combination, args.np)}; "
                     f"args=({' '.join(shlex.quote(a) for a in launch_args(launch, args))}) ;;")
    lines += [
        '    *) echo "no launch for array task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;',
        "esac",
        'echo "task $SLURM_ARRAY_TASK_ID ($ntasks ranks): ${args[*]}"',
        " ".join(shlex.quote(a) for a in srun) + ' --ntasks="$ntasks" '
        + shlex.quote(args.binary) + ' "${args[@]}"',
        "",
    ]
    return "\n".join(lines)


def submit_slurm(launches, args):
    if not args.dry_run and shutil.which("sbatch") is None:
        raise UsageError("sbatch not found on PATH (use --dry-run to only write the script)")
    script = sbatch_script(launches, args)
    path = os.path.join(args.out_dir, "sweep.sbatch")
    os.makedirs(args.out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)
    os.chmod(path, 0o755)
    command = ["sbatch", "--parsable"] + shlex.split(args.sbatch_args) + [path]
    points = sum(len(launch.points) for launch in launches)
    print(f"wrote {path} ({counted(len(launches), 'array task', 'array tasks')}, "
          f"{counted(points, 'point', 'points')})")
    if args.dry_run:
        print(script)
        print("dry run; would submit: " + shlex.join(command))
        return 0
    print("+ " + shlex.join(command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        print(f"sweep: sbatch failed (exit {result.returncode})", file=sys.stderr)
        return result.returncode
    job_id = result.stdout.strip().split(";")[0]  # --parsable: "JOBID" or "JOBID;CLUSTER"
    if not job_id.isdigit():
        print(f"sweep: sbatch printed '{result.stdout.strip()}', not a job id", file=sys.stderr)
        return 1
    record_submitted(args.out_dir, job_id, launches)
    print(f"submitted job {job_id}: tasks 0-{len(launches) - 1}, at most {args.throttle} at a "
          f"time; output in {os.path.join(args.out_dir, f'slurm-{job_id}_<task>.out')}")
    return 0


def run_launch(command):
    """Runs one launch, its stderr passed through; (exit code, its first line not a -=* rule)."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace")
    reason = ""
    for line in process.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
        text = line.strip()
        if not reason and text and not set(text) <= set("-=*"):
            reason = text
    return process.wait(), reason


def uncovered(launch, covered):
    return sum(1 for key, value in launch.values if value not in covered[key])


def failed_points(grid, launch, code, csv_path):
    """[(point, exit code as listed)] without a verified row; all if it failed yet wrote each."""
    rows = read_done(csv_path)
    failed = []
    for point in launch.points:
        verified = rows.find(grid, point)
        if verified not in ("ok", ""):
            why = "no CSV row" if verified is None else f"verified={verified}"
            failed.append((point, str(code) if code else f"0 ({why})"))
    if code != 0 and not failed:
        failed = [(point, str(code)) for point in launch.points]
    return failed


SPREAD_FIGURES = ("time_per_step_ms", "transfer_gbps")


def repeat_summary(csv_path):
    """Lines: each point's median and range (min to max) over its repeats, per figure."""
    groups = {}
    for row in read_csv(csv_path)[1]:
        words = row.get("tag", "").split()
        repeats = [w for w in words if w.startswith(REPEAT_KEY + "=")]
        if repeats and count_of(repeats[0].partition("=")[2]) is not None:
            tag = " ".join(w for w in words if w not in repeats) or NO_KEYS_TAG
            groups.setdefault((tag, row.get(ELEMENTS_KEY, "")), []).append(row)
    lines = []
    for (tag, elements), rows in groups.items():
        parts = []
        for figure in SPREAD_FIGURES:
            values = sorted(float(r[figure]) for r in rows if r.get(figure) not in (None, ""))
            if values:
                median = statistics.median(values)
                width = f" ({100 * (values[-1] - values[0]) / median:.0f}%)" if median else ""
                parts.append(f"{figure} {median:.4g} [{values[0]:.4g} to {values[-1]:.4g}]{width}")
        lines.append(f"  {tag} elements={elements}, {counted(len(rows), 'repeat', 'repeats')}: "
                     + "; ".join(parts))
    return lines


def run_here(grid, launches, total, args):
    """Runs the pending launches in grid order, but while none has succeeded, after a failure the
    one that tries most values untried; stops once those run take every value and failed alike."""
    failed = []  # (label, exit code as listed) per point
    ways = set()  # (exit code, reason) per failed launch
    succeeded = points_done = number = 0
    remaining = list(launches)
    covered = {key: set() for key in grid.keys}
    while remaining:
        launch = remaining[0]
        if failed and not succeeded:
            launch = max(remaining, key=lambda candidate: uncovered(candidate, covered))
        remaining.remove(launch)
        number += 1
        command = (launcher_for(launch.combination, args) + [args.binary]
                   + launch_args(launch, args))
        print(f"run [{number}/{len(launches)}]: {tag_of(launch.keys)}", flush=True)
        if args.dry_run:
            print("  " + shlex.join(command))
            continue
        start = time.monotonic()
        code, reason = run_launch(command)
        seconds = time.monotonic() - start
        launch_failed = failed_points(grid, launch, code, args.csv)
        points_done += len(launch.points) - len(launch_failed)
        succeeded += say_launch(grid, launch, code, seconds, launch_failed, args.csv)
        if launch_failed:
            ways.add((launch_failed[0][1], reason))
            failed += [(grid.label(point), listed) for point, listed in launch_failed]
        for key, value in launch.values:
            covered[key].add(value)
        if (remaining and not succeeded and len(ways) == 1
                and all(uncovered(other, covered) == 0 for other in remaining)):
            code, reason = ways.pop()
            left = sum(len(other.points) for other in remaining)
            nothing = f"; nothing written to {args.csv}" if not points_done else ""
            print(f"sweep: stopped: the {number} launches run, which take every value of every "
                  f"key, all failed the same way (exit {code}: {reason or 'no message'}); the "
                  f"other {len(remaining)} ({left} points) would too and were not run{nothing}",
                  file=sys.stderr)
            return 1
    return sweep_summary(launches, total, failed, points_done, args)


def say_launch(grid, launch, code, seconds, launch_failed, csv_path):
    """Prints how one launch ended; True when it ran and wrote every point's verified row."""
    if code == 0 and launch_failed:
        print(f"  exit 0 but no verified row tagged '{launch.tag}' in {csv_path} for "
              + ", ".join(grid.label(point) for point, _ in launch_failed), file=sys.stderr)
        return False
    if code != 0:
        written = len(launch.points) - len(launch_failed)
        print(f"  failed: exit {code} after {seconds:.1f} s"
              + (f" ({written} of {len(launch.points)} sizes done)" if written else ""),
              file=sys.stderr, flush=True)
        return False
    print(f"  done in {seconds:.1f} s", flush=True)
    return True


def sweep_summary(launches, total, failed, points_done, args):
    """The sweep's closing lines (and the repeats' spread); its exit code."""
    points = sum(len(launch.points) for launch in launches)
    if args.dry_run:
        print(f"dry run: {points} of {total} points would run, in "
              f"{counted(len(launches), 'launch', 'launches')}")
        return 0
    where = (f"results in {args.csv}" if os.path.exists(args.csv)
             else f"no results ({args.csv} not written)")
    print(f"sweep: {points_done} done, {total - points} skipped, {len(failed)} failed "
          f"(of {total}); {where}")
    if args.repeat > 1 and os.path.exists(args.csv):
        print("median [min to max] (range) over the repeats; scripts/compare tells whether two "
              "such sets differ:")
        print("\n".join(repeat_summary(args.csv)))
    if failed:
        print("failed points (exit code: point):\n"
              + "\n".join(f"  {listed}: {label}" for label, listed in failed), file=sys.stderr)
        return 1
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="scripts/sweep", add_help=False)
    parser.add_argument("-h", "--help", action=tool.Help)
    parser.add_argument("axes", nargs="+", metavar="KEY=V1,V2")
    parser.add_argument("--deck")
    parser.add_argument("--csv")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--launcher")
    parser.add_argument("--binary", default=layout.BINARY)
    parser.add_argument("--out-dir", default=layout.outputs("sweep"))
    parser.add_argument("--slurm", action="store_true")
    parser.add_argument("--throttle", type=int, default=1)
    parser.add_argument("--sbatch-args", default="")
    parser.add_argument("--srun-args", default="--mpi=pmix --kill-on-bad-exit=1")
    parser.add_argument("--summary-json", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, metavar="N")
    parser.add_argument("--any-key", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    for name in ("np", "repeat", "throttle"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be positive")
    if (args.sbatch_args or args.srun_args != parser.get_default("srun_args")
            or args.throttle != parser.get_default("throttle")) and not args.slurm:
        parser.error("--sbatch-args, --srun-args and --throttle go with --slurm")
    return args


def check_paths(args, keys):
    """Checks deck, binary and launcher; makes the paths absolute (ranks may start elsewhere)."""
    args.out_dir = os.path.abspath(args.out_dir)
    args.csv = os.path.abspath(args.csv or os.path.join(args.out_dir, "results.csv"))
    args.binary = os.path.abspath(args.binary)
    if args.deck:
        args.deck = os.path.abspath(args.deck)
        if not os.path.isfile(args.deck):
            raise UsageError(f"deck {args.deck} not found")
    # Also for a dry run: the binary says what the sizes are.
    if not os.access(args.binary, os.X_OK):
        raise UsageError(f"{args.binary} is not an executable; build it (scripts/build) "
                         "or pass --binary")
    if args.launcher is not None:
        if not shlex.split(args.launcher):
            raise UsageError("--launcher is empty")
        if NP_KEY in keys and "{np}" not in args.launcher:
            raise UsageError("an np=... axis with --launcher needs {np} in the launcher, "
                             'e.g. --launcher "mpirun -np {np} --bind-to none"')


def main(argv):
    args = parse_args(argv)
    axes = [parse_axis(text, args.any_key) for text in args.axes]
    keys = [key for key, _ in axes]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise UsageError(f"key {', '.join(repeated)} given more than once")
    check_paths(args, keys)
    grid = Grid(axes, args.deck, args.binary, args.repeat)
    if not args.slurm and not args.dry_run:
        starter = launcher_for(grid.combinations[0], args)[0]
        if shutil.which(starter) is None:
            raise UsageError(f"launcher {starter} not found on PATH (scripts/install-deps.sh "
                             "installs mpirun; or pass --launcher)")
    done = read_done(args.csv)
    # Only for points not done: a task that wrote its row and is still completing counts as done.
    active = active_points(args.out_dir)

    points = grid.points()
    pending = {}  # by combination, in grid order: a launch each
    waiting = 0
    for point in points:
        verified = done.find(grid, point)
        queued = active.find(grid, point)
        if verified is not None:
            note = "" if verified in ("ok", "") else f" [verified={verified}]"
            print(f"skip (done): {grid.label(point)}{note}")
        elif queued is not None:
            print(f"skip (queued or running as {queued}): {grid.label(point)}")
            waiting += 1
        else:
            pending.setdefault(combination_tag(point[0]), []).append(point)
    if not pending:
        if waiting:
            print(f"sweep: {len(points) - waiting} of {len(points)} points already in "
                  f"{args.csv}, {waiting} queued or running; nothing to submit")
        else:
            print(f"sweep: all {len(points)} points already in {args.csv}; nothing to run")
        return 0
    launches = [Launch(grid, group[0][0], group) for group in pending.values()]
    if not args.dry_run:
        os.makedirs(args.out_dir, exist_ok=True)
        os.makedirs(os.path.dirname(args.csv), exist_ok=True)
    if args.slurm:
        return submit_slurm(launches, args)
    return run_here(grid, launches, len(points), args)


if __name__ == "__main__":
    try:
        run("sweep", main)
    except KeyboardInterrupt:
        print("sweep: interrupted; run the same command again to continue", file=sys.stderr)
        sys.exit(130)
