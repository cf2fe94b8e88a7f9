#!/usr/bin/env bash
# Tests the example decks in inputs/: each is valid TOML, uses only documented keys, comments
# every key, and is accepted by gpurelay (--print-config); each runs where no GPU is visible
# (the CPU path; small sizes), as the README's sweeps do on a laptop; the quick-start deck then
# runs on 2 ranks and verifies, and its comment on transport names what auto picked there.
# Usage: tests/scripts/test_inputs.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

decks=("$root"/inputs/*.toml)
[[ -e "${decks[0]}" ]] || fail "no decks in $root/inputs"
for required in quickstart bandwidth-study overlap-study multi-node; do
    [[ -f "$root/inputs/$required.toml" ]] || fail "inputs/$required.toml missing"
done

echo "== TOML, known keys, a comment above every key"
"$python" - "${decks[@]}" <<'PY' || fail "deck check failed"
import re, sys, tomllib
KEYS = set("""device transport elements dtype steps warmup depth overlap blocking c_elements
c_iterations alpha seed pairing chunk output overwrite write flush_every summary_json
results_csv timeout_s quiet tag""".split())
bad = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        deck = tomllib.load(f)
    unknown = sorted(set(deck) - KEYS)
    if unknown:
        print(f"{path}: keys not in the documented list: {unknown}"); bad += 1
    lines = open(path, encoding="utf-8").read().splitlines()
    for number, line in enumerate(lines):
        m = re.match(r"^([a-z_]+)\s*=", line)
        if m and not (number > 0 and lines[number - 1].startswith("#")):
            print(f"{path}:{number + 1}: key {m.group(1)} has no comment above it"); bad += 1
    print(f"{path}: {len(deck)} keys ok" if not bad else f"{path}: checked")
sys.exit(1 if bad else 0)
PY

echo "== gpurelay accepts every deck (--print-config)"
for deck in "${decks[@]}"; do
    mpirun_np 1 "$binary" --input "$deck" --print-config >"$tmp/resolved.toml" ||
        fail "$deck: gpurelay --print-config exited non-zero"
    "$python" -c 'import sys, tomllib; tomllib.load(open(sys.argv[1], "rb"))' \
        "$tmp/resolved.toml" ||
        fail "$deck: --print-config output is not TOML"
    echo "$(basename "$deck"): accepted"
done

echo "== every deck runs where no GPU is visible (the CPU path)"
# --overwrite: the second attempt below replaces the first's file.
small=(--elements 1Ki --c-elements 1Ki --c-iterations 1 --steps 3 --warmup 1 --write none
    --summary-json "" --quiet --overwrite)
for deck in "${decks[@]}"; do
    name="cpu-$(basename "$deck" .toml)"
    for attempt in first again; do
        status=0
        (cd "$root" && CUDA_VISIBLE_DEVICES="" timeout 120 "$binary" --input "$deck" "${small[@]}" \
            --output "$tmp/$name.h5" --results-csv "$tmp/$name.csv") >"$tmp/$name.log" 2>&1 ||
            status=$?
        # LeakSanitizer's own stop-the-world tracer, at the exit of an MPI singleton (which
        # forks an orted), at times faults before it has checked anything: not a leak report,
        # and not gpurelay's. Such an exit alone is run again, once.
        if ((status == 0)) || [[ $attempt == again ]] ||
            ! grep -q "Tracer caught signal" "$tmp/$name.log" ||
            ! grep -q "LeakSanitizer has encountered a fatal error" "$tmp/$name.log"; then
            break
        fi
        echo "$(basename "$deck"): LeakSanitizer's tracer faulted at exit; once more"
    done
    [[ $status -eq 0 ]] || { cat "$tmp/$name.log"; fail "$(basename "$deck") exits $status without a GPU"; }
    "$python" -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sys.exit(0 if [(r["backend"], r["verified"]) for r in rows] == [("cpu", "ok")] else 1)' \
        "$tmp/$name.csv" || fail "$(basename "$deck"): no verified CSV row with backend cpu"
    echo "$(basename "$deck"): runs on the CPU path"
done

echo "== the quick-start deck runs on 2 ranks and verifies"
start=$SECONDS
(cd "$root" && mpirun_np 2 "$binary" --input inputs/quickstart.toml \
    --output "$tmp/quickstart.h5" --results-csv "$tmp/quickstart.csv" --quiet) ||
    fail "quick-start run failed"
[[ -s "$tmp/quickstart.h5" ]] || fail "no HDF5 file written"
"$python" - "$tmp/quickstart.csv" <<'PY' || fail "quick-start CSV row missing or not verified"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 1, rows
assert rows[0]["verified"] == "ok", rows[0]
assert rows[0]["tag"] == "quickstart", rows[0]["tag"]
PY
# Its comment on transport says what auto picks on the CPU path: what the run above chose.
"$python" - "$tmp/quickstart.csv" "$root/inputs/quickstart.toml" <<'PY' ||
import csv, re, sys
chosen = next(csv.DictReader(open(sys.argv[1])))["transport"]
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
at = next(i for i, line in enumerate(lines) if re.match(r"transport\s*=", line))
start = at
while start > 0 and lines[start - 1].startswith("#"):
    start -= 1
comment = " ".join(line.lstrip("# ") for line in lines[start:at])
sentence = next((part for part in re.split(r";|\. ", comment) if "CPU path" in part), "")
print(f"auto chose {chosen} on the CPU path; the comment: {sentence.strip()}")
sys.exit(0 if re.search(rf"\b{re.escape(chosen)}\b", sentence, re.IGNORECASE) else 1)
PY
    fail "quickstart.toml's comment on transport does not name what auto picks on the CPU path"

echo "== an empty tag keeps its CSV column (the row lines up with the header)"
(cd "$root" && mpirun_np 2 "$binary" --input inputs/quickstart.toml --tag "" --steps 4 \
    --output "$tmp/untagged.h5" --results-csv "$tmp/untagged.csv" --quiet) ||
    fail "untagged run failed"
"$python" - "$tmp/untagged.csv" <<'PY' || fail "untagged CSV row does not line up with the header"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert len(rows) == 2 and len(rows[0]) == len(rows[1]), rows
row = dict(zip(rows[0], rows[1]))
assert row["tag"] == "" and row["verified"] == "ok", row
PY
echo "quick start: $((SECONDS - start)) s"

echo "PASS: test_inputs"
