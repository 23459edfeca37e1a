#!/usr/bin/env bash
# `make bench`: the gateway against a plain nginx proxy, on loopback, in one run (docs/api.md,
# Limits and defaults).
#
#   upstream  one nginx worker serving a canned Directus answer: bench/posts-20.json (20 posts,
#             about 5 KB) for GET /items/posts with any query, plus the sign-in calls
#   B         a one-worker nginx keep-alive proxy of the upstream call    GET /items/posts?...
#   A         the gateway (release, one worker, memory sessions)          GET /api/v1/books
#   C         A with POSTERN_CACHE_TTL_MS=1000 (the micro-cache)          GET /api/v1/books
#
# Same wrk settings for all, each after a short warm-up. Prints requests/s, p50, p99, CPU per
# request, the peak RSS (VmHWM) of the measured process, the ratios A/B and C/B, and whether the
# targets are met. It is a report: it exits 0 whether or not they are (non-zero only when it
# could not measure). A run where wrk saw non-2xx answers or socket errors is flagged.
#
# Overrides: BENCH_DURATION (10s) BENCH_WARMUP (2s) BENCH_THREADS (2) BENCH_CONNECTIONS (64)
#            BENCH_WORKERS (gateway worker counts, "1"; e.g. "1 2") BENCH_CACHE_TTL_MS (1000)
#            BENCH_LOG_LEVEL (warning) and the ports/build switches in bench/lib.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TOOL=bench
# shellcheck source=../bench/lib.sh
source bench/lib.sh

DURATION="${BENCH_DURATION:-10s}"
WARMUP="${BENCH_WARMUP:-2s}"
THREADS="${BENCH_THREADS:-2}"
CONNECTIONS="${BENCH_CONNECTIONS:-64}"
WORKERS_LIST="${BENCH_WORKERS:-1}"
CACHE_TTL="${BENCH_CACHE_TTL_MS:-1000}"

prepare_tools
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
start_upstream
start_proxy

ROWS=()     # "label|rps|p50|p99|cpu µs/req|rss MB|errors"
NOTES=()

# measure LABEL URL TOKEN PID: warm-up, then the measured wrk run; PID is the process whose CPU
# time and peak RSS are reported.
measure() {
    local label="$1" url="$2" token="$3" pid="$4" out t0 t1 requests cpu errors non2xx sockerr
    out="$WORK/wrk-${label//[^a-zA-Z0-9]/_}.txt"
    say "$label: warm-up $WARMUP, then wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency $url"
    run_wrk "$out.warmup" "$url" "$token" "$WARMUP"
    t0="$(cpu_ticks "$pid")"
    run_wrk "$out" "$url" "$token" "$DURATION"
    t1="$(cpu_ticks "$pid")"
    requests="$(wrk_field "$out" requests)"
    cpu="$(awk -v d="$((t1 - t0))" -v hz="$CLK_TCK" -v n="$requests" 'BEGIN { if (n > 0) printf "%.0f", d / hz * 1e6 / n; else print "-" }')"
    non2xx="$(wrk_field "$out" non2xx)"
    sockerr="$(wrk_field "$out" sockerr)"
    errors="-"
    if [ "$non2xx" != 0 ] || [ "$sockerr" != 0 ]; then
        errors="ERRORS: $non2xx non-2xx, $sockerr socket"
        warn "$label: the run had errors ($non2xx non-2xx answers, socket errors: $(sed -n 's/.*Socket errors: *//p' "$out"))"
    fi
    ROWS+=("$label|$(wrk_field "$out" rps)|$(wrk_field "$out" p50)|$(wrk_field "$out" p99)|$cpu|$(peak_rss_mb "$pid")|$errors")
}

measure "B nginx proxy" "http://$HOST:$PROXY_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN" "$PROXY_WORKER_PID"

