import Foundation
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

@Suite struct HTTPRoundTripTests {
    @Test func serverAnswersEveryMethodThroughTheAsyncHandler() async throws {
        let group = EventLoopGroup(count: 2)
        defer { group.shutdown() }
        let server = HTTPServer(group: group) { request in
            try? await Task.sleep(for: .milliseconds(1))
            let body = "\(request.method) \(request.path) \(request.query) \(request.body.count)"
            return HTTPResponse(status: 200, headers: ["X-Test": "1"], body: Data(body.utf8))
        }
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let client = RawHTTPClient(port: server.port)
        for method in ["GET", "PATCH", "OPTIONS", "DELETE"] {
            let r = try client.request(method, "/a/b%2Fc?x=1", body: Data("hey".utf8))
            #expect(r.status == 200)
            #expect(r.text == "\(method) /a/b%2Fc x=1 3")
            #expect(r.headers["X-Test"] == "1")
        }
    }

    @Test func upstreamClientKeepsOnlyTheHeadersItIsAskedFor() async throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let big = String(repeating: "b", count: 9000)  // more than one chain of the input buffer
        let upstream = HTTPServer(group: group) { _ in
            HTTPResponse(status: 503, headers: ["retry-after": "7", "X-Other": "dropped", "Connection": "close"], body: Data(big.utf8))
        }
        try upstream.start(host: "127.0.0.1", port: 0)
        defer { upstream.shutdown(grace: 1) }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "http://127.0.0.1:\(upstream.port)")!,
                                        maxConnections: 1, keptHeaders: ["Retry-After"])
        for _ in 0..<2 {  // the second call goes on a fresh connection: the first one was marked closed
            let r = try await Task(executorPreference: loop) {
                try await client.send(UpstreamRequest(method: .get, target: "/x"), timeout: 5)
            }.value
            #expect(r.status == 503)
            #expect(r.headers.fields.map(\.name) == ["retry-after"] && r.headers["Retry-After"] == "7")
            #expect(String(decoding: r.body, as: UTF8.self) == big)
        }
    }

    @Test func upstreamClientTalksToServerAndReusesConnections() async throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let upstream = HTTPServer(group: group) { request in
            HTTPResponse(status: 201, headers: ["X-Echo": request.headers["X-Req"] ?? ""], body: request.body)
        }
        try upstream.start(host: "127.0.0.1", port: 0)
        defer { upstream.shutdown(grace: 1) }
        let loop = group.loops[0]
        // A long keep-alive idle limit: on a loaded machine a pooled connection may sit idle for seconds, and
        // replacing it then is the idle rule (tested elsewhere), not a failure to reuse.
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "http://127.0.0.1:\(upstream.port)")!,
                                        maxConnections: 4, keepaliveIdle: 3600)
        let results = try await withThrowingTaskGroup(of: Int.self, returning: [Int].self) { tasks in
            for i in 0..<20 {
                tasks.addTask(executorPreference: loop) {
                    let r = try await client.send(UpstreamRequest(method: .post, target: "/x", headers: ["X-Req": "\(i)"],
                                                                  body: Data("b\(i)".utf8)), timeout: 5)
                    #expect(r.headers["X-Echo"] == "\(i)")
                    #expect(String(decoding: r.body, as: UTF8.self) == "b\(i)")
                    return r.status
                }
            }
            var all: [Int] = []
            for try await s in tasks { all.append(s) }
            return all
        }
        #expect(results == Array(repeating: 201, count: 20))
        // 20 requests over at most 4 connections: the upstream saw each connection carry several requests.
        #expect(upstream.connectionsSeen <= 4)
        // One request after another on a new client of one connection: reused every time (a full pool reuses its
        // idle connection without waiting for it to be quiet). (A new client, because the first may hold an idle
        // connection that a waiter opened and never used: the server counts a connection only once it carries a
        // request, so reusing that one would count as new.)
        let sequential = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "http://127.0.0.1:\(upstream.port)")!,
                                            maxConnections: 1, keepaliveIdle: 3600)
        let before = upstream.connectionsSeen
        for i in 0..<5 {
            let status = try await Task(executorPreference: loop) {
                try await sequential.send(UpstreamRequest(method: .get, target: "/y\(i)"), timeout: 5).status
            }.value
            #expect(status == 201)
        }
        #expect(upstream.connectionsSeen == before + 1)
    }

    @Test func upstreamRefusedIsUnreachable() async throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "http://127.0.0.1:1")!, maxConnections: 2)
        let outcome = await Task(executorPreference: loop) { () -> UpstreamFailure? in
            do {
                _ = try await client.send(UpstreamRequest(method: .get, target: "/"), timeout: 2)
                return nil
            } catch let failure as UpstreamFailure { return failure } catch { return nil }
        }.value
        #expect(outcome == .unreachable("connection failed"))
    }
}
