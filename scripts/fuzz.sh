#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/build.sh) and runs each for a bounded time.
#   FUZZ_SECONDS  seconds per target (default 30)
#   FUZZ_TARGETS  space-separated subset (default: every Fuzz/Targets/*.swift)
# Seeds come from Fuzz/corpus/<target>/ (read only); inputs found while fuzzing go to
# .build/fuzz/corpus/<target>/. A crashing input is kept as .build/fuzz/crashes/<target>-crash-<sha1>
# and the script exits 1. Inputs kept in Fuzz/crashes/<target>-* are replayed first. To keep a new one:
# copy it to Fuzz/crashes/<target>-<what> and add a case to Tests/PosternHTTPTests/FuzzRegressionTests.swift (or, for a
# mapper input, Tests/PosternCoreTests/Mapping/MappingFuzzRegressionTests.swift).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-30}
if [ -n "${FUZZ_TARGETS:-}" ]; then read -r -a targets <<<"$FUZZ_TARGETS"; else
    targets=()
    for f in Fuzz/Targets/*.swift; do targets+=("$(basename "$f" .swift)"); done
fi

Fuzz/build.sh "${targets[@]}" 2> >(grep -v "Cannot export local symbol" >&2) || exit 2

dict_for() {
    case "$1" in
        list_query) echo Fuzz/dict/query.dict ;;
        item_path) echo Fuzz/dict/path.dict ;;
        http_request_stream | http_request_plain | http_response_stream | http_response_plain) echo Fuzz/dict/http.dict ;;
        *) echo Fuzz/dict/json.dict ;;
    esac
}

mkdir -p .build/fuzz/crashes .build/fuzz/logs
failed=()
summary=()
for t in "${targets[@]}"; do
    work=".build/fuzz/corpus/$t"
    log=".build/fuzz/logs/$t.log"
    mkdir -p "$work" "Fuzz/corpus/$t"
    # Replay the kept crashing inputs first (they must all pass now).
    kept=(Fuzz/crashes/"$t"-*)
    if [ -e "${kept[0]}" ] && ! SWIFT_BACKTRACE=enable=no ".build/fuzz/$t" "${kept[@]}" >"$log" 2>&1; then
        failed+=("$t")
        summary+=("$(printf '%-15s FAILED  replay of Fuzz/crashes/%s-*  (%s)' "$t" "$t" "$log")")
        continue
    fi
    echo "fuzz: $t for ${seconds}s"
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=Fuzz/lsan.supp:print_suppressions=0} \
    ".build/fuzz/$t" "$work" "Fuzz/corpus/$t" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -dict="$(dict_for "$t")" -print_final_stats=1 \
        -artifact_prefix=".build/fuzz/crashes/$t-" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    if [ "$rc" -ne 0 ]; then
        failed+=("$t")
        summary+=("$(printf '%-15s FAILED  %10s execs  %s  (%s)' "$t" "${execs:-?}" "$cov" "$log")")
        grep -E 'FUZZ INVARIANT|ERROR: |SUMMARY: |Test unit written to|Fatal error' "$log" | head -8 | sed 's/^/    /'
    else
        summary+=("$(printf '%-15s ok      %10s execs  %s  in %ss' "$t" "$execs" "$cov" "$seconds")")
    fi
done

echo
echo "fuzz summary:"
printf '  %s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: crashes in: ${failed[*]} (inputs kept in .build/fuzz/crashes/)" >&2
    exit 1
fi
