import Foundation
import Synchronization
import Testing
@testable import PosternCore
@testable import PosternHTTP
import PosternTesting
@testable import PosternIO
import PosternCoreTesting

/// Reloading the config under real traffic (docs/api.md, Reloading the config): a live gateway on real sockets
/// whose config file alternates between two shapes of `books`, reloaded through `POST /admin/reload`.
@Suite(.serialized)
struct ConfigReloadLiveTests {
    static let adminToken = "reload-admin-token-0123456789"

    /// `books` as shipped: `title`.
    static let shapeA = ReloadFixture.file(titleKey: "title")
    /// `books` with `title` renamed `name`.
    static let shapeB = ReloadFixture.file(titleKey: "name")

    /// Which of the two shapes a `GET /api/v1/books` answer is wholly in: "A", "B", or nil (mixed or neither).
    static func shape(_ response: RawHTTPClient.Response) -> String? {
        guard response.status == 200, case .array(let items)? = response.json?["books"], !items.isEmpty else { return nil }
        var shapes = Set<String>()
        for item in items {
            guard case .object(let members) = item else { return nil }
            let keys = Set(members.map(\.0))
            if keys.contains("title"), !keys.contains("name"), keys.isSubset(of: ["id", "title", "subtitle", "user"]) {
                shapes.insert("A")
            } else if keys.contains("name"), !keys.contains("title"), keys.isSubset(of: ["id", "name", "subtitle", "user"]) {
                shapes.insert("B")
            } else {
                return nil
            }
        }
        return shapes.count == 1 ? shapes.first : nil
    }

    /// `POST /admin/reload` with the admin token.
    static func reload(_ gw: TestGateway) throws -> RawHTTPClient.Response {
        try RawHTTPClient(port: gw.app.adminPort).request("POST", "/admin/reload", headers: ["Authorization": "Bearer \(adminToken)"])
    }

    @Test func keepAliveClientsSeeOneWholeShapeAcrossTwentyReloads() throws {
        let fixture = try ReloadFixture(workers: 2, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        let token = try gw.login()
        let traffic = KeepAliveTraffic(port: gw.port, clients: 4, token: token, shape: Self.shape)
        traffic.start()
        defer { traffic.stop() }
        try eventually("every client answered once") { traffic.perClientMinimum >= 1 }
        var generation = 1
        for i in 1...20 {
            try fixture.write(i % 2 == 1 ? Self.shapeB : Self.shapeA)
            let before = traffic.requests
            let answer = try Self.reload(gw)
            #expect(answer.status == 200, "\(answer.text)")
            generation += 1
            #expect(answer.json?["generation"]?.intValue == Int64(generation) && answer.json?["changed"] == .bool(true),
                    "\(answer.text)")
            // Traffic runs across every reload: each client answers again before the next one.
            try eventually("traffic after reload \(i)") { traffic.requests >= before + 8 }
        }
        traffic.stop()
        let figures = traffic.figures
        print("reload traffic: reloads 20, requests \(figures.requests), non-200 \(figures.non200), resets \(figures.resets), "
              + "mixed or unknown shapes \(figures.badShapes), shape A \(figures.shapes["A"] ?? 0), shape B \(figures.shapes["B"] ?? 0)")
        #expect(figures.non200 == 0)
        #expect(figures.resets == 0)
        #expect(figures.badShapes == 0)
        #expect(figures.shapes["A", default: 0] > 0 && figures.shapes["B", default: 0] > 0)
        #expect(figures.requests >= 20 * 8)
        // The last reload put shape A back: generation 21 serves it.
        #expect(Self.shape(try gw.client().json("GET", "/api/v1/books", token: token)) == "A")
        let metrics = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        #expect(metrics.contains(#"postern_config_reloads_total{result="ok"} 20"#), "\(metrics)")
        #expect(metrics.contains("postern_config_generation 21"))
    }

