#!/usr/bin/env bash
# Usage: docs/structure-check/run.sh BINARY NAME
# The two reference runs of docs/STRUCTURE.md, written in one fixed folder (paths are stored in
# the files, so both sides must use the same one) and then moved to /tmp/gpurelay-structure/NAME.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BINARY NAME" >&2; exit 2; }
bin=$(realpath "$1"); base=/tmp/gpurelay-structure; out=$base/run
rm -rf "$out" "${base:?}/$2"; mkdir -p "$out"
mpi=(mpirun --oversubscribe)
[[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
# Every phase of every step timed, where the binary can choose (timing = auto picks from how
# fast the warm-up ran, which differs from run to run).
timing=()
help=$("$bin" --help 2>/dev/null || true)
[[ $help == *--timing* ]] && timing=(--timing phases)
# a: two ranks, both passes (compare), every row written, float32, a length with a tail.
"${mpi[@]}" -np 2 "$bin" --device cpu --elements 3001 --c-elements 4096 --c-iterations 16 \
    --steps 7 --warmup 2 --overlap compare --write all --quiet --tag ref-a \
    "${timing[@]}" --output "$out/a.h5" --summary-json "$out/a.json" --results-csv "$out/runs.csv" \
    >"$out/a.log"
# b: four ranks split across pairs, depth 3, float64, staged MPI in pieces, every third row.
"${mpi[@]}" -np 4 "$bin" --device cpu --elements 100003 --chunk 4096 --c-elements 4096 \
    --steps 9 --warmup 2 --depth 3 --pairing split --dtype float64 --alpha 0.37 --staging on \
    --overlap on --write every:3 --quiet --tag ref-b \
    "${timing[@]}" --output "$out/b.h5" --summary-json "$out/b.json" --results-csv "$out/runs.csv" \
    >"$out/b.log"
mv "$out" "$base/$2"
echo "$base/$2"
