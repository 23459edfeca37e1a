import CEvent
import FoundationEssentials
import Glibc

/// Why a server could not start.
package struct ServerStartError: Error, CustomStringConvertible, Sendable {
    /// A one-line reason.
    package let description: String

    /// An error with `description` as its reason.
    package init(description: String) {
        self.description = description
    }
}

/// An IPv4 or IPv6 socket address for listening.
package struct SocketAddress: CustomStringConvertible {
    private var storage = sockaddr_storage()
    private var length: socklen_t = 0
    private let host: String
    /// The port.
    package var port: UInt16 {
        didSet { setPort(port) }
    }

    package init(host rawHost: String, port: UInt16) throws(ServerStartError) {
        let host = rawHost == "localhost" ? "127.0.0.1" : rawHost
        self.host = host
        self.port = port
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let plainHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if inet_pton(AF_INET, plainHost, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeBytes(of: v4) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else if inet_pton(AF_INET6, plainHost, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            withUnsafeBytes(of: v6) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            throw ServerStartError(description: "listen address \(host) is not an IP address")
        }
    }

    // The `offset(of:)` force unwraps below cannot fail: `sin_port`/`sin6_port` are stored properties of
    // plain C structs. `baseAddress!` of a non-empty `sockaddr_storage` buffer cannot be nil.
    private mutating func setPort(_ port: UInt16) {
        withUnsafeMutableBytes(of: &storage) { raw in
            if Int32(raw.load(fromByteOffset: 0, as: sa_family_t.self)) == AF_INET {
                raw.storeBytes(of: port.bigEndian, toByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self)
            } else {
                raw.storeBytes(of: port.bigEndian, toByteOffset: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)!, as: UInt16.self)
            }
        }
    }

    package func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    package var description: String { "\(host):\(port)" }

    /// Binds once without `SO_REUSEPORT`, so that a port taken by another process is reported
    /// (with `SO_REUSEPORT` a second process could silently share it).
    package func probeFree() throws(ServerStartError) {
        guard port != 0 else { return }
        let family = withSockaddr { sa, _ in Int32(sa.pointee.sa_family) }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerStartError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withSockaddr { sa, len in Glibc.bind(fd, sa, len) }
        if rc != 0 {
            let reason = errno == EADDRINUSE ? "port in use" : String(cString: strerror(errno))
            throw ServerStartError(description: "cannot listen on \(self): \(reason)")
        }
    }

    /// The local port a socket is bound to.
    package static func localPort(of fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) }
        }
        return withUnsafeBytes(of: storage) { raw in
            if Int32(raw.load(fromByteOffset: 0, as: sa_family_t.self)) == AF_INET {
                return UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self))
            }
            return UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)!, as: UInt16.self))
        }
    }
}

/// A resolved or numeric socket address to connect to.
package struct SocketAddressValue {
    private var storage = sockaddr_storage()
    private var length: socklen_t = 0

    /// The address family.
    package var family: Int32 { Int32(storage.ss_family) }

    /// The address of a numeric IPv4 or IPv6 host (nil for a name).
    package init?(numericHost rawHost: String, port: UInt16) {
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            self.init(copying: v4)
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            self.init(copying: v6)
        } else {
            return nil
        }
    }

    /// A copy of the address at `address` (`length` bytes), with `port`.
    package init(address: UnsafePointer<sockaddr>, length: socklen_t, port: UInt16) {
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: address, count: min(Int(length), raw.count)))
        }
        self.length = length
        if family == AF_INET {
            withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = port.bigEndian }
            }
        } else if family == AF_INET6 {
            withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = port.bigEndian }
            }
        }
    }

    private init<T>(copying address: T) {
        withUnsafeBytes(of: address) { src in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
        }
        length = socklen_t(MemoryLayout<T>.size)
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    package func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
