#!/usr/bin/env bash
# `make bench`: a short side-by-side benchmark on loopback.
#
#   gateway   Postern  GET /api/v1/books                      -> stand-in
#   nginx     nginx    GET /items/posts?…  (keep-alive proxy)  -> stand-in
#   stand-in  the Directus stand-in directly, same path (baseline)
#
# The gateway's book list makes exactly the upstream call that nginx proxies, so gateway/nginx is
# the price of Postern's work (session lookup, policy, mapping) over a plain reverse proxy.
#
# Overrides: BENCH_DURATION (10s) BENCH_THREADS (2) BENCH_CONNECTIONS (32)
#            BENCH_WORKERS (gateway worker counts to try, "1 2")
#            BENCH_STANDIN_PORT (18055) BENCH_GATEWAY_PORT (18080) BENCH_ADMIN_PORT (19180)
#            BENCH_NGINX_PORT (18081) BENCH_SKIP_BUILD (unset: build release first)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

DURATION="${BENCH_DURATION:-10s}"
THREADS="${BENCH_THREADS:-2}"
CONNECTIONS="${BENCH_CONNECTIONS:-32}"
WORKERS_LIST="${BENCH_WORKERS:-1 2}"
STANDIN_PORT="${BENCH_STANDIN_PORT:-18055}"
GATEWAY_PORT="${BENCH_GATEWAY_PORT:-18080}"
ADMIN_PORT="${BENCH_ADMIN_PORT:-19180}"
NGINX_PORT="${BENCH_NGINX_PORT:-18081}"
HOST=127.0.0.1
ITEMS_PATH='/items/posts?fields=id,title,content,user_created&limit=20&offset=0&meta=filter_count'
BOOKS_PATH='/api/v1/books'
POSTERN=.build/release/postern

say() { printf '\033[1mbench:\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31mbench: %s\033[0m\n' "$*" >&2; exit 1; }

# --- tools and build ------------------------------------------------------------------------------
bash scripts/deps.sh nginx-light wrk curl
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$NGINX" ] || die "nginx not found after installing nginx-light"
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    say "building release"
    swift build -c release >&2
fi
[ -x "$POSTERN" ] || die "$POSTERN missing (run swift build -c release)"

# --- processes we start, and only those, are stopped on exit --------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/postern-bench.XXXXXX")"
STARTED_PIDS=()
GATEWAY_PID=""

stop_pid() {   # stop_pid PID: TERM, wait up to 5 s, then KILL
    local pid="$1" i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -s "$WORK/nginx.pid" ]; then stop_pid "$(cat "$WORK/nginx.pid")"; fi
    [ -n "$GATEWAY_PID" ] && stop_pid "$GATEWAY_PID"
    local pid
    for pid in "${STARTED_PIDS[@]}"; do stop_pid "$pid"; done
    if [ "$status" -ne 0 ]; then
        local log
        for log in "$WORK"/*.log; do
            [ -s "$log" ] || continue
            echo "--- last lines of $(basename "$log")" >&2
            tail -n 20 "$log" >&2
        done
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for NAME PID URL: until URL answers 200, the process dies, or 15 s pass.
wait_for() {
    local name="$1" pid="$2" url="$3" i
    for i in $(seq 150); do
        kill -0 "$pid" 2>/dev/null || die "$name exited during start-up"
        if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)" = 200 ]; then return 0; fi
        sleep 0.1
    done
    die "$name did not answer $url within 15 s"
}

# sanity NAME URL AUTH: one request must answer 200 before we load it.
sanity() {
    local name="$1" url="$2" auth="$3" code
    code="$(curl -s -o "$WORK/sanity.json" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $auth" "$url" || true)"
    if [ "$code" != 200 ]; then
        echo "--- $name answered $code:" >&2
        head -c 600 "$WORK/sanity.json" >&2 || true
        echo >&2
        die "sanity check failed for $name: GET $url -> $code (expected 200)"
    fi
}

# json_get FILE EXPR: a value from a JSON file (python3 when there, else sed).
json_get() {
    local file="$1" expr="$2"
    if command -v python3 >/dev/null; then
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {'d': d}))" "$file" "$expr" 2>/dev/null || true
    else
        case "$expr" in
            *access_token*) sed -n 's/.*"access_token" *: *"\([^"]*\)".*/\1/p' "$file" ;;
            *token*)        sed -n 's/.*"token" *: *"\([^"]*\)".*/\1/p' "$file" ;;
        esac
    fi
}

RESULTS=()   # "label|req/s|p99 ms|errors"

# run_wrk LABEL URL AUTH
run_wrk() {
    local label="$1" url="$2" auth="$3" out="$WORK/wrk-${1//[^a-zA-Z0-9]/_}.txt"
    say "wrk -t$THREADS -c$CONNECTIONS -d$DURATION  $label  $url"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency \
        -H "Authorization: Bearer $auth" "$url" > "$out"
    local rps p99 non2xx sockerr
    rps="$(awk '/^Requests\/sec:/ {print $2}' "$out")"
    # wrk prints e.g. "     99%    1.23ms" (units us, ms or s); convert to ms.
    p99="$(awk '$1 == "99%" {
              v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
              if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
              printf "%.2f", v }' "$out")"
    non2xx="$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")"
    sockerr="$(sed -n 's/.*Socket errors: *//p' "$out")"
    [ -n "$rps" ] || { cat "$out" >&2; die "could not read wrk output for $label"; }
    local errors="${non2xx:-0} non-2xx"
    [ -n "$sockerr" ] && errors="$errors; sockets: $sockerr"
    RESULTS+=("$label|$rps|$p99|$errors")
}

