#!/usr/bin/env python3
"""Compares two sets of reference outputs (run.sh BINARY before, run.sh BINARY after): the HDF5 files with h5diff
(every dataset but /timings and /histograms, element for element), their root attributes and the /timings
shapes with h5dump, and the JSON summaries and results CSV field by field. Timings, timestamps
and the git hash differ between runs and are left out; everything else must be identical."""
import csv, json, re, subprocess, sys

# Root attributes that hold a time, a clock reading or the build's commit.
VARYING_ATTRS = {"started_utc", "finished_utc", "git_hash", "cold_step_ms", "overlap_speedup"}
# ... and figures judged from the timings: a pair or a step flagged slow, a rate that %g may
# print without a point (so the CSV would read it as an integer), and the verdicts the report
# draws from the phase times (whether the attribution explains the step and why not, a transfer
# that measured waiting, an unstable step period, which phases beat their ceilings and so why
# the phase times cannot be read, whether the pipeline waited on the writer), which flip between
# two runs of one binary.
VARYING_KEYS = {"timestamp", "git_hash", "slow", "slow_steps", "slow_pairs", "steps_per_s",
                "overlap_attribution_explains", "overlap_attribution_why_not",
                "transfer_is_waiting", "unstable", "step_unstable", "reasons", "why",
                "phase_times_unreadable_because", "overlap_speedup_includes_io",
                "verdict", "reason", "notes", "withheld"}

def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr

def root_attrs(path):
    _, out = run(["h5dump", "-A", "-g", "/", path])
    blocks, name, lines = {}, None, []
    for line in out.splitlines():
        m = re.match(r'^   ATTRIBUTE "(.*)" \{$', line)
        if m:
            name, lines = m.group(1), []
        elif name is not None:
            if line == "   }":
                blocks[name] = "\n".join(lines)
                name = None
            else:
                lines.append(line)
    # The launches' record (a JSON array) keeps its fields; their times and git hash vary.
    if "launches" in blocks:
        blocks["launches"] = re.sub(r'"(started_utc|ended_utc|git_hash)": "[^"]*"', r'"\1": "<varies>"',
                                    blocks["launches"])
    return {k: v for k, v in blocks.items() if k not in VARYING_ATTRS}

def timing_shapes(path):
    """The /timings datasets' names, shapes and types; its attributes are figures and verdicts
    from the timings (an attribution is written only where it explains the step)."""
    _, out = run(["h5dump", "-H", "-g", "/timings", path])
    shapes, depth = [], 0
    for line in out.splitlines():
        if re.match(r"^\s*ATTRIBUTE ", line):
            depth = 1
        elif depth:
            depth += line.count("{") - line.count("}")
        elif "DATASET" in line or "DATASPACE" in line or "DATATYPE" in line:
            shapes.append(line)
    return shapes

def stable(value, key=""):
    """The value with floats (timings and rates) replaced by their type, recursively."""
    if isinstance(value, dict):
        return {k: ("<varies>" if k in VARYING_KEYS else stable(v, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [stable(v) for v in value]
    if isinstance(value, float):
        return "<float>"
    if isinstance(value, str):  # the versions line names the build's commit
        return re.sub(r"git ([0-9a-f]{7,40}(-dirty)?|unknown)", "git <hash>", value)
    return value

def differing_paths(x, y, path=""):
    """Where two stable() trees differ, one path per line."""
    if isinstance(x, dict) and isinstance(y, dict):
        return [p for k in sorted(set(x) | set(y))
                for p in differing_paths(x.get(k), y.get(k), f"{path}/{k}")]
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [p for i, (a, b) in enumerate(zip(x, y)) for p in differing_paths(a, b, f"{path}[{i}]")]
    return [] if x == y else [f"{path}: {x!r} != {y!r}"]

def is_int(v):
    try:
        int(v); return True
    except ValueError:
        return False

def is_float(v):
    try:
        float(v); return True
    except ValueError:
        return False

def float_columns(*paths):
    """The columns that hold a figure with a point in either file: a ratio of exactly 1 may print
    as "1" there, which is still a figure, not a count."""
    columns = set()
    for path in paths:
        with open(path) as f:
            rows = list(csv.reader(f))
        columns |= {c for r in rows[1:] for c, v in zip(rows[0], r) if is_float(v) and not is_int(v)}
    return columns

def csv_rows(path, floats):
    with open(path) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    def cell(col, v):
        if col in VARYING_KEYS: return "<varies>"
        if is_int(v) and col not in floats: return v
        return "<float>" if is_float(v) else v
    return header, [[cell(c, v) for c, v in zip(header, r)] for r in rows[1:]]

def main(before, after):
    failures = 0
    def check(what, ok, detail=""):
        nonlocal failures
        print(("same      " if ok else "DIFFERENT ") + what + ("" if ok else "\n" + detail))
        failures += 0 if ok else 1
    import os
    decks = sorted(f[:-3] for f in os.listdir(before) if f.endswith(".h5"))
    check(f"decks: {', '.join(decks)}", decks == sorted(f[:-3] for f in os.listdir(after) if f.endswith(".h5")))
    for name in decks:
        f1, f2 = f"{before}/{name}.h5", f"{after}/{name}.h5"
        rc, out = run(["h5diff", "-r", "--exclude-path", "/timings", "--exclude-path", "/histograms",
                       "--exclude-attribute", "/", f1, f2])
        check(f"{name}.h5: h5diff -r without /timings, /histograms and root attributes (rc {rc})", rc == 0, out)
        a1, a2 = root_attrs(f1), root_attrs(f2)
        check(f"{name}.h5: {len(a1)} root attributes (timings, timestamps, git hash left out)", a1 == a2,
              "\n".join(k for k in sorted(set(a1) | set(a2)) if a1.get(k) != a2.get(k)))
        t1, t2 = timing_shapes(f1), timing_shapes(f2)
        check(f"{name}.h5: /timings datasets, shapes and types ({sum('DATASET' in l for l in t1)} datasets)", t1 == t2)
        j1, j2 = (json.load(open(f"{d}/{name}.json")) for d in (before, after))
        check(f"{name}.json: every key, every count and string (floats compared by kind)", stable(j1) == stable(j2),
              "\n".join(differing_paths(stable(j1), stable(j2))))
    floats = float_columns(f"{before}/runs.csv", f"{after}/runs.csv")
    c1, c2 = csv_rows(f"{before}/runs.csv", floats), csv_rows(f"{after}/runs.csv", floats)
    check(f"runs.csv: header ({len(c1[0])} columns) and every count and string of {len(c1[1])} rows", c1 == c2,
          f"{c1}\n{c2}")
    print("PASS" if failures == 0 else f"FAIL: {failures} difference(s)")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
