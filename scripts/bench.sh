#!/usr/bin/env bash
# `make bench`: the gateway against a plain nginx proxy, on loopback, in one run (docs/api.md,
# Limits and defaults).
#
#   upstream  one nginx worker serving a canned Directus answer: bench/posts-20.json (20 posts,
#             about 5 KB; with BENCH_ITEMS=100, bench/posts-100.json, 100 posts, about 25 KB, and A/C ask
#             GET /api/v1/books?limit=100) for GET /items/posts with any query, plus the sign-in calls
#   B         a one-worker nginx keep-alive proxy of the upstream call    GET /items/posts?...
#   A         the gateway (release, one worker, memory sessions)          GET /api/v1/books
#   C         A with POSTERN_CACHE_TTL_MS=1000 (the micro-cache)          GET /api/v1/books
#   H         the home screen, uncached and cached: the composite         GET /api/v1/home
#             against its three parts called one after another         me, books?mine=true&limit=5, posts?sort=…&limit=3
#             (each a row; BENCH_HOME=0 leaves them out)
#
# Same wrk settings for all, each after a short warm-up. Prints requests/s, p50, p99, CPU per
# request, the peak RSS (VmHWM) of the measured process, the ratios A/B and C/B, and whether the
# targets are met. It is a report: it exits 0 whether or not they are (non-zero only when it
# could not measure). A run where wrk saw non-2xx answers or socket errors is flagged.
#
# BENCH_ROUNDS=3 repeats B, A, C three times and adds the medians (each ratio is taken within its
# round, so that a machine busy with something else skews both sides alike).
#
# Overrides: BENCH_DURATION (10s) BENCH_WARMUP (2s) BENCH_THREADS (2) BENCH_CONNECTIONS (64)
#            BENCH_WORKERS (gateway worker counts, "1"; e.g. "1 2") BENCH_CACHE_TTL_MS (1000)
#            BENCH_ROUNDS (1) BENCH_ITEMS (20, or 100) BENCH_LOG_LEVEL (warning) BENCH_FRONT_CPUS + BENCH_LOAD_CPUS (pinning) and the
#            ports/build switches in bench/lib.sh
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
ROUNDS="${BENCH_ROUNDS:-1}"
HOME_ROWS="${BENCH_HOME:-1}"

prepare_tools
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
start_upstream
start_proxy

# round, label, rps, p50, p99, cpu µs/req, rss MB, non-2xx, socket errors, user µs/req, wrk µs/req, upstream µs/req,
# idle % of all cores
RESULTS="$WORK/results.tsv"
: > "$RESULTS"
NOTES="$WORK/notes.txt"
: > "$NOTES"

# children_seconds FILE: the CPU seconds (user + system) of this shell's finished children, from `times`
# written to FILE by the shell itself (a command substitution would be a subshell with no children).
children_seconds() {
    awk 'NR == 2 { n = split($0, t, / +/); s = 0
                   for (i = 1; i <= n; i++) { split(t[i], p, /[ms]/); s += p[1] * 60 + p[2] }
                   printf "%.3f", s }' "$1"
}

# per_request TICKS REQUESTS: clock ticks of CPU as µs per request.
per_request() {
    awk -v d="$1" -v hz="$CLK_TCK" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", d / hz * 1e6 / n; else print 0 }'
}

