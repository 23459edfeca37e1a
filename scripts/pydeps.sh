#!/usr/bin/env bash
# Installs the Python tools `make test` uses into a virtual environment under .build/venv (from PyPI,
# pinned): openapi-spec-validator and Schemathesis, for scripts/check-openapi.sh; Selenium, for
# scripts/dashboard_browser_test.py (with Debian's chromium and chromium-driver); kubernetes-validate, for
# scripts/check_kubernetes.py (its Kubernetes schemas are in the package: no network at check time). Idempotent and quiet
# when they are already there.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/venv
requirements=(openapi-spec-validator==0.9.0 schemathesis==4.32.5 selenium==4.27.1 kubernetes-validate==1.37.0)
stamp="$venv/.postern-requirements"
wanted="${requirements[*]}"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    exit 0
fi
echo "pydeps: installing ${requirements[*]} into $venv"
mkdir -p .build
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "${requirements[@]}"
echo "$wanted" > "$stamp"
