# Shared by scripts/bench.sh and scripts/profile.sh (sourced, not run).
#
# Provides: a temp dir ($WORK), process bookkeeping that only ever stops the PIDs this script
# started, the canned Directus upstream (one nginx worker), the nginx keep-alive proxy, the
# gateway (release build) with a signed-in user, and wrk/proc helpers.
#
# Overrides (environment):
#   BENCH_UPSTREAM_PORT (18055)  the canned Directus upstream (nginx)
#   BENCH_PROXY_PORT    (18081)  the nginx keep-alive proxy (reference B)
#   BENCH_GATEWAY_PORT  (18080)  the gateway;  BENCH_ADMIN_PORT (19180) its admin listener
#   BENCH_LOG_LEVEL     (warning) the gateway's POSTERN_LOG_LEVEL (info = one access-log line per request)
#   BENCH_SKIP_BUILD    (unset)  set to skip `swift build $RELEASE_FLAGS`
#   BENCH_POSTERN       (.build/release/postern)  the gateway binary measured (e.g. a copy of an older build)
#   BENCH_ITEMS         (20)     posts per list: 20 (bench/posts-20.json, GET /api/v1/books) or 100
#                                (bench/posts-100.json, GET /api/v1/books?limit=100)
#   BENCH_ITEMS_PATH             the upstream call the gateway makes for GET /api/v1/books
#   BENCH_FRONT_CPUS, BENCH_LOAD_CPUS (unset)  CPU lists for `taskset -c`: the measured front (the gateway, or
#                                B's nginx proxy) on the first, wrk and the canned upstream on the second; both or neither

HOST=127.0.0.1
UPSTREAM_PORT="${BENCH_UPSTREAM_PORT:-18055}"
PROXY_PORT="${BENCH_PROXY_PORT:-18081}"
GATEWAY_PORT="${BENCH_GATEWAY_PORT:-18080}"
ADMIN_PORT="${BENCH_ADMIN_PORT:-19180}"
LOG_LEVEL="${BENCH_LOG_LEVEL:-warning}"
# The upstream call the gateway makes for GET /api/v1/books (shipped `books` resource, default limit
# 20), byte for byte as it sends it (seen in an nginx access log), so that B proxies the same request.
ITEMS="${BENCH_ITEMS:-20}"
case "$ITEMS" in
    20)  BOOKS_PATH='/api/v1/books' ;;
    100) BOOKS_PATH='/api/v1/books?limit=100' ;;
    *)   printf 'BENCH_ITEMS is 20 or 100 (bench/posts-20.json, bench/posts-100.json)\n' >&2; exit 1 ;;
esac
ITEMS_PATH="${BENCH_ITEMS_PATH:-/items/posts?fields=id%2Ctitle%2Ccontent%2Cuser_created&limit=$ITEMS&offset=0&meta=filter_count}"
POSTERN="${BENCH_POSTERN:-.build/release/postern}"
# The shipped binary's build (the Dockerfile's and the Makefile's `release` flags; scripts/check-runtime-libs.sh
# keeps the three the same): a static Swift runtime also takes ~6 MB off the gateway's resident set.
RELEASE_FLAGS="-c release --static-swift-stdlib"
BENCH_EMAIL='bench@example.com'
BENCH_PASSWORD='bench-password'
# Matches user_created of post 1 in bench/posts-20.json.
BENCH_USER_ID='7c1e2a4b-5d6f-4a8b-9c0d-1e2f3a4b5c6d'
BENCH_ROLE_ID='5b1c7f7e-0000-4000-8000-00000000b00c'

say()  { printf '\033[1m%s:\033[0m %s\n' "$TOOL" "$*" >&2; }
warn() { printf '\033[1;33m%s: %s\033[0m\n' "$TOOL" "$*" >&2; }
die()  { printf '\033[1;31m%s: %s\033[0m\n' "$TOOL" "$*" >&2; exit 1; }

# --- processes we start, and only those, are stopped on exit --------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/postern-$TOOL.XXXXXX")"
STARTED_PIDS=()

