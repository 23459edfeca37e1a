import FoundationEssentials
import PosternRedis

/// Sessions in Redis, shared by every gateway instance that points at the same server (docs/api.md,
/// Several instances (Redis)). Redis holds token digests only, never a Postern token; with a `SecretBox`
/// the Directus tokens are sealed exactly as in the SQLite store. Every write is one Lua script (atomic
/// across instances); the layout is described in `RedisSessionStore+Scripts.swift`. Each key expires in Redis
/// at the session's effective expiry (idle or absolute, whichever comes first); the idle expiry slides when
/// the batched `touch` writes a newer last use (at most once a minute per session).
///
/// Commands go out on the calling worker loop's connection. A connection that is down makes every call throw
/// `SessionStoreError.unavailable` at once (the caller answers 503); nothing is deleted or rewritten because
/// of an outage.
final class RedisSessionStore: SessionStore, SharedRefreshLock {
    /// The connections, one per worker loop.
    let clients: RedisClientGroup
    /// The prefix of every key (`postern:`).
    let prefix: String
    private let idleTTL: TimeInterval
    private let maxTTL: TimeInterval
    private let secretBox: SecretBox?
    /// How long a Directus refresh lock lives when its holder never releases it.
    let refreshLockTTL: TimeInterval
    private let listening: @Sendable () -> Bool

    /// A store on `clients`; `idleTTL`/`maxTTL` set the Redis expiries, `refreshLockTTL` must exceed the
    /// Directus timeout (a holder's refresh must end before another instance may take the lock over);
    /// `listening` tells whether the revocation channel is subscribed (part of being available).
    init(clients: RedisClientGroup, idleTTL: TimeInterval, maxTTL: TimeInterval, secretBox: SecretBox?,
                refreshLockTTL: TimeInterval, prefix: String = "postern:", listening: @escaping @Sendable () -> Bool = { true }) {
        self.listening = listening
        self.clients = clients
        self.idleTTL = idleTTL
        self.maxTTL = maxTTL
        self.secretBox = secretBox
        self.refreshLockTTL = refreshLockTTL
        self.prefix = prefix
    }

    // MARK: SessionStore

    /// Stores a new session.
    func insert(_ session: Session) async throws(SessionStoreError) {
        _ = try await run(Self.insertScript, fields(session) + [.integer(Int(maxTTL * 1000)), .string(session.clientIP),
                                                                .string(session.userAgent)])
    }

    /// The session of an access-token digest.
    func session(tokenDigest: String) async throws(SessionStoreError) -> Session? {
        try await lookup("t", tokenDigest).flatMap { $0.tokenDigest == tokenDigest ? $0 : nil }
    }

    /// The session of a current refresh-token digest.
    func session(refreshDigest: String) async throws(SessionStoreError) -> Session? {
        try await lookup("r", refreshDigest).flatMap { $0.refreshDigest == refreshDigest ? $0 : nil }
    }

    /// The session id a rotated-away refresh digest belonged to.
    func sessionID(usedRefreshDigest: String) async throws(SessionStoreError) -> String? {
        try await command(["GET", .string(prefix + "used:" + usedRefreshDigest)]).string
    }

    /// The session with this id.
    func session(sessionID: String) async throws(SessionStoreError) -> Session? {
        decode(id: sessionID, try await command(["HGETALL", .string(prefix + "s:" + sessionID)]))
    }

    /// Replaces the whole session (a changed refresh digest becomes a tombstone).
    func update(_ session: Session) async throws(SessionStoreError) {
        _ = try await run(Self.updateScript, fields(session) + [.integer(Int(maxTTL * 1000)), .string(session.clientIP),
                                                                .string(session.userAgent)])
    }

