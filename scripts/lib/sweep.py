"""Runs gpurelay over a Cartesian grid of deck keys, one results-CSV row per point.

Each point is named by its canonical tag "key1=v1 key2=v2 ..." (keys in the order given on the
command line). The tag is stored in the CSV row, so a sweep can be stopped and run again: points
whose tag is already in the CSV are skipped. With --slurm the pending points become one Slurm
job array instead of running here, at most --throttle tasks at a time; the points submitted are
recorded in OUT_DIR/slurm-jobs.csv, and a point whose task is still queued or running (squeue)
is skipped too, so running the same sweep again never submits a point twice.
"""

import argparse
import csv
import difflib
import hashlib
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Deck keys a sweep may vary. The others are set by the sweep itself (output, overwrite, quiet,
# results_csv, tag) or name a per-run file (summary_json) that every point would overwrite.
SWEEPABLE_KEYS = [
    "device", "transport", "elements", "dtype", "steps", "warmup", "depth", "overlap",
    "blocking", "graphs", "c_elements", "c_iterations", "alpha", "seed", "pairing", "chunk",
    "staging", "write", "flush_every", "timeout_s", "pattern", "group_size",
]
RESERVED_KEYS = ["output", "overwrite", "quiet", "results_csv", "tag", "summary_json"]
# Not a deck key: the number of ranks, for scaling studies (pairs = np / 2). It goes to the
# launcher (mpirun -np, srun --ntasks) and into the tag, never to gpurelay as a flag.
NP_KEY = "np"

# Values go into a space-separated tag and a command line: keep them to plain tokens.
VALUE_PATTERN = re.compile(r"^[A-Za-z0-9_.:+\-]+$")
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")

EXIT_USAGE = 2


class UsageError(Exception):
    pass


def parse_axis(text, allow_any_key):
    """KEY=V1,V2,... -> (key, [values]); the key with '-' spelled as '_'."""
    if "=" not in text:
        raise UsageError(f"'{text}': expected KEY=V1,V2,... (e.g. elements=1Mi,16Mi)")
    key, _, values_text = text.partition("=")
    key = key.strip().replace("-", "_")
    if not KEY_PATTERN.match(key):
        raise UsageError(f"'{text}': '{key}' is not a key name (lower case, digits, _)")
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


def expand_grid(axes):
    """The Cartesian product, first key outermost, as lists of (key, value)."""
    keys = [key for key, _ in axes]
    return [list(zip(keys, combo)) for combo in itertools.product(*(v for _, v in axes))]


def tag_of(point):
    return " ".join(f"{key}={value}" for key, value in point)


def short_hash(tag):
    return hashlib.sha1(tag.encode("utf-8")).hexdigest()[:12]


# Longest readable part of a point's file name: well under the 255 bytes a name may have, with
# room for the hash and the side files gpurelay writes beside its output.
READABLE_NAME_MAX = 160


def output_name(tag):
    """The point's HDF5 file name: its tag with commas for spaces ("np=2,elements=1Mi.h5"),
    distinct for distinct tags (values hold no space, comma or '='); a tag too long for a file
    name keeps what fits and adds a hash of the whole tag."""
    name = tag.replace(" ", ",")
    if len(name) <= READABLE_NAME_MAX:
        return name + ".h5"
    return name[:READABLE_NAME_MAX - 13] + "-" + short_hash(tag) + ".h5"


def flag_of(key):
    return "--" + key.replace("_", "-")


def point_args(point, deck, csv_path, out_dir):
    """gpurelay's arguments for one point (after the binary)."""
    tag = tag_of(point)
    args = []
    if deck:
        args += ["--input", deck]
    # --key=value rather than "--key value": a boolean flag takes its value only in this form,
    # and a value that starts with '-' (alpha=-1) cannot be mistaken for a flag.
    args += [f"{flag_of(key)}={value}" for key, value in point if key != NP_KEY]
    args += ["--results-csv", csv_path, "--tag", tag,
             "--output", os.path.join(out_dir, output_name(tag)),
             "--overwrite", "--quiet"]
    return args


def read_done(csv_path):
    """Tags already in the results CSV -> their 'verified' value ('' when absent)."""
    if not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0:
        return {}
    with open(csv_path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or "tag" not in reader.fieldnames:
            raise UsageError(f"{csv_path}: no 'tag' column in the header; is it a gpurelay "
                             "results CSV?")
        return {row["tag"]: (row.get("verified") or "") for row in reader}


def point_np(point, default):
    """Ranks for this point: its np value when np is an axis, else --np."""
    return int(dict(point).get(NP_KEY, default))


def launcher_for(point, args):
    np = point_np(point, args.np)
    if args.launcher:
        # {np} in --launcher is replaced by the point's rank count.
        return shlex.split(args.launcher.replace("{np}", str(np)))
    return default_launcher(np)


def default_launcher(np):
    launcher = ["mpirun", "-np", str(np)]
    # Open MPI refuses to start as root unless told (containers, CI).
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    # Open MPI refuses more ranks than cores unless told (laptops, 2-core CI runners).
    if (os.cpu_count() or 1) < np:
        launcher.append("--oversubscribe")
    return launcher


# Array tasks submitted by --slurm, one row each, so that a later run can ask squeue which of
# its points are still queued or running.
SUBMITTED_FILE = "slurm-jobs.csv"
SUBMITTED_COLUMNS = ["job_id", "task", "tag"]


def read_submitted(out_dir):
    """(job id, task index) -> tag, for every array task this sweep folder has submitted."""
    path = os.path.join(out_dir, SUBMITTED_FILE)
    if not os.path.exists(path):
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        return {(row["job_id"], row["task"]): row["tag"] for row in csv.DictReader(f)}


def record_submitted(out_dir, job_id, points):
    path = os.path.join(out_dir, SUBMITTED_FILE)
    new_file = not os.path.exists(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        if new_file:
            writer.writerow(SUBMITTED_COLUMNS)
        for index, point in enumerate(points):
            writer.writerow([job_id, str(index), tag_of(point)])


def active_tags(out_dir):
    """Tag -> "JOB_TASK (STATE)" for the submitted points whose array task squeue still lists
    (pending, running, completing...). Empty when nothing was submitted from out_dir."""
    submitted = read_submitted(out_dir)
    if not submitted:
        return {}
    if shutil.which("squeue") is None:
        raise UsageError(f"{os.path.join(out_dir, SUBMITTED_FILE)} lists Slurm jobs, but squeue "
                         "is not on PATH to say which still run; run this where Slurm is, or "
                         "remove that file once the jobs have ended")
    # -r: one line per array task, pending ones included; %F the array's job id (the id sbatch
    # printed, which slurm-jobs.csv holds), %K the task index. Not %A: a task that has started
    # is listed under a job id of its own there.
    result = subprocess.run(["squeue", "--me", "-h", "-r", "-o", "%F %K %T"],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise UsageError("squeue failed, so the points still queued are not known: "
                         + (result.stderr.strip() or f"exit {result.returncode}"))
    active = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and (fields[0], fields[1]) in submitted:
            active[submitted[(fields[0], fields[1])]] = f"{fields[0]}_{fields[1]} ({fields[2]})"
    return active


def sbatch_script(points, args):
    """A job-array script: task i runs pending point i with srun."""
    srun = ["srun"] + shlex.split(args.srun_args)
    max_np = max(point_np(point, args.np) for point in points)
    lines = [
        "#!/bin/bash",
        "# Written by scripts/sweep: one array task per pending point of the sweep.",
        "# Options given to sbatch on the command line (--sbatch-args) override these.",
        "#SBATCH --job-name=gpurelay-sweep",
        f"# %{args.throttle}: at most {args.throttle} task(s) at a time (scripts/sweep --throttle), "
        "so that timed points",
        "# do not share a node; above 1, --sbatch-args --exclusive gives each its own node.",
        f"#SBATCH --array=0-{len(points) - 1}%{args.throttle}",
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
    for index, point in enumerate(points):
        argv = point_args(point, args.deck, args.csv, args.out_dir)
        lines.append(f"    {index}) ntasks={point_np(point, args.np)}; "
                     f"args=({' '.join(shlex.quote(a) for a in argv)}) ;;")
    lines += [
        '    *) echo "no point for array task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;',
        "esac",
        'echo "point $SLURM_ARRAY_TASK_ID ($ntasks ranks): ${args[*]}"',
        " ".join(shlex.quote(a) for a in srun) + ' --ntasks="$ntasks" '
        + shlex.quote(args.binary) + ' "${args[@]}"',
        "",
    ]
    return "\n".join(lines)


def submit_slurm(pending, args):
    if not args.dry_run and shutil.which("sbatch") is None:
        print("sweep: sbatch not found on PATH (use --dry-run to only write the script)",
              file=sys.stderr)
        return EXIT_USAGE
    script = sbatch_script(pending, args)
    path = os.path.join(args.out_dir, "sweep.sbatch")
    os.makedirs(args.out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)
    os.chmod(path, 0o755)
    command = ["sbatch", "--parsable"] + shlex.split(args.sbatch_args) + [path]
    print(f"wrote {path} ({len(pending)} array tasks)")
    if args.dry_run:
        print(script)
        print("dry run; would submit: " + shlex.join(command))
        return 0
    print("+ " + shlex.join(command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        print(f"sweep: sbatch failed (exit {result.returncode})", file=sys.stderr)
        return result.returncode
    # --parsable prints "JOBID" or "JOBID;CLUSTER".
    job_id = result.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        print(f"sweep: sbatch printed '{result.stdout.strip()}', not a job id", file=sys.stderr)
        return 1
    record_submitted(args.out_dir, job_id, pending)
    print(f"submitted job {job_id}: tasks 0-{len(pending) - 1}, at most {args.throttle} at a "
          f"time; output in {os.path.join(args.out_dir, f'slurm-{job_id}_<task>.out')}")
    return 0


def run_point(command):
    """Runs one point, its stderr passed through as it comes; returns (exit code, reason), the
    reason being the first line on stderr that is not the launcher's frame (gpurelay's one-line
    error, where it gave one)."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace")
    reason = ""
    for line in process.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
        text = line.strip()
        if not reason and text and not set(text) <= set("-=*"):
            reason = text
    return process.wait(), reason


def uncovered(point, covered):
    return sum(1 for key, value in point if value not in covered[key])


def run_here(pending, total, args):
    """Runs the pending points in grid order. While none has succeeded, the next point after a
    failure is the one that tries the most values not yet tried: when the points run so far take
    every value of every key and all failed the same way (exit code and message), the rest would
    too, and the sweep stops instead of running them."""
    failed = []
    succeeded = 0
    remaining = list(pending)
    covered = {key: set() for key, _ in pending[0]}
    number = 0
    while remaining:
        point = remaining[0]
        if failed and not succeeded:
            point = max(remaining, key=lambda p: uncovered(p, covered))
        remaining.remove(point)
        number += 1
        tag = tag_of(point)
        command = (launcher_for(point, args) + [args.binary]
                   + point_args(point, args.deck, args.csv, args.out_dir))
        print(f"run [{number}/{len(pending)}]: {tag}", flush=True)
        if args.dry_run:
            print("  " + shlex.join(command))
            continue
        start = time.monotonic()
        code, reason = run_point(command)
        seconds = time.monotonic() - start
        if code == 0 and tag not in read_done(args.csv):
            print(f"  exit 0 but no row tagged '{tag}' in {args.csv}", file=sys.stderr)
            failed.append((tag, "0 (no CSV row)", reason))
        elif code != 0:
            print(f"  failed: exit {code} after {seconds:.1f} s", file=sys.stderr, flush=True)
            failed.append((tag, str(code), reason))
        else:
            print(f"  done in {seconds:.1f} s", flush=True)
            succeeded += 1
        for key, value in point:
            covered[key].add(value)
        ways = {(code, reason) for _, code, reason in failed}
        if (remaining and not succeeded and len(ways) == 1
                and all(uncovered(p, covered) == 0 for p in remaining)):
            code, reason = ways.pop()
            print(f"sweep: stopped: the {len(failed)} points run, which take every value of every "
                  f"key, all failed the same way (exit {code}: {reason or 'no message'}); the "
                  f"other {len(remaining)} would too and were not run; nothing written to "
                  f"{args.csv}", file=sys.stderr)
            return 1
    if args.dry_run:
        print(f"dry run: {len(pending)} of {total} points would run")
        return 0
    where = (f"results in {args.csv}" if os.path.exists(args.csv)
             else f"no results ({args.csv} not written)")
    print(f"sweep: {succeeded} done, {total - len(pending)} skipped, {len(failed)} failed "
          f"(of {total}); {where}")
    if failed:
        print("failed points (exit code: tag):", file=sys.stderr)
        for tag, code, _ in failed:
            print(f"  {code}: {tag}", file=sys.stderr)
        return 1
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scripts/sweep",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog="""\
each point runs
  LAUNCHER BINARY [--input DECK] --key-1=v1 ... --results-csv CSV --tag TAG
           --output OUT_DIR/key-1=v1,key-2=v2.h5 --overwrite --quiet
(a tag too long for a file name is cut, with a hash of the whole tag added)
examples:
  scripts/sweep --deck inputs/bandwidth-study.toml --csv outputs/bw.csv \\
      transport=nccl,mpi elements=64Ki,1Mi,16Mi,256Mi
  scripts/sweep --deck inputs/overlap-study.toml overlap=on,off c_iterations=8,32,128
  scripts/sweep --deck inputs/bandwidth-study.toml --csv outputs/scaling.csv np=2,4,8
  scripts/sweep --slurm --sbatch-args "--partition=gpu --ntasks-per-node=2 --gpus-per-node=2" \\
      elements=1Mi,1Gi
np is not a deck key: np=2,4,8 sets the number of ranks per point (pairs = np/2) for
scaling studies; it goes to the launcher and into the tag.
With --slurm, points submitted earlier from the same OUT_DIR whose array task is still
queued or running are skipped (OUT_DIR/slurm-jobs.csv and squeue), so the same sweep can be
run again at any time: it submits only the points that are neither done nor on their way
(a task that failed is submitted again).
A tag names a point within one CSV only (the deck is not part of it): use one CSV per deck.
Values are matched as written: elements=1Mi and elements=1048576 are different points.
While no point has succeeded, a failure is followed by the point that tries the most values not
tried yet; once the points run take every value of every key and all failed the same way
(exit code and first line of the error), the sweep stops there: the others would fail too.
exit status: 0 all points done, 1 some point failed (listed at the end) or the sweep stopped
early (why, on one line), 2 bad arguments.""")
    parser.add_argument("axes", nargs="+", metavar="KEY=V1,V2",
                        help="a deck key and the values to run it at")
    parser.add_argument("--deck", help="input deck every point starts from")
    parser.add_argument("--csv", help="results CSV (default: OUT_DIR/results.csv)")
    parser.add_argument("--np", type=int, default=2,
                        help="MPI ranks (default 2), for the default launcher and srun "
                             "--ntasks; an np=2,4,8 axis varies it per point instead")
    parser.add_argument("--launcher",
                        help='command that starts the ranks (default: "mpirun -np NP", plus '
                             "--allow-run-as-root as root and --oversubscribe when cores < NP); "
                             "{np} in it is replaced by the point's ranks")
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "app", "gpurelay"),
                        help="gpurelay binary (default: build/app/gpurelay in the repository)")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "outputs", "sweep"),
                        help="where the HDF5 files (and sweep.sbatch) go (default: "
                             "outputs/sweep in the repository)")
    parser.add_argument("--slurm", action="store_true",
                        help="write OUT_DIR/sweep.sbatch, one array task per pending point, "
                             "and submit it with sbatch instead of running here")
    parser.add_argument("--throttle", type=int, default=1,
                        help="with --slurm: array tasks running at once (the %%N of --array; "
                             "default 1, so points never share a node while timed)")
    parser.add_argument("--sbatch-args", default="",
                        help="extra sbatch options (with --slurm), e.g. \"--partition=gpu\"")
    parser.add_argument("--srun-args", default="--mpi=pmix --kill-on-bad-exit=1",
                        help="srun options in the array script (default: %(default)s)")
    parser.add_argument("--any-key", action="store_true",
                        help="allow keys this script does not know (newer gpurelay options)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would run (or write and print sweep.sbatch) only")
    args = parser.parse_args(argv)
    if args.np < 1:
        parser.error("--np must be positive")
    if args.throttle < 1:
        parser.error("--throttle must be positive")
    if (args.sbatch_args or args.srun_args != parser.get_default("srun_args")
            or args.throttle != parser.get_default("throttle")) and not args.slurm:
        parser.error("--sbatch-args, --srun-args and --throttle go with --slurm")
    return args


def main(argv):
    args = parse_args(argv)
    try:
        axes = [parse_axis(text, args.any_key) for text in args.axes]
        keys = [key for key, _ in axes]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise UsageError(f"key {', '.join(repeated)} given more than once")

        # Absolute paths: the ranks (or Slurm tasks) may start in another directory.
        args.out_dir = os.path.abspath(args.out_dir)
        args.csv = os.path.abspath(args.csv or os.path.join(args.out_dir, "results.csv"))
        args.binary = os.path.abspath(args.binary)
        if args.deck:
            args.deck = os.path.abspath(args.deck)
            if not os.path.isfile(args.deck):
                raise UsageError(f"deck {args.deck} not found")
        if not args.dry_run and not os.access(args.binary, os.X_OK):
            raise UsageError(f"{args.binary} is not an executable; build it (scripts/build) "
                             "or pass --binary")
        if args.launcher is not None:
            if not shlex.split(args.launcher):
                raise UsageError("--launcher is empty")
            if NP_KEY in keys and "{np}" not in args.launcher:
                raise UsageError("an np=... axis with --launcher needs {np} in the launcher, "
                                 'e.g. --launcher "mpirun -np {np} --bind-to none"')
        if not args.slurm and not args.dry_run:
            starter = launcher_for(expand_grid(axes)[0], args)[0]
            if shutil.which(starter) is None:
                raise UsageError(f"launcher {starter} not found on PATH (scripts/install-deps.sh "
                                 "installs mpirun; or pass --launcher)")

        done = read_done(args.csv)
        # Only for points not done: a task that wrote its row and is still completing counts
        # as done.
        active = active_tags(args.out_dir)
    except UsageError as err:
        print(f"sweep: {err}", file=sys.stderr)
        return EXIT_USAGE

    points = expand_grid(axes)
    pending = []
    for point in points:
        tag = tag_of(point)
        if tag in done:
            note = "" if done[tag] in ("ok", "") else f" [verified={done[tag]}]"
            print(f"skip (done): {tag}{note}")
        elif tag in active:
            print(f"skip (queued or running as {active[tag]}): {tag}")
        else:
            pending.append(point)
    if not pending:
        waiting = sum(1 for point in points if tag_of(point) in active)
        if waiting:
            print(f"sweep: {len(points) - waiting} of {len(points)} points already in "
                  f"{args.csv}, {waiting} queued or running; nothing to submit")
        else:
            print(f"sweep: all {len(points)} points already in {args.csv}; nothing to run")
        return 0
    if not args.dry_run:
        os.makedirs(args.out_dir, exist_ok=True)
        os.makedirs(os.path.dirname(args.csv), exist_ok=True)
    if args.slurm:
        return submit_slurm(pending, args)
    return run_here(pending, len(points), args)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("sweep: interrupted; run the same command again to continue", file=sys.stderr)
        sys.exit(130)