stop_pid() {   # stop_pid PID: TERM, wait up to 5 s, then KILL
    local pid="$1" i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local status=$? pid log
    trap - EXIT INT TERM
    if [ -n "${ON_EXIT:-}" ]; then $ON_EXIT >/dev/null 2>&1 || true; fi
    # Newest first: the gateway before the upstream it talks to.
    for (( i=${#STARTED_PIDS[@]}-1; i>=0; i-- )); do stop_pid "${STARTED_PIDS[$i]}"; done
    if [ "$status" -ne 0 ]; then
        for log in "$WORK"/*.log; do
            [ -s "$log" ] || continue
            echo "--- last lines of $(basename "$log")" >&2
            tail -n 20 "$log" >&2
        done
    fi
    if [ -n "${BENCH_KEEP:-}" ]; then echo "$TOOL: kept $WORK" >&2; else rm -rf "$WORK"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Optional pinning, for machines with cores enough that the front alone on its own can be what limits
# requests/s (on 2 cores the core of wrk and the upstream limits both A and B: bench/README.md).
FRONT_PIN=()
LOAD_PIN=()
if [ -n "${BENCH_FRONT_CPUS:-}${BENCH_LOAD_CPUS:-}" ]; then
    [ -n "${BENCH_FRONT_CPUS:-}" ] && [ -n "${BENCH_LOAD_CPUS:-}" ] \
        || die "set both BENCH_FRONT_CPUS and BENCH_LOAD_CPUS (CPU lists for taskset -c), or neither"
    taskset -c "$BENCH_FRONT_CPUS" true 2>/dev/null || die "BENCH_FRONT_CPUS=$BENCH_FRONT_CPUS is not a CPU list taskset accepts here"
    taskset -c "$BENCH_LOAD_CPUS" true 2>/dev/null || die "BENCH_LOAD_CPUS=$BENCH_LOAD_CPUS is not a CPU list taskset accepts here"
    FRONT_PIN=(taskset -c "$BENCH_FRONT_CPUS")
    LOAD_PIN=(taskset -c "$BENCH_LOAD_CPUS")
fi

# started PID: remember a process of ours.
started() { STARTED_PIDS+=("$1"); }

# forget PID: after we stopped it ourselves.
forget() {
    local keep=() p
    for p in "${STARTED_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    STARTED_PIDS=("${keep[@]}")
}

# port_free PORT: nothing answers on it.
port_free() { ! (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# wait_ready PID URL: 0 once URL answers 200; 1 when the process exits or WAIT_SECONDS (15) pass.
wait_ready() {
    local pid="$1" url="$2" i
    for i in $(seq "$(( ${WAIT_SECONDS:-15} * 10 ))"); do
        kill -0 "$pid" 2>/dev/null || return 1
        if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)" = 200 ]; then return 0; fi
        sleep 0.1
    done
    return 1
}

# --- tools and build ------------------------------------------------------------------------------
prepare_tools() {   # prepare_tools EXTRA_PACKAGE...
    bash scripts/deps.sh nginx-light wrk curl python3 "$@"
    NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
    [ -x "$NGINX" ] || die "nginx not found after installing nginx-light"
    if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
        say "building release (swift build $RELEASE_FLAGS)"
        # shellcheck disable=SC2086  # the flags are words
        swift build $RELEASE_FLAGS >&2
    fi
    [ -x "$POSTERN" ] || die "$POSTERN missing (run swift build $RELEASE_FLAGS)"
    local port
    for port in "$UPSTREAM_PORT" "$PROXY_PORT" "$GATEWAY_PORT" "$ADMIN_PORT"; do
        port_free "$port" || die "port $port is already in use (override with BENCH_*_PORT)"
    done
}

b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }

# --- the canned Directus upstream: one nginx worker ------------------------------------------------
# Serves bench/posts-$ITEMS.json for GET /items/posts (any query; bench/posts-$ITEMS-authors.json when `fields`
# reads user_created.first_name, as the shipped `posts` does) and the few calls sign-in needs, in
# Directus's shapes. The access token is JWT-shaped (Postern reads its id and role claims) and
# expires in 2100; `expires` (its lifetime in ms) is a year, so no refresh happens during a run.
start_upstream() {
    local now header payload jwt login me posts authors
    now="$(date +%s)"
    header="$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)"
    payload="$(printf '{"id":"%s","role":"%s","app_access":true,"admin_access":false,"iat":%s,"exp":4102444800,"iss":"directus"}' \
               "$BENCH_USER_ID" "$BENCH_ROLE_ID" "$now" | b64url)"
    jwt="$header.$payload.$(printf 'bench-signature-not-checked' | b64url)"
    DIRECTUS_TOKEN="$jwt"
    login="{\"data\":{\"access_token\":\"$jwt\",\"refresh_token\":\"bench-refresh-token\",\"expires\":31536000000}}"
    me="{\"data\":{\"id\":\"$BENCH_USER_ID\",\"email\":\"$BENCH_EMAIL\",\"role\":\"$BENCH_ROLE_ID\"}}"
    posts="$(cd bench && pwd)/posts-$ITEMS.json"
    authors="$(cd bench && pwd)/posts-$ITEMS-authors.json"
    mkdir -p "$WORK/upstream"
    cat > "$WORK/upstream.conf" <<NGINX
worker_processes 1;
daemon off;
pid $WORK/upstream.pid;
error_log $WORK/upstream-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    open_file_cache max=16;
    open_file_cache_valid 1h;
    client_body_temp_path $WORK/upstream/body;
    proxy_temp_path       $WORK/upstream/proxy;
    fastcgi_temp_path     $WORK/upstream/fastcgi;
    uwsgi_temp_path       $WORK/upstream/uwsgi;
    scgi_temp_path        $WORK/upstream/scgi;
    server {
        listen $HOST:$UPSTREAM_PORT backlog=4096;
        default_type application/json;
        # A read through the relation user_created (the shipped posts' author) gets the related rows too.
        location = /items/posts  { if (\$arg_fields ~ first_name) { rewrite ^ /relational-posts last; } alias $posts; }
        location = /relational-posts { internal; alias $authors; }
        location = /auth/login   { return 200 '$login'; }
        location = /auth/refresh { return 200 '$login'; }
        location = /auth/logout  { return 204; }
        location = /users/me     { return 200 '$me'; }
        location = /server/ping  { default_type text/html; return 200 'pong'; }
        location / {
            return 404 '{"errors":[{"message":"Route not found.","extensions":{"code":"ROUTE_NOT_FOUND"}}]}';
        }
    }
}
NGINX
    "$NGINX" -t -q -p "$WORK" -c "$WORK/upstream.conf" 2>"$WORK/upstream-test.log" \
        || { cat "$WORK/upstream-test.log" >&2; die "canned upstream config rejected by nginx"; }
    say "canned Directus upstream (nginx, 1 worker) on $HOST:$UPSTREAM_PORT"
    "${LOAD_PIN[@]}" "$NGINX" -p "$WORK" -c "$WORK/upstream.conf" > "$WORK/upstream.log" 2>&1 &
    UPSTREAM_PID=$!
    started "$UPSTREAM_PID"
    wait_ready "$UPSTREAM_PID" "http://$HOST:$UPSTREAM_PORT/server/ping" || die "canned upstream did not start"
    check_list "canned upstream" "http://$HOST:$UPSTREAM_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN" data
    # Its worker serves every call (the master only forks): its CPU per request is reported too.
    UPSTREAM_WORKER_PID="$(children_of "$UPSTREAM_PID" | head -n1)"
}

# --- B: the nginx keep-alive proxy of the same upstream call ---------------------------------------
start_proxy() {
    mkdir -p "$WORK/proxy"
    cat > "$WORK/proxy.conf" <<NGINX
worker_processes 1;
daemon off;
pid $WORK/proxy.pid;
error_log $WORK/proxy-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/proxy/body;
    proxy_temp_path       $WORK/proxy/proxy;
    fastcgi_temp_path     $WORK/proxy/fastcgi;
    uwsgi_temp_path       $WORK/proxy/uwsgi;
    scgi_temp_path        $WORK/proxy/scgi;
    upstream directus {
        server $HOST:$UPSTREAM_PORT;
        keepalive 64;
        keepalive_requests 1000000;
    }
    server {
        listen $HOST:$PROXY_PORT backlog=4096;
        location / {
            proxy_pass http://directus;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
NGINX
    say "nginx keep-alive proxy (1 worker) on $HOST:$PROXY_PORT"
    "${FRONT_PIN[@]}" "$NGINX" -p "$WORK" -c "$WORK/proxy.conf" > "$WORK/proxy.log" 2>&1 &
    PROXY_PID=$!
    started "$PROXY_PID"
    wait_ready "$PROXY_PID" "http://$HOST:$PROXY_PORT/server/ping" || die "nginx proxy did not start"
    check_list "nginx proxy" "http://$HOST:$PROXY_PORT$ITEMS_PATH" "$DIRECTUS_TOKEN" data
    # The master only forks; the worker does the work (its CPU is what we report).
    PROXY_WORKER_PID="$(children_of "$PROXY_PID" | head -n1)"
}

# children_of PID: its child processes (from /proc, no process-name matching).
children_of() {
    local task
    for task in /proc/"$1"/task/*/children; do tr ' ' '\n' < "$task"; done 2>/dev/null | sed '/^$/d'
}

# --- A/C: the gateway ------------------------------------------------------------------------------
# start_gateway WORKERS LOGNAME [VAR=VALUE...]: 0 when it answers /healthz and a user is signed in
# (GATEWAY_PID, POSTERN_TOKEN); 1 when it refused to start (its log says why). GATEWAY_WRAPPER
# (words, e.g. a valgrind command line) runs in front of the binary, in the same process.
start_gateway() {
    local workers="$1" name="$2"
    shift 2
    env POSTERN_LISTEN="$HOST:$GATEWAY_PORT" POSTERN_ADMIN_LISTEN="$HOST:$ADMIN_PORT" \
        POSTERN_DIRECTUS_URL="http://$HOST:$UPSTREAM_PORT" POSTERN_SESSION_STORE=memory \
        POSTERN_LOG_LEVEL="$LOG_LEVEL" POSTERN_WORKERS="$workers" "$@" \
        "${FRONT_PIN[@]}" ${GATEWAY_WRAPPER:-} "$POSTERN" serve > "$WORK/$name.log" 2>&1 &
    GATEWAY_PID=$!
    started "$GATEWAY_PID"
    if ! wait_ready "$GATEWAY_PID" "http://$HOST:$GATEWAY_PORT/healthz"; then
        stop_gateway
        return 1
    fi
    curl -s --max-time 5 -X POST "http://$HOST:$GATEWAY_PORT/api/v1/user/login" \
        -H 'Content-Type: application/json' \
        -d "{\"email\":\"$BENCH_EMAIL\",\"password\":\"$BENCH_PASSWORD\"}" > "$WORK/login.json" || true
    POSTERN_TOKEN="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["user"]["token"])' \
                     "$WORK/login.json" 2>/dev/null || true)"
    [ -n "$POSTERN_TOKEN" ] || { cat "$WORK/login.json" >&2; echo >&2; die "gateway sign-in failed"; }
    check_list "gateway" "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" "$POSTERN_TOKEN" books
}

stop_gateway() {
    [ -n "${GATEWAY_PID:-}" ] || return 0
    stop_pid "$GATEWAY_PID"
    forget "$GATEWAY_PID"
    GATEWAY_PID=""
}

# check_list NAME URL TOKEN KEY: one GET must answer 200 with 20 items under KEY.
# Sets LAST_HEADERS to the answer's header file.
check_list() {
    local name="$1" url="$2" token="$3" key="$4" code count
    LAST_HEADERS="$WORK/check-headers.txt"
    code="$(curl -s -D "$LAST_HEADERS" -o "$WORK/check.json" -w '%{http_code}' --max-time 5 \
            -H "Authorization: Bearer $token" "$url" || true)"
    count="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))[sys.argv[2]]))' \
             "$WORK/check.json" "$key" 2>/dev/null || echo '?')"
    if [ "$code" != 200 ] || [ "$count" != "$ITEMS" ]; then
        echo "--- $name answered $code:" >&2
        head -c 600 "$WORK/check.json" >&2 || true
        echo >&2
        die "check failed for $name: GET $url -> $code with $count items under \"$key\" (expected 200 with $ITEMS)"
    fi
}

# --- measurements ---------------------------------------------------------------------------------
# cpu_ticks PID: utime+stime of the whole process (all threads), in clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
# user_ticks PID: utime alone (the process's own code; stime is the kernel's work on its behalf).
user_ticks() { awk '{ sub(/^.*\) /, ""); print $12 }' "/proc/$1/stat"; }
CLK_TCK="$(getconf CLK_TCK)"

# idle_ticks: the idle time of all cores (idle + iowait in /proc/stat), in clock ticks.
idle_ticks() { awk '/^cpu / { print $5 + $6 }' /proc/stat; }

# peak_rss_mb PID: VmHWM (peak resident set) in MB.
peak_rss_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# run_wrk OUT URL TOKEN DURATION: wrk with the shared settings; its output in OUT. WRK_SCRIPT (a Lua file), when
# set, is passed to wrk with -s (e.g. the three parts of the home screen, in turn).
run_wrk() {
    local out="$1" url="$2" token="$3" duration="$4" script=()
    [ -n "${WRK_SCRIPT:-}" ] && script=(-s "$WRK_SCRIPT")
    "${LOAD_PIN[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$duration" --latency "${script[@]}" -H "Authorization: Bearer $token" "$url" > "$out" 2>&1 \
        || { cat "$out" >&2; die "wrk failed on $url"; }
}

# The home screen (docs/api.md, Composite endpoints): the composite, and the same three parts as three calls.
HOME_PATH='/api/v1/home'
HOME_PARTS=('/api/v1/user/me' '/api/v1/books?mine=true&limit=5' '/api/v1/posts?sort=-date_created&limit=3')

# write_parts_script FILE: a wrk Lua script whose requests go through HOME_PARTS in turn, one after another.
write_parts_script() {
    local file="$1" path list=""
    for path in "${HOME_PARTS[@]}"; do list+="\"$path\", "; done
    cat > "$file" <<LUA
local paths = {${list%, }}
local next_part = 0
request = function()
    next_part = next_part % #paths + 1
    return wrk.format("GET", paths[next_part])
end
LUA
}

# check_home NAME URL TOKEN: one GET of the home composite must answer 200 with X-Postern-Complete: true.
# Sets LAST_HEADERS to the answer's header file.
check_home() {
    local name="$1" url="$2" token="$3" code
    LAST_HEADERS="$WORK/check-headers.txt"
    code="$(curl -s -D "$LAST_HEADERS" -o "$WORK/check.json" -w '%{http_code}' --max-time 5 \
            -H "Authorization: Bearer $token" "$url" || true)"
    if [ "$code" != 200 ] || ! grep -qi '^x-postern-complete: *true' "$LAST_HEADERS"; then
        head -c 600 "$WORK/check.json" >&2 || true
        echo >&2
        die "check failed for $name: GET $url -> $code (expected 200 with X-Postern-Complete: true)"
    fi
}

# wrk_field OUT NAME: rps | requests | p50 | p99 (ms) | non2xx | sockerr (sum of socket errors)
wrk_field() {
    local out="$1"
    case "$2" in
        rps)      awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$out" ;;
        requests) awk '/requests in/ { print $1 }' "$out" ;;
        p50|p99)  awk -v want="${2#p}%" '$1 == want {
                      v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
                      if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
                      printf "%.2f", v }' "$out" ;;
        non2xx)   awk '/Non-2xx or 3xx responses:/ { n = $NF } END { print n + 0 }' "$out" ;;
        sockerr)  sed -n 's/.*Socket errors: *//p' "$out" | tr -cs '0-9' ' ' \
                      | awk '{ for (i = 1; i <= NF; i++) s += $i } END { print s + 0 }' ;;
    esac
}
