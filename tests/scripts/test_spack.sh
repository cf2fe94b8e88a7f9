#!/usr/bin/env bash
# The Spack package (spack/): with every dependency an external from this machine's Debian
# packages, spack install --test=root gpurelay from a tarball of this checkout's HEAD (through
# a mirror in a temporary folder, so nothing is fetched), which runs the quick tier; then the
# installed gpurelay names its prefix and verifies the quick-start deck under mpirun. Uses the
# Spack at SPACK_ROOT with its configuration (where its builtin package repository is), adding
# a scope of its own; SPACK_PYTHON picks the Python that has clingo (pip install clingo).
# Usage: tests/scripts/test_spack.sh GPURELAY_BINARY REPO_ROOT   (the binary is not used)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if [[ ! -x "${SPACK_ROOT:-}/bin/spack" ]]; then
    echo "skipped: no Spack"
    exit 77
fi
scope="$tmp/scope"
mkdir -p "$scope" "$tmp/mirror/gpurelay" "$tmp/run"
git -C "$root" archive --prefix=gpurelay-0.1.0/ -o "$tmp/mirror/gpurelay/gpurelay-0.1.0.tar.gz" HEAD
cat >"$scope/config.yaml" <<YAML
config: {install_tree: {root: $tmp/opt}, build_stage: [$tmp/stage], source_cache: $tmp/cache}
YAML
cat >"$scope/repos.yaml" <<YAML
repos: {gpurelay: $root/spack}
YAML
cat >"$scope/mirrors.yaml" <<YAML
mirrors: {checkout: file://$tmp/mirror}
YAML
# Debian 12's packages (scripts/install-deps.sh), each an external that Spack never builds.
# external NAME VERSION PREFIX [MORE]: MORE adds to the external's entry (its dependencies).
external() {
    printf '  %s: {externals: [{spec: %s@%s, prefix: %s%s}], buildable: false}\n' \
        "${1%%+*}" "$1" "$2" "$3" "${4:-}"
}
# The upstream version of a Debian package: no epoch, no Debian revision or repack suffix.
deb_version() { dpkg-query -W -f '${Version}' "$1" | sed 's/^[0-9]*://; s/[+~-].*//'; }
python_dependency=", dependencies: [{spec: python, deptypes: [build, run]}]"
{
    echo "packages:"
    echo "  gcc: {externals: [{spec: \"gcc@$(deb_version gcc-12) languages:='c,c++'\", prefix: /usr,"
    echo "    extra_attributes: {compilers: {c: /usr/bin/gcc, cxx: /usr/bin/g++}}}],"
    echo "    buildable: false}"
    echo "  mpi: {require: openmpi}"
    external hdf5+mpi~cxx "$(deb_version libhdf5-openmpi-dev)" /usr/lib/x86_64-linux-gnu/hdf5/openmpi
    for package in cmake:cmake gmake:make openmpi:libopenmpi-dev python:python3 cli11:libcli11-dev \
        tomlplusplus:libtomlplusplus-dev nlohmann-json:nlohmann-json3-dev fmt:libfmt-dev \
        benchmark:libbenchmark-dev googletest:libgtest-dev py-h5py:python3-h5py \
        py-numpy:python3-numpy; do
        name="${package%%:*}"
        external "$name" "$(deb_version "${package#*:}")" /usr \
            "$([[ "$name" != py-* ]] || echo "$python_dependency")"
    done
} >"$scope/packages.yaml"
spack=("$SPACK_ROOT/bin/spack" -C "$scope")

echo "== spack install --test=root gpurelay@0.1.0 (the quick tier in its check phase)"
start=$SECONDS
"${spack[@]}" install --no-checksum --test=root gpurelay@0.1.0 || fail "spack install failed"
echo "installed in $((SECONDS - start)) s"
prefix="$("${spack[@]}" location -i gpurelay@0.1.0)" || fail "spack location -i gpurelay@0.1.0"
log="$prefix/.spack/install-time-test-log.txt"
grep -E '^100% tests passed, 0 tests failed out of' "$log" ||
    fail "no passed quick tier in $log: $(ls "$prefix/.spack"; tail -n 20 "$log")"
"$prefix/bin/gpurelay" --version | grep -qx "installed in $prefix: .*" ||
    fail "--version names no prefix"
cd "$tmp/run"
mpirun_np 2 "$prefix/bin/gpurelay" --input "$prefix/share/gpurelay/inputs/quickstart.toml" \
    --device cpu >log 2>&1 || { cat log; fail "the installed gpurelay failed"; }
grep -q '^verification: .*: PASSED$' log || { cat log; fail "no verified run"; }
echo "PASS"
