import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP

/// The upstream client over https, against `openssl s_server -WWW` with a throw-away certificate.
@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
struct TLSUpstreamTests {
    final class TLSServer {
        let dir: URL
        let port: UInt16
        let process = Process()

        init() throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("server"), withIntermediateDirectories: true)
            try Data("pong".utf8).write(to: dir.appendingPathComponent("server/ping"))
            try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem",
                                             "-out", "cert.pem", "-days", "1", "-subj", "/CN=localhost",
                                             "-addext", "subjectAltName=DNS:localhost"], in: dir)
            port = TLSServer.freePort()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", "cert.pem", "-key", "key.pem", "-WWW", "-quiet"]
            process.currentDirectoryURL = dir
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Wait until it accepts connections (the test fails at its first request if it never does).
            _ = try? eventually("openssl s_server accepts") { (try? RawHTTPClient(port: port).connect()) != nil }
        }

        var caFile: String { dir.appendingPathComponent("cert.pem").path }

        func stop() {
            // s_server ignores SIGTERM.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: dir)
        }

        static func freePort() -> UInt16 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            return SocketAddress.localPort(of: fd)
        }
    }

    func ping(_ server: TLSServer, tls: TLSClientContext) async throws -> Result<UpstreamResponse, UpstreamFailure> {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: UpstreamEndpoint(url: "https://localhost:\(server.port)")!,
                                      maxConnections: 2, tls: tls)
        do {
            return .success(try await transport.send(UpstreamRequest(method: .get, target: "/server/ping"), timeout: 5))
        } catch {
            return .failure(error)
        }
    }

    @Test func verifiedHTTPSWorks() async throws {
        let server = try TLSServer()
        defer { server.stop() }
        let result = try await ping(server, tls: TLSClientContext(caFile: server.caFile, verify: true))
        let response = try result.get()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "pong")
    }

    @Test func untrustedCertificateIsUnreachable() async throws {
        let server = try TLSServer()
        defer { server.stop() }
        let result = try await ping(server, tls: TLSClientContext(caFile: nil, verify: true))
        guard case .failure(.unreachable) = result else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
    }
}
