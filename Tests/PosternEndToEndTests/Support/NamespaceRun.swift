import Foundation
import PosternTesting

/// A run of `postern serve` in a network and mount namespace of its own (`unshare --mount --net`, as root), where
/// glibc's resolver reads the test's `/etc/resolv.conf` and `/etc/hosts` (bind-mounted over the real ones inside
/// the namespace only) and asks real DNS servers on 127.0.0.53 and 127.0.0.54 port 53: two copies of a tiny
/// UDP server (`DNSTestServer.script`). Beside them run the Directus stand-in (`postern standin`, 127.0.0.1:8055)
/// and a `redis-server` (127.0.0.1:6379), or instead a scripted upstream on the addresses the test names
/// (`AddressesTestUpstream.script`). A shell script inside the namespace starts everything, waits for each
/// part by polling, probes the admin listener with curl and prints one line per probe; everything it started
/// ends with it (and `timeout` bounds the whole run).
struct NamespaceRun {
    /// What the first nameserver does (the second answers NXDOMAIN to everything).
    enum FirstServer: String {
        /// Answers names written in lower case only; silent otherwise.
        case lowerCaseOnly = "lower-only"
        /// Answers names in any letter case.
        case anyCase = "any-case"
    }

    /// The lines the script printed (`readyz 200`, …), the gateway's log, and the queries the servers saw.
    struct Output {
        /// The script's standard output, one line per probe.
        let lines: [String]
        /// The script's standard error and exit status (for failure messages).
        let diagnostics: String
        /// The gateway's own output (its log).
        let gatewayLog: String
        /// "MODE TYPE NAME" per query the DNS servers received.
        let queries: [String]
        /// What the scripted upstream saw, one line each: "conn ADDRESS" per connection it accepted, "req ADDRESS
        /// METHOD TARGET" per request it read (empty without one).
        let upstreamLog: [String]

        /// The statuses printed by the probes named `label`, in order.
        func statuses(_ label: String) -> [String] {
            lines.compactMap { line in
                let parts = line.split(separator: " ")
                return parts.count == 2 && parts[0] == label ? String(parts[1]) : nil
            }
        }
    }

