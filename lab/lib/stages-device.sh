# The builds, and the step the GPU drives itself (launch = "device"; docs/PERFORMANCE.md's
# section on it): two ranks share the GPU under MPS, one rank runs both roles on two streams.
# shellcheck shell=bash disable=SC2154  # new, mpi, dir, scratch, the runs: lab/lib/lab.sh's
device=(--transport ipc --ipc-engine sm --launch device)

stage_build() {
    build_tree . new || return 1
    if [[ -e .devwork/nccl-tests.tar ]] && ! cpu; then
        rm -rf "$LAB_WORK/nccl-tests" && mkdir -p "$LAB_WORK/nccl-tests"
        tar -xf .devwork/nccl-tests.tar -C "$LAB_WORK/nccl-tests"
        local nccl_h
        nccl_h=$(find /usr/local/cuda/ /usr/include /usr/local -name nccl.h 2>/dev/null | head -1)
        (cd "$LAB_WORK/nccl-tests" && make -j 16 MPI=0 NCCL_HOME="$(dirname "$(dirname "$nccl_h")")" \
            NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" src.build) \
            >"$LAB_WORK/build-nccl-tests.log" 2>&1
        echo "build nccl-tests: exit $?"
    fi
    gpu_facts
}

stage_buildold() {
    rm -rf "$LAB_WORK/old" && mkdir -p "$LAB_WORK/old" && tar -xf .devwork/old.tar -C "$LAB_WORK/old" &&
        build_tree "$LAB_WORK/old" old
}

stage_device_correct() {
    ctest --test-dir build -R '^(handoff|pipeline_np1)$' --output-on-failure >"$dir/ctest.log" 2>&1
    echo "handoff, pipeline_np1: exit $?"
    under_mps ctest --test-dir build -R '^pipeline_np2$' --output-on-failure >>"$dir/ctest.log" 2>&1
    echo "pipeline_np2 (under MPS): exit $? ($(grep -c 'SKIPPED' "$dir/ctest.log") skipped)"
    local each=(--elements 1Ki:64Mi:x4 --steps 20 --warmup 2 --c-elements 1Mi) depth
    for depth in 1 2 4 64; do
        launch "np1_d$depth" 1 "${device[@]}" "${each[@]}" --depth $depth --overlap compare --write last
        under_mps launch "np2_d$depth" 2 "${device[@]}" "${each[@]}" --depth $depth --overlap compare \
            --write last
    done
    for overlap in off on; do
        under_mps launch "np2_$overlap" 2 "${device[@]}" "${each[@]}" --overlap $overlap --write all
    done
    grep -h "verification" "$dir"/np*.log | sort | uniq -c
}

# Without the reuse wait, A rewrites a slot before a slow C lets B read it: verification must fail.
stage_device_reuse() {
    local race=(--elements 4Ki --depth 1 --steps 6 --warmup 1 --overlap on --c-elements 64Mi
        --c-iterations 4000 --calibrate false --write last)
    under_mps expect 0 kept_np2 2 "${device[@]}" "${race[@]}"
    under_mps expect 3 dropped_np2 2 "${device[@]}" "${race[@]}" --debug-skip-reuse-wait
    expect 0 kept_np1 1 "${device[@]}" "${race[@]}"
    expect 3 dropped_np1 1 "${device[@]}" "${race[@]}" --debug-skip-reuse-wait
}

stage_device_stop() {
    local i
    for i in $(seq 10); do
        stopped "stop$i" 2 $((i % 2 + 1)) "${device[@]}" "${long_run[@]}"
    done | tee "$dir/stop.txt"
    in_bound "$dir/stop.txt" 10
}

stage_device_resume() {
    resumed np1 1 "${device[@]}" "${long_run[@]}" --write every:1000000
    under_mps resumed np2 2 "${device[@]}" "${long_run[@]}" --write every:1000000
}

# np 2 time-sliced (the sanitizer does not run under MPS) and np 1 (a sanitizer that ran one
# process's kernels one at a time would leave its roles waiting for each other: exit 4).
stage_device_sanitize() {
    local tool np
    for tool in memcheck racecheck synccheck; do
        for np in 2 1; do
            sanitized $tool "${tool}_np$np" $np "$new" "${device[@]}" --device cuda --elements 64Ki \
                --depth 2 --steps 20 --warmup 2 --device-blocks 4 --c-elements 64Ki --write every:4 \
                --timeout-s 30 --output "$scratch/sanitize.h5" --overwrite --quiet
        done
    done
    sanitized memcheck handoff_test 1 build/tests/kernels/handoff_test --gtest_filter='*cuda*'
}

# sendrecv_perf -G 1 is a rank to itself as one graph: a bare transfer, no A or B.
stage_device_fast() {
    local sizes=(--elements 1Ki:64Mi:x4 --depth 2 --overlap on --steps 2000 --warmup 200
        --write none --c-elements 0) perf=$LAB_WORK/nccl-tests/build/sendrecv_perf np wrap=()
    if [[ -x $perf ]]; then
        $perf -b 4K -e 256M -f 4 -g 1 -w 50 -n 500 -c 1 -G 1 >"$dir/sendrecv_perf_G1.txt" 2>&1
        echo "sendrecv_perf -G 1: exit $?"
    fi
    for np in 1 2; do
        ((np == 2)) && wrap=(under_mps)
        "${wrap[@]}" "${mpi[@]}" -np $np build/bench/bench_handoff \
            --benchmark_out="$dir/handoff_np$np.json" --benchmark_out_format=json \
            >"$dir/handoff_np$np.txt" 2>&1
        echo "bench_handoff np $np: exit $?"
    done
    launch device_np1 1 "${device[@]}" "${sizes[@]}"
    under_mps launch device_np2 2 "${device[@]}" "${sizes[@]}"
    launch graphs16_np1 1 --transport nccl --graphs --graph-steps 16 "${sizes[@]}"
    launch eager_np1 1 --transport nccl "${sizes[@]}"
    under_mps launch ipc_eager_np2 2 --transport ipc --ipc-engine sm "${sizes[@]}"
    grep -h "us_per_handoff" "$dir"/handoff_np*.json | head -4
    tables steps "$dir/results.csv"
}

stage_device_large() {
    local big=(--elements 64Mi --depth 2 --overlap on --steps 300 --warmup 20 --write none
        --c-elements 0) i
    for i in $(seq 8); do
        launch "device_$i" 1 "${device[@]}" "${big[@]}"
        launch "graphs16_$i" 1 --transport nccl --graphs --graph-steps 16 "${big[@]}"
    done
    compared large "$dir"/graphs16_*.json -- "$dir"/device_*.json \
        --across launch,transport,ipc_engine,graphs,graph_steps
}

# C of inputs/overlap-study.toml (16 Mi values x 64): the step against C's time.
stage_device_overlap() {
    local c=(--c-elements 16Mi --c-iterations 64 --depth 2 --overlap compare --steps 200
        --warmup 20 --write none) size blocks
    for size in 1Ki 16Mi; do
        launch "device_np1_$size" 1 "${device[@]}" "${c[@]}" --elements $size
        under_mps launch "device_np2_$size" 2 "${device[@]}" "${c[@]}" --elements $size
        launch "graphs16_np1_$size" 1 --transport nccl --graphs --graph-steps 16 "${c[@]}" \
            --elements $size
    done
    for blocks in 1 4 16 66 132; do
        launch "blocks${blocks}_np1" 1 "${device[@]}" "${c[@]}" --elements 16Mi --device-blocks $blocks
    done
    tables steps "$dir/results.csv"
}
