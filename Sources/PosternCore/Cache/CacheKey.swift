/// What one cached answer is filed under: the resource, the translated upstream call, and who may share it
/// (docs/api.md, Micro-cache).
public struct CacheKey: Hashable, Sendable {
    /// The resource name (two resources over one collection never share an answer: their bodies differ).
    public let resource: String
    /// The upstream path and query, exactly as translated for Directus (unambiguously joined).
    public let upstream: String
    /// Who shares the answer: `u:<user id>`, `r:<role id>` or `anonymous`.
    public let audience: String

    /// Builds a key from its parts.
    public init(resource: String, upstream: String, audience: String) {
        self.resource = resource
        self.upstream = upstream
        self.audience = audience
    }

    /// The key of an upstream call: `path` and its query items, each length-prefixed so that no two
    /// different queries join to the same text.
    public init(resource: String, path: String, query: [(String, String)], audience: String) {
        // Sized once and appended piece by piece: no interpolated temporary per query item.
        var length = path.utf8.count
        for (name, value) in query { length += name.utf8.count + value.utf8.count + 24 }
        var text = ""
        text.reserveCapacity(length)
        text += path
        for (name, value) in query {
            text += "&"
            text += String(name.utf8.count)
            text += ":"
            text += name
            text += String(value.utf8.count)
            text += ":"
            text += value
        }
        self.init(resource: resource, upstream: text, audience: audience)
    }

    /// The audience of a caller: anonymous callers share one; `role` scope shares by Directus role
    /// unless `perUser` (an owner-narrowed list) or the session has no known role.
    public static func audience(session: Session?, scope: CacheScope, perUser: Bool) -> String {
        guard let session else { return "anonymous" }
        if scope == .role, !perUser, let role = session.role { return "r:\(role)" }
        return "u:\(session.userID)"
    }
}
