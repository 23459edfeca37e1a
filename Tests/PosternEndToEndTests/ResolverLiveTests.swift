import Foundation
import Testing
import PosternTesting

/// Host names resolve as the system resolver does, proven with the built gateway in a network namespace of its
/// own against real DNS servers the test starts (`NamespaceRun`): the Directus host through `search` from a
/// server that answers lower-case names only, with a second nameserver that says NXDOMAIN to everything, and the
/// Redis host from `/etc/hosts`.
@Suite(.serialized)
struct ResolverLiveTests {
    /// resolv.conf: the answering server first, the NXDOMAIN one second; short timeouts so that a query left
    /// unanswered costs 1 s, not 5.
    static let resolvConf = """
        nameserver 127.0.0.53
        nameserver 127.0.0.54
        search dns.podman
        options ndots:1 timeout:1 attempts:1

        """
    /// /etc/hosts in the namespace: Redis is `cache`, known to no DNS server.
    static let hosts = "127.0.0.1 localhost\n127.0.0.1 cache\n"

    /// The gateway's config: Directus at `directus` (a search-domain name), Redis at `cache`; pooled upstream
    /// connections idle 1 ms at most, so that each probe connects afresh.
    static let config = """
        {"listen": "127.0.0.1:8080", "admin_listen": "127.0.0.1:9180", "workers": 2,
         "directus": {"url": "http://directus:8055", "keepalive_idle_ms": 1},
         "sessions": {"store": "redis://cache:6379"}}
        """

    private static func checkAvailable() -> Bool {
        if NamespaceRun.available { return true }
        Issue.record("needs root (unshare --mount --net), ip, curl, python3, redis-server and timeout")
        return false
    }

    private static func twelveProbes() -> String {
        (1...12).map { _ in "probe readyz" }.joined(separator: "\n")
    }

    @Test(arguments: [NamespaceRun.FirstServer.lowerCaseOnly, .anyCase])
    func readyzIsReadyTwelveTimesOutOfTwelveThroughSearchAndTheFirstNameserver(first: NamespaceRun.FirstServer) throws {
        guard Self.checkAvailable() else { return }
        let output = try NamespaceRun.run(resolvConf: Self.resolvConf, hosts: Self.hosts, zone: "directus.dns.podman 127.0.0.1\n",
                                          first: first, config: Self.config, probes: Self.twelveProbes())
        let statuses = output.statuses("readyz")
        #expect(statuses == Array(repeating: "200", count: 12),
                "\(output.diagnostics)\ngateway log:\n\(output.gatewayLog.suffix(2000))\nqueries:\n\(output.queries.joined(separator: "\n"))")
        // The name went out as written, completed by the search domain, and only to the first nameserver.
        let asked = output.queries.filter { $0.hasSuffix(" directus.dns.podman") }
        #expect(!asked.isEmpty)
        #expect(!output.queries.contains { $0.lowercased().contains("directus") && $0 != $0.lowercased() }, "a query mixed the letter case")
        #expect(!output.queries.contains { $0.hasPrefix("nxdomain ") && $0.lowercased().contains("directus") },
                "a query for directus went to the second nameserver")
    }

    @Test func aRefusedAddressIsLookedUpAgainBeforeTheNextConnect() throws {
        guard Self.checkAvailable() else { return }
        // Directus "moves": the name first points where nothing listens (connect refused), then to the stand-in.
        // The probe after the move must reach it, not the cached dead address (whose answer is not 30 s old).
        let probes = """
            probe before-move
            set_zone 'directus.dns.podman 127.0.0.1'
            probe after-move
            """
        let output = try NamespaceRun.run(resolvConf: Self.resolvConf, hosts: Self.hosts, zone: "directus.dns.podman 127.0.0.9\n",
                                          first: .lowerCaseOnly, config: Self.config, probes: probes)
        let context = "\(output.diagnostics)\ngateway log:\n\(output.gatewayLog.suffix(2000))"
        #expect(output.statuses("before-move") == ["503"], "\(context)")
        #expect(output.statuses("after-move") == ["200"], "\(context)")
    }

    @Test func aRedisHostWhoseAddressRefusedIsLookedUpAgainWhenItReconnects() throws {
        guard Self.checkAvailable() else { return }
        // Redis "moves" in /etc/hosts: first where nothing listens, then to the server. Its reconnection (back-off
        // up to 2 s) must use the new address well within 30 s, the age at which a working answer is refreshed.
        let probes = """
            probe before-move
            set_hosts '127.0.0.1 localhost
            127.0.0.1 cache'
            probe_until after-move 200
            """
        let output = try NamespaceRun.run(resolvConf: Self.resolvConf, hosts: "127.0.0.1 localhost\n127.0.0.9 cache\n",
                                          zone: "directus.dns.podman 127.0.0.1\n", first: .lowerCaseOnly, config: Self.config,
                                          probes: probes)
        let context = "\(output.diagnostics)\ngateway log:\n\(output.gatewayLog.suffix(2000))"
        #expect(output.statuses("before-move") == ["503"], "\(context)")
        #expect(output.statuses("after-move") == ["200"], "\(context)")
    }
}
