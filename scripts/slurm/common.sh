# shellcheck shell=bash
# Sourced by the batch templates here: the Open MPI and NCCL environment of a plain node and an
# InfiniBand one, and the gpurelay flags given after the script on the sbatch line.

# --- NCCL ---------------------------------------------------------------------------------
# Warnings and errors only. INFO once on a new machine logs each pair's path (P2P/NVLink, SHM,
# NET/IB with GDRDMA, NET/Socket), the first thing to check when the bandwidth is low.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
# NVLink SHARP / multicast (NVLS) stays off: these hosts must not use NVLink multicast, and
# gpurelay's point-to-point sends never need it (NCCL sets it up for collectives).
export NCCL_NVLS_ENABLE=0

# --- Open MPI (transport = "mpi", and the bootstrap of NCCL) ---------------------------------
# The pml is Open MPI's choice: UCX where the node has InfiniBand or RoCE, else ob1 (pml=ucx fails
# without: Open MPI 4.1's pml_ucx_tls are all InfiniBand or GPU transports). Set UCX_TLS or
# UCX_NET_DEVICES (mlx5_0:1) only to pin a site's choice. openib only warns of its deprecation.
# No CUDA-aware MPI: the MPI path stages through pinned buffers.
export OMPI_MCA_btl="${OMPI_MCA_btl:-^openib}"

# --- gpurelay ---------------------------------------------------------------------------------
# The binary, decks and the launcher's filter, of a checkout or of PREFIX; GPURELAY_BINARY picks
# another (relative to the submit folder, where outputs/ goes).
slurm_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034  # gpurelay_decks is the templates'
if [[ -f "$slurm_dir/../../CMakeLists.txt" ]]; then
    gpurelay_binary="$slurm_dir/../../build/app/gpurelay"
    gpurelay_decks="$(cd "$slurm_dir/../../inputs" && pwd)"
    gpurelay_lib="$slurm_dir/../lib"
else
    gpurelay_binary="$slurm_dir/../../../bin/gpurelay"
    gpurelay_decks="$(cd "$slurm_dir/../inputs" && pwd)"
    gpurelay_lib="$slurm_dir/../../../libexec/gpurelay/lib"
fi
gpurelay_binary="${GPURELAY_BINARY:-$gpurelay_binary}"
[[ -x "$gpurelay_binary" ]] || {
    echo "$gpurelay_binary not found: build it (scripts/build), or set GPURELAY_BINARY" >&2
    exit 2
}
mkdir -p outputs # gpurelay refuses an output folder that does not exist

# launcher_stderr_open: fd $launcher_stderr into lib/launcher_stderr.sh; launcher_stderr_close
# waits until it has written all (the job's end would end it).
launcher_stderr_open() {
    exec {launcher_stderr}> >(
        trap '' INT TERM USR1 USR2 HUP
        exec "$gpurelay_lib/launcher_stderr.sh" >&2
    )
    launcher_stderr_pid=$!
}
launcher_stderr_close() {
    exec {launcher_stderr}>&-
    wait "$launcher_stderr_pid" || true
}

# gpurelay_launch LAUNCHER...: its stderr through the filter; its exit status once that is done.
gpurelay_launch() {
    local status=0
    launcher_stderr_open
    "$@" 2>&"$launcher_stderr" || status=$?
    launcher_stderr_close
    return "$status"
}

# gpurelay_has_flag NAME FLAGS...: whether FLAGS set --NAME, as "--NAME VALUE" or "--NAME=VALUE".
gpurelay_has_flag() {
    local name="$1" arg
    shift
    for arg in "$@"; do
        [[ "$arg" == "--$name" || "$arg" == "--$name="* ]] && return 0
    done
    return 1
}

# gpurelay_job_args DECK OUTPUT TAG FLAGS...: job_args, the deck, output and tag that FLAGS do
# not set (a flag given twice is an error), then FLAGS, which override the deck's keys.
gpurelay_job_args() {
    local deck="$1" output="$2" tag="$3"
    shift 3
    job_args=()
    gpurelay_has_flag input "$@" || job_args+=(--input "$deck")
    gpurelay_has_flag output "$@" || job_args+=(--output "$output")
    gpurelay_has_flag tag "$@" || job_args+=(--tag "$tag")
    job_args+=("$@")
}
