#!/usr/bin/env bash
# Installs the Debian packages gpurelay needs, only those missing (help/install-deps.txt).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nsys_dir="$(cd "$here/.." && pwd)/.deps/nsight-systems"
check_only=0
with_nsys=0
while (($#)); do
    case "$1" in
        --check) check_only=1 ;;
        --nsys) with_nsys=1 ;;
        -h | --help) cat "$here/help/install-deps.txt"; exit 0 ;;
        *) echo "install-deps.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
fail() { # what this script cannot do here, in one line
    echo "install-deps.sh: $*" >&2
    exit 4
}

packages=(
    build-essential cmake git
    openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
    libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
    libbenchmark-dev libgtest-dev libgmock-dev
    python3 python3-numpy python3-matplotlib python3-h5py python3-scipy
    slurmctld slurmd slurm-client munge
)
# libssh-4: the report importer loads it; the unpacked packages bring no dependencies of their own.
((with_nsys)) && packages+=(libssh-4)

# nvcc: the toolkit's usual home first, then PATH (the same order CMakeLists.txt uses).
report_cuda() {
    local nvcc=/usr/local/cuda/bin/nvcc version
    [[ -x "$nvcc" ]] || nvcc="$(command -v nvcc || true)"
    if [[ -z "$nvcc" ]]; then
        echo "CUDA toolkit: nvcc not found (looked in /usr/local/cuda/bin and PATH);" \
            "not installed by this script. The build makes the CPU path only."
        return
    fi
    version="$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n1)"
    echo "CUDA toolkit: nvcc found at $nvcc${version:+ (release $version)};" \
        "the build includes the CUDA path."
}

candidate_of() {
    apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p'
}

has_candidates() {
    local p
    for p; do [[ ! "$(candidate_of "$p")" =~ ^(|\(none\))$ ]] || return 1; done
}

nsys_works() {
    [[ -x "$nsys_dir/bin/nsys" ]] && "$nsys_dir/bin/nsys" --version >/dev/null 2>&1 &&
        "$nsys_dir/root/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter" --version \
            >/dev/null 2>&1
}

missing=()
for p in "${packages[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" == installed ]] ||
        missing+=("$p")
done
nsys_missing=0
((with_nsys)) && ! nsys_works && nsys_missing=1

if ((${#missing[@]} == 0 && !nsys_missing)); then
    echo "Debian packages: all present (${#packages[@]} checked)."
    ((with_nsys)) && echo "Nsight Systems: $("$nsys_dir/bin/nsys" --version) in $nsys_dir"
    report_cuda
    exit 0
fi

if ((check_only)); then
    ((${#missing[@]} == 0)) || echo "Debian packages missing: ${missing[*]}"
    ((!nsys_missing)) || echo "Nsight Systems missing from $nsys_dir (--nsys unpacks it)"
    report_cuda
    exit 1
fi

command -v apt-get >/dev/null 2>&1 || fail "apt-get not found; install these by hand: ${missing[*]}"

as_root=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 ||
        fail "not root and sudo not found; as root run: apt-get install ${missing[*]}"
    as_root=(sudo)
fi

# Debian's non-free component (Nsight Systems), where apt has no candidate even after an update:
# a deb822 source beside the others, with their mirror and keyring (a local mirror stays in use).
enable_non_free() {
    local id codename uri keyring source=/etc/apt/sources.list.d/gpurelay-non-free.sources
    # shellcheck disable=SC1091  # the system's own file
    read -r id codename < <(. /etc/os-release && echo "${ID:-} ${VERSION_CODENAME:-}")
    [[ "$id" == debian && -n "$codename" ]] ||
        fail "--nsys needs Debian (its non-free nsight-systems packages)"
    uri="$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
        grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n 1 | tr -d ' ' || true)"
    uri="${uri:-http://deb.debian.org/debian}"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    echo "Adding Debian's non-free component ($uri $codename) in $source."
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\n%s\n' "$uri" "$codename" \
        "$([[ -f $keyring ]] && echo "Signed-By: $keyring")" |
        "${as_root[@]}" tee "$source" >/dev/null
    "${as_root[@]}" apt-get update
}

# Debian's Nsight Systems unpacked into $nsys_dir (installed, nsight-systems-target's libcuda1
# would replace the NVIDIA driver's), with the links the tree lacks: the importer (host-linux-x64)
# beside the real target-linux-x64, where nsys looks, and libssh.so.4 for host-linux-x64.
install_nsys() {
    local deb_packages=(nsight-systems nsight-systems-target) p tmp
    has_candidates "${deb_packages[@]}" || "${as_root[@]}" apt-get update
    has_candidates nsight-systems || enable_non_free
    has_candidates "${deb_packages[@]}" ||
        fail "apt has no nsight-systems even with non-free enabled"
    tmp="$(mktemp -d)"
    # apt fetches as user _apt where it can write (else it warns and fetches as root).
    chmod 755 "$tmp"
    ((EUID != 0)) || chown _apt "$tmp" 2>/dev/null || true
    echo "Downloading ${deb_packages[*]} $(candidate_of nsight-systems) (about 170 MB)."
    (cd "$tmp" && apt-get download "${deb_packages[@]}")
    rm -rf "$nsys_dir"
    mkdir -p "$nsys_dir/root" "$nsys_dir/bin"
    for p in "$tmp"/*.deb; do dpkg-deb -x "$p" "$nsys_dir/root"; done
    rm -rf "$tmp"
    local lib="$nsys_dir/root/usr/lib"
    ln -s ../../nsight-systems/host-linux-x64 "$lib/x86_64-linux-gnu/nsight-systems/host-linux-x64"
    ln -s /usr/lib/x86_64-linux-gnu/libssh.so.4 "$lib/x86_64-linux-gnu/libssh.so.4"
    ln -s ../root/usr/lib/nsight-systems/bin/nsys "$nsys_dir/bin/nsys"
    nsys_works || fail "the unpacked Nsight Systems in $nsys_dir does not start"
    echo "Nsight Systems: $("$nsys_dir/bin/nsys" --version) in $nsys_dir/bin/nsys"
}

if ((${#missing[@]})); then
    # A package apt has no candidate for means stale or empty lists: only then an update.
    if ! has_candidates "${missing[@]}"; then
        echo "Running apt-get update (apt has no candidate for some missing packages)."
        "${as_root[@]}" apt-get update
    fi
    echo "Installing: ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
    echo "Installed: ${missing[*]}"
fi
((!nsys_missing)) || install_nsys
report_cuda
