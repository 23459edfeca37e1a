#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/Targets/ into .build/fuzz/<target> with the Swift toolchain's
# own libFuzzer and AddressSanitizer (swiftc -sanitize=fuzzer,address). SwiftPM cannot build libFuzzer
# executables, so PosternCore is compiled once here as an instrumented static library (with
# -enable-testing, so that targets can `@testable import` it) and each target links against it.
# Usage: Fuzz/build.sh [target...]   (default: every Fuzz/Targets/*.swift)
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-swiftc}
OUT=.build/fuzz
mkdir -p "$OUT"

FLAGS=(-swift-version 6 -O -sanitize=fuzzer,address -g
       -I Sources/CEvent -I Sources/COpenSSL -I Sources/CSQLite -I Sources/CHiredis -I Sources/CLLHTTP/include
       -I Sources/CJSONScan)
LIBS=(-use-ld=lld -levent_openssl -levent -levent_pthreads -lssl -lcrypto -lsqlite3 -lhiredis)

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

lib="$OUT/libPosternCore.a"
mapfile -t core < <(find Sources/PosternCore -name '*.swift' | sort)
if [ ! -f "$lib" ] || [ -n "$(find Sources/PosternCore Fuzz/build.sh -newer "$lib" -print -quit)" ]; then
    echo "fuzz: building instrumented PosternCore (${#core[@]} files)"
    "$SWIFTC" "${FLAGS[@]}" -module-name PosternCore -parse-as-library -enable-testing \
        -emit-module -emit-module-path "$OUT/PosternCore.swiftmodule" \
        -emit-library -static -o "$lib" "${core[@]}"
fi

if [ "$#" -gt 0 ]; then targets=("$@"); else
    targets=()
    for f in Fuzz/Targets/*.swift; do targets+=("$(basename "$f" .swift)"); done
fi
for t in "${targets[@]}"; do
    src="Fuzz/Targets/$t.swift"
    [ -f "$src" ] || { echo "fuzz: no such target: $t" >&2; exit 2; }
    bin="$OUT/$t"
    if [ ! -x "$bin" ] || [ -n "$(find "$src" Fuzz/Support "$lib" -newer "$bin" -print -quit)" ]; then
        echo "fuzz: building $t"
        "$SWIFTC" "${FLAGS[@]}" -module-name "Fuzz_$t" -parse-as-library -I "$OUT" \
            "$src" Fuzz/Support/*.swift "$lib" "${LIBS[@]}" -o "$bin"
    fi
done
