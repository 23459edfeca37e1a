import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PosternConfig {
    /// What is valid but risky, one line each, for `postern check` and the start-up log (docs/api.md, Operator
    /// console): an `admin_listen` on a wildcard address (`0.0.0.0`, `::`) exposes `/metrics`, `/readyz` and the
    /// console to every network the host is on; more so with no `admin.token`, when only the network keeps
    /// strangers from the operator surface. Never a secret's value.
    package func warnings() -> [String] {
        guard let address = HostPort(adminListen), PosternConfig.isWildcard(address.host) else { return [] }
        if admin.token.isEmpty {
            return ["WARNING: admin_listen \(address) listens on every interface and admin.token is not set: /metrics, "
                    + "/readyz and the console page are open to anyone who can reach this host (the operator API stays "
                    + "off); bind it to 127.0.0.1 or a private address, or set POSTERN_ADMIN_TOKEN and restrict the port"]
        }
        return ["warning: admin_listen \(address) listens on every interface: /metrics, /readyz and the console page need "
                + "no token; bind it to 127.0.0.1 or a private address, or restrict the port (e.g. a NetworkPolicy)"]
    }

    /// Whether `host` is an IPv4 or IPv6 wildcard address (all zero bits: `0.0.0.0`, `::`, `0:0::0`…).
    static func isWildcard(_ host: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return v4.s_addr == 0 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        return withUnsafeBytes(of: &v6) { $0.allSatisfy { $0 == 0 } }
    }
}
