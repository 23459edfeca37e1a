/// Carries "this session was revoked or changed" between gateway instances that share a session store, so
/// that each drops its in-process cached copy (docs/api.md, Several instances (Redis)). A change is a
/// revocation (logout, reuse, per-user cap, refused Directus refresh), a rotation of the Postern tokens, or
/// new Directus tokens.
///
/// `publish` is called after the store was written and this instance's own cache updated; it must reach the
/// **other** instances only (a shared bus filters out its own messages), and must not block.
package protocol SessionRevocationBus: Sendable {
    /// Announces that the session `sessionID` was revoked or changed.
    func publish(sessionID: String)
    /// Registers `handler`, called with the id of every session another instance announced (set up once,
    /// when the `SessionManager` is built; the handler only drops a cache entry and never blocks).
    func subscribe(_ handler: @escaping @Sendable (String) -> Void)
    /// Registers `handler`, called when announcements may have been lost (a shared bus reconnected): the
    /// subscriber then drops every cached session.
    func subscribeReset(_ handler: @escaping @Sendable () -> Void)
}

extension SessionRevocationBus {
    /// A bus that never loses announcements never calls it.
    func subscribeReset(_ handler: @escaping @Sendable () -> Void) {}
}

/// The bus of a store that only this process uses (memory, SQLite): there is no other instance to tell,
/// so `publish` does nothing and no handler is ever called.
struct LocalRevocationBus: SessionRevocationBus {
    /// A bus that reaches no one.
    init() {}

    /// Nothing to do: this process's cache is already up to date.
    func publish(sessionID: String) {}

    /// Nothing will ever be announced.
    func subscribe(_ handler: @escaping @Sendable (String) -> Void) {}
}
