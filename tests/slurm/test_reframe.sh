#!/usr/bin/env bash
# The ReFrame checks (reframe/) against a 2-node local Slurm cluster of their own
# (scripts/local-slurm), on the CPU path with few steps: every check passes (NCCL's, which need
# GPUs, are skipped), and the performance log holds a number for each variable of each check.
# ReFrame from GPURELAY_REFRAME (a reframe command: pip install -r reframe/requirements.txt in a
# virtual environment), else from PATH.
# Usage: tests/slurm/test_reframe.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
reframe="${GPURELAY_REFRAME:-$(command -v reframe || true)}"
[[ -n "$reframe" ]] || { echo "skipped: no ReFrame"; exit 77; }
cluster="$tmp/cluster"
chmod 755 "$tmp" # munged, as user munge, reaches its folder in the cluster's
trap '"$root/scripts/local-slurm" stop "$cluster" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$root/scripts/local-slurm" start "$cluster" --nodes 2
export SLURM_CONF="$cluster/slurm.conf"

"$reframe" -C "$root/reframe/settings.py" --system local-slurm \
    -c "$root/reframe/gpurelay_checks.py" -r --prefix "$tmp/rfm" \
    -S binary="$binary" -S device=cpu -S steps=8 -S warmup=2 | tee "$tmp/log" ||
    fail "reframe: a check failed"
grep -q 'PASSED .* Ran 9/9 test case(s) from 9 check(s) (0 failure(s)' "$tmp/log" ||
    fail "reframe ran other than the 9 checks (6 pairs, the relay, 2 collectives)"
"$python" - "$tmp/rfm/perflogs/local-slurm/debug" <<'PY' || fail "the performance log"
import csv, glob, math, os, sys
units = {"time_per_step": "ms", "transfer_bw": "GB/s", "overlap_speedup": "x",
         "overlap_speedup_lo": "x", "overlap_speedup_hi": "x", "slowest_pair_step": "ms"}
rows = [row for path in glob.glob(os.path.join(sys.argv[1], "*.log"))
        for row in csv.DictReader(open(path), delimiter="|")]
assert len(rows) == 9, f"{len(rows)} rows, not 9"
for row in rows:
    # Always shown; the rates and the speedup only where gpurelay shows them (withheld on
    # the CPU path), never as NaN without a reference to fail.
    logged = {k[:-len("_value")] for k in row if k and k.endswith("_value") and row[k]}
    assert {"time_per_step", "slowest_pair_step"} <= logged, (row["name"], logged)
    for name in logged:
        value = float(row[f"{name}_value"])
        assert math.isfinite(value) and value > 0, (row["name"], name, value)
        assert row[f"{name}_unit"] == units[name], (row["name"], name, row[f"{name}_unit"])
    print(row["name"], {name: row[f"{name}_value"] for name in sorted(logged)})
PY
echo "PASS"
