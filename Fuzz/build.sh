#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/Targets/ into .build/fuzz/<target> with the Swift toolchain's
# own libFuzzer and AddressSanitizer (swiftc -sanitize=fuzzer,address). SwiftPM cannot build libFuzzer
# executables, so the library targets (PosternIO, PosternHTTP, PosternRedis, DirectusPlan, PosternCore: each
# compiled from its Sources/ folder, in the order they depend on each other) are compiled here once as
# instrumented static libraries (with -enable-testing, so that targets can `@testable import` PosternCore, and
# one package name, so that `package` declarations are seen as SwiftPM lets the tests see them); each target
# links against them.
# Usage: Fuzz/build.sh [target...]   (default: every Fuzz/Targets/*.swift)
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-swiftc}
OUT=.build/fuzz
mkdir -p "$OUT"

FLAGS=(-swift-version 6 -O -sanitize=fuzzer,address -g -package-name Postern
       -I Sources/CEvent -I Sources/COpenSSL -I Sources/CSQLite -I Sources/CHiredis -I Sources/CLLHTTP/include
       -I Sources/CJSONScan -I Sources/CHeadScan)
LIBS=(-use-ld=lld -levent -levent_pthreads -lssl -lcrypto -lsqlite3 -lhiredis)

# llhttp (the HTTP/1.1 parser) is C compiled from Debian's node-llhttp sources, as SwiftPM's CLLHTTP target does:
# built here with the same instrumentation and linked into every target.
CLANG=${CLANG:-$(dirname "$(command -v "$SWIFTC")")/clang}
llhttp="$OUT/libllhttp.a"
if [ ! -f "$llhttp" ] || [ -n "$(find Sources/CLLHTTP Fuzz/build.sh -newer "$llhttp" -print -quit)" ]; then
    echo "fuzz: building instrumented llhttp"
    objects=()
    for c in Sources/CLLHTTP/*.c; do
        "$CLANG" -O2 -g -fsanitize=fuzzer-no-link,address -I Sources/CLLHTTP/include -c "$c" -o "$OUT/llhttp-$(basename "$c" .c).o"
        objects+=("$OUT/llhttp-$(basename "$c" .c).o")
    done
    rm -f "$llhttp"
    ar rcs "$llhttp" "${objects[@]}"
fi
LIBS+=("$llhttp")

# PosternCore's console CSS and JavaScript (Console/Resources) become Swift strings at build time: SwiftPM runs
# postern-embed through the EmbedText plugin; here it is run directly, and its output compiled with PosternCore.
embed="$OUT/postern-embed"
if [ ! -x "$embed" ] || [ Sources/postern-embed/main.swift -nt "$embed" ]; then
    "$SWIFTC" -swift-version 6 -O Sources/postern-embed/main.swift -o "$embed"
fi
resources=Sources/PosternCore/Console/Resources
"$embed" "$OUT/DashboardPage+Resources.swift" DashboardPage style="$resources/dashboard.css" script="$resources/dashboard.js"

# The library targets, lowest first (Package.swift's dependency order).
modules=(PosternIO PosternHTTP PosternRedis DirectusPlan PosternCore)
libs=()
rebuilt=0
for module in "${modules[@]}"; do
    lib="$OUT/lib$module.a"
    mapfile -t sources < <(find "Sources/$module" -name '*.swift' | sort)
    if [ "$module" = PosternCore ]; then sources+=("$OUT/DashboardPage+Resources.swift"); fi
    if [ "$rebuilt" = 1 ] || [ ! -f "$lib" ] || [ -n "$(find "Sources/$module" Fuzz/build.sh -newer "$lib" -print -quit)" ]; then
        echo "fuzz: building instrumented $module (${#sources[@]} files)"
        "$SWIFTC" "${FLAGS[@]}" -module-name "$module" -parse-as-library -enable-testing -I "$OUT" \
            -emit-module -emit-module-path "$OUT/$module.swiftmodule" \
            -emit-library -static -o "$lib" "${sources[@]}"
        rebuilt=1  # the modules above it import this one: build them again
    fi
    libs+=("$lib")
done

if [ "$#" -gt 0 ]; then targets=("$@"); else
    targets=()
    for f in Fuzz/Targets/*.swift; do targets+=("$(basename "$f" .swift)"); done
fi
for t in "${targets[@]}"; do
    src="Fuzz/Targets/$t.swift"
    [ -f "$src" ] || { echo "fuzz: no such target: $t" >&2; exit 2; }
    # The transcoder's oracle and the answer parser's replay live with the tests that use them too.
    extra=()
    if [ "$t" = transcoder ]; then extra=(Tests/PosternCoreTests/Mapping/JSONValueRenderer.swift); fi
    if [ "$t" = http_response_plain ]; then extra=(Tests/PosternHTTPTests/AnswerReplay.swift); fi
    if [ "$t" = http_request_plain ]; then extra=(Tests/PosternHTTPTests/RequestReplay.swift Tests/PosternHTTPTests/AnswerReplay.swift); fi
    bin="$OUT/$t"
    if [ ! -x "$bin" ] || [ -n "$(find "$src" Fuzz/Support "${extra[@]}" "${libs[@]}" -newer "$bin" -print -quit)" ]; then
        echo "fuzz: building $t"
        "$SWIFTC" "${FLAGS[@]}" -module-name "Fuzz_$t" -parse-as-library -I "$OUT" \
            "$src" "${extra[@]}" Fuzz/Support/*.swift "${libs[@]}" "${LIBS[@]}" -o "$bin"
    fi
done
