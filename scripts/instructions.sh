#!/usr/bin/env bash
# `make instructions`: userspace instructions per request of the gateway on the `make bench` setups A
# (uncached) and C (micro-cache, every request after the first a hit), counted by valgrind's callgrind.
# Unlike requests/s or CPU time, an instruction count does not depend on what else the machine runs, so
# it compares two builds fairly on a busy machine (e.g. before and after a refactoring).
#
# For each setup: the gateway (one worker, memory sessions) starts under callgrind against the canned
# nginx Directus upstream of bench/lib.sh; after a warm-up the counters are zeroed (callgrind_control -z),
# wrk -t1 -c8 runs for INSTR_DURATION, the counters are dumped (callgrind_control -d), and the dump's
# total is divided by the requests wrk counted. Start-up and warm-up are not counted.
#
# Setup R (not run by default: INSTR_SETUPS="A C R") is A for the shipped `posts` list, which reads its author
# through the relation user_created (the canned upstream answers bench/posts-20-authors.json).
#
# Overrides: INSTR_DURATION (10s) INSTR_WARMUP (3s) INSTR_SETUPS ("A C") and bench/lib.sh's
#            BENCH_ITEMS (20 posts per list, or 100: bench/posts-100.json), BENCH_POSTERN (the binary measured,
#            e.g. a copy of an older build), BENCH_SKIP_BUILD and ports.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TOOL=instructions
# shellcheck source=../bench/lib.sh
source bench/lib.sh

DURATION="${INSTR_DURATION:-10s}"
WARMUP="${INSTR_WARMUP:-3s}"
SETUPS="${INSTR_SETUPS:-A C}"
THREADS=1
CONNECTIONS=8
[[ "$DURATION" =~ ^[0-9]+s$ && "$WARMUP" =~ ^[0-9]+s$ ]] || die "INSTR_DURATION and INSTR_WARMUP are whole seconds, e.g. 10s"

prepare_tools valgrind
command -v callgrind_control >/dev/null || die "callgrind_control missing (valgrind)"
start_upstream
URL="http://$HOST:$GATEWAY_PORT$BOOKS_PATH"

# measure SETUP VAR=VALUE...: prints "SETUP <instructions per request> <requests>".
measure() {
    local setup="$1" out="$WORK/callgrind-$1" total requests
    shift
    mkdir -p "$out"
    GATEWAY_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=$out/callgrind.out.%p" WAIT_SECONDS=120 \
        start_gateway 1 "gateway-$setup" "$@" || die "the gateway did not start under valgrind ($setup)"
    local url="${MEASURE_URL:-$URL}"
    run_wrk "$WORK/wrk-warmup-$setup.txt" "$url" "$POSTERN_TOKEN" "$WARMUP"
    callgrind_control -z "$GATEWAY_PID" >/dev/null 2>&1
    run_wrk "$WORK/wrk-$setup.txt" "$url" "$POSTERN_TOKEN" "$DURATION"
    callgrind_control -d "$GATEWAY_PID" >/dev/null 2>&1
    requests="$(wrk_field "$WORK/wrk-$setup.txt" requests)"
    [ "$(wrk_field "$WORK/wrk-$setup.txt" non2xx)" = 0 ] || die "setup $setup: wrk saw non-2xx answers"
    stop_gateway
    # The dump taken after the zeroing is the file with the highest part number (callgrind.out.PID.N).
    total="$(ls "$out"/callgrind.out.*.* | sort -t. -k4 -n | tail -n 1 | xargs awk '/^(summary|totals):/ { print $2; exit }')"
    [ -n "$total" ] && [ "${requests:-0}" -gt 0 ] || die "setup $setup: no dump or no requests"
    awk -v s="$setup" -v t="$total" -v n="$requests" 'BEGIN { printf "%s %.0f %d\n", s, t / n, n }'
}

say "binary: $POSTERN, $ITEMS posts per list (GET $BOOKS_PATH)"
for setup in $SETUPS; do
    case "$setup" in
        A) line="$(measure A)" ;;
        C) line="$(measure C POSTERN_CACHE_TTL_MS=1000)" ;;
        R) line="$(MEASURE_URL="http://$HOST:$GATEWAY_PORT${BOOKS_PATH/books/posts}" measure R)" ;;
        *) die "unknown setup $setup (A, C or R)" ;;
    esac
    set -- $line
    say "setup $1: $2 instructions per request (over $3 requests, wrk -t1 -c8 -d$DURATION)"
    echo "$1 $2"
done
