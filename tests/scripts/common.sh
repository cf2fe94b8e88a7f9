# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this
# Shared set-up of the script tests, sourced by each: checks the two arguments
# (GPURELAY_BINARY REPO_ROOT), sets $binary, $root, $python and a temporary $tmp removed on exit,
# and defines fail(), need_modules() and mpirun_np().
set -euo pipefail
if [[ $# -ne 2 || "$1" == -h || "$1" == --help ]]; then
    echo "Usage: $0 GPURELAY_BINARY REPO_ROOT" >&2
    exit 2
fi
binary="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$2" && pwd)"
python="${GPURELAY_PYTHON:-/usr/bin/python3}"
[[ -x "$binary" ]] || { echo "FAIL: $binary is not an executable" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# need_modules MODULE...: skip the test (exit 77, CTest's SKIP_RETURN_CODE) naming the first
# Python module that $python cannot import: optional packages are a skip, not a failure.
need_modules() {
    local module
    for module in "$@"; do
        if ! "$python" -c "import $module" 2>/dev/null; then
            echo "SKIP: $python has no $module (python3-$module)"
            exit 77
        fi
    done
}

# mpirun_np N COMMAND...: COMMAND on N ranks, with what Open MPI needs as root and on few cores.
mpirun_np() {
    local launcher=(mpirun -np "$1")
    if ((EUID == 0)); then launcher+=(--allow-run-as-root); fi
    if (($(nproc) < $1)); then launcher+=(--oversubscribe); fi
    shift
    "${launcher[@]}" "$@"
}
