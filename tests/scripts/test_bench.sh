#!/usr/bin/env bash
# scripts/bench on a copy of the repository whose build/bench holds stand-ins for the two
# programs (one benchmark per size up to GPURELAY_BENCH_MAX_BYTES, or death by a signal), with
# MemAvailable made up (GPURELAY_BENCH_MEM_AVAILABLE): the sizes that do not fit are skipped and
# named, with no flags it exits 0 and each run writes a file of its own, a program killed is named
# with its signal and recorded as failed, and a named output is replaced only with --overwrite.
# Usage: tests/scripts/test_bench.sh GPURELAY_BINARY REPO_ROOT
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

repo="$tmp/repo"
mkdir -p "$repo/scripts" "$repo/build/bench"
cp -r "$root/scripts/bench" "$root/scripts/lib" "$repo/scripts/"
for program in bench_kernels bench_transport; do
    cat >"$repo/build/bench/$program" <<'EOF_FAKE'
#!/usr/bin/env bash
# Rank 0 writes one benchmark per size, 4 KiB x4 up to GPURELAY_BENCH_MAX_BYTES, or dies by
# FAKE_BENCH_SIGNAL (the transport only).
set -euo pipefail
[[ "${OMPI_COMM_WORLD_RANK:-0}" == 0 ]] || exit 0
if [[ -n "${FAKE_BENCH_SIGNAL:-}" && "$0" == *transport ]]; then kill -"$FAKE_BENCH_SIGNAL" $$; fi
for arg in "$@"; do [[ "$arg" == --benchmark_out=* ]] && out="${arg#*=}"; done
rows="" bytes=4096
while ((bytes <= GPURELAY_BENCH_MAX_BYTES)); do
    rows+="${rows:+,}{\"name\": \"fake/$bytes/manual_time\", \"iterations\": 1, \"real_time\": 1.0,"
    rows+=" \"time_unit\": \"ms\", \"bytes_per_second\": $((bytes * 1000))}"
    bytes=$((bytes * 4))
done
echo "{\"context\": {}, \"benchmarks\": [$rows]}" >"$out"
EOF_FAKE
    chmod +x "$repo/build/bench/$program"
done

# field FILE EXPRESSION: a Python expression of the JSON `j` in FILE.
field() {
    "$python" -c "import json, sys; j = json.load(open(sys.argv[1])); print($2)" "$1"
}
bench() {
    GPURELAY_BENCH_MEM_AVAILABLE=$((2 << 30)) "$repo/scripts/bench" --no-build "$@"
}

echo "== no flags, 2 GiB available: the transport's 64 and 256 MiB skipped and named, exit 0"
for run in 1 2; do
    bench >"$tmp/run$run.out" 2>"$tmp/run$run.err" || fail "run $run exited $?: $(cat "$tmp/run$run.err")"
    grep -qx "bench: bench_transport: skipping 64MiB, 256MiB: 64MiB needs about 3GiB of host memory, 2GiB available (MemAvailable)" "$tmp/run$run.err" ||
        fail "run $run did not name the skipped sizes: $(cat "$tmp/run$run.err")"
done
made=("$repo"/outputs/bench-*.json)
[[ ${#made[@]} -eq 2 ]] || fail "two runs made ${#made[@]} files: ${made[*]}"
for file in "${made[@]}"; do
    grep -q "^bench: wrote $file$" "$tmp/run1.out" "$tmp/run2.out" || fail "no run names $file"
    [[ "$(field "$file" "j['runs']['bench_transport']['max_bytes'], j['runs']['bench_transport']['skipped_bytes']")" == "16777216 [67108864, 268435456]" ]] ||
        fail "$file does not record the transport's sizes: $(field "$file" "j['runs']")"
    [[ "$(field "$file" "max(r['bytes'] for r in j['results'] if r['program'] == 'bench_kernels')")" == 268435456 ]] ||
        fail "$file: the kernels did not run to 256 MiB"
done

echo "== the transport killed: named with its signal, recorded as failed, the kernels' rows kept"
status=0
FAKE_BENCH_SIGNAL=KILL bench --output "$tmp/killed.json" >"$tmp/killed.out" 2>"$tmp/killed.err" || status=$?
[[ $status -eq 137 ]] || fail "a program killed gave exit $status, not 137"
grep -qx "bench: bench_transport was killed by SIGKILL (exit status 137): killed, out of memory?" "$tmp/killed.err" ||
    fail "the death is not named: $(cat "$tmp/killed.err")"
[[ "$(field "$tmp/killed.json" "j['runs']['bench_transport']['failed'], j['runs']['bench_transport']['exit_status'], j['runs']['bench_transport']['signal'], len(j['results'])")" == "True 137 SIGKILL 9" ]] ||
    fail "the JSON does not record the failure: $(field "$tmp/killed.json" "j['runs']")"

echo "== a named output is replaced only with --overwrite; no size fits: not run, exit 0"
status=0
bench --only kernels --output "$tmp/killed.json" 2>"$tmp/named.err" || status=$?
if [[ $status -ne 2 ]] || ! grep -q "exists (use --overwrite to replace it)" "$tmp/named.err"; then
    fail "an existing --output gave exit $status: $(cat "$tmp/named.err")"
fi
[[ "$(field "$tmp/killed.json" "j['runs']['bench_transport']['signal']")" == SIGKILL ]] ||
    fail "the refused run changed the named file"
GPURELAY_BENCH_MEM_AVAILABLE=1 "$repo/scripts/bench" --no-build --only kernels --output \
    "$tmp/killed.json" --overwrite 2>"$tmp/none.err" || fail "a run of no size exited $?"
grep -q "bench: bench_kernels not run: none of its sizes fits" "$tmp/none.err" ||
    fail "no line says the kernels did not run: $(cat "$tmp/none.err")"
[[ "$(field "$tmp/killed.json" "list(j['runs']), j['runs']['bench_kernels']['ran'], j['results']")" == "['bench_kernels'] False []" ]] ||
    fail "--overwrite did not replace the file with the run of no size: $(cat "$tmp/killed.json")"
echo "PASS"
