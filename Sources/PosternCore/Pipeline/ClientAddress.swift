import FoundationEssentials
import PosternHTTP
import PosternIO

/// Who the client is: the socket peer, or the address a trusted proxy forwarded.
struct ClientAddress: Sendable {
    /// Peers whose `X-Forwarded-For` is believed.
    let trustedProxies: Set<String>

    /// The client's address: the socket peer, or — only when the peer is a trusted proxy — the last
    /// `X-Forwarded-For` entry that is not itself a trusted proxy. Several header lines are one list,
    /// joined in order (RFC 9110): a proxy that adds its own line leaves the client's forged line first.
    func clientIP(_ request: HTTPRequest) -> String {
        let peer = request.remoteAddress
        guard !trustedProxies.isEmpty, trustedProxies.contains(peer) else { return peer }
        let lines = request.headers.values("X-Forwarded-For")
        guard !lines.isEmpty else { return peer }
        let hops = lines.joined(separator: ",").split(separator: ",")
            .map { $0.trimmedSpaces() }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trustedProxies.contains(hop) {
            return PosternConfig.isIPAddress(hop) ? hop : peer
        }
        return hops.first ?? peer
    }
}
