# Figures a reader can take at face value (docs/PERFORMANCE.md): noise, a known difference found,
# old tree against new, NCCL against nccl-tests, stopped peers and the stress driver on the GPU.
# shellcheck shell=bash disable=SC2154  # new, mpi, dir, scratch, the runs: lab/lib/lab.sh's; ways
tiny=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 3000 --warmup 100
    --write none --c-elements 0)
large=(--transport nccl --elements 64Mi --depth 2 --overlap on --steps 60 --warmup 5 --write none
    --c-elements 0)

# steps_of PREFIX: the 4 KiB eager, 4 KiB graphs of 16 and 64 Mi launches, named PREFIX_KIND.
steps_of() {
    launch "${1}eager" 1 "${tiny[@]}"
    launch "${1}graphs16" 1 "${tiny[@]}" --graphs --graph-steps 16
    launch "${1}64M" 1 "${large[@]}"
}

stage_noise() {
    local i kind worse
    for i in $(seq 8); do
        steps_of "a$i/"
        steps_of "b$i/"
    done
    for kind in eager graphs16 64M; do
        compared "$kind" "$dir"/a?/$kind.json -- "$dir"/b?/$kind.json
        worse=0
        for i in $(seq 8); do
            scripts/compare "$dir/a$i/$kind.json" "$dir/b$i/$kind.json" >/dev/null 2>&1 || ((worse++))
        done
        echo "single-launch pairs, $kind: $worse of 8 called worse"
    done
}

# At depth 1 the next step's A and send wait for the last B.
stage_depth() {
    local i e d
    for i in $(seq 5); do for e in 1Ki 256Ki 4Mi; do for d in 1 2; do
        launch "${e}_d${d}_$i" 1 --transport nccl --elements $e --depth $d --overlap on \
            --steps 2000 --warmup 100 --write none --c-elements 0
    done; done; done
    for e in 1Ki 256Ki 4Mi; do
        compared "depth_$e" "$dir/${e}"_d2_?.json -- "$dir/${e}"_d1_?.json --across depth
    done
}

# A step that C sets (64 Mi values), so that its +9.4% is the step's.
stage_detect() {
    local i it
    for i in $(seq 5); do for it in 64 70; do
        launch "c${it}_$i" 1 --transport nccl --elements 1Ki --depth 2 --overlap on --steps 400 \
            --warmup 40 --write none --c-elements 64Mi --c-iterations $it
    done; done
    compared detect "$dir"/c64_?.json -- "$dir"/c70_?.json --across c_iterations
}

ab_steps() { steps_of "${TREE}_$REP/"; }

stage_ab() {
    alternate 8 ab_steps || return 1
    local kind
    for kind in eager graphs16 64M; do
        compared "$kind" "$dir"/old_?/$kind.json -- "$dir"/new_?/$kind.json
    done
}

stage_nccltests() {
    "$LAB_WORK/nccl-tests/build/sendrecv_perf" -b 4K -e 256M -f 4 -g 1 -w 50 -n 500 -c 1 \
        >"$dir/sendrecv_perf.txt" 2>&1
    echo "sendrecv_perf: exit $?"
    launch nccl_sizes 1 --transport nccl --elements 1Ki:64Mi:x4 --depth 2 --overlap off \
        --steps 500 --warmup 50 --write none --c-elements 0
    grep -E "^ +[0-9]" "$dir/sendrecv_perf.txt" | head -12
}

# A peer SIGSTOPped in ipc, ipc sm and staged MPI steps of 16 Mi values, two ranks, three times.
stop_each() {
    local way
    for _ in 1 2 3; do
        for way in "${ways[@]}"; do
            # shellcheck disable=SC2086  # way is the transport's words
            stopped "$1 $way" 2 2 --transport $way "${held_run[@]}"
        done
    done
}

stage_stop() {
    { stop_each time-sliced; under_mps stop_each mps; } | tee "$dir/stop.txt"
    in_bound "$dir/stop.txt" 18
}

# First one launch of the driver's GPU deck, to see that a fault lands mid-run.
stage_gpustress() {
    launch deck 2 --device cuda --elements 20000 --c-elements 1Mi --c-iterations 200000 \
        --steps 100 --warmup 2 --write none --transport ipc
    grep -m1 'time per step' "$dir/deck.log"
    scripts/stress --device gpu --runs 192 --jobs 4 --load 4 --binary "$new" --out-dir "$dir/stress" \
        >"$dir/stress.log" 2>&1
    echo "stress on the GPU: exit $? $(tail -n 1 "$dir/stress.log")"
}
