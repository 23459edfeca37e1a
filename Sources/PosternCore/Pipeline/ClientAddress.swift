import Foundation

/// Who the client is: the socket peer, or the address a trusted proxy forwarded.
struct ClientAddress: Sendable {
    /// Peers whose `X-Forwarded-For` is believed.
    let trustedProxies: Set<String>

    /// The client's address: the socket peer, or — only when the peer is a trusted proxy — the last
    /// `X-Forwarded-For` entry that is not itself a trusted proxy.
    func clientIP(_ request: HTTPRequest) -> String {
        let peer = request.remoteAddress
        guard trustedProxies.contains(peer), let forwarded = request.headers["X-Forwarded-For"] else { return peer }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trustedProxies.contains(hop) {
            return PosternConfig.isIPAddress(hop) ? hop : peer
        }
        return hops.first ?? peer
    }
}
