#!/usr/bin/env bash
# Usage: docs/structure-check/run.sh BINARY NAME
# The reference runs of docs/STRUCTURE.md, written in one fixed folder (paths are stored in the
# files, so both sides must use the same one) and then moved to /tmp/gpurelay-structure/NAME
# (or $STRUCTURE_BASE/NAME).
# Each deck writes DECK.h5 and DECK.json, and a row of runs.csv.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BINARY NAME" >&2; exit 2; }
# STRUCTURE_BASE moves the fixed folder, so that two checks can run at once (both sides of one
# check must use the same).
bin=$(realpath "$1"); base=${STRUCTURE_BASE:-/tmp/gpurelay-structure}; out=$base/run
rm -rf "$out" "${base:?}/$2"; mkdir -p "$out"
mpi=(mpirun --oversubscribe)
[[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
# Every phase of every step timed, where the binary can choose (timing = auto picks from how
# fast the warm-up ran, which differs from run to run).
timing=()
help=$("$bin" --help 2>/dev/null || true)
[[ $help == *--timing* ]] && timing=(--timing phases)
small=(--device cpu --elements 3001 --c-elements 4096 --c-iterations 16 --steps 7 --warmup 2)
run() {  # DECK NP ARGS...
    local deck=$1 np=$2; shift 2
    "${mpi[@]}" -np "$np" "$bin" "$@" --quiet --tag "ref-$deck" "${timing[@]}" \
        --output "$out/$deck.h5" --summary-json "$out/$deck.json" --results-csv "$out/runs.csv" \
        >"$out/$deck.log"
}
# a: two ranks, both passes (compare), every row written, float32, a length with a tail.
run a 2 "${small[@]}" --overlap compare --write all
# b: four ranks split across pairs, depth 3, float64, staged MPI in pieces, every third row.
run b 4 --device cpu --elements 100003 --chunk 4096 --c-elements 4096 --steps 9 --warmup 2 \
    --depth 3 --pairing split --dtype float64 --alpha 0.37 --staging on --overlap on --write every:3
# c-e: one rank playing both roles over each of its transports, depth 1 to 3.
run c 1 "${small[@]}" --transport ipc --depth 1 --overlap compare --write last
run d 1 "${small[@]}" --transport mpi --depth 2 --overlap off --write all
run e 1 "${small[@]}" --transport mpi --staging on --depth 3 --overlap on --write every:2
# f-g: ipc across two ranks, the copy engine and A writing in place.
run f 2 "${small[@]}" --transport ipc --depth 1 --overlap compare --write all
run g 2 "${small[@]}" --transport ipc --ipc-engine sm --depth 3 --overlap on --write last
# h: MPI between host buffers, four ranks, overlap off.
run h 4 "${small[@]}" --transport mpi --depth 2 --overlap off --write every:3
# i-j: the collectives.
run i 4 "${small[@]}" --pattern broadcast --group-size 2 --depth 2 --overlap compare --write all
run j 3 "${small[@]}" --pattern allreduce --depth 1 --dtype float64 --overlap on --write last
mv "$out" "$base/$2"
echo "$base/$2"
