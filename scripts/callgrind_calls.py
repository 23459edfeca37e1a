#!/usr/bin/env python3
"""Per-request call counts and inclusive costs from a callgrind dump (docs/performance.md).

    scripts/callgrind_calls.py CALLGRIND_OUT REQUESTS [REGEX...]

Prints, for every function whose (mangled or demangled) name matches one of the regexes (default: the
allocator and the reference counting), the calls per request (summed over all call sites) and the inclusive
instructions per call site total per request. Reads the dump's own call records (`calls=` lines), which
callgrind_annotate does not show. Names are demangled with `swift demangle --simplified` when it exists.
"""
import collections
import re
import subprocess
import sys


def parse(path):
    names = {}
    calls = collections.Counter()
    inclusive = collections.Counter()
    pending = None
    expect_cost = False
    with open(path, errors="replace") as f:
        for line in f:
            if expect_cost:
                expect_cost = False
                parts = line.split()
                if len(parts) >= 2 and pending is not None:
                    inclusive[pending] += int(parts[1])
                continue
            if line.startswith(("fn=", "cfn=", "cfi=", "cfl=")):
                key, _, rest = line.rstrip("\n").partition("=")
                if key in ("cfi", "cfl"):
                    continue
                m = re.match(r"\((\d+)\)(?: (.*))?", rest)
                if m:
                    ident, name = m.group(1), m.group(2)
                    if name:
                        names[ident] = name
                    if key == "cfn":
                        pending = ident
                else:
                    if key == "cfn":
                        pending = rest
                        names.setdefault(rest, rest)
            elif line.startswith("calls="):
                count = int(line[6:].split()[0])
                if pending is not None:
                    calls[pending] += count
                expect_cost = True
    return names, calls, inclusive


def demangle(names):
    text = "\n".join(names)
    try:
        out = subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True,
                             text=True, check=True).stdout.split("\n")
        if len(out) >= len(names):
            return out[: len(names)]
    except (OSError, subprocess.CalledProcessError):
        pass
    return list(names)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, requests = sys.argv[1], int(sys.argv[2])
    patterns = [re.compile(p) for p in sys.argv[3:]] or [
        re.compile(r"^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|sdallocx|je_\w+)$"),
        re.compile(r"^swift_(allocObject|deallocObject|retain|release|bridgeObjectRetain|bridgeObjectRelease|"
                   r"task_alloc|task_dealloc|task_create|job_run|continuation_\w+|task_switch)"),
    ]
    names, calls, inclusive = parse(path)
    idents = list(names)
    readable = dict(zip(idents, demangle([names[i] for i in idents])))
    rows = []
    for ident in idents:
        raw, nice = names[ident], readable[ident]
        if any(p.search(raw) or p.search(nice) for p in patterns) and calls[ident]:
            rows.append((calls[ident] / requests, inclusive[ident] / requests, nice))
    rows.sort(key=lambda r: -r[1])
    print(f"{'calls/req':>10} {'instr/req':>10}  function")
    for per, cost, nice in rows[:60]:
        print(f"{per:10.2f} {cost:10.0f}  {nice[:150]}")


if __name__ == "__main__":
    main()