for workers in $WORKERS_LIST; do
    say "A: gateway, POSTERN_WORKERS=$workers, log level $LOG_LEVEL"
    start_gateway "$workers" "gateway-a-w$workers" || die "the gateway did not start (see above)"
    measure "A gateway w=$workers" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" "$GATEWAY_PID"
    stop_gateway

    say "C: gateway, POSTERN_WORKERS=$workers, POSTERN_CACHE_TTL_MS=$CACHE_TTL"
    if ! start_gateway "$workers" "gateway-c-w$workers" POSTERN_CACHE_TTL_MS="$CACHE_TTL"; then
        reason="$(grep -v '^[[:space:]]*$' "$WORK/gateway-c-w$workers.log" | tail -n1 | cut -c1-160)"
        echo "C: cache not available (the gateway refused POSTERN_CACHE_TTL_MS=$CACHE_TTL: $reason)"
        NOTES+=("C w=$workers: cache not available (gateway refused to start)")
        continue
    fi
    # A second request must be served from the cache (X-Cache: HIT) for C to mean anything.
    check_list "gateway (cache)" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" books
    if ! grep -qi '^x-cache: *hit' "$LAST_HEADERS"; then
        echo "C: cache not available (POSTERN_CACHE_TTL_MS=$CACHE_TTL accepted, but a repeated GET has no X-Cache: HIT)"
        NOTES+=("C w=$workers: cache not available (no X-Cache: HIT)")
        stop_gateway
        continue
    fi
    measure "C gateway+cache w=$workers" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" "$GATEWAY_PID"
    stop_gateway
done
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- report ---------------------------------------------------------------------------------------
field() { cut -d'|' -f"$2" <<<"$1"; }
B_ROW="${ROWS[0]}"
B_RPS="$(field "$B_ROW" 2)"
B_P99="$(field "$B_ROW" 4)"

echo
echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency (after $WARMUP warm-up) on $(nproc) cores;" \
     "load average before $LOAD_BEFORE, after $LOAD_AFTER"
echo "B: GET $ITEMS_PATH   A/C: GET $BOOKS_PATH (gateway log level $LOG_LEVEL)"
echo "CPU and peak RSS: the gateway process (A, C), the nginx proxy's worker (B)"
printf '%-24s %10s %8s %8s %11s %9s %7s  %s\n' target requests/s "p50 ms" "p99 ms" "CPU µs/req" "RSS MB" "÷ B" errors
for row in "${ROWS[@]}"; do
    IFS='|' read -r label rps p50 p99 cpu rss errors <<<"$row"
    ratio="$(awk -v a="$rps" -v b="$B_RPS" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
    printf '%-24s %10s %8s %8s %11s %9s %7s  %s\n' "$label" "$rps" "$p50" "$p99" "$cpu" "$rss" "$ratio" "$errors"
done
for note in "${NOTES[@]+"${NOTES[@]}"}"; do echo "$note"; done

echo
echo "targets (docs/api.md, Limits and defaults; a report, not a test):"
verdict() { if [ "$1" = 1 ]; then echo "met"; else echo "NOT met"; fi; }
for row in "${ROWS[@]:1}"; do
    IFS='|' read -r label rps p50 p99 cpu rss errors <<<"$row"
    case "$label" in C*) want=2.0 ;; *) want=1.0 ;; esac
    ratio="$(awk -v a="$rps" -v b="$B_RPS" 'BEGIN { printf "%.2f", a / b }')"
    ok_ratio="$(awk -v r="$ratio" -v w="$want" 'BEGIN { print (r >= w) ? 1 : 0 }')"
    ok_p99="$(awk -v a="$p99" -v b="$B_P99" 'BEGIN { print (a <= b + 1) ? 1 : 0 }')"
    ok_rss="$(awk -v r="$rss" 'BEGIN { print (r < 40) ? 1 : 0 }')"
    flag=""
    [ "$errors" = "-" ] || flag="  (run had errors: not valid)"
    printf '  %-24s ratio %s ≥ %s: %-8s p99 %s ≤ %s + 1 ms: %-8s RSS %s MB < 40: %s%s\n' "$label" \
        "$ratio" "$want" "$(verdict "$ok_ratio")" "$p99" "$B_P99" "$(verdict "$ok_p99")" "$rss" "$(verdict "$ok_rss")" "$flag"
done
