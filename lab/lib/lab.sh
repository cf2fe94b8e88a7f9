# The lab's one library, sourced by lab/gpu-check and by each stage it starts (stage_* in the
# files sourced at the end). Its state is in the environment, so that under_mps keeps it:
#   LAB_WORK  the work folder: gpu.txt, build-*.log, a folder per stage; h5/ holds the files
#   LAB_CPU   1 on the CPU path: --device cpu, no MPS, nvidia-smi or compute-sanitizer
#   dir       the running stage's folder, $LAB_WORK/STAGE
#   BIN       the gpurelay a launch runs (this tree's, unless a stage sets $old)
#   MPI_OPTS  mpirun's options beside its defaults (--bind-to none, --mca ...)
# shellcheck disable=SC2034,SC2154  # the stage files read these; dir comes from the driver
new=build/app/gpurelay
old=${LAB_WORK:-/tmp}/old/build/app/gpurelay
scratch=${LAB_WORK:-/tmp}/h5
cpu() { [[ ${LAB_CPU:-0} == 1 ]]; }
mpi=(mpirun --oversubscribe)
[[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
mkdir -p "$scratch"
# A launch long enough to be stopped or signalled in its steps: about 23 s under launch = device
# on an H100 (2.9 µs a step), 20 s on the CPU path (10 µs); its per-step record 1 GB at two ranks.
long_run=(--elements 1Ki --overlap on --c-elements 0 --steps "$(cpu && echo 2000000 || echo 8000000)")
# A peer stopped in the host's steps with 64 MiB in flight (16 Mi values, C beside them): 0.1 to
# 20 ms a step on the GPU (ipc under MPS to staged MPI), so that the steps outlast the stop.
held_run=(--elements 16Mi --steps 100000 --warmup 2 --c-elements 1Mi --c-iterations 16)

gpu_facts() {
    if cpu; then
        echo "CPU path: $(uname -n), $(nproc) cores"
    else
        nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm \
            --format=csv
    fi | tee "$LAB_WORK/gpu.txt"
}

# build_tree DIR NAME: the tree at DIR built with the benchmarks (log $LAB_WORK/build-NAME.log).
build_tree() {
    local log=$LAB_WORK/build-$2.log gpu=(-DGPURELAY_CUDA=ON -DGPURELAY_PYTHON="$(command -v python3)")
    cpu && gpu=()
    if (cd "$1" && cmake --preset default "${gpu[@]}" -DGPURELAY_BENCH=ON &&
        cmake --build --preset default -j "$(nproc)") >"$log" 2>&1; then
        echo "build $2: ok"
    else
        echo "build $2: FAILED"
        tail -30 "$log"
        return 1
    fi
}

# on_path ARGS...: gpurelay's flags into the array run_args; on the CPU path --device cpu only.
on_path() {
    run_args=("$@")
    cpu || return 0
    run_args=()
    while (($#)); do
        if [[ $1 == --device ]]; then shift 2; else run_args+=("$1"); shift; fi
    done
    run_args+=(--device cpu)
}

# gpurelay NP ARGS...: $BIN's ranks under mpirun, within 300 s (LAUNCH_S), on this machine's path.
gpurelay() {
    local np=$1
    shift
    on_path "$@"
    # shellcheck disable=SC2086  # MPI_OPTS is a list of words
    timeout -k 5 "${LAUNCH_S:-300}" "${mpi[@]}" ${MPI_OPTS:-} -np "$np" "${BIN:-$new}" \
        "${run_args[@]}"
}

# said LOG: the line gpurelay ended with (an error, a stop, failed verification), not its header.
said() { grep '^gpurelay: ' "$1" | grep -vm1 ' rank(s), ' | cut -c1-160; }

# launch NAME NP ARGS...: one launch into $dir/NAME.{json,log} and $dir/results.csv (tag NAME).
launch() {
    local name=$1 np=$2 code
    shift 2
    mkdir -p "$(dirname "$dir/$name")"
    gpurelay "$np" --overwrite --output "$scratch/${name//\//_}.h5" \
        --summary-json "$dir/$name.json" --results-csv "$dir/results.csv" --tag "$name" "$@" \
        >"$dir/$name.log" 2>&1
    code=$?
    rm -f "$scratch/${name//\//_}.h5"
    echo "$name exit $code$( ((code)) && said "$dir/$name.log" | sed 's/^/: /')"
    return $code
}

# expect CODE NAME NP ARGS...: a launch that must end with exit CODE: whether it did, its line.
expect() {
    local want=$1 code
    shift
    launch "$@" >/dev/null
    code=$?
    echo "$1 exit $code ($([[ $code == "$want" ]] && echo as || echo NOT as) expected, $want)" \
        "$(said "$dir/$1.log")"
}

# under_mps COMMAND...: COMMAND with every launch's ranks sharing the GPU through one MPS daemon.
under_mps() {
    cpu && { "$@"; return; }
    # shellcheck disable=SC2016  # expanded by the inner shell
    scripts/with-mps bash -c 'source lab/lib/lab.sh && "$@"' under_mps "$@"
}

# alternate REPS COMMAND...: COMMAND with the old tree's gpurelay then this tree's, REPS times:
# alternated, so that drift hits both alike.
alternate() {
    local reps=$1 rep
    shift
    [[ -x $old ]] || { echo "no old tree at $old: run the buildold stage first"; return 1; }
    for rep in $(seq "$reps"); do
        BIN=$old TREE=old REP=$rep "$@"
        BIN=$new TREE=new REP=$rep "$@"
    done
}

# compared NAME BASE... -- NEW... [--across KEYS]: scripts/compare into $dir/cmp_NAME.txt.
compared() {
    local name=$1
    shift
    scripts/compare "$@" >"$dir/cmp_$name.txt" 2>&1
    echo "compare $name: exit $? ($(grep -m1 'time_per_step_ms' "$dir/cmp_$name.txt" | tr -s ' '))"
    tail -n 1 "$dir/cmp_$name.txt" | cut -c1-160
}

# in_steps LOG PID: waits (60 s at most) for launcher PID's timed steps: a progress line that is
# not its last (the header comes before the warm-up ends); fails when the launcher ends first.
in_steps() {
    local t=0
    until grep -E '^progress: ' "$1" 2>/dev/null | grep -qvE 'step ([0-9]+) of \1;'; do
        kill -0 "$2" 2>/dev/null && ((t++ < 600)) || return 1
        sleep 0.1
    done
}

pause() { sleep "$(python3 -c 'import random; print(round(random.uniform(0.2, 3), 2))')"; }

# stopped NAME NP PICK ARGS...: the PICK-th rank process SIGSTOPped 0.2 to 3 s after in_steps
# (ARGS outlast 13 s: long_run); the others' timeout_s (3 s) must end the job: exit 4, one line.
stopped() {
    local name=$1 np=$2 pick=$3 out=$scratch/stop.h5 log=$dir/$1.log pid code start launcher
    shift 3
    rm -f "$out" "$out.partial" "$out.lock"
    LAUNCH_S=60 gpurelay "$np" --output "$out" --write none --timeout-s 3 "$@" >"$log" 2>&1 &
    launcher=$!
    if ! in_steps "$log" $launcher; then
        wait $launcher
        echo "$name: exit $? before its steps: $(said "$log")"
        return 1
    fi
    pause
    pid=$(pgrep -f "^${BIN:-$new} .*$out" | sort -n | sed -n "${pick}p")
    kill -STOP "$pid" 2>/dev/null || echo "$name: the run ended before the stop"
    start=$SECONDS
    wait $launcher
    code=$?
    kill -CONT "$pid" 2>/dev/null
    pkill -9 -f "^${BIN:-$new} .*$out"
    # Under MPS the next launch finds the device busy until the killed clients are gone.
    for _ in $(seq 50); do pgrep -f "^${BIN:-$new} .*$out" >/dev/null || break; sleep 0.2; done
    echo "$name: rank process $pick stopped in its steps: exit $code after $((SECONDS - start)) s:" \
        "$(said "$log")"
}

# in_bound FILE N: how many of FILE's N stopped peers ended the job with exit 4 in timeout_s + 5 s.
in_bound() {
    echo "stopped in their steps, exit 4 within 8 s: $(grep -cE 'in its steps: exit 4 after [0-8] s' "$1") of $2"
}

# resumed NAME NP ARGS...: a launch run through, and the same SIGTERMed 0.2 to 3 s after in_steps
# (ARGS as for stopped), exit 143, then --resume'd to exit 0; their /y must be identical.
resumed() {
    local name=$1 np=$2 whole=$scratch/$1-whole.h5 cut=$scratch/$1-cut.h5 log=$dir/$1.log code \
        launcher line
    shift 2
    rm -f "$whole" "$cut" "$cut.partial" "$cut.lock"
    gpurelay "$np" --output "$whole" "$@" >"$dir/$name-whole.log" 2>&1
    echo "$name run through: exit $?"
    gpurelay "$np" --output "$cut" "$@" >"$log" 2>&1 &
    launcher=$!
    in_steps "$log" $launcher && pause
    pkill -TERM -f "^${BIN:-$new} .*$cut"
    wait $launcher
    code=$?
    line=$(grep -m1 '^gpurelay: stopped by SIGTERM' "$log" | grep -o 'after step [0-9]* of [0-9]*')
    if [[ -z $line ]]; then
        echo "$name: NOT STOPPED by SIGTERM (exit $code): the run ended first"
        return 1
    fi
    echo "$name SIGTERM: exit $code (143 expected), stopped $line"
    gpurelay "$np" --output "$cut" --resume "$@" >>"$log" 2>&1
    echo "$name --resume: exit $?"
    same_y "$whole" "$cut"
    rm -f "$whole" "$cut" "$whole.y" "$cut.y"
}

# same_y A B: whether two result files' /y are identical, bit for bit.
same_y() {
    if h5dump -d /y -b LE -o "$1.y" "$1" >/dev/null 2>&1 &&
        h5dump -d /y -b LE -o "$2.y" "$2" >/dev/null 2>&1 && cmp -s "$1.y" "$2.y"; then
        echo "/y identical to the uninterrupted run's ($(stat -c %s "$1.y") bytes)"
    else
        echo "/y DIFFERS from the uninterrupted run's (or a file has none)"
    fi
}

# sanitized TOOL NAME NP PROGRAM ARGS...: NP ranks of PROGRAM under compute-sanitizer; NCCL's
# handled probes (cudaFuncGetAttributes on kernels not built for this GPU) counted apart.
sanitized() {
    local tool=$1 name=$2 np=$3 log=$dir/$2.log
    shift 3
    if cpu || ! command -v compute-sanitizer >/dev/null; then
        echo "$name: no compute-sanitizer on this path: not run"
        return
    fi
    timeout -k 5 300 "${mpi[@]}" -np "$np" compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$@" >"$log" 2>&1
    local code=$? clean reports probes
    clean=$(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\)' "$log")
    reports=$(grep -E '^========= [A-Z]' "$log" | grep -cvE 'COMPUTE-SANITIZER|SUMMARY')
    probes=$(grep -cE '^========= .*cudaErrorNoKernelImageForDevice.*cudaFuncGetAttributes' "$log")
    echo "$name ($tool, np $np): exit $code, $clean of $np ranks' summaries clean," \
        "$reports other reports ($probes of them NCCL's handled probes)"
}

tables() { python3 lab/lib/tables.py "$@" | tee "$dir/$1.txt"; }

# benched NAME SECONDS COMMAND...: a benchmark within SECONDS into $dir/NAME.json and NAME.txt.
benched() {
    local name=$1 seconds=$2
    shift 2
    timeout "$seconds" "$@" --benchmark_out="$dir/$name.json" --benchmark_out_format=json \
        >"$dir/$name.txt" 2>&1
}

for stages in lab/lib/stages-*.sh; do
    # shellcheck source=/dev/null
    source "$stages"
done
