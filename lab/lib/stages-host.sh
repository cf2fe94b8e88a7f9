# The steps the host launches against the ceilings measured in the same call (PERFORMANCE.md's
# first sections; tables by lab/lib/perf_tables.py), and correctness on the GPU (tests/README.md).
# shellcheck shell=bash disable=SC2154  # new, mpi, dir, scratch, the runs: lab/lib/lab.sh's
big=(--elements 64Mi --depth 2 --overlap compare --steps 50 --warmup 5)

# checked NAME SCRIPT NP [FLAGS...] -- ARGS...: a tests/integration/SCRIPT case; exit, verdict.
checked() {
    local name=$1 script=$2 np=$3 flags=()
    shift 3
    while [[ $1 != -- ]]; do flags+=("$1"); shift; done
    shift
    on_path "$@"
    timeout -k 5 240 python3 "tests/integration/$script" --binary "$new" --mpirun "${mpi[*]}" \
        --np "$np" "${flags[@]}" -- "${run_args[@]}" >"$dir/$name.log" 2>&1
    echo "$name: exit $? $(grep -m1 '^ok' "$dir/$name.log")"
}

# overlap_matched PREFIX NP STEPS ARGS...: overlap compare at depth 1 and 2 with C made as long
# as the transfer was (measured with overlap off and C of 64 iterations).
overlap_matched() {
    local prefix=$1 np=$2 steps=$3 depth c
    shift 3
    launch "${prefix}_calibrate" "$np" "$@" --elements 64Mi --depth 2 --overlap off --steps 20 \
        --c-elements 64Mi --c-iterations 64 --write none
    c=$(python3 lab/lib/tables.py matched-c "$dir/${prefix}_calibrate.json")
    for depth in 1 2; do
        launch "${prefix}_overlap_d$depth" "$np" "$@" --elements 64Mi --depth $depth \
            --overlap compare --steps "$steps" --warmup 5 --c-elements 64Mi --c-iterations "$c" \
            --write none
    done
}

perf() { python3 lab/lib/perf_tables.py "$dir" --only "$1" | tee -a "$dir/tables.md"; }

# The stuck step: C made endless. The signalled runs: about 26 ms a step (C of 64 Mi x 8000).
stage_reliability() {
    expect 4 stuck 1 --device cuda --elements 1Mi --c-elements 64Mi --c-iterations 4000000000 \
        --steps 4 --warmup 1 --timeout-s 3
    local np
    for np in 1 2; do
        resumed "sigterm_np$np" $np --device cuda --elements 1Mi --c-elements 64Mi \
            --c-iterations 8000 --steps 1000 --warmup 2 --write every:5 --flush-every 10
    done
}

stage_sanitize() {
    local tool np
    for tool in memcheck racecheck synccheck; do
        for np in 1 2; do
            sanitized $tool "${tool}_np$np" $np "$new" --quiet --overwrite --output "$scratch/san.h5" \
                --elements 100003 --c-elements 4096 --steps 8 --warmup 2 --depth 2 \
                --overlap compare --write all
        done
    done
}

stage_pair() {
    local gpus sweep
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    ((gpus >= 2)) || { echo "pair: needs 2 GPUs, this machine has $gpus"; return 1; }
    GPURELAY_BENCH_MAX_BYTES=1G benched bench-transport-pair 300 "${mpi[@]}" -np 2 \
        build/bench/bench_transport
    sweep=(timeout 400 scripts/sweep --np 2 --out-dir "$scratch/sweep" --launcher "${mpi[*]} -np {np}")
    # Small tensors take many steps to time; large ones few.
    "${sweep[@]}" --csv "$dir/pair-nccl.csv" transport=nccl elements=1Ki,16Ki,256Ki depth=1,2,4 \
        overlap=compare steps=2000 warmup=100 write=none
    "${sweep[@]}" --csv "$dir/pair-nccl.csv" transport=nccl elements=4Mi,16Mi,64Mi,256Mi \
        depth=1,2,4 overlap=compare steps=60 warmup=5 write=none
    overlap_matched pair 2 60 --transport nccl
    perf two-gpu-transfer,two-gpu-overlap
}

