#!/usr/bin/env bash
# `make profile`: where the gateway's CPU goes on the `make bench` A setup (canned nginx Directus
# upstream with 20 posts, one gateway worker, memory sessions, wrk on GET /api/v1/books).
#
#   1. CPU per request, unprofiled: the gateway's utime+stime (/proc/PID/stat) over a wrk run,
#      divided by the requests wrk counted.
#   2. perf record -g on the gateway during a second wrk run: the top symbols by self time and
#      by children (inclusive) time, Swift names demangled. Without perf (or when the kernel
#      refuses it), valgrind --tool=callgrind over a short, lighter wrk run instead.
#   3. Per request: malloc calls (a uprobe on the malloc the binary uses: jemalloc's, or libc's), syscalls and context switches
#      (perf stat over a third run; split into voluntary and preempted from /proc), then the mallocs per request under each caller (a sample of
#      malloc call stacks). The malloc parts are skipped when uprobes are not available.
#
# The raw data (perf.data, reports, wrk outputs) stay in .bench/profile-<time>/.
#
# Overrides: PROFILE_DURATION (10s) PROFILE_WARMUP (2s) PROFILE_FREQ (999 Hz) PROFILE_TOP (25)
#            PROFILE_TOP_CHILDREN (40) PROFILE_MALLOC_PERIOD (200: one malloc stack in 200)
#            PROFILE_CALL_GRAPH (dwarf; or fp, lbr) PROFILE_TOOL (perf; or callgrind)
#            PROFILE_WORKERS (1) BENCH_THREADS (2) BENCH_CONNECTIONS (64), and the BENCH_* ports
#            and build switches of bench/lib.sh
#            PROFILE_CACHE_TTL_MS (unset): profile the bench's C setup instead, the gateway started with
#            POSTERN_CACHE_TTL_MS set to this (e.g. 1000: after the first request every one is a cache hit)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TOOL=profile
# shellcheck source=../bench/lib.sh
source bench/lib.sh

DURATION="${PROFILE_DURATION:-10s}"
WARMUP="${PROFILE_WARMUP:-2s}"
FREQ="${PROFILE_FREQ:-999}"
TOP="${PROFILE_TOP:-25}"
TOP_CHILDREN="${PROFILE_TOP_CHILDREN:-40}"
MALLOC_PERIOD="${PROFILE_MALLOC_PERIOD:-200}"
CALL_GRAPH="${PROFILE_CALL_GRAPH:-dwarf}"
PROFILER="${PROFILE_TOOL:-perf}"
WORKERS="${PROFILE_WORKERS:-1}"
THREADS="${BENCH_THREADS:-2}"
CONNECTIONS="${BENCH_CONNECTIONS:-64}"
CACHE_TTL="${PROFILE_CACHE_TTL_MS:-}"
GATEWAY_ENV=()
SETUP="A setup"
if [ -n "$CACHE_TTL" ]; then
    [[ "$CACHE_TTL" =~ ^[0-9]+$ ]] || die "PROFILE_CACHE_TTL_MS is whole milliseconds, e.g. 1000"
    GATEWAY_ENV=(POSTERN_CACHE_TTL_MS="$CACHE_TTL")
    SETUP="C setup, POSTERN_CACHE_TTL_MS=$CACHE_TTL"
fi
[[ "$DURATION" =~ ^[0-9]+s$ && "$WARMUP" =~ ^[0-9]+s$ ]] || die "PROFILE_DURATION and PROFILE_WARMUP are whole seconds, e.g. 10s"
OUT=".bench/profile-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"

prepare_tools linux-perf
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
start_upstream
URL="http://$HOST:$GATEWAY_PORT$BOOKS_PATH"

# demangle: Swift symbols in a report, readable (swift demangle leaves other text alone).
demangle() {
    if swift demangle --help >/dev/null 2>&1; then swift demangle --simplified; else cat; fi
}