# measure ROUND LABEL URL TOKEN PID: warm-up, then the measured wrk run; PID is the process whose
# CPU time and peak RSS are reported. wrk's own CPU is taken too (it shares the cores), the canned upstream's,
# and how long the cores were idle meanwhile.
measure() {
    local round="$1" label="$2" url="$3" token="$4" pid="$5" out t0 t1 u0 u1 s0 s1 i0 i1 w0 w1 requests cpu user non2xx sockerr wrk_cpu
    local upstream_cpu idle
    out="$WORK/wrk-$round-${label//[^a-zA-Z0-9]/_}.txt"
    say "round $round, $label: warm-up $WARMUP, then wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency $url"
    run_wrk "$out.warmup" "$url" "$token" "$WARMUP"
    t0="$(cpu_ticks "$pid")"
    u0="$(user_ticks "$pid")"
    s0="$(cpu_ticks "$UPSTREAM_WORKER_PID")"
    i0="$(idle_ticks)"
    w0="$(date +%s.%N)"
    times > "$WORK/times.before"
    run_wrk "$out" "$url" "$token" "$DURATION"
    times > "$WORK/times.after"
    t1="$(cpu_ticks "$pid")"
    u1="$(user_ticks "$pid")"
    s1="$(cpu_ticks "$UPSTREAM_WORKER_PID")"
    i1="$(idle_ticks)"
    w1="$(date +%s.%N)"
    requests="$(wrk_field "$out" requests)"
    wrk_cpu="$(awk -v a="$(children_seconds "$WORK/times.before")" -v b="$(children_seconds "$WORK/times.after")" -v n="$requests" \
        'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / n; else print 0 }')"
    cpu="$(per_request "$((t1 - t0))" "$requests")"
    user="$(per_request "$((u1 - u0))" "$requests")"
    upstream_cpu="$(per_request "$((s1 - s0))" "$requests")"
    idle="$(awk -v d="$((i1 - i0))" -v hz="$CLK_TCK" -v cores="$(nproc)" -v a="$w0" -v b="$w1" \
        'BEGIN { s = b - a; if (s > 0) printf "%.0f", d / hz / (cores * s) * 100; else print 0 }')"
    non2xx="$(wrk_field "$out" non2xx)"
    sockerr="$(wrk_field "$out" sockerr)"
    if [ "$non2xx" != 0 ] || [ "$sockerr" != 0 ]; then
        warn "$label: the run had errors ($non2xx non-2xx answers, socket errors: $(sed -n 's/.*Socket errors: *//p' "$out"))"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$label" "$(wrk_field "$out" rps)" \
        "$(wrk_field "$out" p50)" "$(wrk_field "$out" p99)" "$cpu" "$(peak_rss_mb "$pid")" "$non2xx" "$sockerr" "$user" "$wrk_cpu" \
        "$upstream_cpu" "$idle" >> "$RESULTS"
}

# note TEXT: print TEXT now and in the report, once however many rounds say it.
note() {
    grep -qxF "$1" "$NOTES" && return 0
    echo "$1"
    echo "$1" >> "$NOTES"
}

for round in $(seq "$ROUNDS"); do
    measure "$round" "B nginx proxy" "http://$HOST:$PROXY_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN" "$PROXY_WORKER_PID"
    for workers in $WORKERS_LIST; do
        say "A: gateway, POSTERN_WORKERS=$workers, log level $LOG_LEVEL"
        start_gateway "$workers" "gateway-a-w$workers" || die "the gateway did not start (see above)"
        measure "$round" "A gateway w=$workers" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" "$GATEWAY_PID"
        stop_gateway

        say "C: gateway, POSTERN_WORKERS=$workers, POSTERN_CACHE_TTL_MS=$CACHE_TTL"
        if ! start_gateway "$workers" "gateway-c-w$workers" POSTERN_CACHE_TTL_MS="$CACHE_TTL"; then
            reason="$(grep -v '^[[:space:]]*$' "$WORK/gateway-c-w$workers.log" | tail -n1 | cut -c1-160)"
            note "C: cache not available (the gateway refused POSTERN_CACHE_TTL_MS=$CACHE_TTL: $reason)"
            continue
        fi
        # A second request must be served from the cache (X-Cache: HIT) for C to mean anything.
        check_list "gateway (cache)" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" books
        if ! grep -qi '^x-cache: *hit' "$LAST_HEADERS"; then
            note "C: cache not available (POSTERN_CACHE_TTL_MS=$CACHE_TTL accepted, but a repeated GET has no X-Cache: HIT)"
            stop_gateway
            continue
        fi
        measure "$round" "C gateway+cache w=$workers" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" "$GATEWAY_PID"
        stop_gateway

        [ "$HOME_ROWS" = 0 ] && continue
        # The home screen: one composite call, against its three parts called one after another (a wrk script
        # that goes through them in turn), uncached, then with the micro-cache.
        write_parts_script "$WORK/home-parts.lua"
        for cached in 0 1; do
            if [ "$cached" = 1 ]; then
                start_gateway "$workers" "gateway-h$cached-w$workers" POSTERN_CACHE_TTL_MS="$CACHE_TTL" || continue
                suffix="+cache"
            else
                start_gateway "$workers" "gateway-h$cached-w$workers" || die "the gateway did not start (see above)"
                suffix=""
            fi
            check_home "gateway (home)" "http://$HOST:$GATEWAY_PORT$HOME_PATH" "$POSTERN_TOKEN"
            measure "$round" "H home$suffix w=$workers" "http://$HOST:$GATEWAY_PORT$HOME_PATH" "$POSTERN_TOKEN" "$GATEWAY_PID"
            WRK_SCRIPT="$WORK/home-parts.lua" measure "$round" "H 3 parts$suffix w=$workers" \
                "http://$HOST:$GATEWAY_PORT" "$POSTERN_TOKEN" "$GATEWAY_PID"
            stop_gateway
        done
    done
