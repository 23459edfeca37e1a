import Foundation
import Testing
import PosternTesting

/// A Directus host name with several addresses, proven with the built gateway in a network namespace of its own
/// (`NamespaceRun`): the name resolves through a real DNS server to loopback addresses in the order the zone gives
/// them, where a scripted upstream listens on some (answering, hanging up, or dropping SYNs) and nothing on the
/// others (a connect there is refused). Each probe is `GET /readyz` on the admin listener (one `GET /server/ping`
/// on a new connection: pooled connections idle 1 ms at most).
///
/// Addresses are picked so that glibc's RFC 6724 sort cannot reorder them: 127.0.0.2 and .3 share as many leading
/// bits with the source address 127.0.0.1, as do 127.0.0.4 to .7.
@Suite(.serialized)
struct ResolverAddressesLiveTests {
    /// resolv.conf: the test DNS server alone, short timeouts.
    static let resolvConf = """
        nameserver 127.0.0.53
        search dns.podman
        options ndots:1 timeout:1 attempts:1

        """
    /// /etc/hosts in the namespace: localhost only (directus and cache come from the DNS server).
    static let hosts = "127.0.0.1 localhost\n"
    /// The gateway's config: Directus at `directus`, a memory session store; pooled upstream connections idle 1 ms
    /// at most, so that each probe connects afresh.
    static let config = """
        {"listen": "127.0.0.1:8080", "admin_listen": "127.0.0.1:9180", "workers": 2,
         "directus": {"url": "http://directus:8055", "keepalive_idle_ms": 1},
         "sessions": {"store": "memory"}}
        """

    private static func checkAvailable() -> Bool {
        if NamespaceRun.available { return true }
        Issue.record("needs root (unshare --mount --net), ip, curl, python3, redis-server and timeout")
        return false
    }

    /// `count` probes labelled `label`, then the failed TCP connects in the namespace while they ran, their
    /// duration in whole seconds rounded up, and the circuit breaker's state from `/metrics`.
    private static func probes(_ count: Int, label: String = "readyz") -> String {
        """
        before=$(attempt_fails)
        start=$(date +%s)
        \((1...count).map { _ in "probe \(label)" }.joined(separator: "\n"))
        echo "seconds $(( $(date +%s) - start + 1 ))"
        echo "failed-connects $(( $(attempt_fails) - before ))"
        echo "circuit $(curl -s http://127.0.0.1:9180/metrics | awk '/^postern_circuit_state / { print $2 }')"
        """
    }

    private static func run(zone: String, upstream: String, probes: String) throws -> NamespaceRun.Output {
        try NamespaceRun.run(resolvConf: resolvConf, hosts: hosts, zone: zone, first: .anyCase, config: config,
                             probes: probes, upstream: upstream)
    }

    private static func context(_ output: NamespaceRun.Output) -> String {
        "\(output.diagnostics)\nprobes:\n\(output.lines.joined(separator: "\n"))\nupstream:\n"
            + "\(output.upstreamLog.suffix(40).joined(separator: "\n"))\ngateway log:\n\(output.gatewayLog.suffix(2000))"
    }

    /// The upstream's requests for `/server/ping`, per address.
    private static func pings(_ output: NamespaceRun.Output) -> [String: Int] {
        output.upstreamLog.reduce(into: [:]) { counts, line in
            let parts = line.split(separator: " ")
            if parts.count == 4, parts[0] == "req", parts[3] == "/server/ping" { counts[String(parts[1]), default: 0] += 1 }
        }
    }

    @Test func aNameResolvingToADeadAddressFirstAndALiveOneAnswersEveryRequestAndTheBreakerStaysClosed() throws {
        guard Self.checkAvailable() else { return }
        let output = try Self.run(zone: "directus.dns.podman 127.0.0.2 127.0.0.3\n", upstream: "127.0.0.3:8055:ok",
                                  probes: Self.probes(12))
        #expect(output.statuses("readyz") == Array(repeating: "200", count: 12), "\(Self.context(output))")
        #expect(output.statuses("circuit") == ["0"], "\(Self.context(output))")
        #expect(Self.pings(output) == ["127.0.0.3": 12], "\(Self.context(output))")
    }

    @Test func theDeadAddressIsTriedOnceAndThenLeftOutWhileItsTenSecondsRun() throws {
        guard Self.checkAvailable() else { return }
        let output = try Self.run(zone: "directus.dns.podman 127.0.0.2 127.0.0.3\n", upstream: "127.0.0.3:8055:ok",
                                  probes: Self.probes(12))
        let context = Self.context(output)
        #expect(output.statuses("readyz") == Array(repeating: "200", count: 12), "\(context)")
        // Every connect refused in the namespace is one to 127.0.0.2 (the probes' own connects all succeed): one
        // for the first probe, and one more per 10 s the probes took at most (it is tried again after 10 s).
        let failed = Int(output.statuses("failed-connects").first ?? "") ?? -1
        let seconds = Int(output.statuses("seconds").first ?? "") ?? 0
        #expect(failed >= 1 && failed <= 1 + seconds / 10, "failed connects: \(failed) in \(seconds) s\n\(context)")
    }