    /// True where the run can work: root (for unshare and mount), and the tools it uses.
    static var available: Bool {
        getuid() == 0 && ["/usr/bin/unshare", "/usr/sbin/ip", "/usr/bin/curl", "/usr/bin/python3", "/usr/bin/redis-server", "/usr/bin/timeout"]
            .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs the gateway with `resolvConf` and `hosts`, the zone `zone` ("name address" lines) on both servers,
    /// and the probe part of the script `probes` (shell; `probe LABEL` prints "LABEL <status of /readyz>",
    /// `probe_until LABEL STATUS` polls until that status, `set_zone TEXT` and `set_hosts TEXT` rewrite the zone
    /// and /etc/hosts; `attempt_fails` prints the namespace's count of TCP connects that failed, `AttemptFails` of
    /// /proc/net/snmp). `config` is the gateway's JSON config. With `upstream` ("ADDRESS:PORT:MODE …", modes of
    /// `AddressesTestUpstream`, and `redis` for a redis-server), the scripted upstream runs instead of the stand-in
    /// and Redis.
    static func run(resolvConf: String, hosts: String, zone: String, first: FirstServer, config: String,
                    probes: String, upstream: String = "") throws -> Output {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-netns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func write(_ name: String, _ text: String) throws {
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try write("resolv.conf", resolvConf)
        try write("hosts", hosts)
        try write("zone", zone)
        try write("postern.json", config)
        try write("dns_server.py", DNSTestServer.script)
        try write("upstream.py", AddressesTestUpstream.script)
        try write("upstream.log", "")
        try write("queries.log", "")
        try write("run.sh", prelude + probes + "\n")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["-k", "5", "90", "/usr/bin/unshare", "--mount", "--net", "/bin/sh", dir.appendingPathComponent("run.sh").path,
                             dir.path, try PosternProcess.requireBinary().path, first.rawValue, upstream]
        process.environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        let stdout = dir.appendingPathComponent("stdout")
        let stderr = dir.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        func read(_ name: String) -> String {
            (try? String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)) ?? ""
        }
        return Output(lines: read("stdout").split(separator: "\n").map(String.init),
                      diagnostics: "exit \(process.terminationStatus): " + read("stderr"),
                      gatewayLog: read("postern.out"),
                      queries: read("queries.log").split(separator: "\n").map(String.init),
                      upstreamLog: read("upstream.log").split(separator: "\n").map(String.init))
    }

    /// The start of the script run inside the namespace: $1 the scratch directory, $2 the postern binary, $3 the
    /// first nameserver's mode, $4 the scripted upstream's listeners (empty: the stand-in and Redis).
    private static let prelude = #"""
set -u
D=$1
POSTERN=$2
pids=""
trap 'kill $pids 2>/dev/null; wait 2>/dev/null' EXIT
ip link set lo up || { echo "cannot bring lo up" >&2; exit 90; }
mount --bind "$D/resolv.conf" /etc/resolv.conf || { echo "cannot mount resolv.conf" >&2; exit 91; }
mount --bind "$D/hosts" /etc/hosts || { echo "cannot mount hosts" >&2; exit 92; }
# Polls a command until it succeeds, at most 15 s.
wait_for() {
    i=0
    while ! "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 300 ]; then echo "gave up waiting for: $*" >&2; exit 93; fi
        sleep 0.05
    done
}
python3 "$D/dns_server.py" 127.0.0.53 "$D/zone" "$3" "$D/queries.log" > "$D/ns1.out" 2>&1 & pids="$pids $!"
python3 "$D/dns_server.py" 127.0.0.54 "$D/zone" nxdomain "$D/queries.log" > "$D/ns2.out" 2>&1 & pids="$pids $!"
wait_for grep -q ready "$D/ns1.out"
wait_for grep -q ready "$D/ns2.out"
if [ -n "$4" ]; then
    python3 "$D/upstream.py" "$D/upstream.log" $4 > "$D/upstream.out" 2>&1 & pids="$pids $!"
    wait_for grep -q ready "$D/upstream.out"
    # ADDRESS:PORT:redis starts a redis-server there.
    for spec in $4; do
        case "$spec" in
        *:redis)
            a=${spec%%:*}; rest=${spec#*:}; p=${rest%%:*}
            redis-server --port "$p" --bind "$a" --save '' --appendonly no --dir "$D" > "$D/redis-$a.out" 2>&1 & pids="$pids $!"
            wait_for redis-cli -h "$a" -p "$p" ping
            ;;
        esac
    done
else
    "$POSTERN" standin 8055 > "$D/standin.out" 2>&1 & pids="$pids $!"
    redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --dir "$D" > "$D/redis.out" 2>&1 & pids="$pids $!"
    wait_for curl -sf http://127.0.0.1:8055/server/ping
    wait_for redis-cli -p 6379 ping
fi
"$POSTERN" serve --config "$D/postern.json" > "$D/postern.out" 2>&1 & pids="$pids $!"
wait_for curl -sf http://127.0.0.1:9180/healthz
# Prints "LABEL <status of GET /readyz>" (000 when nothing answered in 15 s).
probe() {
    echo "$1 $(curl -s -o /dev/null -w '%{http_code}' --max-time 15 http://127.0.0.1:9180/readyz)"
}
# Probes until /readyz answers $2 (polling, at most 10 s); prints "LABEL <last status>".
probe_until() {
    i=0
    while :; do
        s=$(curl -s -o /dev/null -w '%{http_code}' --max-time 15 http://127.0.0.1:9180/readyz)
        i=$((i + 1))
        if [ "$s" = "$2" ] || [ $i -gt 200 ]; then break; fi
        sleep 0.05
    done
    echo "$1 $s"
}
# Prints the namespace's count of TCP connects that failed (refused, or no answer): AttemptFails in /proc/net/snmp.
attempt_fails() {
    awk '/^Tcp:/ { if (!n) { for (i = 1; i <= NF; i++) if ($i == "AttemptFails") c = i; n = 1 } else print $c }' /proc/net/snmp
}
# Rewrites /etc/hosts in place (the same file, so that the bind mount shows the change).
set_hosts() {
    printf '%s\n' "$1" > "$D/hosts"
}
# Replaces the zone both servers answer from (they read it on every query).
set_zone() {
    printf '%s\n' "$1" > "$D/zone.new" && mv "$D/zone.new" "$D/zone"
}

"""#
}

/// The DNS server the resolver tests start: Python's standard library only, written out by `NamespaceRun`.
enum DNSTestServer {
    /// The server's source (`python3 dns_server.py ADDRESS ZONE_FILE MODE LOG_FILE`).
    static let script = #"""
#!/usr/bin/env python3
"""A tiny UDP DNS server for the resolver tests (standard library only).

  dns_server.py ADDRESS ZONE_FILE MODE LOG_FILE

Listens on ADDRESS:53. MODE:
  lower-only  answers names from ZONE_FILE ("name address..." lines, re-read on every query; a name with several
              addresses gets them all, in the order written) when the query is
              written in lower case; a name with an upper-case letter gets no answer at all (as aardvark-dns 1.4
              left 0x20-randomised queries unanswered);
  any-case    answers names from ZONE_FILE whatever their case;
  nxdomain    answers NXDOMAIN to every query (a host resolver that knows nothing of the container network).
Unknown names get NXDOMAIN; a known name asked for another type than A gets an empty NOERROR answer.
Every query is appended to LOG_FILE as "MODE TYPE NAME" (the name as it arrived). Prints "ready" once bound.
"""
import socket
import struct
import sys

address, zone_file, mode, log_file = sys.argv[1:5]


def zone():
    names = {}
    with open(zone_file) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                names[parts[0].lower().rstrip(".")] = parts[1:]
    return names


def parse_question(packet):
    labels, at = [], 12
    while packet[at] != 0:
        length = packet[at]
        labels.append(packet[at + 1:at + 1 + length].decode("ascii", "replace"))
        at += 1 + length
    qtype, _qclass = struct.unpack("!HH", packet[at + 1:at + 5])
    return ".".join(labels), qtype, packet[12:at + 5]


def reply(packet, rcode, question, answers):
    ident = packet[:2]
    flags = 0x8000 | 0x0400 | (packet[2] & 0x01) << 8 | 0x0080 | rcode  # QR, AA, RD copied, RA
    head = ident + struct.pack("!HHHHH", flags, 1, len(answers), 0, 0)
    body = b""
    for ip in answers:
        body += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)
    return head + question + body


server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind((address, 53))
print("ready", flush=True)
while True:
    packet, peer = server.recvfrom(4096)
    try:
        name, qtype, question = parse_question(packet)
    except Exception:
        continue
    with open(log_file, "a") as log:
        log.write(f"{mode} {qtype} {name}\n")
    if mode == "nxdomain":
        server.sendto(reply(packet, 3, question, []), peer)
        continue
    if mode == "lower-only" and name != name.lower():
        continue  # silence, as for a query it does not understand
    known = zone()
    key = name.lower().rstrip(".")
    if key not in known:
        server.sendto(reply(packet, 3, question, []), peer)
    elif qtype == 1:
        server.sendto(reply(packet, 0, question, known[key]), peer)
    else:
        server.sendto(reply(packet, 0, question, []), peer)
"""#
}

/// The upstream the several-addresses tests start in the namespace: Python's standard library only, written out by
/// `NamespaceRun`.
enum AddressesTestUpstream {
    /// The server's source (`python3 upstream.py LOG_FILE ADDRESS:PORT:MODE...`).
    static let script = #"""
#!/usr/bin/env python3
"""A scripted HTTP/1.1 upstream on several addresses (standard library only).

  upstream.py LOG_FILE ADDRESS:PORT:MODE...

Listens on each ADDRESS:PORT. MODE:
  ok         answers every request 200 with a small JSON body, keeping the connection open;
  hangup     reads a request's head and closes the connection without answering;
  blackhole  never accepts, and its accept queue is full, so that new SYNs are dropped (a connect that hangs);
  redis      nothing here (the namespace script starts a redis-server there).
Appends "conn ADDRESS" per accepted connection and "req ADDRESS METHOD TARGET" per request read to LOG_FILE.
Prints "ready" once every listener is bound.
"""
import socket
import sys
import threading

log_file = sys.argv[1]
log_lock = threading.Lock()
keep = []


def log(line):
    with log_lock, open(log_file, "a") as f:
        f.write(line + "\n")


def read_head(conn, pending):
    while b"\r\n\r\n" not in pending:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        pending += chunk
    head, rest = pending.split(b"\r\n\r\n", 1)
    return head, rest


def serve(conn, address, mode):
    log(f"conn {address}")
    pending = b""
    try:
        while True:
            head, pending = read_head(conn, pending)
            if head is None:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target = lines[0].split(" ")[:2]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            while len(pending) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                pending += chunk
            pending = pending[length:]
            log(f"req {address} {method} {target}")
            if mode == "hangup":
                return
            body = b'{"data":[]}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
    except OSError:
        return
    finally:
        conn.close()


def accept_loop(listener, address, mode):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, address, mode), daemon=True).start()


for spec in sys.argv[2:]:
    address, port, mode = spec.rsplit(":", 2)
    if mode == "redis":
        continue
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, int(port)))
    if mode == "blackhole":
        listener.listen(0)
        keep.append(listener)
        # Fill the accept queue (it holds one with a backlog of 0): later SYNs are dropped.
        for _ in range(2):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            filler.connect_ex((address, int(port)))
            keep.append(filler)
        continue
    listener.listen(64)
    threading.Thread(target=accept_loop, args=(listener, address, mode), daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
"""#
}
