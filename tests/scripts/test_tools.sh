#!/usr/bin/env bash
# Tests the tools: each user tool in scripts/ and each entry point of the lab (lab/) answers
# --help with exit 0 and a usage line, and does nothing else then (run from an empty folder with
# cmake, mpirun, nvidia-smi and the like replaced by stand-ins that record a call: none is
# called, nothing is written); every Python entry point parses its arguments with argparse; the
# old spellings of the output flags are refused with exit 2 and one line naming the new one;
# shell scripts pass bash -n (and shellcheck, when installed), Python tools compile.
# Usage: tests/scripts/test_tools.sh GPURELAY_BINARY REPO_ROOT   (the binary is not used)
set -euo pipefail

if [[ $# -ne 2 || "$1" == -h || "$1" == --help ]]; then
    echo "Usage: $0 GPURELAY_BINARY REPO_ROOT" >&2
    exit 2
fi
root="$(cd "$2" && pwd)"
python="${GPURELAY_PYTHON:-/usr/bin/python3}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# The stand-ins: any call leaves a mark in $tmp/called.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/called" "$tmp/cwd"
for command in cmake ctest mpirun srun sbatch squeue nvidia-smi nvidia-cuda-mps-control nsys \
    apt-get sudo dpkg-deb make ninja gdb; do
    printf '#!/bin/sh\ntouch "%s/called/%s"\nexit 1\n' "$tmp" "$command" >"$tmp/bin/$command"
    chmod +x "$tmp/bin/$command"
done
# What a command left: the stand-ins it called, what it wrote where it ran.
left_behind() { find "$tmp/called" "$tmp/cwd" -mindepth 1 -printf '%f '; }
# help_only COMMAND...: COMMAND --help exits 0 with a usage line, calls none of the stand-ins
# and writes nothing where it runs.
help_only() {
    local out name="${*: -1}"
    name="${name#"$root"/}"
    out="$(cd "$tmp/cwd" && PATH="$tmp/bin:$PATH" "$@" --help 2>&1)" ||
        fail "$name --help exited non-zero"
    grep -qi 'usage:' <<<"$out" || fail "$name --help prints no usage line"
    [[ -z "$(left_behind)" ]] || fail "$name --help did more: $(left_behind)"
    echo "$name --help: ok"
}
tools=(install-deps.sh build run test sweep plot profile bench local-slurm with-mps compare stress)
for tool in "${tools[@]}"; do
    [[ -x "$root/scripts/$tool" ]] || fail "scripts/$tool missing or not executable"
    help_only "$root/scripts/$tool"
done
# scripts/profile's rank, started by the launcher.
help_only "$root/scripts/lib/nsys_rank.sh"
lab=(gpu-check scale.py)
for tool in "${lab[@]}"; do
    [[ -x "$root/lab/$tool" ]] || fail "lab/$tool missing or not executable"
    help_only "$root/lab/$tool"
done
for file in "$root"/lab/lib/*.py; do
    grep -q '^if __name__ == "__main__":' "$file" || continue  # a module the others import
    help_only "$python" "$file"
done

# Every Python entry point reads its arguments with argparse, none a bare sys.argv[1].
for file in "$root"/scripts/lib/*.py "$root"/lab/*.py "$root"/lab/lib/*.py; do
    grep -q '^if __name__ == "__main__":' "$file" || continue
    grep -q '^import argparse' "$file" ||
        fail "${file#"$root"/} does not use argparse"
    ! grep -qE 'sys\.argv\[[0-9]+\]' "$file" || fail "${file#"$root"/} reads sys.argv by position"
done
echo "Python entry points parse their arguments with argparse: ok"

# One flag per meaning: a folder is --out-dir; the old spellings get one line naming it, exit 2.
for old in "scripts/with-mps --dir $tmp/x true" "scripts/stress --log-dir $tmp/x" \
    "lab/gpu-check --out $tmp/x"; do
    read -ra command <<<"$old"
    status=0
    (cd "$tmp/cwd" && PATH="$tmp/bin:$PATH" "$root/${command[0]}" "${command[@]:1}") \
        >"$tmp/out" 2>"$tmp/err" || status=$?
    if [[ $status -ne 2 || "$(wc -l <"$tmp/err")" -ne 1 ]] || ! grep -q -- '--out-dir' "$tmp/err"; then
        fail "$old: exit $status, $(cat "$tmp/err" "$tmp/out")"
    fi
    [[ -z "$(left_behind)" && ! -e "$tmp/x" ]] || fail "$old did more: $(left_behind)"
    echo "$old: $(cat "$tmp/err")"
done

shopt -s nullglob
shell_files=("$root"/scripts/{install-deps.sh,build,run,test,sweep,plot,profile,local-slurm,with-mps,compare,stress}
    "$root"/scripts/lib/*.sh "$root"/scripts/slurm/*.sbatch "$root"/tests/scripts/*.sh "$root"/tests/slurm/test_*.sh)
shopt -u nullglob
for file in "${shell_files[@]}"; do
    bash -n "$file" || fail "bash -n $file"
    head -n 30 "$file" | grep -q 'set -euo pipefail' || fail "$file: no 'set -euo pipefail'"
done
echo "bash -n and set -euo pipefail: ${#shell_files[@]} files ok"
# The lab's driver and stages go on past a failing run (device time is scarce): bash -n only.
for file in "$root"/lab/gpu-check "$root"/lab/lib/*.sh; do
    bash -n "$file" || fail "bash -n $file"
done
# Sourced files: no shebang or set line of their own.
sourced_files=("$root"/scripts/slurm/common.sh "$root"/tests/scripts/common.sh
    "$root"/tests/slurm/common.sh)
for file in "${sourced_files[@]}"; do
    bash -n "$file" || fail "bash -n $file"
done
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -x -s bash "${shell_files[@]}" "${sourced_files[@]}" "$root"/lab/gpu-check \
        "$root"/lab/lib/*.sh || fail "shellcheck"
    echo "shellcheck: ok"
else
    echo "shellcheck not installed: skipped"
fi

# Each batch template writes its log where git ignores it (its --output, from the repository
# root, where it is submitted).
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    for template in "$root"/scripts/slurm/*.sbatch; do
        log="$(sed -n 's/^#SBATCH --output=//p' "$template")"
        [[ -n "$log" ]] || fail "$template: no #SBATCH --output"
        # One concrete name for the pattern: %x job name, %j/%A job id, %a task.
        name="$(sed -e 's/%x/gpurelay-job/g' -e 's/%[jA]/123/g' -e 's/%a/0/g' <<<"$log")"
        git -C "$root" check-ignore -q "$name" ||
            fail "$(basename "$template") writes its log to $name, which git does not ignore"
    done
    echo "batch template logs: ignored by git"
else
    echo "not a git checkout: the template logs' ignore check skipped"
fi

for file in "$root"/scripts/lib/*.py "$root"/lab/*.py "$root"/lab/lib/*.py; do
    "$python" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$file" ||
        fail "$file does not parse"
done
echo "Python tools parse: ok"

echo "PASS: test_tools"
