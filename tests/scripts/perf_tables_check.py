"""lab/lib/perf_tables.py on made-up gpu-check outputs: the tables it makes from benchmark
JSON, results CSVs (one with a sweep's launch of two sizes, whose rows share a tag) and a JSON
summary, and --update replacing only the blocks it can make.

usage: perf_tables_check.py REPO_ROOT
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

MIB = 1 << 20


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def write_bench(path, runs):
    """A Google Benchmark JSON file holding `runs`: (name, bytes_per_second)."""
    benchmarks = [{"name": name, "run_name": name, "run_type": "iteration", "real_time": 1.0,
                   "time_unit": "us", "bytes_per_second": rate} for name, rate in runs]
    with open(path, "w") as f:
        json.dump({"context": {"date": "2026-12-02T01:00:00+00:00", "gpurelay_git": "abcdef123456"},
                   "benchmarks": benchmarks}, f)


def main():
    root = sys.argv[1]
    script = os.path.join(root, "lab", "lib", "perf_tables.py")
    with tempfile.TemporaryDirectory() as out:
        size = 64 * MIB
        write_bench(os.path.join(out, "bench-kernels.json"),
                    [(f"gpu/copy_d2d/{size}/manual_time", 4.0e12),
                     (f"gpu/a/{size}/manual_time", 3.0e12), (f"gpu/b/{size}/manual_time", 3.6e12),
                     ("gpu/a/4096/manual_time", 1e9)])
        columns = ["tag", "timestamp", "git_hash", "world_size", "transport", "tensor_bytes",
                   "depth", "graphs", "c_elements", "c_iterations", "overlap", "time_per_step_ms",
                   "time_per_step_no_overlap_ms", "overlap_speedup", "step_bound_ms",
                   "transfer_gbps", "timing", "verified"]
        with open(os.path.join(out, "results.csv"), "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            writer.writerow(["pair_overlap_d1", "2026-12-02T01:02:03Z", "abcdef123456", 1, "nccl",
                             256 * MIB, 2, "false", 67108864, 64, "compare", 0.5, 0.6, 1.2, 0.45,
                             900, "phases", "ok"])
        # A sweep's launch of two sizes: its rows share the tag, and each is a run of its own.
        with open(os.path.join(out, "sweep.csv"), "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(columns + ["elements"])
            for elements in (1024, 16384):
                writer.writerow(["depth=2", "2026-12-02T01:03:00Z", "abcdef123456", 1, "nccl",
                                 4 * elements, 2, "false", 0, 0, "on", 0.02, "", "", 0.01, 1,
                                 "step", "ok", elements])
        summary = {"config": {"elements": 1024, "dtype": "float32", "depth": 2, "graphs": False,
                              "graph_steps": 1, "c_elements": 0, "c_iterations": 64,
                              "overlap": "compare"},
                   "world_size": 2, "transport": "mpi", "verified": True, "overlap_speedup": 0.9,
                   "timestamp": "2026-12-02T01:05:00Z", "git_hash": "abcdef123456",
                   "passes": [{"overlap": False, "time_per_step_ms": 0.09},
                              {"overlap": True, "time_per_step_ms": 0.1, "transfer_gbps": 1.5}]}
        with open(os.path.join(out, "pair_overlap_d2.json"), "w") as f:
            json.dump(summary, f)

        made = subprocess.run([sys.executable, script, out], capture_output=True, text=True)
        if made.returncode != 0:
            fail(f"perf_tables.py exited {made.returncode}: {made.stderr}")
        text = made.stdout
        for needle in ("<!-- table kernels -->", "| 64 MiB | 4000 | 3000 | 75.0% | 3600 | 90.0% |",
                       "<!-- table two-gpu-overlap -->",
                       "| pair_overlap_d1 | 1 | nccl | 256 MiB | 0.6000 | 0.5000 | 1.20 |",
                       "| pair_overlap_d2 | 2 | mpi | 4 KiB | 0.0900 | 0.1000 | 0.90 |",
                       "| depth=2 elements=1024 | 4 KiB | eager |",
                       "| depth=2 elements=16384 | 64 KiB | eager |",
                       "Measured 2026-12-02 on `abcdef1`."):
            if needle not in text:
                fail(f"the tables lack {needle!r}:\n{text}")
        if "4 KiB | " in text.split("<!-- table kernels -->")[1].split("<!-- end")[0]:
            fail("the kernels table holds sizes below 1 MiB")

        doc = os.path.join(out, "DOC.md")
        with open(doc, "w") as f:
            f.write("# Doc\n<!-- table kernels -->\nold kernels\n<!-- end table kernels -->\n"
                    "text\n<!-- table ipc-transfer -->\nold ipc\n<!-- end table ipc-transfer -->\n")
        updated = subprocess.run([sys.executable, script, out, "--update", doc, "--commit",
                                  "1234567", "--only", "kernels"], capture_output=True, text=True)
        if updated.returncode != 0:
            fail(f"--update exited {updated.returncode}: {updated.stderr}")
        with open(doc) as f:
            result = f.read()
        if "old kernels" in result or "| 64 MiB | 4000 |" not in result:
            fail(f"--update did not replace the kernels block:\n{result}")
        if "Measured 2026-12-02 on `1234567`." not in result:
            fail(f"--commit did not name the commit:\n{result}")
        if "old ipc" not in result or "text\n" not in result:
            fail(f"--update touched what it could not make:\n{result}")

        empty = os.path.join(out, "empty")
        os.mkdir(empty)
        nothing = subprocess.run([sys.executable, script, empty], capture_output=True, text=True)
        if nothing.returncode != 2:
            fail(f"an empty folder gave exit {nothing.returncode}, not 2")
    print("perf_tables.py: tables, --update, --only, --commit and an empty folder: ok")


if __name__ == "__main__":
    main()