# top_lines N: the first N rows of a perf report table (its percentage lines; callgrind_annotate's
# start with an instruction count instead), cut to 200 columns. Reads all its input (no SIGPIPE).
top_lines() {
    awk -v n="$1" '/^ *([0-9]+\.[0-9]+%|[0-9,]+ \()/ && shown < n { sub(/( +-)* *$/, ""); print substr($0, 1, 200); shown++ }'
}

# --- 1. CPU per request, without a profiler -------------------------------------------------------
start_gateway "$WORKERS" gateway "${GATEWAY_ENV[@]}" || die "the gateway did not start"
say "warm-up $WARMUP; then wrk -t$THREADS -c$CONNECTIONS -d$DURATION on $URL (no profiler)"
run_wrk "$OUT/wrk-warmup.txt" "$URL" "$POSTERN_TOKEN" "$WARMUP"
t0="$(cpu_ticks "$GATEWAY_PID")"
run_wrk "$OUT/wrk-plain.txt" "$URL" "$POSTERN_TOKEN" "$DURATION"
t1="$(cpu_ticks "$GATEWAY_PID")"
PLAIN_REQUESTS="$(wrk_field "$OUT/wrk-plain.txt" requests)"
PLAIN_RPS="$(wrk_field "$OUT/wrk-plain.txt" rps)"
CPU_US="$(awk -v d="$((t1 - t0))" -v hz="$CLK_TCK" -v n="$PLAIN_REQUESTS" 'BEGIN { printf "%.0f", d / hz * 1e6 / n }')"
CPU_SHARE="$(awk -v d="$((t1 - t0))" -v hz="$CLK_TCK" -v s="${DURATION%s}" 'BEGIN { printf "%.0f", d / hz / s * 100 }')"
ERRORS=""
if [ "$(wrk_field "$OUT/wrk-plain.txt" non2xx)" != 0 ] || [ "$(wrk_field "$OUT/wrk-plain.txt" sockerr)" != 0 ]; then
    ERRORS="  (ERRORS in this run: $(wrk_field "$OUT/wrk-plain.txt" non2xx) non-2xx, $(wrk_field "$OUT/wrk-plain.txt" sockerr) socket)"
    warn "the unprofiled run had errors"
fi

# --- 2. the profile -------------------------------------------------------------------------------
PROFILE_DONE=""
if [ "$PROFILER" = perf ] && command -v perf >/dev/null; then
    say "perf record -F $FREQ --call-graph $CALL_GRAPH on the gateway during wrk -d$DURATION"
    perf record -F "$FREQ" --call-graph "$CALL_GRAPH" -o "$OUT/perf.data" -p "$GATEWAY_PID" \
        -- sleep "${DURATION%s}" > "$WORK/perf-record.log" 2>&1 &
    PERF_PID=$!
    started "$PERF_PID"
    run_wrk "$OUT/wrk-perf.txt" "$URL" "$POSTERN_TOKEN" "$DURATION"
    if wait "$PERF_PID" && [ -s "$OUT/perf.data" ]; then
        say "perf report"
        perf report -i "$OUT/perf.data" --stdio --no-children --sort symbol -g none --percent-limit 0.2 \
            2>/dev/null | demangle > "$OUT/self.txt"
        perf report -i "$OUT/perf.data" --stdio --children --sort symbol -g none --percent-limit 0.5 \
            2>/dev/null | demangle > "$OUT/children.txt"
        perf report -i "$OUT/perf.data" --stdio --no-children --sort dso -g none \
            2>/dev/null > "$OUT/dso.txt"
        PROFILE_DONE=perf
    else
        warn "perf record failed: $(tail -n 3 "$WORK/perf-record.log" | tr '\n' ' ')"
        warn "falling back to valgrind --tool=callgrind"
    fi
    forget "$PERF_PID"
fi
stop_gateway