    @Test func aRequestHeldUpstreamAcrossAReloadAnswersInTheOldShapeAndTheNextOneInTheNew() throws {
        let fixture = try ReloadFixture(workers: 2, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        let token = try gw.login()
        let held = gw.client()
        #expect(Self.shape(try held.json("GET", "/api/v1/books", token: token)) == "A")
        gw.upstreamGate.close(holding: 1) { $0.path.hasPrefix("/items/posts") }
        let answer = Locked<RawHTTPClient.Response?>(nil)
        let done = DispatchSemaphore(value: 0)
        let heldClient = UncheckedSendable(held)
        Thread.detachNewThread {
            let response = try? heldClient.value.json("GET", "/api/v1/books", token: token)
            answer.withLock { $0 = response }
            done.signal()
        }
        try eventually("the request is held upstream") { gw.upstreamGate.heldCount == 1 }
        try fixture.write(Self.shapeB)
        let reload = try Self.reload(gw)
        #expect(reload.status == 200 && reload.json?["generation"]?.intValue == 2, "\(reload.text)")
        // A request routed after the reload, on another connection, has the new shape while the first is still held.
        #expect(Self.shape(try gw.client().json("GET", "/api/v1/books", token: token)) == "B")
        gw.upstreamGate.open()
        done.wait()
        let old = try #require(answer.withLock { $0 })
        #expect(old.status == 200)
        #expect(Self.shape(old) == "A", "routed with generation 1, answered by it: \(old.text)")
        // The next request on the same keep-alive connection uses the new generation.
        #expect(Self.shape(try held.json("GET", "/api/v1/books", token: token)) == "B")
    }

    @Test func aReloadReachesEveryOneOfFourWorkers() throws {
        let fixture = try ReloadFixture(workers: 4, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        #expect(gw.app.group?.loops.count == 4)
        let token = try gw.login()
        // Enough keep-alive connections that every worker holds some (each accepts on its own SO_REUSEPORT listener).
        let clients = (0..<16).map { _ in gw.client() }
        for client in clients { #expect(Self.shape(try client.json("GET", "/api/v1/books", token: token)) == "A") }
        for (round, next) in [("B", Self.shapeB), ("A", Self.shapeA), ("B", Self.shapeB)].enumerated() {
            try fixture.write(next.1)
            #expect(try Self.reload(gw).json?["generation"]?.intValue == Int64(round + 2))
            for client in clients {
                #expect(Self.shape(try client.json("GET", "/api/v1/books", token: token)) == next.0)
            }
        }
    }

    @Test func anInvalidFileKeepsTheOldConfigAndTheLogNamesEachProblem() throws {
        let fixture = try ReloadFixture(workers: 2, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        let token = try gw.login()
        let broken = Self.shapeB.replacingOccurrences(of: #""id_type": "integer""#, with: #""id_type": "number""#)
            .replacingOccurrences(of: #""max_limit": 100"#, with: #""max_limit": -1"#)
        try fixture.write(broken)
        let answer = try Self.reload(gw)
        #expect(answer.status == 400)
        #expect(answer.json?["code"]?.stringValue == "invalid_config")
        let problems = answer.json?["problems"]?.arrayValue?.compactMap(\.stringValue) ?? []
        // Worded as `postern check` words them.
        guard case .failure(let expected) = PosternConfig.load(json: Data(broken.utf8), environment: fixture.environment) else {
            throw TestFailure("the broken file validates")
        }
        #expect(problems == expected.problems.map(\.description), "\(answer.text)")
        #expect(problems.contains { $0.hasPrefix("resources[0].id_type") } && problems.contains { $0.hasPrefix("resources[0].max_limit") })
        #expect(Self.shape(try gw.client().json("GET", "/api/v1/books", token: token)) == "A", "the old config serves")
        let warning = gw.logLines.all.first { $0.contains("config reload refused: invalid config") }
        let line = try #require(warning)
        for problem in problems { #expect(line.contains(problem.replacingOccurrences(of: "\"", with: "\\\""))) }
        // Not JSON at all: the same, with the parse error's place.
        try fixture.write("{\"resources\": [")
        let garbage = try Self.reload(gw)
        #expect(garbage.status == 400 && garbage.text.contains("invalid JSON"), "\(garbage.text)")
        #expect(gw.app.gateway.generation.number == 1)
        let metrics = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        #expect(metrics.contains(#"postern_config_reloads_total{result="invalid"} 2"#))
        #expect(metrics.contains("postern_config_generation 1"))
    }

    @Test func aRestartOnlyKeyRefusesTheWholeReloadNamingTheKeys() throws {
        let fixture = try ReloadFixture(workers: 2, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        let token = try gw.login()
        // Workers and the session store in the file, and a shape change beside them: nothing of it is taken.
        var file = Self.shapeB
        file.insert(contentsOf: #""workers": 3, "sessions": {"store": "sqlite:/tmp/never.db"}, "#, at: file.index(after: file.startIndex))
        try fixture.write(file)
        var environment = fixture.environment
        environment["POSTERN_WORKERS"] = nil
        environment["POSTERN_SESSION_STORE"] = nil
        fixture.setEnvironment(environment)
        let answer = try Self.reload(gw)
        #expect(answer.status == 409, "\(answer.text)")
        #expect(answer.json?["code"]?.stringValue == "restart_required")
        #expect(answer.json?["keys"] == .array([.string("workers"), .string("sessions.store")]), "\(answer.text)")
        #expect(Self.shape(try gw.client().json("GET", "/api/v1/books", token: token)) == "A", "the old config serves")
        #expect(gw.logLines.all.contains { $0.contains("only a restart can change") && $0.contains("sessions.store") })
        let metrics = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        #expect(metrics.contains(#"postern_config_reloads_total{result="restart_required"} 1"#))
    }

    @Test func sessionsAndRateLimitBucketsAreKeptAndCachedAnswersDropped() throws {
        let fixture = try ReloadFixture(workers: 2, file: ReloadFixture.file(titleKey: "title", cacheTTLMs: 60_000))
        defer { fixture.stop() }
        let gw = fixture.gateway
        let token = try gw.login()
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "HIT")
        // Five failed logins for one e-mail fill its per-minute budget (docs/api.md, Limits and defaults).
        for _ in 0..<5 {
            #expect(try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"wrong-password"}"#).status == 401)
        }
        try fixture.write(ReloadFixture.file(titleKey: "name", cacheTTLMs: 60_000))
        #expect(try Self.reload(gw).json?["generation"]?.intValue == 2)
        // The bucket is the same one: the next attempt, right password or not, is limited.
        #expect(try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#).status == 429)
        // The session is the same one; the cached answer is not served again (it has the old shape anyway).
        let first = try gw.client().json("GET", "/api/v1/books", token: token)
        #expect(first.status == 200 && first.headers["X-Cache"] == "MISS" && Self.shape(first) == "B", "\(first.text)")
        let second = try gw.client().json("GET", "/api/v1/books", token: token)
        #expect(second.headers["X-Cache"] == "HIT" && Self.shape(second) == "B")
    }

    @Test func aChangedPoolKeyGetsANewPoolAndTheOldOneDrains() throws {
        let fixture = try ReloadFixture(workers: 2, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        let token = try gw.login()
        let clients = (0..<8).map { _ in gw.client() }
        for client in clients { #expect(try client.json("GET", "/api/v1/books", token: token).status == 200) }
        #expect(gw.standInServer.openConnections > 0)
        let seenBefore = gw.standInServer.connectionsSeen
        try fixture.write(Self.shapeB.replacingOccurrences(of: #"{"limits""#, with: #"{"directus": {"max_connections_per_worker": 8}, "limits""#))
        #expect(try Self.reload(gw).json?["generation"]?.intValue == 2)
        // Every loop (the admin listener's too) routes a request with the new generation and lets the old one go.
        _ = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/healthz")
        for client in clients { #expect(Self.shape(try client.json("GET", "/api/v1/books", token: token)) == "B") }
        #expect(gw.standInServer.connectionsSeen > seenBefore, "the new pool opened its own connections")
        // The old pool's connections are closed: every connection open now was opened after the reload. (A loop lets
        // its old generation go at its next request: requests on new connections until every loop has had one.)
        try eventually("the old pool drained") { () throws -> Bool in
            let status = try gw.client().json("GET", "/api/v1/books", token: token).status
            return status == 200 && gw.standInServer.openConnections <= gw.standInServer.connectionsSeen - seenBefore
        }
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: token).status == 200)
    }

    @Test func theReloadEndpointNeedsTheAdminTokenAndAnUnchangedFileIsNotAGeneration() throws {
        let fixture = try ReloadFixture(workers: 2, file: Self.shapeA)
        defer { fixture.stop() }
        let gw = fixture.gateway
        let admin = RawHTTPClient(port: gw.app.adminPort)
        #expect(try admin.request("POST", "/admin/reload").status == 401)
        #expect(try admin.request("POST", "/admin/reload", headers: ["Authorization": "Bearer wrong-token-0123456789"]).status == 401)
        #expect(try admin.request("GET", "/admin/reload", headers: ["Authorization": "Bearer \(Self.adminToken)"]).status == 405)
        let same = try Self.reload(gw)
        #expect(same.status == 200 && same.json?["generation"]?.intValue == 1 && same.json?["changed"] == .bool(false), "\(same.text)")
        // The console follows: /admin/stats names the generation.
        try fixture.write(Self.shapeB)
        #expect(try Self.reload(gw).json?["generation"]?.intValue == 2)
        let stats = try admin.request("GET", "/admin/stats", headers: ["Authorization": "Bearer \(Self.adminToken)"])
        #expect(stats.json?["generation"]?.intValue == 2, "\(stats.text)")
        let page = try admin.request("GET", "/").text
        #expect(page.contains(#"config generation <b id="generation">"#) && page.contains("text('generation', s.generation)"))
        // OpenAPI follows too.
        let document = try gw.client().request("GET", "/api/v1/openapi.json").json
        let properties = document?["components"]?["schemas"]?["Books"]?["properties"]
        #expect(properties?["name"] != nil && properties?["title"] == nil, "\(String(describing: properties))")
    }
}

/// A live gateway whose reload source is a real config file with the environment applied, as `serve` has.
final class ReloadFixture: @unchecked Sendable {
    let gateway: TestGateway
    let path: String
    private let env: Locked<[String: String]>

    /// The environment a reload applies over the file.
    var environment: [String: String] { env.withLock { $0 } }

    /// Replaces the environment a reload applies (to test restart-only keys coming from the file).
    func setEnvironment(_ environment: [String: String]) { env.withLock { $0 = environment } }

    /// Starts a gateway with `workers` loops from `file`.
    init(workers: Int, file: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("postern-reload-\(UUID().uuidString).json").path
        try file.write(toFile: path, atomically: true, encoding: .utf8)
        let env = Locked<[String: String]>([:])
        self.env = env
        let path = self.path
        var failure: ConfigError?
        gateway = try TestGateway(configure: { config in
            let environment = [
                "POSTERN_LISTEN": config.listen, "POSTERN_ADMIN_LISTEN": config.adminListen, "POSTERN_WORKERS": "\(workers)",
                "POSTERN_SESSION_STORE": "memory", "POSTERN_DIRECTUS_URL": config.directus.url,
                "POSTERN_UPSTREAM_TIMEOUT_MS": "3000", "POSTERN_LOG_LEVEL": "debug",
                "POSTERN_ADMIN_TOKEN": ConfigReloadLiveTests.adminToken,
            ]
            env.withLock { $0 = environment }
            switch PosternConfig.load(configPath: path, environment: environment) {
            case .success(let loaded): config = loaded
            case .failure(let error): failure = error
            }
        }, reloadSource: { _ in
            ConfigSource(path: path) { PosternConfig.load(configPath: path, environment: env.withLock { $0 }) }
        })
        if let failure { throw TestFailure("fixture config: \(failure)") }
    }

    /// Replaces the file's text.
    func write(_ text: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Stops the gateway and removes the file.
    func stop() {
        gateway.stop()
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A config file whose only resource is `books` with its title under `titleKey` (micro-cached for `cacheTTLMs`).
    static func file(titleKey: String, cacheTTLMs: Int = 0) -> String {
        """
        {"limits": {"shutdown_grace_s": 2},
         "resources": [
          {"name": "books", "collection": "posts", "id_type": "integer", "cache": {"ttl_ms": \(cacheTTLMs)},
           "fields": {"id": "id", "\(titleKey)": "title", "subtitle": "content", "user": "user_created"},
           "required": ["\(titleKey)"], "writable": ["\(titleKey)", "subtitle"], "owner": "user_created",
           "max_limit": 100, "default_limit": 20,
           "permissions": {"list": "authenticated", "read": "authenticated", "create": "authenticated",
                           "update": "owner", "delete": "owner"}}
         ]}
        """
    }
}

/// Keep-alive clients sending `GET /api/v1/books` one after another on their own threads until stopped, counting
/// what they get.
final class KeepAliveTraffic: @unchecked Sendable {
    /// What the clients saw.
    struct Figures {
        var requests = 0
        var non200 = 0
        var resets = 0
        var badShapes = 0
        var shapes: [String: Int] = [:]
        var perClient: [Int] = []
    }

    private let port: UInt16
    private let clients: Int
    private let token: String
    private let shape: @Sendable (RawHTTPClient.Response) -> String?
    private let state = Mutex(Figures())
    private let running = Atomic<Bool>(false)
    private let finished = DispatchGroup()

    init(port: UInt16, clients: Int, token: String, shape: @escaping @Sendable (RawHTTPClient.Response) -> String?) {
        self.port = port
        self.clients = clients
        self.token = token
        self.shape = shape
        state.withLock { $0.perClient = Array(repeating: 0, count: clients) }
    }

    /// Starts the clients (each on one connection for its whole run).
    func start() {
        running.store(true, ordering: .sequentiallyConsistent)
        for index in 0..<clients {
            finished.enter()
            Thread.detachNewThread { [self] in
                defer { finished.leave() }
                let client = RawHTTPClient(port: port)
                while running.load(ordering: .sequentiallyConsistent) {
                    do {
                        let response = try client.json("GET", "/api/v1/books", token: token)
                        let seen = shape(response)
                        let closing = response.headers["Connection"]?.lowercased() == "close"
                        state.withLock { figures in
                            figures.requests += 1
                            figures.perClient[index] += 1
                            if response.status != 200 { figures.non200 += 1 }
                            if let seen { figures.shapes[seen, default: 0] += 1 } else { figures.badShapes += 1 }
                            if closing { figures.resets += 1 }
                        }
                        if closing { return }
                    } catch {
                        state.withLock { $0.resets += 1 }
                        return
                    }
                }
            }
        }
    }

    /// Stops the clients and waits for them.
    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        finished.wait()
    }

    /// Requests answered so far.
    var requests: Int { state.withLock { $0.requests } }
    /// The fewest answers any client has had.
    var perClientMinimum: Int { state.withLock { $0.perClient.min() ?? 0 } }
    /// Everything counted.
    var figures: Figures { state.withLock { $0 } }
}

/// A value behind a lock that closures can share.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T

    init(_ value: T) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    func withLock<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&value) } }
}
