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

rules=$(mktemp --suffix=.yml)
trap 'rm -f "$rules"; rm -rf "${download:-}"' EXIT
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
