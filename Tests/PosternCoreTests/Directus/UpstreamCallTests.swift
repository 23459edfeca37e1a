import Foundation
import Testing
@testable import PosternCore
import PosternTesting
@testable import PosternIO
@testable import PosternHTTP

/// The upstream call's shorter path: a Directus call's head fields (its token included) carried as values and
/// written straight into the request head (over http and https), still seen as headers by every other reader; and a pooled
/// connection taken without suspending, with the fallback to waiting when the pool is busy.
@Suite(.serialized) struct UpstreamCallTests {
    // MARK: The carried token

    @Test func headersShowTheCarriedFieldsInTheirPlace() {
        let write = UpstreamRequest(method: .post, target: "/items/posts",
                                    fields: CallHead(CallFields(requestID: "r", clientIP: "10.0.0.1"), bearer: "tok", jsonBody: true))
        #expect(write.headers.fields.map { "\($0.name): \($0.value)" } == [
            "Accept: application/json", "X-Request-Id: r", "X-Forwarded-For: 10.0.0.1", "Authorization: Bearer tok",
            "Content-Type: application/json",
        ])
        let anonymous = UpstreamRequest(method: .get, target: "/items/posts",
                                        fields: CallHead(CallFields(requestID: "r", clientIP: "10.0.0.1"), bearer: nil, jsonBody: false))
        let three: HTTPHeaders = ["Accept": "application/json", "X-Request-Id": "r", "X-Forwarded-For": "10.0.0.1"]
        #expect(anonymous.headers == three)
        #expect(UpstreamRequest(method: .get, target: "/", headers: three).headers == three)

        // Setting the headers replaces them all, the carried fields included.
        var changed = write
        changed.headers.remove("Authorization")
        #expect(changed.headFields == nil && changed.headers["Authorization"] == nil && changed.headers.fields.count == 4)
        var added = write
        added.headers.add("X-Other", "1")
        #expect(added.headers["Authorization"] == "Bearer tok" && added.headers.fields.last?.name == "X-Other")
    }

    @Test func inProcessReadersSeeTheAuthorizationHeader() async throws {
        let seen = LockedBox<[HTTPHeaders]>([])
        let transport = InProcessTransport { request in
            seen.withLock { $0.append(request.headers) }
            return HTTPResponse(status: 200, body: Data(#"{"data":[]}"#.utf8))
        }
        let directus = DirectusClient(transport: transport, timeout: 5)
        let context = CallFields(requestID: "req-9", clientIP: "10.9.9.9")
        _ = try await directus.listItems(target: "/items/posts", token: "jwt.value", context: context)
        _ = try await directus.createItem(path: "/items/posts", payload: .object([]), fields: "id", token: "jwt.value", context: context)
        _ = try await directus.listItems(target: "/items/posts", token: nil, context: context)
        let lines = seen.withLock { $0 }.map { $0.fields.map { "\($0.name): \($0.value)" } }
        let common = ["Accept: application/json", "X-Request-Id: req-9", "X-Forwarded-For: 10.9.9.9"]
        #expect(lines == [
            common + ["Authorization: Bearer jwt.value"],
            common + ["Authorization: Bearer jwt.value", "Content-Type: application/json"],
            common,
        ])
    }

    @Test func aTokenHoldingCRLFIsNotSent() async throws {
        let peer = try ScriptedUpstream { _ in [.send("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"data\":[]}")] }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1)
        let directus = DirectusClient(transport: transport, timeout: 5)
        _ = try await directus.listItems(target: "/items/posts", token: "a\r\nX-Injected: 1",
                                         context: CallFields(requestID: "r", clientIP: "10.1.2.3"))
        #expect(peer.requests == [
            "GET /items/posts HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n"
                + "Accept: application/json\r\nX-Request-Id: r\r\nX-Forwarded-For: 10.1.2.3\r\n\r\n",
        ])
    }

    /// An https server that answers each GET with the request line and header lines it received, in order.
    static let echoHandler = #"""
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        body = (self.requestline + "\n" + "".join("%s: %s\n" % item for item in self.headers.items())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
"""#

    @Test(.enabled(if: PythonTLSServer.available))
    func theTokenGoesOnTheWireOverTLS() async throws {
        let server = try PythonTLSServer(handler: Self.echoHandler, name: "tls-bearer")
        defer { server.stop() }
        let port = server.port

        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: UpstreamEndpoint(url: "https://localhost:\(port)")!, maxConnections: 1,
                                      tls: TLSClientContext(caFile: server.certificatePath, verify: true))
        let directus = DirectusClient(transport: transport, timeout: 10)
        let body = try await directus.listItems(target: "/items/posts?limit=1", token: "eyJ.tls.token",
                                                context: CallFields(requestID: "req-tls", clientIP: "10.4.4.4"))
        #expect(String(decoding: body.data, as: UTF8.self) == "GET /items/posts?limit=1 HTTP/1.1\nHost: localhost:\(port)\n"
                    + "Accept: application/json\nX-Request-Id: req-tls\nX-Forwarded-For: 10.4.4.4\nAuthorization: Bearer eyJ.tls.token\n")
    }

    // MARK: Taking a pooled connection

    @Test func callsTakeTheIdleConnectionAtOnceOrWaitForItWhenThePoolIsBusy() async throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let upstream = HTTPServer(group: group) { request in HTTPResponse(status: 200, body: Data(request.path.utf8)) }
        try upstream.start(host: "127.0.0.1", port: 0)
        defer { upstream.shutdown(grace: 1) }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "http://127.0.0.1:\(upstream.port)")!,
                                        maxConnections: 1, keepaliveIdle: 3600)
        // One after another: the idle connection is taken each time.
        for i in 0..<3 {
            let body = try await Task(executorPreference: loop) {
                try await client.send(UpstreamRequest(method: .get, target: "/one/\(i)"), timeout: 5).body
            }.value
            #expect(String(decoding: body, as: UTF8.self) == "/one/\(i)")
        }
        #expect(upstream.connectionsSeen == 1)
        // Several at once on one connection: all but the first wait for it, and each gets its own answer.
        let bodies = try await withThrowingTaskGroup(of: String.self, returning: Set<String>.self) { tasks in
            for i in 0..<6 {
                tasks.addTask(executorPreference: loop) {
                    let r = try await client.send(UpstreamRequest(method: .get, target: "/many/\(i)"), timeout: 5)
                    return String(decoding: r.body, as: UTF8.self)
                }
            }
            var all = Set<String>()
            for try await body in tasks { all.insert(body) }
            return all
        }
        #expect(bodies == Set((0..<6).map { "/many/\($0)" }))
        #expect(upstream.connectionsSeen == 1, "the waiting calls were handed the one pooled connection")
        #expect(loop.runAndWait { client.openConnections } == 1)
    }
}
