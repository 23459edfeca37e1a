import FoundationEssentials

extension SessionManager {
    /// The Directus refresh of a session whose store is shared by several instances: single-flight across
    /// them through the store's lock (docs/api.md, Several instances (Redis)). The lock holder re-reads the
    /// session (another instance may have refreshed it just before), refreshes, stores the new tokens and
    /// releases the lock; the others poll the stored session until its Directus refresh token changed, and
    /// use it. A holder that dies leaves a lock that expires, and the next poller takes it over. Since the
    /// lock outlives any Directus call, two refreshes with the same Directus refresh token never happen.
    func performSharedRefresh(_ session: Session, lock: any SharedRefreshLock, context: CallFields) async throws -> Session {
        let started = ProcessInfo.processInfo.systemUptime
        // Long enough for one holder to die and its lock to expire, and another to finish.
        let patience = lock.refreshLockTTL * 2 + 1
        var pause: UInt64 = 10_000_000
        while true {
            let token: String?
            do {
                token = try await lock.acquireRefreshLock(sessionID: session.id)
            } catch {
                throw error.gatewayError
            }
            let stored: Session?
            do {
                stored = try await store.session(sessionID: session.id)
            } catch {
                if let token { await lock.releaseRefreshLock(sessionID: session.id, token: token) }
                throw error.gatewayError
            }
            guard let stored else {
                if let token { await lock.releaseRefreshLock(sessionID: session.id, token: token) }
                cache.remove(sessionID: session.id)
                throw GatewayError.unauthorized("session ended")
            }
            if stored.directusRefreshToken != session.directusRefreshToken {
                // Someone refreshed already: use their result.
                if let token { await lock.releaseRefreshLock(sessionID: session.id, token: token) }
                return adoptDirectusTokens(of: stored)
            }
            if let token {
                do {
                    let refreshed = try await refreshNow(stored, context: context)
                    await lock.releaseRefreshLock(sessionID: session.id, token: token)
                    return refreshed
                } catch {
                    await lock.releaseRefreshLock(sessionID: session.id, token: token)
                    throw error
                }
            }
            guard ProcessInfo.processInfo.systemUptime - started < patience else {
                throw GatewayError.sessionStoreUnavailable("the Directus refresh of this session did not finish in time")
            }
            try? await Task.sleep(nanoseconds: pause)
            pause = min(pause * 2, 100_000_000)
        }
    }

    /// Takes the Directus tokens another instance stored into the cached copy; returns the session to use.
    private func adoptDirectusTokens(of stored: Session) -> Session {
        let cached = cache.patch(sessionID: stored.id) { latest in
            latest.directusAccessToken = stored.directusAccessToken
            latest.directusRefreshToken = stored.directusRefreshToken
            latest.directusAccessExpiresAt = stored.directusAccessExpiresAt
            latest.role = stored.role
        }
        return cached ?? stored
    }
}