    @Test func newConnectionsSpreadOverTwoLiveAddresses() throws {
        guard Self.checkAvailable() else { return }
        let output = try Self.run(zone: "directus.dns.podman 127.0.0.2 127.0.0.3\n",
                                  upstream: "127.0.0.2:8055:ok 127.0.0.3:8055:ok", probes: Self.probes(12))
        let context = Self.context(output)
        #expect(output.statuses("readyz") == Array(repeating: "200", count: 12), "\(context)")
        // Round robin: about 6 each; at least 4 each whatever the two workers interleave.
        let pings = Self.pings(output)
        #expect(pings.values.reduce(0, +) == 12, "\(context)")
        #expect((pings["127.0.0.2"] ?? 0) >= 4 && (pings["127.0.0.3"] ?? 0) >= 4, "\(pings)\n\(context)")
        #expect(output.statuses("failed-connects") == ["0"], "\(context)")
    }

    @Test func aRequestWrittenOnAConnectionThatThenDiesIsNeverSentToAnotherAddress() throws {
        guard Self.checkAvailable() else { return }
        // The first address refuses; the two others read the request and close without answering. The dead one
        // moves each request on (nothing of it was written), the hang-up does not: each ping reaches the upstream
        // exactly once, and the client gets the failure (503 from /readyz; 502 `upstream_error` on an API route).
        let login = """
            echo "login $(curl -s -o /dev/null -w '%{http_code}' --max-time 15 -H 'Content-Type: application/json' \
                -d '{"email":"reader@example.com","password":"secret"}' http://127.0.0.1:8080/api/v1/user/login)"
            """
        let output = try Self.run(zone: "directus.dns.podman 127.0.0.4 127.0.0.5 127.0.0.6\n",
                                  upstream: "127.0.0.5:8055:hangup 127.0.0.6:8055:hangup",
                                  probes: Self.probes(8) + "\n" + Array(repeating: login, count: 4).joined(separator: "\n"))
        let context = Self.context(output)
        #expect(output.statuses("readyz") == Array(repeating: "503", count: 8), "\(context)")
        #expect(output.statuses("login") == Array(repeating: "502", count: 4), "\(context)")
        let pings = Self.pings(output)
        #expect(pings.values.reduce(0, +) == 8, "\(pings)\n\(context)")
        #expect(pings["127.0.0.4"] == nil)
        let logins = output.upstreamLog.filter { $0.hasPrefix("req ") && $0.hasSuffix(" POST /auth/login") }
        #expect(logins.count == 4, "\(context)")
    }

    @Test func anAddressThatDropsSYNsIsLeftAfterTheConnectTimeoutAndTheRequestAnswered() throws {
        guard Self.checkAvailable() else { return }
        // 127.0.0.2 never completes a handshake (its accept queue is full): the first probe's connect there gives
        // up after 2 s and goes on to 127.0.0.3 within the request's 10 s; the next probes leave it out.
        let output = try Self.run(zone: "directus.dns.podman 127.0.0.2 127.0.0.3\n",
                                  upstream: "127.0.0.2:8055:blackhole 127.0.0.3:8055:ok", probes: Self.probes(6))
        let context = Self.context(output)
        #expect(output.statuses("readyz") == Array(repeating: "200", count: 6), "\(context)")
        #expect(Self.pings(output) == ["127.0.0.3": 6], "\(context)")
        #expect(output.statuses("circuit") == ["0"], "\(context)")
    }
}

extension ResolverAddressesLiveTests {
    @Test func aRedisHostResolvingToADeadAddressFirstConnectsToTheLiveOne() throws {
        guard Self.checkAvailable() else { return }
        // Redis at `cache`: 127.0.0.2 refuses, 127.0.0.3 is the server. Each connection goes on to the second
        // address at once instead of backing off on the first: the store is ready, and stays so.
        let config = """
            {"listen": "127.0.0.1:8080", "admin_listen": "127.0.0.1:9180", "workers": 2,
             "directus": {"url": "http://directus:8055", "keepalive_idle_ms": 1},
             "sessions": {"store": "redis://cache:6379"}}
            """
        let probes = """
            probe_until first-ready 200
            \((1...6).map { _ in "probe readyz" }.joined(separator: "\n"))
            """
        let output = try NamespaceRun.run(resolvConf: Self.resolvConf, hosts: Self.hosts,
                                          zone: "directus.dns.podman 127.0.0.3\ncache.dns.podman 127.0.0.2 127.0.0.3\n",
                                          first: .anyCase, config: config, probes: probes,
                                          upstream: "127.0.0.3:8055:ok 127.0.0.3:6379:redis")
        let context = Self.context(output)
        #expect(output.statuses("first-ready") == ["200"], "\(context)")
        #expect(output.statuses("readyz") == Array(repeating: "200", count: 6), "\(context)")
    }
}
