#!/usr/bin/env bash
# cmake --install to a prefix, the prefix moved: the installed gpurelay names its new place
# (--version) and runs the quick-start deck from an empty folder under mpirun (outputs/ made,
# verified); the installed tools and batch templates find the binary, decks and their library
# relative to themselves, and the templates' logs go to the submit folder.
# Usage: tests/scripts/test_install.sh GPURELAY_BINARY REPO_ROOT   (the binary's build is installed)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build="$(dirname "$(dirname "$binary")")"
tmp="$(cd "$tmp" && pwd -P)" # the binary names its prefix with links resolved
cmake --install "$build" --prefix "$tmp/P" >/dev/null || fail "cmake --install failed"
mv "$tmp/P" "$tmp/P2"
P="$tmp/P2"
mkdir "$tmp/run" && cd "$tmp/run"

echo "== --version names the moved prefix"
data="$P/share/gpurelay"
expected="installed in $P: decks in $data/inputs, batch templates in $data/slurm"
"$P/bin/gpurelay" --version | grep -qxF "$expected" || fail "--version: $("$P/bin/gpurelay" --version)"

echo "== the quick-start deck from an empty folder"
mpirun_np 2 "$P/bin/gpurelay" --input "$data/inputs/quickstart.toml" --device cpu \
    --elements 4Ki --c-elements 4Ki --steps 5 >log 2>&1 || { cat log; fail "the installed run"; }
grep -q '^verification: .*: PASSED$' log || { cat log; fail "no verified run"; }
compgen -G "outputs/gpurelay-*.h5" >/dev/null || fail "no outputs/gpurelay-*.h5"

echo "== the tools run the installed binary, writing here"
"$P/bin/gpurelay-profile" --dry-run --device cpu | grep -qF -- "-o $PWD/outputs/profiles/" ||
    fail "gpurelay-profile does not write under ./outputs"
"$P/bin/gpurelay-profile" --dry-run | grep -qF " $P/bin/gpurelay" ||
    fail "gpurelay-profile does not run $P/bin/gpurelay"
"$P/bin/gpurelay-sweep" --help | grep -q 'PREFIX/bin/gpurelay' || fail "gpurelay-sweep --help"
for tool in plot compare with-mps; do
    "$P/bin/gpurelay-$tool" --help >/dev/null || fail "gpurelay-$tool --help"
done

echo "== the templates: their common.sh finds the binary and decks; logs to the submit folder"
P="$P" bash -c 'set -euo pipefail; source "$P/share/gpurelay/slurm/common.sh"
    [[ "$gpurelay_binary" -ef "$P/bin/gpurelay" && "$gpurelay_decks" == "$P/share/gpurelay/inputs" &&
        -x "$gpurelay_lib/launcher_stderr.sh" ]]' || fail "the installed common.sh: wrong paths"
if grep -L '^#SBATCH --output=%x-' "$P"/share/gpurelay/slurm/*.sbatch | grep .; then
    fail "an installed template logs under outputs/"
fi
grep -q '^#SBATCH --output=outputs/%x-' "$root/scripts/slurm/one-node-two-gpus.sbatch" ||
    fail "the checkout's template lost its outputs/ log"
echo "PASS"
