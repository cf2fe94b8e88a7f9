# A relay across N stages on one GPU (docs/PERFORMANCE.md): lines against their hops as pairs,
# binding, MPI's copies, host waits, plain MPI's line, stopped stages, sanitizers (tables.py relay).
# shellcheck shell=bash disable=SC2154,SC2034  # lab/lib/lab.sh sets and reads these
ways=(ipc 'ipc --ipc-engine sm' 'mpi --staging on')

# way_tag WAY: a way's name in a launch's name (ipc_ipc-engine_sm, mpi_staging_on).
way_tag() {
    local tag=${1// /_}
    echo "${tag//--/}"
}

# sized SIZE WAY: a relay's size flags (4k or 64M) into the array size_args; the default depth.
sized() {
    size_args=(--elements 1Ki --steps 2000 --warmup 100)
    [[ $1 == 64M ]] && size_args=(--elements 64Mi --steps 100 --warmup 5)
    [[ $1 == 64M && $2 == mpi* ]] && size_args=(--elements 64Mi --steps 30 --warmup 5)
    size_args+=(--overlap on --write last --c-elements 0)
}

# relay NAME N WAY ARGS...: a relay of N stages over WAY (a transport and its flags).
relay() {
    local name=$1 n=$2 way=$3
    shift 3
    # shellcheck disable=SC2086  # way is the transport's words
    launch "$name" "$n" --pattern relay --transport $way "$@"
}

# A line of N stages against N - 1 pairs side by side (--group-size 2 over 2(N - 1) ranks: the
# same hops at once, no stage waiting on another's), and the 2-stage line; unbound.
stage_lines() {
    local MPI_OPTS="--bind-to none" way run size depth rep name n
    for way in "${ways[@]}"; do
        for run in 4k:2:1 4k:8:2 4k:2:3 64M:2:4; do
            IFS=: read -r size depth rep <<<"$run"
            sized "$size" "$way"
            size_args+=(--depth "$depth")
            name=$(way_tag "$way")_${size}_d${depth}_$rep
            relay "$name/line2" 2 "$way" "${size_args[@]}"
            for n in 3 4; do
                relay "$name/line$n" $n "$way" "${size_args[@]}"
                relay "$name/pairs$((n - 1))" $((2 * (n - 1))) "$way" "${size_args[@]}" --group-size 2
            done
        done
    done
    tables relay "$dir"
}

# How many cores a GPU-path rank needs (the staged transport's rank runs 3 threads, 5 in a
# middle stage); at 4 KiB, alternated twice.
stage_cores() {
    lscpu >"$dir/lscpu.txt" 2>&1
    nvidia-smi topo -m >"$dir/topo.txt" 2>&1
    local rep n way how
    for rep in 1 2; do for n in 2 4; do for way in "${ways[@]}"; do
        sized 4k "$way"
        for how in "core1:--bind-to core" "core2:--bind-to core --map-by slot:PE=2" \
            "none:--bind-to none"; do
            MPI_OPTS=${how#*:} relay "$(way_tag "$way")_n${n}_${how%%:*}_$rep" $n "$way" \
                "${size_args[@]}"
        done
    done; done; done
    tables relay "$dir"
}

# Whether a staged line's hops are slower than the same hops as pairs because of how MPI copies
# between processes: cma (the receiver reads the sender's memory) and emulated; unbound.
stage_copies() {
    ompi_info --param btl vader --level 9 | grep -A2 single_copy >"$dir/ompi_info.txt" 2>&1
    local mech args=(--elements 64Mi --depth 2 --overlap on --steps 20 --warmup 3 --write last
        --c-elements 0)
    for mech in ${COPIES_MECHS:-cma emulated}; do
        local MPI_OPTS="--bind-to none --mca btl_vader_single_copy_mechanism $mech"
        relay "${mech}_line3" 3 'mpi --staging on' "${args[@]}"
        relay "${mech}_pairs2" 4 'mpi --staging on' "${args[@]}" --group-size 2
        relay "${mech}_line4" 4 'mpi --staging on' "${args[@]}"
        relay "${mech}_pairs3" 6 'mpi --staging on' "${args[@]}" --group-size 2
        relay "${mech}_line2" 2 'mpi --staging on' "${args[@]}"
    done
    tables relay "$dir"
}

# Whether a middle stage's two hops slow each other without the GPU: the staged transport on the
# GPU beside MPI between host buffers on the CPU path, alternated twice; unbound.
stage_hostmpi() {
    local MPI_OPTS="--bind-to none" rep path args
    for rep in 1 2; do for path in ${HOSTMPI_PATHS:-gpu cpu}; do
        args=(--pattern relay --transport mpi --elements 64Mi --depth 2 --overlap on --steps 20
            --warmup 3 --write last --c-elements 0)
        if [[ $path == gpu ]]; then args+=(--staging on); else args+=(--device cpu); fi
        launch "${path}_line2_$rep" 2 "${args[@]}"
        launch "${path}_line3_$rep" 3 "${args[@]}"
        launch "${path}_pairs2_$rep" 4 "${args[@]}" --group-size 2
    done; done
    tables relay "$dir"
}

# bench_line: plain MPI between host buffers; -np 4: a line of 3 against 2 pairs, 6: 4 v 3; unbound.
stage_mpiline() {
    local mech np opts
    for mech in default cma; do for np in 4 6; do
        opts=()
        [[ $mech == cma ]] && opts=(--mca btl_vader_single_copy_mechanism cma)
        GPURELAY_BENCH_MAX_BYTES=256M timeout 300 "${mpi[@]}" --bind-to none "${opts[@]}" -np $np \
            build/bench/bench_line --benchmark_out="$dir/${mech}_np$np.json" \
            --benchmark_out_format=json >"$dir/${mech}_np$np.log" 2>&1
        echo "bench_line ${mech}, np $np: exit $?"
    done; done
    tables mpiline "$dir"
}

# relays_of SIZE [WAY...]: relays of 2, 3 and 4 stages over each WAY (default all), named for
# alternate's tree and repetition.
relays_of() {
    local size=$1 n way
    shift
    (($#)) || set -- "${ways[@]}"
    for n in 2 3 4; do for way in "$@"; do
        sized "$size" "$way"
        relay "${TREE:-new}_$(way_tag "$way")_n${n}_$size${REP:+_$REP}" $n "$way" "${size_args[@]}"
    done; done
}

# A middle stage both receives and sends (host functions on its streams serialized, sequence
# words do not): the old tree and this one under MPS; the sanitizer does not run under MPS.
stage_staged() {
    local size pattern
    for size in 4k 64M; do under_mps alternate 2 relays_of $size 'mpi --staging on'; done
    for pattern in broadcast allreduce; do
        under_mps launch "${pattern}_np3" 3 --pattern $pattern --staging on --elements 1Mi \
            --depth 3 --steps 50 --write last
    done
    sanitized memcheck memcheck_pair 2 "$new" --transport mpi --staging on --elements 64Ki \
        --chunk 16384 --depth 2 --steps 20 --warmup 2 --output "$scratch/san.h5" --overwrite --quiet
    tables relay "$dir"
}

stage_waits() {
    under_mps alternate 2 relays_of 4k
    under_mps relays_of 64M
    local rep
    for rep in 1 2; do
        under_mps stopped "mps staged pair" 2 2 --transport mpi --staging on "${held_run[@]}"
        stopped "time-sliced staged pair" 2 2 --transport mpi --staging on "${held_run[@]}"
    done | tee "$dir/stop.txt"
    tables relay "$dir"
}

# What the staged relay's hops share at 64 Mi: pieces of 1, 4 (the default) and 16 MiB, unbound.
stage_hops() {
    local n chunk
    for n in 2 3; do for chunk in 1Mi 4Mi 16Mi; do
        MPI_OPTS="--bind-to none" relay "n${n}_chunk$chunk" $n 'mpi --staging on' --chunk $chunk \
            --elements 64Mi --depth 2 --overlap on --steps 30 --warmup 5 --write last --c-elements 0
    done; done
    for n in 1 2; do stopped "staged pair $n" 2 2 --transport mpi --staging on "${held_run[@]}"; done
    tables relay "$dir"
}

# memcheck (out-of-bounds, misaligned accesses) and synccheck (barriers), a sanitizer a rank.
stage_relaycheck() {
    local tool way
    for tool in memcheck synccheck; do for way in "${ways[@]}"; do
        # shellcheck disable=SC2086  # way is the transport's words
        sanitized $tool "${tool}_$(way_tag "$way")" 3 "$new" --device cuda --pattern relay \
            --transport $way --chunk 16384 --elements 64Ki --depth 2 --steps 20 --warmup 2 \
            --output "$scratch/san.h5" --overwrite --quiet
    done; done
}

stage_relaystop() {
    local rep way
    for rep in 1 2; do for way in "${ways[@]}"; do
        # shellcheck disable=SC2086  # way is the transport's words
        stopped "relay of 3, $way" 3 2 --pattern relay --transport $way "${held_run[@]}"
    done; done | tee "$dir/stop.txt"
    in_bound "$dir/stop.txt" 6
}