done
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- report ---------------------------------------------------------------------------------------
echo
echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency (after $WARMUP warm-up), $ROUNDS round(s), on $(nproc) cores;" \
     "load average before $LOAD_BEFORE, after $LOAD_AFTER"
echo "B: GET $ITEMS_PATH   A/C: GET $BOOKS_PATH (gateway log level $LOG_LEVEL)"
[ "$HOME_ROWS" = 0 ] || echo "H: GET $HOME_PATH, and its parts ${HOME_PARTS[*]} one after another (a screen is 3 of those requests)"
if [ "${#FRONT_PIN[@]}" -gt 0 ]; then
    echo "pinned: the front (gateway, nginx proxy) on CPUs $BENCH_FRONT_CPUS; wrk and the canned upstream on CPUs $BENCH_LOAD_CPUS"
fi
echo "CPU and peak RSS (VmHWM): the gateway process (A, C), the nginx proxy's worker (B); 'of it user': utime alone"
echo "(the rest is the kernel's work for the process's socket calls, about the same for B and A); 'wrk µs/req': wrk's own CPU;"
echo "'upstream': the canned upstream's CPU µs/req (its nginx worker); 'idle %': all cores idle, over the run"
python3 - "$RESULTS" "$NOTES" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
notes = [line.rstrip("\n") for line in open(sys.argv[2]) if line.strip()]
runs = [dict(round=int(r[0]), label=r[1], rps=float(r[2] or 0), p50=float(r[3] or 0), p99=float(r[4] or 0),
             cpu=float(r[5] or 0), rss=float(r[6] or 0), non2xx=int(r[7]), sockerr=int(r[8]),
             user=float(r[9] or 0), wrk=float(r[10] or 0), up=float(r[11] or 0), idle=float(r[12] or 0))
        for r in rows]
# The CPU per request of everything the run needs: the measured process, wrk and the canned upstream (its
# share: C makes no upstream calls on a hit).
for r in runs:
    r["all"] = r["cpu"] + r["wrk"] + r["up"]
b_of = {r["round"]: r for r in runs if r["label"].startswith("B")}
for r in runs:
    b = b_of.get(r["round"])
    r["ratio"] = r["rps"] / b["rps"] if b and b["rps"] else 0.0
    r["b_p99"] = b["p99"] if b else 0.0
    r["errors"] = "-" if r["non2xx"] == 0 and r["sockerr"] == 0 else f"ERRORS: {r['non2xx']} non-2xx, {r['sockerr']} socket"

head = (f"{'target':<26} {'requests/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'CPU µs/req':>11} {'of it user':>10} "
        f"{'wrk µs/req':>10} {'upstream':>8} {'idle %':>6} {'RSS MB':>7} {'÷ B':>6}  errors")
def line(label, r):
    return (f"{label:<26} {r['rps']:>10.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['cpu']:>11.0f} {r['user']:>10.1f} "
            f"{r['wrk']:>10.1f} {r['up']:>8.1f} {r['idle']:>6.0f} {r['rss']:>7.1f} {r['ratio']:>6.2f}  {r['errors']}")

rounds = sorted({r["round"] for r in runs})
labels = list(dict.fromkeys(r["label"] for r in runs))
print(head)
for r in runs:
    print(line(r["label"] if len(rounds) == 1 else f"{r['label']} #{r['round']}", r))
