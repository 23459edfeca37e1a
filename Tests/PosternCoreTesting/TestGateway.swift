import DirectusStandIn
import Foundation
import PosternCore
import PosternHTTP
import PosternIO
import PosternTesting

/// A live gateway on 127.0.0.1:0 in front of a live Directus stand-in on 127.0.0.1:0, both through
/// real sockets. Stop it with `stop()` (tests call it in `defer`).
package final class TestGateway: @unchecked Sendable {
    /// The Directus stand-in behind the gateway.
    package let standIn: DirectusStandIn
    /// The stand-in's event loop.
    package let standInGroup: EventLoopGroup
    /// The stand-in's HTTP server.
    package let standInServer: HTTPServer
    /// The gateway.
    package private(set) var app: Application
    private let config: PosternConfig
    private let clock: GatewayClock
    private let source: ConfigSource?
    /// The gateway's log lines.
    package let logLines = LogCapture()
    /// Holds chosen stand-in answers until opened (closed on nothing by default).
    package let upstreamGate = UpstreamGate()

    /// Starts both; `configure` adjusts the gateway config (the Directus URL is set here), and the gateway reads
    /// `clock` (a `TestClock`'s `gatewayClock` when the test moves time). `reloadSource` makes, from the config the
    /// gateway starts with, where a reload reads it again (none: a reload changes nothing).
    package init(standInOptions: DirectusStandIn.Options = DirectusStandIn.Options(), store: (any SessionStore)? = nil,
         clock: GatewayClock = .system, configure: (inout PosternConfig) -> Void = { _ in },
         reloadSource: ((PosternConfig) -> ConfigSource)? = nil) throws {
        standIn = DirectusStandIn(options: standInOptions)
        standInGroup = EventLoopGroup(count: 1, name: "standin")
        let standIn = self.standIn
        let gate = upstreamGate
        standInServer = HTTPServer(group: standInGroup, limits: standIn.serverLimits) { request in
            let response = standIn.handle(request)
            await gate.pass(request)
            return response
        }
        try standInServer.start(host: "127.0.0.1", port: 0)
        var config = PosternConfig.testing
        config.directus.url = "http://127.0.0.1:\(standInServer.port)"
        configure(&config)
        self.config = config
        let capture = logLines
        self.clock = clock
        let source = reloadSource?(config)
        self.source = source
        app = try Application.build(config: config, store: store, logSink: { capture.append($0) }, clock: clock, source: source)
        try app.start()
    }

    /// Stops the gateway and starts a new one with the same config (the stand-in keeps running).
    package func restartGateway() throws {
        app.shutdown()
        let capture = logLines
        app = try Application.build(config: config, logSink: { capture.append($0) }, clock: clock, source: source)
        try app.start()
    }

    /// The gateway's public port.
    package var port: UInt16 { app.port }

    /// A new client of the gateway.
    package func client() -> RawHTTPClient { RawHTTPClient(port: app.port) }

    /// Signs in and returns the Postern token.
    package func login(_ email: String = "x@y.com", _ password: String = "123456") throws -> String {
        let r = try client().json("POST", "/api/v1/user/login", #"{"email":"\#(email)","password":"\#(password)"}"#)
        guard r.status == 200, let token = r.json?["user"]?["token"]?.stringValue else {
            throw TestFailure("login failed: \(r.status) \(r.text)")
        }
        return token
    }

    /// Runs `count` clients on their own threads, each connected first and then released together, and
    /// returns the status each one got (-1 for a transport failure).
    package func concurrently(_ count: Int, _ request: @escaping @Sendable (RawHTTPClient) throws -> RawHTTPClient.Response) -> [Int] {
        let statuses = StatusList()
        let gate = DispatchSemaphore(value: 0)
        let connected = DispatchGroup()
        let done = DispatchGroup()
        for _ in 0..<count {
            done.enter()
            connected.enter()
            Thread.detachNewThread {
                let client = self.client()
                try? client.connect()
                connected.leave()
                gate.wait()
                statuses.append((try? request(client).status) ?? -1)
                done.leave()
            }
        }
        connected.wait()  // every client has its connection before any sends
        for _ in 0..<count { gate.signal() }
        done.wait()
        return statuses.all
    }

    /// The requests on `route` the gateway has finished (one access-log line each), in log order.
    package func finishedRequests(route: String) -> [(status: Int, requestID: String)] {
        logLines.all.compactMap { line in
            guard let json = try? JSONValue.parse(Data(line.utf8)), json["msg"]?.stringValue == "request",
                  json["route"]?.stringValue == route, let status = json["status"]?.intValue else { return nil }
            return (Int(status), json["request_id"]?.stringValue ?? "")
        }
    }

    /// Returns once every gateway worker loop has run one job: events its sockets had pending before the
    /// call (an upstream's hang-up, say) have been handled.
    package func drainGatewayLoops() {
        for loop in app.group?.loops ?? [] {
            let ran = DispatchSemaphore(value: 0)
            loop.execute { ran.signal() }
            ran.wait()
        }
    }

    /// Requests the stand-in received for paths starting with `prefix`.
    package func upstream(_ prefix: String) -> [HTTPRequest] {
        standIn.received.filter { $0.path.hasPrefix(prefix) }
    }

    /// Stops the gateway and the stand-in.
    package func stop() {
        app.shutdown()
        standInServer.shutdown(grace: 0.5)
        standInGroup.shutdown()
    }
}

extension PosternConfig {
    /// Defaults for tests: loopback, port 0 for both listeners, two workers, memory sessions, short timeout.
    package static var testing: PosternConfig {
        var config = PosternConfig()
        config.listen = "127.0.0.1:0"
        config.adminListen = "127.0.0.1:0"
        config.workers = 2
        config.sessions.store = "memory"
        config.directus.timeoutMs = 3000
        config.limits.shutdownGraceSeconds = 2
        config.logLevel = "debug"
        return config
    }
}

/// Collects log lines (thread-safe).
package final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    /// An empty capture.
    package init() {}

    /// Adds one line.
    package func append(_ line: String) { lock.withLock { lines.append(line) } }
    /// Every line so far.
    package var all: [String] { lock.withLock { lines } }
}

/// A thread-safe list of statuses.
package final class StatusList: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int] = []
    /// Adds one status.
    package func append(_ v: Int) { lock.withLock { values.append(v) } }
    /// Every status so far.
    package var all: [Int] { lock.withLock { values } }
}
