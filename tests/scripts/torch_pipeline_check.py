"""bench/torch_pipeline.py and lab/lib/torch_vs_gpurelay.py without PyTorch or a GPU: the
command line, the no-GPU exit, the host formulas against tests/integration/formula.py (numpy,
written apart from both), and the comparison table on two small JSON files.

usage: torch_pipeline_check.py REPO_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = sys.argv[1]
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "tests", "integration")]
import torch_pipeline as tp  # noqa: E402
from formula import a_values, y_values  # noqa: E402

SCRIPT = os.path.join(ROOT, "bench", "torch_pipeline.py")
COMPARE = os.path.join(ROOT, "lab", "lib", "torch_vs_gpurelay.py")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*command):
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


# The command line. Without --skip-without-gpu a machine with no PyTorch or no GPU is an error.
rc, out, _ = run(SCRIPT, "--help")
check(rc == 0 and "--skip-without-gpu" in out, "--help exits 0 and lists the flags")
rc, out, err = run(SCRIPT, "--skip-without-gpu", "--elements", "1Ki")
no_gpu = err.startswith("torch_pipeline: no CUDA GPU (PyTorch ")
check(rc == 0 and ((no_gpu and err.count("\n") == 1) or "0 wrong" in out),
      f"--skip-without-gpu exits 0 with one line (rc {rc}: {err.strip() or out.strip()})")
if no_gpu:
    rc, _, err = run(SCRIPT, "--elements", "1Ki")
    check(rc == 2 and "no CUDA GPU" in err, f"no GPU without --skip-without-gpu exits 2 (rc {rc})")
for flags, message in ((["--elements", "12Q"], "'12Q' is not a count"),
                       (["--depth", "0"], "--depth, --steps, --graph-steps at least 1"),
                       (["--graphs", "--graph-steps", "3"], "a multiple of --depth")):
    rc, _, err = run(SCRIPT, "--skip-without-gpu", *flags)
    check(rc == 2 and message in err and err.count("\n") == 1, f"{flags}: one line, exit 2")
check([tp.parse_count(t) for t in ("4096", "1Ki", "64Mi", "2k")] == [4096, 1024, 2**26, 2000],
      "counts take gpurelay's suffixes")

# The host check's formulas, on the elements that matter: the first, the last of a large step,
# and a step past 2^32 (the step wraps to 32 bits).
idx = np.array([0, 1, 2, 1000, 2**20 - 1, 2**22 + 17], dtype=np.uint64)
for step, seed in ((0, 12345), (7, 0), (1999, 12345), (2**32 + 5, 4242)):
    want = a_values(step, int(idx.max()) + 1, seed, np.float64)[idx.astype(np.int64)]
    got = [tp.a_value_py(step, int(i), seed) for i in idx]
    check(list(want) == got, f"a_value_py equals formula.py's A at step {step}, seed {seed}")
    for dtype in (np.float32, np.float64):
        y = y_values(step, int(idx.max()) + 1, seed, 0.37, dtype)[idx.astype(np.int64)]
        got = [tp.b_value_py(0.37, tp.a_value_py(step, int(i), seed), dtype.__name__) for i in idx]
        check([float(v) for v in y] == got, f"b_value_py equals formula.py's y ({dtype.__name__})")
for n in (0, 1, 5, 64, 1000):
    z = 0xDEADBEEF
    for _ in range(n):
        z = (z * tp.LCG_MUL + tp.LCG_INC) & tp.MASK
    mul, inc = tp.lcg_jump(n)
    check((mul * 0xDEADBEEF + inc) & tp.MASK == z, f"lcg_jump({n}) equals {n} LCG steps")

# The table: a pair in one folder, gpurelay's summary in its typed and its older text form.
with tempfile.TemporaryDirectory() as tmp:
    ours = {"elements": 1024, "bytes": 4096, "dtype": "float32", "mode": "eager",
            "time_per_step_ms": 0.25, "wrong": 0}

    def summary(elements, dtype, ms, verified=True):
        return {"config": {"elements": elements, "dtype": dtype}, "verified": verified,
                "passes": [{"time_per_step_ms": 9.0, "graphs": {"captured": 0}},
                           {"time_per_step_ms": ms, "graphs": {"captured": 4}}]}

    def write(name, data):
        with open(os.path.join(tmp, name), "w") as f:
            json.dump(data, f)
        return os.path.join(tmp, name)

    write("torch_small_4k.json", ours)
    write("small_4k.json", summary(1024, "float32", 0.01))
    rc, out, _ = run(COMPARE, tmp)
    check(rc == 0 and "4 KiB | eager / graphs | 0.2500 | 0.0100 | 25.0x" in out,
          f"torch_vs_gpurelay.py DIR: the ratio 25.0x (rc {rc}:\n{out})")
    old = write("old.json", summary('"1024"', '"float32"', 0.02))
    rc, out, _ = run(COMPARE, "--pair", os.path.join(tmp, "torch_small_4k.json"), old)
    check(rc == 0 and "| 12.5x" in out, f"--pair with an older summary's text values (rc {rc})")
    other = write("other.json", summary(2048, "float32", 0.02))
    rc, out, _ = run(COMPARE, "--pair", os.path.join(tmp, "torch_small_4k.json"), other)
    check(rc == 1 and "not the same tensor" in out, f"a pair of different sizes exits 1 (rc {rc})")
    failed = write("failed.json", summary(1024, "float32", 0.02, verified=False))
    rc, out, _ = run(COMPARE, "--pair", os.path.join(tmp, "torch_small_4k.json"), failed)
    check(rc == 1 and "FAILED" in out, f"an unverified gpurelay run exits 1 (rc {rc})")
    rc, out, _ = run(COMPARE, os.path.join(tmp, "empty-does-not-exist"))
    check(rc == 1 and "no pair" in out, f"no pair exits 1 (rc {rc})")

sys.exit(1 if failures else 0)