if [ -z "$PROFILE_DONE" ]; then
    bash scripts/deps.sh valgrind
    command -v valgrind >/dev/null || die "neither perf nor valgrind can profile here"
    # valgrind runs the gateway ~50x slower: fewer connections, and time to start.
    say "callgrind: the gateway under valgrind, wrk -t1 -c8 -d$DURATION"
    if ! GATEWAY_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=$OUT/callgrind.out" WAIT_SECONDS=120 \
            start_gateway "$WORKERS" gateway-callgrind "${GATEWAY_ENV[@]}"; then
        # Valgrind 3.19 (Debian 12) dies with an internal SIGSEGV on the gateway, whatever the tool.
        grep -q 'VALGRIND INTERNAL ERROR' "$WORK/gateway-callgrind.log" \
            && die "valgrind $(valgrind --version | sed 's/valgrind-//') crashed running the gateway (internal error, any tool): no profile"
        die "the gateway did not start under valgrind"
    fi
    THREADS=1 CONNECTIONS=8 run_wrk "$OUT/wrk-callgrind.txt" "$URL" "$POSTERN_TOKEN" "$DURATION"
    stop_gateway   # callgrind writes its file when the gateway exits
    [ -s "$OUT/callgrind.out" ] || die "callgrind wrote no profile"
    callgrind_annotate --inclusive=no "$OUT/callgrind.out" 2>/dev/null | demangle > "$OUT/self.txt"
    callgrind_annotate --inclusive=yes "$OUT/callgrind.out" 2>/dev/null | demangle > "$OUT/children.txt"
    : > "$OUT/dso.txt"
    CALL_GRAPH="callgrind"
    PROFILE_DONE=callgrind
fi

# --- 3. malloc calls, syscalls and context switches per request; where the mallocs come from -----
ALLOC_LINE="allocations: not measured (no uprobes on malloc here)"
start_gateway "$WORKERS" gateway-count "${GATEWAY_ENV[@]}" || die "the gateway did not start"
run_wrk "$OUT/wrk-warmup2.txt" "$URL" "$POSTERN_TOKEN" "$WARMUP"
# The library whose malloc the binary calls: jemalloc when it is linked (the release build), else libc.
LIBC="$(ldd "$POSTERN" | awk '$1 ~ /^libjemalloc\.so/ { print $3 }')"
[ -n "$LIBC" ] || LIBC="$(ldd "$POSTERN" | awk '$1 ~ /^libc\.so/ { print $3 }')"
PROBE=""
perf probe -q -d probe_postern:postern_malloc >/dev/null 2>&1 || true   # ours, left by an interrupted run
if [ -n "$LIBC" ] && perf probe -q -x "$LIBC" --add probe_postern:postern_malloc=malloc >/dev/null 2>"$WORK/probe.log"; then
    PROBE="probe_postern:postern_malloc"
    # The probe is global (though only counted for the processes perf watches): never leave it behind.
    ON_EXIT="perf probe -q -d $PROBE"
