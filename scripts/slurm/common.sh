# shellcheck shell=bash
# Sourced by the batch templates in this folder (not a job script itself): the environment that
# lets Open MPI and NCCL start on a plain node and on an InfiniBand one, and the handling of the
# gpurelay flags given after the script name on the sbatch line. The templates find it from the
# job's record, so they run from any submit directory: a checkout's scripts/slurm/ or an
# installed PREFIX/share/gpurelay/slurm/.

# --- NCCL ---------------------------------------------------------------------------------
# Warnings and errors only. Set INFO once on a new machine: it logs the path NCCL chose for each
# pair (P2P/NVLink, SHM, NET/IB with GDRDMA, NET/Socket), the first thing to check when the
# bandwidth is low.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
# NVLink SHARP / multicast (NVLS) stays off: these hosts must not use NVLink multicast, and
# gpurelay's point-to-point sends never need it (NCCL sets it up for collectives).
export NCCL_NVLS_ENABLE=0

# --- Open MPI (transport = "mpi", and the bootstrap of NCCL) ---------------------------------
# The point-to-point layer (pml) is left to Open MPI: UCX, and with it InfiniBand or RoCE, where
# the node has such a device, else ob1 with shared memory within a node and TCP between nodes.
# Forcing OMPI_MCA_pml=ucx fails on a node without InfiniBand ("PML ucx cannot be selected":
# Open MPI 4.1 takes UCX only with one of its pml_ucx_tls transports, all InfiniBand or GPU
# ones), and restricting UCX_TLS to sm,self hides them all. UCX picks its own transports; set
# UCX_TLS or UCX_NET_DEVICES (e.g. mlx5_0:1) only to pin a site's choice. The old openib
# transport only prints deprecation warnings on InfiniBand nodes next to UCX. CUDA-aware MPI is
# not needed: gpurelay's MPI path stages device data through pinned host buffers (`chunk`).
export OMPI_MCA_btl="${OMPI_MCA_btl:-^openib}"

# --- gpurelay ---------------------------------------------------------------------------------
# The binary, the decks ($gpurelay_decks) and the launcher's filter, from this folder: in a
# checkout, its build/app/gpurelay, inputs/ and scripts/lib/; installed, PREFIX/bin/gpurelay,
# PREFIX/share/gpurelay/inputs/ and PREFIX/libexec/gpurelay/lib/. GPURELAY_BINARY picks another
# build (relative to the submit directory). Outputs go under outputs/ in the submit directory.
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

# launcher_stderr_open: the file descriptor $launcher_stderr into scripts/lib/launcher_stderr.sh,
# which leaves out what srun (and mpirun) print on top of an exit gpurelay has explained
# ("srun: error: node1: tasks 0-1: Exited with exit code 2"); launcher_stderr_close closes it
# and waits until the filter has written everything (the job's end would end it with it).
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

# gpurelay_launch LAUNCHER...: the launcher's command line with its stderr through the filter;
# returns its exit status (gpurelay's exit code) once the filter is done.
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

# gpurelay_job_args DECK DEFAULT_OUTPUT DEFAULT_TAG FLAGS...: sets the array job_args to the
# deck (unless FLAGS name one with --input), the output and tag (unless FLAGS set them: the
# user's win, and a flag given twice is an error), then FLAGS, which override the deck's keys.
gpurelay_job_args() {
    local deck="$1" output="$2" tag="$3"
    shift 3
    job_args=()
    gpurelay_has_flag input "$@" || job_args+=(--input "$deck")
    gpurelay_has_flag output "$@" || job_args+=(--output "$output")
    gpurelay_has_flag tag "$@" || job_args+=(--tag "$tag")
    job_args+=("$@")
}
