import DirectusStandIn
import Foundation
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP
import PosternCoreTesting

/// Two gateway instances (`a`, `b`), each with its own worker loops and listeners on 127.0.0.1:0, sharing one
/// real `redis-server` (`POSTERN_SESSION_STORE=redis://…`) and one Directus stand-in, all through real sockets.
final class TwoGateways: @unchecked Sendable {
    let redis: RedisServer
    let standIn: DirectusStandIn
    let standInGroup: EventLoopGroup
    let standInServer: HTTPServer
    let config: PosternConfig
    private(set) var a: Application
    private(set) var b: Application

    /// The log lines of both instances.
    let logLines = LogCapture()

    /// Starts Redis (appending every write to disk when `persistent`; or uses `server`), the stand-in and both
    /// gateways, and waits until both are ready (connected to Redis).
    init(persistent: Bool = false, server: RedisServer? = nil, standInOptions: DirectusStandIn.Options = DirectusStandIn.Options(),
         configure: (inout PosternConfig) -> Void = { _ in }) throws {
        redis = try server ?? RedisServer(persistent: persistent)
        standIn = DirectusStandIn(options: standInOptions)
        standInGroup = EventLoopGroup(count: 1, name: "standin")
        let standIn = self.standIn
        standInServer = HTTPServer(group: standInGroup, limits: standIn.serverLimits) { request in standIn.handle(request) }
        try standInServer.start(host: "127.0.0.1", port: 0)
        var config = PosternConfig.testing
        config.directus.url = "http://127.0.0.1:\(standInServer.port)"
        config.sessions.store = redis.url()
        configure(&config)
        self.config = config
        let capture = logLines
        a = try Application.build(config: config, logSink: { capture.append($0) })
        try a.start()
        b = try Application.build(config: config, logSink: { capture.append($0) })
        try b.start()
        try waitUntilReady(a)
        try waitUntilReady(b)
    }

    /// Polls `/readyz` until 200 (Redis connected and subscribed), up to a 10 s hang detector.
    func waitUntilReady(_ app: Application) throws {
        try eventually("instance ready", timeout: 10) { try RawHTTPClient(port: app.port).json("GET", "/readyz").status == 200 }
    }

    /// A client of `app`.
    func client(_ app: Application) -> RawHTTPClient { RawHTTPClient(port: app.port) }

    /// Signs in through `app`; returns the Postern token and refresh token.
    func login(_ app: Application, _ email: String = "x@y.com", _ password: String = "123456") throws -> (token: String, refresh: String) {
        let r = try client(app).json("POST", "/api/v1/user/login", #"{"email":"\#(email)","password":"\#(password)"}"#)
        guard r.status == 200, let token = r.json?["user"]?["token"]?.stringValue,
              let refresh = r.json?["data"]?["refreshToken"]?.stringValue else {
            throw TestFailure("login failed: \(r.status) \(r.text)")
        }
        return (token, refresh)
    }

    /// The status of `GET /api/v1/user/me` with `token` on `app`.
    func me(_ app: Application, _ token: String) throws -> Int {
        try client(app).json("GET", "/api/v1/user/me", token: token).status
    }

    private var aStopped = false

    /// Shuts instance A down (its sessions stay in Redis).
    func killA() {
        a.shutdown()
        aStopped = true
    }

    func stop() {
        if !aStopped { a.shutdown() }
        b.shutdown()
        standInServer.shutdown(grace: 0.5)
        standInGroup.shutdown()
        redis.stop()
    }
}
