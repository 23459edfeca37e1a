import FoundationEssentials
import PosternHTTP

extension RouteTable {
    /// True for a route pattern counted in the console's figures: the admin listener's own routes (`/`,
    /// `/metrics`, `/admin/…`) are left out, so that watching the dashboard does not move it.
    static func countedInStats(_ route: String) -> Bool {
        route != "/" && route != "/metrics" && !AdminGuard.covers(route)
    }

    /// The operator console's routes on the admin listener (docs/api.md, Operator console): the page at `/` and
    /// `GET /admin/stats` (behind the admin guard, as every path under `/admin/`).
    static func consoleRoutes(config: PosternConfig, generation: Int, sampler: StatsSampler, sessions: SessionManager,
                              breaker: CircuitBreaker?) -> [Route] {
        let page = DashboardPage.response()
        let redactedConfig = config.redactedJSON()
        let redis = config.sessions.storeKind.map { if case .redis = $0 { true } else { false } } ?? false
        return [
            Route("/", methods: [(.get, Endpoint { _, _ in page })]),
            Route("/admin/stats", methods: [(.get, Endpoint { _, _ in
                let live = await sessions.activeSessions()
                let redisConnected: Bool? = redis ? await sessions.storeIsAvailable() : nil
                let body = AdminStats.json(sampler.report(), config: redactedConfig, generation: generation, liveSessions: live,
                                           redisConnected: redisConnected, circuit: breaker?.state ?? .closed)
                var response = HTTPResponse.json(200, body)
                response.headers.set("Cache-Control", "no-store")
                return response
            })]),
        ]
    }

    /// The operator's session control on the admin listener (`AdminSessions`): `GET /admin/sessions?user=`,
    /// `DELETE /admin/sessions/{id}`, `DELETE /admin/users/{id}/sessions`.
    static func sessionRoutes(_ admin: AdminSessions) -> [Route] {
        [
            Route("/admin/sessions", methods: [(.get, Endpoint(handler: admin.list))]),
            Route("/admin/sessions/{id}", methods: [(.delete, Endpoint(handler: admin.revokeOne))]),
            Route("/admin/users/{id}/sessions", methods: [(.delete, Endpoint(handler: admin.revokeUser))]),
        ]
    }

    /// `POST /admin/reload` (`AdminReload`, docs/api.md, Reloading the config).
    static func reloadRoute(_ admin: AdminReload) -> Route {
        Route("/admin/reload", methods: [(.post, Endpoint(handler: admin.reload))])
    }
}