fi
EVENTS="task-clock,context-switches,raw_syscalls:sys_enter${PROBE:+,$PROBE}"
# switches PID KIND: the voluntary (blocked: epoll_wait with nothing ready, a lock) or nonvoluntary
# (preempted: another task wanted the core) context switches of all its threads so far.
switches() {
    cat /proc/"$1"/task/*/status 2>/dev/null | awk -v k="$2" '$1 == k"_ctxt_switches:" { n += $2 } END { print n + 0 }'
}
VOLUNTARY0="$(switches "$GATEWAY_PID" voluntary)"
NONVOLUNTARY0="$(switches "$GATEWAY_PID" nonvoluntary)"
say "perf stat -e $EVENTS on the gateway during wrk -d$DURATION"
perf stat -x, -e "$EVENTS" -o "$OUT/stat.csv" -p "$GATEWAY_PID" -- sleep "${DURATION%s}" > /dev/null 2>&1 &
STAT_PID=$!
started "$STAT_PID"
run_wrk "$OUT/wrk-stat.txt" "$URL" "$POSTERN_TOKEN" "$DURATION"
wait "$STAT_PID" || warn "perf stat failed"
VOLUNTARY1="$(switches "$GATEWAY_PID" voluntary)"
NONVOLUNTARY1="$(switches "$GATEWAY_PID" nonvoluntary)"
forget "$STAT_PID"
touch "$OUT/stat.csv"
STAT_REQUESTS="$(wrk_field "$OUT/wrk-stat.txt" requests)"
per_request() {   # per_request EVENT: its count in stat.csv divided by the requests of that run
    awk -F, -v e="$1" -v n="$STAT_REQUESTS" '$3 == e && $1 ~ /^[0-9.]+$/ { printf "%.1f", $1 / n; found = 1 }
                                              END { if (!found) print "-" }' "$OUT/stat.csv"
}
SYSCALLS="$(per_request raw_syscalls:sys_enter)"
SWITCHES="$(per_request context-switches)"
SWITCH_KINDS="$(awk -v v="$((VOLUNTARY1 - VOLUNTARY0))" -v i="$((NONVOLUNTARY1 - NONVOLUNTARY0))" -v n="$STAT_REQUESTS" \
    'BEGIN { printf "%.2f voluntary, %.2f preempted", v / n, i / n }')"
MALLOCS=""
if [ -n "$PROBE" ]; then
    MALLOCS="$(per_request "$PROBE")"
    ALLOC_LINE="malloc calls per request: $MALLOCS  (uprobe on $LIBC malloc; calloc/realloc/posix_memalign not counted)"
    # One malloc in MALLOC_PERIOD with its call stack: the callers' shares of the mallocs.
    say "perf record -e $PROBE -c $MALLOC_PERIOD (malloc call stacks) during wrk -d4s"
    perf record -e "$PROBE" -c "$MALLOC_PERIOD" --call-graph dwarf,16384 -o "$OUT/malloc.data" -p "$GATEWAY_PID" \
        -- sleep 4 > "$WORK/malloc-record.log" 2>&1 &
    MREC_PID=$!
    started "$MREC_PID"
    run_wrk "$OUT/wrk-malloc.txt" "$URL" "$POSTERN_TOKEN" 4s
    if wait "$MREC_PID"; then
        perf report -i "$OUT/malloc.data" --stdio --children --sort symbol -g none --percent-limit 1 \
            2>/dev/null | demangle > "$OUT/malloc-callers.txt"
    fi
    forget "$MREC_PID"
    perf probe -q -d "$PROBE" >/dev/null 2>&1 || true
    ON_EXIT=""
fi
stop_gateway
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- report ---------------------------------------------------------------------------------------
echo
echo "profile of the gateway ($SETUP, POSTERN_WORKERS=$WORKERS, log level $LOG_LEVEL), wrk -t$THREADS -c$CONNECTIONS -d$DURATION on GET $BOOKS_PATH"
echo "on $(nproc) cores; load average before $LOAD_BEFORE, after $LOAD_AFTER; raw data in $OUT/"
echo
echo "CPU per request: $CPU_US µs  (gateway utime+stime over $PLAIN_REQUESTS requests, $PLAIN_RPS requests/s, one core at $CPU_SHARE %)$ERRORS"
echo "syscalls per request: $SYSCALLS   context switches per request: $SWITCHES ($SWITCH_KINDS)"
echo "$ALLOC_LINE"
echo
if [ "$PROFILE_DONE" = perf ]; then
    echo "top $TOP symbols by self time (perf, $CALL_GRAPH call graphs, $FREQ Hz):"
else
    echo "top $TOP symbols by self time (callgrind, instructions):"
fi
echo "    Self  Symbol"
top_lines "$TOP" < "$OUT/self.txt"
echo
echo "top $TOP_CHILDREN symbols by children (inclusive) time:"
echo "Children      Self  Symbol"
top_lines "$TOP_CHILDREN" < "$OUT/children.txt"
if [ -s "$OUT/malloc-callers.txt" ]; then
    echo
    echo "malloc calls per request under each frame (inclusive; sampled one in $MALLOC_PERIOD, event-loop frames left out):"
    top_lines 400 < "$OUT/malloc-callers.txt" | awk -v per="$MALLOCS" '
        { pct = $1; sub(/%/, "", pct); pct += 0 }
        pct < 95 && shown < 40 { sub(/^ *[0-9.]+% +[0-9.]+% +/, ""); printf "%8.1f  %s\n", pct / 100 * per, $0; shown++ }'
fi
echo
echo "by shared object (self):"
top_lines 8 < "$OUT/dso.txt"
