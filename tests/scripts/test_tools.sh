#!/usr/bin/env bash
# Tests the user-facing tools in scripts/: each answers --help with exit 0 and a usage line,
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

tools=(install-deps.sh build run test sweep plot profile bench gpu-check local-slurm with-mps compare stress)
for tool in "${tools[@]}"; do
    path="$root/scripts/$tool"
    [[ -x "$path" ]] || fail "scripts/$tool missing or not executable"
    out="$("$path" --help 2>&1)" || fail "scripts/$tool --help exited non-zero"
    grep -qi '^usage:' <<<"$out" || fail "scripts/$tool --help prints no usage line"
    echo "scripts/$tool --help: ok"
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
# Sourced files: no shebang or set line of their own.
sourced_files=("$root"/scripts/slurm/common.sh "$root"/tests/scripts/common.sh
    "$root"/tests/slurm/common.sh)
for file in "${sourced_files[@]}"; do
    bash -n "$file" || fail "bash -n $file"
done
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -x -s bash "${shell_files[@]}" "${sourced_files[@]}" || fail "shellcheck"
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

for file in "$root"/scripts/lib/*.py; do
    "$python" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$file" ||
        fail "$file does not parse"
done
echo "Python tools parse: ok"

echo "PASS: test_tools"