# Odd sizes with every step written: the eager writer waits on events the graphs record.
stage_graphs() {
    local nps=(1) np depth tool
    (($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') >= 2)) && nps+=(2)
    for np in "${nps[@]}"; do
        timeout 400 scripts/sweep --np "$np" --out-dir "$scratch/sweep" \
            --launcher "${mpi[*]} -np {np}" --csv "$dir/graphs-np$np.csv" transport=nccl \
            elements=1Ki,16Ki,256Ki depth=1,2,4 graphs=false,true overlap=compare steps=2000 \
            warmup=100 write=none
        for depth in 1 2 4; do
            launch "np${np}_write_all_d$depth" "$np" --transport nccl --graphs --elements 100003 \
                --depth $depth --overlap compare --steps 50 --warmup 3 --write all
        done
        launch "np${np}_64Mi" "$np" --transport nccl --graphs --elements 64Mi --depth 2 \
            --overlap compare --steps 40 --warmup 5 --write last
    done
    for tool in memcheck racecheck; do
        sanitized $tool "sanitize_$tool" 1 "$new" --quiet --overwrite --output "$scratch/san.h5" \
            --graphs --elements 100003 --c-elements 4096 --steps 10 --warmup 2 --depth 2 \
            --overlap compare --write all
    done
}

# ipc_runs: two ranks on one GPU: bench_transport's ipc beside a device copy, steps over ipc, ipc
# sm and MPI (a light C), np 1 and 4, what auto picks, the dropped reuse wait, overlap matched.
ipc_runs() {
    mkdir -p "$dir"
    GPURELAY_BENCH_MAX_BYTES=256M benched bench-transport-ipc 200 "${mpi[@]}" -np 2 \
        build/bench/bench_transport --benchmark_filter='ipc_gpu|copy_d2d|mpi_staged_gpu'
    local size way
    for size in 16Mi 64Mi; do
        for way in ipc:ipc ipcsm:'ipc --ipc-engine sm' mpi:mpi; do
            # shellcheck disable=SC2086  # the transport's words
            launch "ipc_np2_${way%%:*}_$size" 2 --transport ${way#*:} --elements $size --depth 2 \
                --overlap compare --steps 30 --warmup 5 --c-elements 1Mi --c-iterations 16 --write last
        done
    done
    launch ipc_np1 1 --transport ipc "${big[@]}" --c-elements 64Mi --c-iterations 64
    launch ipc_auto 2 --elements 1Mi --steps 10 --warmup 2
    grep -q '"transport": "ipc' "$dir/ipc_auto.json" || echo "ipc_auto: auto did not pick ipc"
    launch ipc_np4 4 --transport ipc --elements 1000003 --depth 3 --overlap compare --steps 20 \
        --warmup 2 --write all
    expect 3 ipc_skip_reuse_wait 2 --transport ipc --debug-skip-reuse-wait --elements 1Mi --depth 1 \
        --overlap on --steps 8 --warmup 1 --c-elements 64Mi --c-iterations 2000
    overlap_matched ipc 2 40 --transport ipc
}

stage_ipc() {
    ipc_runs
    dir=$dir/mps under_mps ipc_runs
    perf ipc-transfer,ipc-steps
}

# One rank, NCCL to itself; the floor's step has no C, so the steps held against it have none (a
# tiny C shows what its two launches cost).
stage_small() {
    benched bench-floor 200 "${mpi[@]}" -np 1 build/bench/bench_floor
    local tiny=(--transport nccl --elements 1Ki --depth 2 --overlap on --steps 2000 --warmup 100
        --write none) mid=(--transport nccl --depth 2 --overlap on --steps 500 --warmup 20
        --write none) noc=(--c-elements 0) withc=(--c-elements 1Ki --c-iterations 16) t size
    for t in phases auto steps; do launch "small_4k_noc_eager_$t" 1 "${tiny[@]}" "${noc[@]}" --timing $t; done
    for t in 1 4 16; do
        launch "small_4k_noc_graphs_g$t" 1 "${tiny[@]}" "${noc[@]}" --graphs --graph-steps $t
    done
    launch small_4k_noc_graphs_g1_phases 1 "${tiny[@]}" "${noc[@]}" --graphs --timing phases
    launch small_4k_c_eager_auto 1 "${tiny[@]}" "${withc[@]}"
    launch small_4k_c_graphs_g1 1 "${tiny[@]}" "${withc[@]}" --graphs
    for size in 256Ki:1M 1Mi:4M 4Mi:16M; do  # float32: 256Ki values are 1 MiB
        launch "small_${size#*:}_noc_eager_auto" 1 "${mid[@]}" "${noc[@]}" --elements "${size%:*}"
        launch "small_${size#*:}_c_eager_auto" 1 "${mid[@]}" "${withc[@]}" --elements "${size%:*}"
    done
    launch small_1M_noc_eager_phases 1 "${mid[@]}" "${noc[@]}" --elements 256Ki --timing phases
    for size in 16Mi:64M 64Mi:256M; do
        launch "small_${size#*:}_noc_compare" 1 --transport nccl --elements "${size%:*}" --depth 2 \
            --overlap compare --c-elements 0 --steps 50 --warmup 5 --write none
    done
    launch small_graphs_write_all 1 --transport nccl --graphs --elements 100003 --depth 2 \
        --overlap compare --steps 40 --warmup 3 --write all
    launch small_graphs_g4_write_last 1 --transport nccl --graphs --graph-steps 4 \
        --elements 100003 --depth 2 --overlap compare --steps 41 --warmup 3 --timing sampled:3
    local slow=(--transport nccl --elements 1Mi --depth 1 --overlap on --c-elements 16Mi
        --c-iterations 4000 --warmup 1 --debug-skip-reuse-wait)
    expect 3 small_mismatch_counted 1 "${slow[@]}" --steps 6
    # In graphs of 4 (one end event a graph) and of 2 (units sharing one end event by twos).
    for t in 4 2; do
        expect 3 "small_mismatch_counted_graphs_g$t" 1 "${slow[@]}" --graphs --graph-steps $t \
            --steps 17 --timing steps
    done
    perf small-steps
    python3 -c 'import torch' 2>/dev/null || return 0
    local run
    for t in "small_4k_noc_eager_auto --c-elements 0" \
        "small_4k_c_eager_auto --c-elements 1Ki --c-iterations 16" \
        "small_4k_noc_graphs_g4 --c-elements 0 --graphs --graph-steps 4" \
        "small_4k_noc_graphs_g16 --c-elements 0 --graphs --graph-steps 16"; do
        read -ra run <<<"$t"
        timeout 200 python3 bench/torch_pipeline.py --elements 1Ki --depth 2 --steps 2000 \
            --warmup 100 "${run[@]:1}" --json "$dir/torch_${run[0]}.json" >>"$dir/torch.log" 2>&1
    done
    python3 lab/lib/torch_vs_gpurelay.py "$dir" | tee "$dir/torch.txt"
}

# NCCL needs a GPU per rank: on one GPU it runs a one-rank communicator (both collectives are
# device copies); the host-staged MPI transport runs ranks that share the GPU.
stage_collectives() {
    local spec np pattern transport
    for spec in "1 broadcast nccl" "1 allreduce nccl" "1 broadcast mpi" "3 broadcast mpi" \
        "2 allreduce mpi" "4 allreduce mpi"; do
        read -r np pattern transport <<<"$spec"
        checked "${pattern}_np${np}_${transport}_file" run_case.py "$np" -- --device cuda \
            --pattern "$pattern" --transport "$transport" --elements 100003 --c-elements 1Mi \
            --c-iterations 16 --steps 12 --warmup 2 --write all --overlap compare
    done
    for pattern in broadcast allreduce; do
        launch "collective_${pattern}_np1_nccl" 1 --pattern $pattern --transport nccl "${big[@]}" \
            --c-elements 64Mi --c-iterations 64
    done
    launch collective_broadcast_np3_mpi 3 --pattern broadcast --transport mpi --elements 16Mi \
        --depth 2 --overlap compare --steps 30 --warmup 3 --c-elements 16Mi --c-iterations 64
    launch collective_allreduce_np2_mpi 2 --pattern allreduce --transport mpi --elements 16Mi \
        --depth 2 --overlap compare --steps 30 --warmup 3 --c-elements 16Mi --c-iterations 64
    GPURELAY_BENCH_MAX_BYTES=256M benched bench-collectives 120 "${mpi[@]}" -np 1 \
        build/bench/bench_transport --benchmark_filter='nccl_(broadcast|allreduce)_plain'
    perf collectives
}

stage_bench() {
    local -x GPURELAY_BENCH_MAX_BYTES=1G
    benched bench-kernels 300 build/bench/bench_kernels --benchmark_min_time=0.05
    echo "bench_kernels: exit $?"
    benched bench-transport 300 "${mpi[@]}" -np 2 build/bench/bench_transport
    echo "bench_transport: exit $?"
    perf kernels
}

stage_suite() {
    ctest --test-dir build -LE 'slow|stress|slurm|nsys' -j 8 >"$dir/suite.log" 2>&1 &
    local suite=$!
    ctest --test-dir build -R '^ipc_peer_stopped_times_out$' --repeat until-fail:20 \
        --output-on-failure >"$dir/peer_stopped.log" 2>&1
    echo "ipc_peer_stopped_times_out beside the suite: exit $? ($(grep -c 'Passed' "$dir/peer_stopped.log") passed)"
    scripts/stress --runs 200 --jobs 8 --binary "$new" --out-dir "$dir/stress" >"$dir/stress.log" 2>&1
    echo "stress, 200 runs beside the suite: exit $? $(tail -n 2 "$dir/stress.log" | tr '\n' ' ')"
    wait $suite
    grep -E 'tests passed|tests failed|Not Run|Failed|\*\*\*' "$dir/suite.log" | tail -20
}

# sizes_of NAME NP ARGS...: nine sizes in one launch, then a launch each; their walls.txt.
sizes_of() {
    local name=$1 np=$2 start n
    shift 2
    start=$(date +%s%N)
    launch "one_$name" "$np" --elements 1Ki:64Mi:x4 "$@"
    echo "$name one launch wall_ms $((($(date +%s%N) - start) / 1000000))" | tee -a "$dir/walls.txt"
    start=$(date +%s%N)
    for n in 1Ki 4Ki 16Ki 64Ki 256Ki 1Mi 4Mi 16Mi 64Mi; do launch "sep_${name}_$n" "$np" --elements $n "$@"; done
    echo "$name separate launches wall_ms $((($(date +%s%N) - start) / 1000000))" | tee -a "$dir/walls.txt"
}

stage_sizes() {
    local args=(--depth 2 --overlap compare --write last --c-elements 4Mi --c-iterations 64
        --steps 200 --warmup 20)
    sizes_of nccl_1 1 --transport nccl "${args[@]}"
    sizes_of nccl_2 1 --transport nccl "${args[@]}"
    under_mps sizes_of ipc_1 2 --transport ipc "${args[@]}"
    checked list_nccl_np1 sizes_case.py 1 --expect 1024,100003,4194304 -- --device cuda \
        --transport nccl --elements 1Ki,100003,4Mi --steps 12 --warmup 2 --write all
    checked range_ipc_np2 sizes_case.py 2 --expect 4096,16384,65536,262144 -- --device cuda \
        --transport ipc --elements 4Ki:256Ki:x4 --steps 12 --warmup 2 --write all
    checked graphs_np1 sizes_case.py 1 --expect 4096,1048576 -- --device cuda --transport nccl \
        --graphs --graph-steps 4 --elements 4Ki,1Mi --depth 2 --steps 41 --warmup 3 --write last
    checked stop_resume_nccl sizes_case.py 1 --stop --expect 20000,40000,10000 -- --device cuda \
        --transport nccl --c-elements 16Mi --c-iterations 3000 --steps 160 --warmup 2 --write all \
        --flush-every 5 --overlap on --elements 20000,40000,10000
    tables sizes "$dir/results.csv" "$dir/walls.txt"
}

stage_ceilings() {
    local args=(--depth 2 --overlap compare --write none --c-elements 4Mi --c-iterations 64
        --warmup 5) e
    for e in 1Ki:2000 4Mi:200 64Mi:50; do
        launch "nccl_${e%:*}" 1 --transport nccl --elements "${e%:*}" --steps "${e#*:}" "${args[@]}"
        under_mps launch "ipc_${e%:*}" 2 --transport ipc --elements "${e%:*}" --steps "${e#*:}" \
            "${args[@]}"
    done
    grep -h -E 'ceilings|attributed|time per step|^overlap' "$dir"/*.log
}
