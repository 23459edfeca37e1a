import FoundationEssentials
import PosternIO

/// Where Redis is and how to log in: parsed from `redis[s]://[[user]:password@]host:port[/db]` (docs/api.md,
/// Several instances (Redis)).
///
/// `rediss://` is TLS (`tls`): the server's certificate is verified, and the host name is checked against it
/// and sent as SNI. The password never appears in `description` nor in any parse error.
package struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// Host name or IP address (an IPv6 address without its brackets).
    package var host: String
    /// TCP port (default 6379).
    package var port: Int
    /// ACL user name (Redis 6+), sent as `AUTH username password`; nil for the default user.
    var username: String?
    /// Password sent with `AUTH` after each connect; nil for none.
    package var password: String?
    /// Database number selected with `SELECT` after each connect (default 0).
    package var database: Int
    /// TLS (`rediss://`): the context that verifies the server (and holds the client certificate, if any);
    /// nil for plain TCP.
    package var tls: TLSClientContext?

    /// The default Redis port.
    static let defaultPort = 6379

    /// An endpoint from its parts.
    package init(host: String, port: Int = RedisEndpoint.defaultPort, username: String? = nil, password: String? = nil,
                database: Int = 0, tls: TLSClientContext? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses `redis[s]://[[username]:password@]host[:port][/db]`; user name and password may be
    /// percent-encoded. `rediss://` verifies the server with `tls`, by default the system's trust store.
    package init(url: String, tls: TLSClientContext = .shared) throws(RedisError) {
        guard let schemeEnd = url.byteRange(of: "://") else {
            throw .invalidURL("expected redis://[:password@]host:port[/db]")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "redis" || scheme == "rediss" else { throw .invalidURL("the scheme must be redis:// or rediss://") }
        var rest = Substring(url[schemeEnd.upperBound...])
        if rest.contains("?") || rest.contains("#") {
            throw .invalidURL("query parameters and fragments are not supported")
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var username: String?
        var password: String?
        // The last "@" ends the user information, so an unencoded "@" in a password still works.
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userinfo.firstIndex(of: ":") else {
                throw .invalidURL("expected :password@ before the host")
            }
            let user = try RedisEndpoint.percentDecoded(userinfo[..<colon], what: "user name")
            let secret = try RedisEndpoint.percentDecoded(userinfo[userinfo.index(after: colon)...], what: "password")
            username = user.isEmpty ? nil : user
            password = secret.isEmpty ? nil : secret
            if username != nil && password == nil { throw .invalidURL("a user name needs a password") }
        }
        let (host, port) = try RedisEndpoint.hostAndPort(rest)
        var database = 0
        if !path.isEmpty {
            guard path.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(path), number <= Int(Int32.max) else {
                throw .invalidURL("the database after the / must be a number (0, 1, ...)")
            }
            database = number
        }
        self.init(host: host, port: port, username: username, password: password, database: database,
                  tls: scheme == "rediss" ? tls : nil)
    }

    /// Equal when every part is, the TLS context by identity.
    package static func == (lhs: RedisEndpoint, rhs: RedisEndpoint) -> Bool {
        lhs.host == rhs.host && lhs.port == rhs.port && lhs.username == rhs.username && lhs.password == rhs.password
            && lhs.database == rhs.database && lhs.tls === rhs.tls
    }

    /// The URL with the password masked, for logs and error messages.
    package var description: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let credentials = password == nil ? "" : "\(username ?? ""):***@"
        return "\(tls == nil ? "redis" : "rediss")://\(credentials)\(hostPart):\(port)/\(database)"
    }

    private static func hostAndPort(_ authority: Substring) throws(RedisError) -> (String, Int) {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidURL("an IPv6 host needs its closing ]") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidURL("expected :port after the IPv6 host") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw .invalidURL("the IPv6 host is not valid")
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard !host.isEmpty else { throw .invalidURL("the host is missing") }
            guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }) else {
                throw .invalidURL("the host may contain only letters, digits, '.', '-' and '_'")
            }
        }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let number = Int(portText), (1...65535).contains(number) else {
                throw .invalidURL("the port must be a number from 1 to 65535")
            }
            port = number
        }
        return (String(host), port)
    }

    private static func percentDecoded(_ text: Substring, what: String) throws(RedisError) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard iterator.count >= 2, let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16) else {
                throw .invalidURL("the \(what) has a bad percent-encoding")
            }
            bytes.append(value)
            iterator = iterator.dropFirst(2)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
