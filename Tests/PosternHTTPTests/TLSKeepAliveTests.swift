import Foundation
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// The upstream client over https on a keep-alive connection: several requests on one TLS session, a chunked
/// answer, an answer larger than the read buffer and a request body, against a Python HTTP/1.1 server behind
/// TLS with a throw-away certificate.
@Suite(.serialized, .enabled(if: PythonTLSServer.available))
struct TLSKeepAliveTests {
    /// The server: each answer carries `X-Connection`, the number of the TLS connection that carried it.
    static let handler = #"""
import threading
count = 0
lock = threading.Lock()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        global count
        super().setup()
        with lock:
            count += 1
            self.number = count
    def log_message(self, *args):
        pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("X-Connection", str(self.number))
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in [b'{"a":', b'"b"}']:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            body = bytes(97 + i % 26 for i in range(int(self.path[1:])))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("X-Connection", str(self.number))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
"""#

    @Test func severalRequestsShareOneTLSConnection() async throws {
        let server = try PythonTLSServer(handler: Self.handler, name: "tls-ka")
        defer { server.stop() }
        let port = server.port

        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "https://localhost:\(port)")!, maxConnections: 1,
                                        tls: TLSClientContext(caFile: server.certificatePath, verify: true),
                                        keepaliveIdle: 3600)
        let large = UpstreamConnection.readBufferSize * 5 + 7
        let requests = [
            UpstreamRequest(method: .get, target: "/chunked"),
            UpstreamRequest(method: .get, target: "/\(large)"),
            UpstreamRequest(method: .post, target: "/echo", body: Data(#"{"title":"über"}"#.utf8)),
            UpstreamRequest(method: .get, target: "/chunked"),
        ]
        var responses: [UpstreamResponse] = []
        for request in requests {
            let response = try await Task(executorPreference: loop) {
                try await client.send(request, timeout: 10)
            }.value
            responses.append(response)
        }
        #expect(responses.map(\.status) == [200, 200, 201, 200])
        #expect(String(decoding: responses[0].body, as: UTF8.self) == #"{"a":"b"}"#)
        #expect(responses[1].body == Data((0..<large).map { UInt8(97 + $0 % 26) }))
        #expect(String(decoding: responses[2].body, as: UTF8.self) == #"{"title":"über"}"#)
        #expect(String(decoding: responses[3].body, as: UTF8.self) == #"{"a":"b"}"#)
        #expect(responses.map { $0.headers["X-Connection"] } == ["1", "1", "1", "1"], "one TLS connection for every request")
    }
}
