#!/usr/bin/env bash
# make check-observability: the files of the compose profile `observability` (docs/docker.md, Prometheus and
# Grafana) are valid:
#   1. `promtool check config deploy/prometheus/prometheus.yml`. promtool comes from Debian's `prometheus`
#      package: the one on PATH, or else the package's .deb fetched with `apt-get download` (19 MB, no
#      install: its dependencies and service are not needed) and unpacked under .build/promtool. It fails,
#      never skips, when promtool cannot be had.
#   2. The Grafana dashboard and provisioning files parse, and the dashboard's panels all use the
#      provisioned data source.
#   3. Every query of the dashboard is valid PromQL: `promtool check rules` on a rules file made of them
#      (Grafana's $__rate_interval replaced by 1m).
#   4. docker-compose.yml's profile `observability`: Prometheus's target is the `postern` service's admin
#      listener (POSTERN_ADMIN_LISTEN), which no `ports` publish; Grafana and Prometheus published on the
#      host's loopback only; the files they mount exist (the compose tool's own validation: make docker-smoke).
#   5. `promtool check metrics` (Prometheus's parser and lint) on the /metrics of `postern demo` on free
#      ports, after a login, a list, a 404 and a 401. Needs a debug build (swift build --product postern).
# That the dashboard's queries name only exported metrics is a Swift test (ObservabilityDashboardTests).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fail() { echo "check-observability: $*" >&2; exit 1; }

promtool=$(command -v promtool || true)
if [ -z "$promtool" ]; then
    dir=.build/promtool
    promtool=$dir/usr/bin/promtool
    if [ ! -x "$promtool" ]; then
        echo "check-observability: fetching promtool (Debian package prometheus, not installed)"
        mkdir -p "$dir"
        download=$(mktemp -d)
        trap 'rm -rf "$download"' EXIT
        # apt's _apt user must be able to write the download directory.
        chmod 0777 "$download"
        if ! (cd "$download" && apt-get download -qq prometheus >/dev/null 2>&1); then
            sudo=""
            [ "$(id -u)" -eq 0 ] || sudo="sudo"
            $sudo apt-get update -qq
            (cd "$download" && apt-get download -qq prometheus >/dev/null) || fail "apt-get download prometheus failed"
        fi
        dpkg-deb -x "$download"/prometheus_*.deb "$download/root" || fail "cannot unpack the prometheus package"
        mkdir -p "$dir/usr/bin"
        mv "$download/root/usr/bin/promtool" "$promtool"
    fi
fi

echo "check-observability: $("$promtool" --version 2>&1 | head -1)"
"$promtool" check config deploy/prometheus/prometheus.yml

python3 - <<'PY'
import json, sys
def fail(message):
    sys.exit(f"check-observability: {message}")
with open("deploy/grafana/postern.json") as f:
    dashboard = json.load(f)
panels = dashboard.get("panels") or []
if not panels:
    fail("deploy/grafana/postern.json has no panels")
for panel in panels:
    for target in [panel] + (panel.get("targets") or []):
        source = target.get("datasource")
        if source is not None and source != {"type": "prometheus", "uid": "prometheus"}:
            fail(f"panel {panel.get('title')!r} uses data source {source}, not the provisioned uid 'prometheus'")
    if not all(t.get("expr") for t in panel.get("targets") or [{}]):
        fail(f"panel {panel.get('title')!r} has a target without a query")
for path in ("deploy/grafana/provisioning/datasources/prometheus.yml", "deploy/grafana/provisioning/dashboards/postern.yml"):
    with open(path) as f:
        text = f.read()
    if "apiVersion: 1" not in text:
        fail(f"{path}: no 'apiVersion: 1'")
with open("deploy/grafana/provisioning/datasources/prometheus.yml") as f:
    if "uid: prometheus" not in f.read():
        fail("the provisioned data source's uid is not 'prometheus', which the dashboard names")
print(f"check-observability: deploy/grafana/postern.json: {len(panels)} panels, provisioning files present")
PY

work=$(mktemp -d)
demo_pid=""
cleanup() {
    if [ -n "$demo_pid" ]; then kill "$demo_pid" 2>/dev/null || true; wait "$demo_pid" 2>/dev/null || true; fi
    rm -rf "$work" "${download:-}"
}
trap cleanup EXIT
rules=$work/dashboard-rules.yml
python3 - "$rules" <<'PY'
import json, sys
with open("deploy/grafana/postern.json") as f:
    dashboard = json.load(f)
queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets") or []]
with open(sys.argv[1], "w") as out:
    out.write("groups:\n  - name: postern-dashboard\n    rules:\n")
    for i, query in enumerate(queries):
        out.write(f"      - record: postern_dashboard:query{i}\n        expr: {json.dumps(query.replace('$__rate_interval', '1m'))}\n")
PY
echo "check-observability: the dashboard's queries as recording rules"
"$promtool" check rules "$rules"

# 4. The compose profile (PyYAML from the venv of make deps, or the system's).
python=.build/venv/bin/python
[ -x "$python" ] || python=python3
"$python" - <<'PY'
import re, os, sys, yaml
def fail(message):
    sys.exit(f"check-observability: docker-compose.yml: {message}")
compose = yaml.safe_load(open("docker-compose.yml"))
services = compose["services"]
for name in ("prometheus", "grafana"):
    if name not in services:
        fail(f"no service {name}")
    if services[name].get("profiles") != ["observability"]:
        fail(f"service {name} is not in the profile observability only")
    for port in services[name].get("ports") or []:
        if not str(port).startswith("127.0.0.1:"):
            fail(f"service {name} publishes {port} beyond the host's loopback")
    for volume in services[name].get("volumes") or []:
        source = str(volume).split(":")[0]
        if source.startswith("./") and not os.path.exists(source):
            fail(f"service {name} mounts {source}, which does not exist")
postern = services["postern"]
listen = str((postern.get("environment") or {}).get("POSTERN_ADMIN_LISTEN", ""))
match = re.fullmatch(r"\$\{POSTERN_ADMIN_LISTEN:-0\.0\.0\.0:(\d+)\}", listen)
if not match:
    fail(f"the postern service's POSTERN_ADMIN_LISTEN is {listen!r}, not ${{POSTERN_ADMIN_LISTEN:-0.0.0.0:PORT}}")
admin_port = match.group(1)
if any(str(port).split(":")[-1] == admin_port for port in postern.get("ports") or []):
    fail(f"the postern service publishes its admin port {admin_port}")
prometheus = yaml.safe_load(open("deploy/prometheus/prometheus.yml"))
targets = [t for job in prometheus["scrape_configs"] for c in job.get("static_configs") or [] for t in c["targets"]]
if targets != [f"postern:{admin_port}"]:
    fail(f"deploy/prometheus/prometheus.yml scrapes {targets}, not the postern service's admin listener postern:{admin_port}")
print(f"check-observability: docker-compose.yml profile observability: Prometheus scrapes postern:{admin_port}, not published")
PY

# 5. The exposition itself, from a live gateway after traffic (the demo prints its public address; the admin
# listener gets a port chosen here).
postern=.build/debug/postern
[ -x "$postern" ] || swift build --product postern
admin_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
POSTERN_LISTEN=127.0.0.1:0 POSTERN_ADMIN_LISTEN=127.0.0.1:$admin_port POSTERN_LOG_LEVEL=warning \
    "$postern" demo --standin-port 0 > "$work/demo.out" 2> "$work/demo.err" &
demo_pid=$!
base=""
for _ in $(seq 1 100); do
    base=$(sed -n 's/^postern demo: gateway on \(http:\/\/[0-9.]*:[0-9]*\),.*/\1/p' "$work/demo.out" 2>/dev/null || true)
    [ -n "$base" ] && break
    kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.err" >&2; fail "demo did not start"; }
    sleep 0.1
done
[ -n "$base" ] || fail "demo printed no address"
token=$(curl -sf -X POST "$base/api/v1/user/login" -H 'Content-Type: application/json' \
    -d '{"email":"x@y.com","password":"123456"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["user"]["token"])') \
    || fail "demo login failed"
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
statuses="$(status -H "Authorization: Bearer $token" "$base/api/v1/books") $(status "$base/api/v1/nope") $(status "$base/api/v1/books")"
[ "$statuses" = "200 404 401" ] || fail "demo traffic: statuses '$statuses', expected '200 404 401'"
curl -sf "http://127.0.0.1:$admin_port/metrics" -o "$work/metrics" || fail "no /metrics on the admin listener"
grep -q '^postern_requests_total{' "$work/metrics" || fail "/metrics has no postern_requests_total sample after traffic"
echo "check-observability: promtool check metrics on the demo's /metrics"
"$promtool" check metrics < "$work/metrics"
echo "check-observability: OK"
