import FoundationEssentials
import Glibc

/// One host-name lookup for a connection on one loop, answered by `HostResolver.shared` (glibc's resolver, off
/// the loop, cached per name). The completion runs on the loop's thread — at once inside `start` when the cache
/// answers — with the connection's plan (the addresses to try in order, `AddressPlan`), or nil and the reason.
/// After `cancel()` it is never called.
///
/// `completion` is touched on the loop's thread only (`start`, `cancel`, `finish`); a resolver thread hands the
/// answer over through the loop's job queue (`deliver`).
package final class DNSLookup: @unchecked Sendable {
    private var completion: ((AddressPlan?, String) -> Void)?
    /// The loop the answer goes back to (weak: a lookup still in flight when the loop goes away is dropped).
    private weak var loop: EventLoop?

    /// A lookup that will hand its answer to `completion`.
    package init(completion: @escaping (AddressPlan?, String) -> Void) {
        self.completion = completion
    }

    /// Starts looking `host` up with `resolver` for a connection on `loop` (call on `loop`'s thread).
    package func start(host: String, loop: EventLoop, resolver: HostResolver = .shared) {
        self.loop = loop
        resolver.resolve(self, host: host)
    }

    /// Cancels the lookup: the completion is never called.
    package func cancel() {
        completion = nil
    }

    /// Hands `result` to the completion on the loop's thread (from a resolver thread).
    func deliver(_ result: Result<AddressPlan, HostResolver.LookupFailure>) {
        guard let loop else { return }
        loop.execute { self.finish(result) }
    }

    /// Runs the completion with `result`, once (loop thread).
    package func finish(_ result: Result<AddressPlan, HostResolver.LookupFailure>) {
        guard let completion else { return }
        self.completion = nil
        switch result {
        case .success(let plan): completion(plan, "")
        case .failure(let failure): completion(nil, failure.reason)
        }
    }
}

/// A host's address as the resolver chose it, without a port: IPv4 or IPv6.
package struct ResolvedAddress: Sendable, Equatable, CustomStringConvertible {
    /// `AF_INET` or `AF_INET6`.
    package let family: Int32
    /// The address in network order: 4 bytes (IPv4) or 16 (IPv6).
    package let bytes: [UInt8]
    /// The IPv6 scope (interface) id, 0 for IPv4.
    let scopeID: UInt32

    /// The IPv4 or IPv6 address at `address`, nil for another family.
    package init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let sin = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            family = AF_INET
            bytes = withUnsafeBytes(of: sin.sin_addr) { Array($0) }
            scopeID = 0
        case AF_INET6:
            let sin6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            family = AF_INET6
            bytes = withUnsafeBytes(of: sin6.sin6_addr) { Array($0) }
            scopeID = sin6.sin6_scope_id
        default:
            return nil
        }
    }

    /// The address written as `numeric` ("10.1.2.3", "::1"), nil when it is not a numeric IPv4 or IPv6 address.
    package init?(numeric: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, numeric, &v4) == 1 {
            family = AF_INET
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, numeric, &v6) == 1 {
            family = AF_INET6
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
        scopeID = 0
    }

    /// The numeric text of the address ("10.1.2.3", "::1"), as hiredis and logs take it.
    var numericText: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) != nil }
        return written ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
    }

    /// The description is the numeric text.
    package var description: String { numericText }

    /// The socket address of this address and `port`, to connect to.
    package func socketAddress(port: UInt16) -> SocketAddressValue {
        if family == AF_INET {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            withUnsafeMutableBytes(of: &sin.sin_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: sin) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    SocketAddressValue(address: $0, length: socklen_t(MemoryLayout<sockaddr_in>.size), port: port)
                }
            }
        }
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_scope_id = scopeID
        withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: sin6) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                SocketAddressValue(address: $0, length: socklen_t(MemoryLayout<sockaddr_in6>.size), port: port)
            }
        }
    }
}