summary = {}
for label in labels:
    mine = [r for r in runs if r["label"] == label]
    med = {k: statistics.median(r[k] for r in mine)
           for k in ("rps", "p50", "p99", "cpu", "user", "wrk", "up", "idle", "all", "ratio", "b_p99")}
    med["b_all"] = statistics.median(b_of[r["round"]]["all"] for r in mine if r["round"] in b_of) if b_of else 0.0
    med["b_rps"] = statistics.median(b_of[r["round"]]["rps"] for r in mine if r["round"] in b_of) if b_of else 0.0
    med["b_cpu"] = statistics.median(b_of[r["round"]]["cpu"] for r in mine if r["round"] in b_of) if b_of else 0.0
    med["rss"] = max(r["rss"] for r in mine)
    bad = [r["errors"] for r in mine if r["errors"] != "-"]
    med["errors"] = "-" if not bad else f"ERRORS in {len(bad)} of {len(mine)} rounds"
    summary[label] = med
if len(rounds) > 1:
    print()
    print(f"medians of {len(rounds)} rounds (÷ B: the median of the ratios within each round; RSS: the highest)")
    print(head)
    for label in labels:
        print(line(label, summary[label]))
for n in notes:
    print(n)

print()
# The targets of DESIGN 6.6 as revised on 5 Dec 2026: read on the median of at least 5 rounds (BENCH_ROUNDS=5).
print("targets (docs/api.md, Limits and defaults; a report, not a test; read on BENCH_ROUNDS=5 or more):")
verdict = lambda ok: "met" if ok else "NOT met"
for label in labels:
    if label.startswith("B") or label.startswith("H"):
        continue
    m = summary[label]
    want = 2.2 if label.startswith("C") else 1.0
    flag = "" if m["errors"] == "-" else "  (errors: not valid)"
    cpu = f"   CPU {m['cpu']:.0f} ≤ B's {m['b_cpu']:.0f} µs: {verdict(m['cpu'] <= m['b_cpu'])}" if b_of else ""
    print(f"  {label:<24} ratio {m['ratio']:.2f} ≥ {want:.1f}: {verdict(m['ratio'] >= want):<8} "
          f"p99 {m['p99']:.2f} ≤ {m['b_p99']:.2f} + 1 ms: {verdict(m['p99'] <= m['b_p99'] + 1):<8} "
          f"RSS {m['rss']:.1f} MB < 40: {verdict(m['rss'] < 40)}{cpu}{flag}")

# The home screen: a screen is one composite request, or three requests of its parts one after another.
homes = [label for label in labels if label.startswith("H")]
if homes:
    print()
    print("home screen (a report: the composite against its three parts called one after another):")
    print(f"  {'row':<26} {'screens/s':>10} {'CPU µs/screen':>14} {'p50 ms':>8} {'p99 ms':>8}  note")
    for label in homes:
        m = summary[label]
        per = 3 if " 3 parts" in label else 1
        note = "p50/p99 of one part's request; a screen waits for 3 in turn" if per == 3 else "p50/p99 of the screen"
        print(f"  {label:<26} {m['rps'] / per:>10.0f} {m['cpu'] * per:>14.0f} {m['p50']:>8.2f} {m['p99']:>8.2f}  {note}")

# What the run's CPU allows: on loopback every process of the run shares the same cores, so at equal use of the
# cores the ratio to B is B's CPU per request over the target's, summed over the measured process, wrk and the
# canned upstream. A ratio of requests/s below it means the cores were idle more often than in B's run (the
# "idle %" column: the scheduler's placement of four busy threads on the cores, which moves from run to run).
for label in labels:
    m = summary[label]
    if label.startswith("B") or not m["all"] or not m["b_all"]:
        continue
    print(f"  {label:<24} CPU per request, all processes: {m['all']:.1f} µs (B: {m['b_all']:.1f}); at B's use of the cores "
          f"the ratio would be {m['b_all'] / m['all']:.2f}")

# What the cores allow: wrk shares them with the measured process. With every core busy, requests/s
# cannot pass cores / (wrk's CPU + the gateway's CPU) per request; the line below is that bound with the
# gateway's user time taken as zero (its kernel part, the socket calls, stays).
cores = __import__("os").cpu_count() or 1
for label in labels:
    m = summary[label]
    if not label.startswith("C") or not m["b_rps"] or not m["wrk"]:
        continue
    kernel = max(m["cpu"] - m["user"], 0.0)
    bound = cores * 1e6 / (m["wrk"] + kernel)
    print(f"  {label:<24} bound on {cores} cores with no user time in the gateway: {bound:.0f} requests/s "
          f"= {bound / m['b_rps']:.2f} × B (wrk {m['wrk']:.1f} + gateway kernel {kernel:.1f} µs per request)")
PY
