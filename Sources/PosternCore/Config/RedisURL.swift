/// A parsed `redis://[:password@]host:port[/db]` (docs/api.md, Several instances (Redis)).
package struct RedisURL: Sendable, Equatable {
    /// Where Redis listens.
    package var address: HostPort
    /// The `AUTH` password, if any (never logged).
    package var password: String?
    /// The database number (`SELECT`), 0 by default.
    package var db: Int

    /// Parses the URL; nil for another scheme (`rediss://` included), a missing port, a user name, or a
    /// database that is not a number from 0 to 15.
    package init?(_ text: String) {
        guard text.hasPrefix("redis://") else { return nil }
        var rest = Substring(text.dropFirst("redis://".count))
        var db = 0
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !dbText.isEmpty {
                guard dbText.allSatisfy(\.isASCII), let n = Int(dbText), (0...15).contains(n) else { return nil }
                db = n
            }
        }
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard credentials.hasPrefix(":") else { return nil }  // no ACL user names
            password = String(credentials.dropFirst())
        }
        guard let address = HostPort(String(rest)), address.port != 0 else { return nil }
        self.address = address
        self.password = password?.isEmpty == true ? nil : password
        self.db = db
    }
}