# --- the stand-in and nginx -----------------------------------------------------------------------
say "starting the Directus stand-in on $HOST:$STANDIN_PORT"
"$POSTERN" standin "$STANDIN_PORT" > "$WORK/standin.log" 2>&1 &
STANDIN_PID=$!
sleep 0.2
if ! kill -0 "$STANDIN_PID" 2>/dev/null && grep -q 'unexpected argument' "$WORK/standin.log"; then
    # Older CLIs reject `standin PORT` and only serve the stand-in on its fixed port 8055.
    wait "$STANDIN_PID" 2>/dev/null || true
    STANDIN_PORT=8055
    say "this postern rejects 'standin PORT'; falling back to 'postern standin' on $HOST:$STANDIN_PORT"
    if curl -s -o /dev/null --max-time 1 "http://$HOST:$STANDIN_PORT/"; then
        die "port $STANDIN_PORT is already in use"
    fi
    "$POSTERN" standin > "$WORK/standin.log" 2>&1 &
    STANDIN_PID=$!
fi
STARTED_PIDS+=("$STANDIN_PID")
wait_for "stand-in" "$STANDIN_PID" "http://$HOST:$STANDIN_PORT/server/ping"

curl -s --max-time 5 -X POST "http://$HOST:$STANDIN_PORT/auth/login" -H 'Content-Type: application/json' \
    -d '{"email":"x@y.com","password":"123456"}' > "$WORK/directus-login.json" || true
DIRECTUS_TOKEN="$(json_get "$WORK/directus-login.json" "d['data']['access_token']")"
[ -n "$DIRECTUS_TOKEN" ] || { cat "$WORK/directus-login.json" >&2; die "stand-in login failed"; }

mkdir -p "$WORK/nginx-temp"
cat > "$WORK/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx-temp/body;
    proxy_temp_path       $WORK/nginx-temp/proxy;
    fastcgi_temp_path     $WORK/nginx-temp/fastcgi;
    uwsgi_temp_path       $WORK/nginx-temp/uwsgi;
    scgi_temp_path        $WORK/nginx-temp/scgi;
    upstream standin {
        server $HOST:$STANDIN_PORT;
        keepalive 64;
    }
    server {
        listen $HOST:$NGINX_PORT;
        location / {
            proxy_pass http://standin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
NGINX
say "starting nginx on $HOST:$NGINX_PORT"
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf" > "$WORK/nginx.log" 2>&1 &
STARTED_PIDS+=($!)
wait_for "nginx" "$!" "http://$HOST:$NGINX_PORT/server/ping"

sanity "stand-in" "http://$HOST:$STANDIN_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN"
sanity "nginx" "http://$HOST:$NGINX_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN"

# --- the gateway, once per worker count ------------------------------------------------------------
for workers in $WORKERS_LIST; do
    say "starting the gateway on $HOST:$GATEWAY_PORT with POSTERN_WORKERS=$workers"
    POSTERN_LISTEN="$HOST:$GATEWAY_PORT" POSTERN_ADMIN_LISTEN="$HOST:$ADMIN_PORT" \
    POSTERN_DIRECTUS_URL="http://$HOST:$STANDIN_PORT" POSTERN_SESSION_STORE=memory \
    POSTERN_LOG_LEVEL=warning POSTERN_WORKERS="$workers" \
        "$POSTERN" serve > "$WORK/gateway-w$workers.log" 2>&1 &
    GATEWAY_PID=$!
    wait_for "gateway" "$GATEWAY_PID" "http://$HOST:$GATEWAY_PORT/healthz"

    curl -s --max-time 5 -X POST "http://$HOST:$GATEWAY_PORT/api/v1/user/login" \
        -H 'Content-Type: application/json' -d '{"email":"x@y.com","password":"123456"}' \
        > "$WORK/postern-login.json" || true
    POSTERN_TOKEN="$(json_get "$WORK/postern-login.json" "d['user']['token']")"
    [ -n "$POSTERN_TOKEN" ] || { cat "$WORK/postern-login.json" >&2; die "gateway login failed"; }
    sanity "gateway" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN"

    run_wrk "gateway (workers=$workers)" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN"
    stop_pid "$GATEWAY_PID"
    GATEWAY_PID=""
done

run_wrk "nginx (1 worker)" "http://$HOST:$NGINX_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN"
run_wrk "stand-in direct" "http://$HOST:$STANDIN_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN"

# --- report ---------------------------------------------------------------------------------------
nginx_rps=""
for row in "${RESULTS[@]}"; do
    case "$row" in "nginx"*) nginx_rps="$(cut -d'|' -f2 <<<"$row")" ;; esac
done

echo
echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION on $(nproc) cores; gateway GET $BOOKS_PATH, others GET $ITEMS_PATH"
printf '%-22s %12s %10s %10s  %s\n' "target" "requests/s" "p99 ms" "÷ nginx" "errors"
for row in "${RESULTS[@]}"; do
    IFS='|' read -r label rps p99 errors <<<"$row"
    ratio="$(awk -v a="$rps" -v b="$nginx_rps" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
    printf '%-22s %12s %10s %10s  %s\n' "$label" "$rps" "$p99" "$ratio" "$errors"
done
