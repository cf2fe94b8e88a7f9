#!/usr/bin/env bash
# Installs the Debian packages gpurelay needs to build, test and plot. Safe to run again: it asks
# apt-get only for what is missing, and refreshes the package lists only when apt cannot see a
# missing package (or has never been updated).
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/install-deps.sh [--check] [--help]

Installs, with apt-get, the Debian 12 packages gpurelay needs (only those missing):
  build-essential cmake git openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libbenchmark-dev libgtest-dev
  libgmock-dev python3 python3-numpy python3-matplotlib python3-h5py
Prints what it installs, or "all present". Uses sudo only when not run as root.
'apt-get update' runs only when apt has no candidate for a missing package.

The CUDA toolkit is not installed here (it comes from NVIDIA, not Debian); the script only
says whether nvcc was found. Without it the build makes the CPU path only.

Options:
  --check   only report; exit 1 when something is missing, 0 otherwise
  --help    this text
EOF
}

check_only=0
while (($#)); do
    case "$1" in
        --check) check_only=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install-deps.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

packages=(
    build-essential cmake git
    openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
    libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
    libbenchmark-dev libgtest-dev libgmock-dev
    python3 python3-numpy python3-matplotlib python3-h5py
)

is_installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == installed ]]
}

# nvcc: the toolkit's usual home first, then PATH (the same order CMakeLists.txt uses).
report_cuda() {
    local nvcc=""
    if [[ -x /usr/local/cuda/bin/nvcc ]]; then
        nvcc=/usr/local/cuda/bin/nvcc
    elif command -v nvcc >/dev/null 2>&1; then
        nvcc="$(command -v nvcc)"
    fi
    if [[ -n "$nvcc" ]]; then
        local version
        version="$("$nvcc" --version 2>/dev/null |
            sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n1)"
        echo "CUDA toolkit: nvcc found at $nvcc${version:+ (release $version)};" \
            "the build includes the CUDA path."
    else
        echo "CUDA toolkit: nvcc not found (looked in /usr/local/cuda/bin and PATH);" \
            "not installed by this script. The build makes the CPU path only."
    fi
}

missing=()
for p in "${packages[@]}"; do
    is_installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
    echo "Debian packages: all present (${#packages[@]} checked)."
    report_cuda
    exit 0
fi

if ((check_only)); then
    echo "Debian packages missing: ${missing[*]}"
    report_cuda
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps.sh: apt-get not found; install these by hand: ${missing[*]}" >&2
    exit 4
fi

as_root=()
if ((EUID != 0)); then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-deps.sh: not root and sudo not found; as root run:" \
            "apt-get install ${missing[*]}" >&2
        exit 4
    fi
    as_root=(sudo)
fi

# A package apt has no candidate for means stale or empty lists: only then is an update needed.
needs_update=0
for p in "${missing[@]}"; do
    candidate="$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: *//p')"
    if [[ -z "$candidate" || "$candidate" == "(none)" ]]; then
        needs_update=1
        break
    fi
done
if ((needs_update)); then
    echo "Running apt-get update (apt has no candidate for some missing packages)."
    "${as_root[@]}" apt-get update
fi

echo "Installing: ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
echo "Installed: ${missing[*]}"
report_cuda