    /// Compare-and-set rotation (one Lua script: of two uses of one refresh token, exactly one wins).
    func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                       lastUsed: Date) async throws(SessionStoreError) -> Session? {
        let reply = try await run(Self.rotateScript, [.string(sessionID), .string(refreshDigest), .string(newTokenDigest),
                                                      .string(newRefreshDigest), .integer(Self.ms(lastUsed)),
                                                      .integer(Int(idleTTL * 1000))])
        return decode(id: sessionID, reply)
    }

    /// Sets the Directus tokens (sealed when a key is set) and the role.
    func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                                     role: String?) async throws(SessionStoreError) -> Session? {
        let reply = try await run(Self.directusTokensScript, [
            .string(sessionID), .string(seal(accessToken)), .integer(Self.ms(accessExpiresAt)), .string(seal(refreshToken)),
            .string(secretBox == nil ? "0" : "1"), .string(role ?? ""),
        ])
        return decode(id: sessionID, reply)
    }

    /// Id, creation and last use of every live session of a user.
    func recency(userID: String) async throws(SessionStoreError) -> [SessionRecency] {
        let flat = try await run(Self.recencyScript, [.string(userID)]).array ?? []
        return stride(from: 0, to: flat.count - 2, by: 3).compactMap { i in
            guard let id = flat[i].string, let c = flat[i + 1].integer, let l = flat[i + 2].integer else { return nil }
            return SessionRecency(id: id, createdAt: Self.date(c), lastUsedAt: Self.date(l))
        }
    }

    /// Writes batched last uses (and slides the Redis expiries), in batches of 500 sessions.
    func touch(_ lastUsed: [String: Date]) async throws(SessionStoreError) {
        let all = Array(lastUsed)
        for start in stride(from: 0, to: all.count, by: 500) {
            var arguments: [RedisArgument] = [.integer(Int(idleTTL * 1000))]
            for (id, date) in all[start..<min(start + 500, all.count)] {
                arguments.append(.string(id))
                arguments.append(.integer(Self.ms(date)))
            }
            _ = try await run(Self.touchScript, arguments)
        }
    }

    /// Deletes a session and its index keys.
    func delete(sessionID: String) async throws(SessionStoreError) {
        _ = try await run(Self.deleteScript, [.string(sessionID)])
    }

    /// Redis expires the sessions itself; this forgets their ids in the expiry index and returns them.
    func purgeExpired(now: Date, idleTTL: TimeInterval) async throws(SessionStoreError) -> [String] {
        (try await run(Self.purgeScript, [.integer(Self.ms(now))]).array ?? []).compactMap(\.string)
    }

    /// Live sessions (by their expiry index).
    func count() async throws(SessionStoreError) -> Int {
        Int(try await command(["ZCOUNT", .string(prefix + "all"), .string("(" + String(Self.ms(Date()))), "+inf"]).integer ?? 0)
    }

    /// The live sessions of a user (its per-user index).
    func summaries(userID: String) async throws(SessionStoreError) -> [SessionSummary] {
        Self.summaries(try await run(Self.summariesScript, [.string("u"), .string(userID)]))
    }

    /// The live sessions carrying `email` (ignoring ASCII case), through the e-mail index.
    func summaries(email: String) async throws(SessionStoreError) -> [SessionSummary] {
        Self.summaries(try await run(Self.summariesScript, [.string("e"), .string(SessionSummary.emailKey(email))]))
    }

    /// At most `limit` ids of live sessions starting with `prefix`, through the `ids` index (no key scan).
    func sessionIDs(prefix: String, limit: Int) async throws(SessionStoreError) -> [String] {
        guard SessionSummary.isIDLike(prefix), limit > 0 else { return [] }
        return (try await run(Self.prefixScript, [.string(prefix), .integer(limit)]).array ?? []).compactMap(\.string)
    }

    /// Summaries from the flat `{id, u, e, c, l, x, ip, ua}...` reply of `summariesScript`.
    private static func summaries(_ reply: RedisReply) -> [SessionSummary] {
        let flat = reply.array ?? []
        return stride(from: 0, to: flat.count - 7, by: 8).compactMap { i in
            guard let id = flat[i].string, let user = flat[i + 1].string, let email = flat[i + 2].string,
                  let c = flat[i + 3].string.flatMap(Int64.init), let l = flat[i + 4].string.flatMap(Int64.init),
                  let x = flat[i + 5].string.flatMap(Int64.init) else { return nil }
            return SessionSummary(id: id, userID: user, email: email, createdAt: date(c), lastUsedAt: date(l),
                                  expiresAt: date(x), clientIP: flat[i + 6].string ?? "", userAgent: flat[i + 7].string ?? "")
        }
    }

    /// True while every worker loop's connection is up and the revocation channel is subscribed (no round trip).
    func isAvailable() async -> Bool { clients.isConnected && listening() }

    // MARK: SharedRefreshLock

    /// Takes the Directus refresh lock of a session (SET NX PX); returns its token, or nil when another holds it.
    func acquireRefreshLock(sessionID: String) async throws(SessionStoreError) -> String? {
        let token = Crypto.newToken(prefix: "lk_")
        let reply = try await command(["SET", .string(prefix + "lock:" + sessionID), .string(token), "NX", "PX",
                                       .integer(Int(refreshLockTTL * 1000))])
        return reply.isNull ? nil : token
    }

    /// Releases the lock if it is still ours (best effort: it expires anyway).
    func releaseRefreshLock(sessionID: String, token: String) async {
        _ = try? await clients.evaluate(Self.unlockScript, keys: [.string(prefix + "lock:" + sessionID)],
                                        arguments: [.string(token)])
    }

    // MARK: Encoding

    /// Milliseconds since 1970.
    static func ms(_ date: Date) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded()) }
    /// A date from milliseconds since 1970.
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }

    private func seal(_ token: String) -> String { secretBox?.seal(token) ?? token }

    /// ARGV[2…15] of insert/update: id, digests, user, email, role, Directus tokens, flag, dates, expiry.
    private func fields(_ s: Session) -> [RedisArgument] {
        [.string(s.id), .string(s.tokenDigest), .string(s.refreshDigest), .string(s.userID), .string(s.email),
         .string(s.role ?? ""), .string(seal(s.directusAccessToken)), .integer(Self.ms(s.directusAccessExpiresAt)),
         .string(seal(s.directusRefreshToken)), .string(secretBox == nil ? "0" : "1"), .integer(Self.ms(s.createdAt)),
         .integer(Self.ms(s.lastUsedAt)), .integer(Self.ms(s.expiresAt)), .integer(Self.ms(s.effectiveExpiry(idleTTL: idleTTL)))]
    }

    /// A session from an HGETALL reply; nil when empty, incomplete, or sealed with a key we do not have.
    private func decode(id: String, _ reply: RedisReply) -> Session? {
        guard let flat = reply.array, !flat.isEmpty else { return nil }
        var h: [String: String] = [:]
        for i in stride(from: 0, to: flat.count - 1, by: 2) {
            if let k = flat[i].string, let v = flat[i + 1].string { h[k] = v }
        }
        guard let td = h["td"], let rd = h["rd"], let user = h["u"], let email = h["e"], var access = h["da"],
              let dax = h["dax"].flatMap(Int64.init), var refresh = h["dr"], let c = h["c"].flatMap(Int64.init),
              let l = h["l"].flatMap(Int64.init), let x = h["x"].flatMap(Int64.init) else { return nil }
        if h["z"] == "1" {
            // Sealed: unreadable without the key it was sealed with, so it reads as absent (as in SQLite).
            guard let box = secretBox, let a = box.open(access), let r = box.open(refresh) else { return nil }
            access = a
            refresh = r
        }
        let role = h["ro"].flatMap { $0.isEmpty ? nil : $0 }
        // `ip` and `ua` are absent in sessions stored before Postern kept them.
        return Session(id: id, tokenDigest: td, refreshDigest: rd, userID: user, email: email, role: role,
                       directusAccessToken: access, directusAccessExpiresAt: Self.date(dax), directusRefreshToken: refresh,
                       createdAt: Self.date(c), lastUsedAt: Self.date(l), expiresAt: Self.date(x),
                       clientIP: h["ip"] ?? "", userAgent: h["ua"] ?? "")
    }

    private func lookup(_ kind: String, _ digest: String) async throws(SessionStoreError) -> Session? {
        let reply = try await run(Self.lookupScript, [.string(kind), .string(digest)])
        guard let pair = reply.array, pair.count == 2, let id = pair[0].string else { return nil }
        return decode(id: id, pair[1])
    }

    // MARK: Calls

    /// Runs a script with the prefix as ARGV[1].
    private func run(_ script: RedisScript, _ arguments: [RedisArgument]) async throws(SessionStoreError) -> RedisReply {
        do {
            return try await clients.evaluate(script, arguments: [.string(prefix)] + arguments)
        } catch {
            throw Self.storeError(error)
        }
    }

    private func command(_ arguments: [RedisArgument]) async throws(SessionStoreError) -> RedisReply {
        do {
            return try await clients.command(arguments)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Unavailable (→ 503) for a connection problem, duplicate for the insert check, else a failure.
    static func storeError(_ error: RedisError) -> SessionStoreError {
        if error.isUnavailable { return .unavailable(error.description) }
        if case .server(let message) = error, message.hasPrefix("DUPLICATE") { return .duplicate("session") }
        return .failed(error.description)
    }
}
