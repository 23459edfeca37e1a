#!/usr/bin/env bash
# Layer rule: no type declared under Sources/PosternCore/Application/ (the composition root) is used from
# Policy/, Pipeline/, Upstream/ or Auth/. Lists the type names Application/*.swift declares, then looks for
# each as a whole word in those folders' code (comment lines skipped); prints file:line for each use.
set -euo pipefail
cd "$(dirname "$0")/.."
core=Sources/PosternCore
names=$(grep -hoE '^[[:space:]]*((public|internal|private|fileprivate|package|final|indirect)[[:space:]]+)*(struct|class|enum|protocol|actor|typealias)[[:space:]]+[A-Za-z_][A-Za-z0-9_]*' \
    "$core"/Application/*.swift | awk '{print $NF}' | sort -u)
if [ -z "$names" ]; then
    echo "check-layers: no types found under $core/Application (is the pattern stale?)" >&2
    exit 1
fi
status=0
for name in $names; do
    # grep -n prints file:line:text; drop lines whose code part is a comment.
    hits=$(grep -rnw --include='*.swift' -- "$name" "$core/Policy" "$core/Pipeline" "$core/Upstream" "$core/Auth" \
        | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
    if [ -n "$hits" ]; then
        echo "check-layers: $name (declared in $core/Application/) is used outside it:" >&2
        echo "$hits" | sed 's/^/  /' >&2
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "check-layers: no Application/ type used from Policy/, Pipeline/, Upstream/ or Auth/ ($(echo $names | wc -w) types checked)"
exit "$status"
