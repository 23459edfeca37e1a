import Foundation
import Synchronization
import Testing
@testable import PosternRedis
import PosternIO
import PosternTesting

/// `rediss://` against a real `redis-server --tls-port` with a CA and certificates made by the test
/// (TestCertificates): a verified server, SNI, ACL users, a client certificate, and every refusal said clearly.
/// Deadlines are hang detectors only.
@Suite struct RedisTLSTests {
    static let user = "app"
    static let password = "tls-acl-Secret-77"

    static func server(requireClientCertificate: Bool = false) throws -> (RedisServer, TestCertificates) {
        let certificates = try TestCertificates()
        let server = try RedisServer(tls: RedisServer.TLS(certificates: certificates,
                                                          requireClientCertificate: requireClientCertificate),
                                     users: ["\(user) on >\(password) ~* &* +@all"])
        return (server, certificates)
    }

    /// How the client's first attempt ends (on its loop).
    static func attempt(_ client: RedisClient) async -> RedisAttemptOutcome {
        await withCheckedContinuation { continuation in
            client.whenAttemptEnds { continuation.resume(returning: $0) }
        }
    }

    @Test func commandsAndPubSubRunOverVerifiedTLSAsAnACLUser() async throws {
        let (server, certificates) = try Self.server()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let tls = try TLSClientContext(trusting: certificates.caFile, certificateFile: nil, keyFile: nil)
        let endpoint = try RedisEndpoint(url: server.tlsURL(user: Self.user, password: Self.password), tls: tls)
        #expect(endpoint.tls != nil && endpoint.username == Self.user && endpoint.host == "localhost")
        let client = RedisClient(loop: group.loops[0], endpoint: endpoint)
        let received = Mutex<[String]>([])
        let subscriber = RedisSubscriber(loop: group.loops[0], endpoint: endpoint, channel: "tls-channel",
                                         onMessage: { bytes in received.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } },
                                         onResubscribed: {})
        defer { subscriber.close(); client.close() }
        try await withinHangDeadline { () async throws in
            #expect(await Self.attempt(client) == .ready)
            #expect(try await client.command(["ACL", "WHOAMI"]).string == Self.user)
            #expect(try await client.command(["SET", "over", "tls"]) == .status("OK"))
            #expect(try await client.command(["GET", "over"]).string == "tls")
            // Larger than one TLS record, in both directions.
            let big = [UInt8](repeating: 0x61, count: 200_000)
            #expect(try await client.command(["SET", "big", .bytes(big)]) == .status("OK"))
            #expect(try await client.command(["GET", "big"]) == .bulk(big))
            #expect(await subscriber.waitUntilSubscribed())
            _ = try await client.command(["PUBLISH", "tls-channel", "hello over tls"])
            _ = try await eventually("the message arrives", timeout: 10) { received.withLock { $0 } == ["hello over tls"] }
            // The test's own plain connection sees the ACL user connected over TLS.
            let plain = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()))
            defer { plain.close() }
            let clients = try await plain.command(["CLIENT", "LIST"]).string ?? ""
            #expect(clients.contains("user=\(Self.user)"), "\(clients)")
        }
    }

    @Test func aServerTheCADidNotSignIsRefusedWithAClearReason() async throws {
        let (server, certificates) = try Self.server()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let url = server.tlsURL(user: Self.user, password: Self.password)
        let wrongCA = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(
            url: url, tls: try TLSClientContext(trusting: certificates.otherCAFile, certificateFile: nil, keyFile: nil)))
        let systemStore = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: url))
        defer { wrongCA.close(); systemStore.close() }
        try await withinHangDeadline { () async throws in
            for client in [wrongCA, systemStore] {
                guard case .refused(let why) = await Self.attempt(client) else {
                    Issue.record("a server signed by another CA was not refused")
                    return
                }
                #expect(why.contains("TLS handshake with localhost:\(server.tlsPort ?? 0) failed"), "\(why)")
                #expect(why.contains("certificate verify failed"), "\(why)")
                #expect(!why.contains(Self.password))
                let result = await outcome(client) { try await client.command(["PING"]) }
                #expect(result.failure?.isUnavailable == true, "\(result)")
                #expect(!client.isConnected)
            }
        }
    }

    @Test func aWrongACLPasswordOrUserIsRefused() async throws {
        let (server, certificates) = try Self.server()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let tls = try TLSClientContext(trusting: certificates.caFile, certificateFile: nil, keyFile: nil)
        let wrongPassword = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(
            url: server.tlsURL(user: Self.user, password: "not-the-Password-1"), tls: tls))
        let unknownUser = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(
            url: server.tlsURL(user: "nobody", password: Self.password), tls: tls))
        defer { wrongPassword.close(); unknownUser.close() }
        try await withinHangDeadline { () async throws in
            for client in [wrongPassword, unknownUser] {
                guard case .refused(let why) = await Self.attempt(client) else {
                    Issue.record("a wrong ACL login was not refused")
                    return
                }
                #expect(why.contains("Redis refused AUTH") && why.contains("WRONGPASS"), "\(why)")
                #expect(!why.contains(Self.password) && !why.contains("not-the-Password-1"))
                let result = await outcome(client) { try await client.command(["PING"]) }
                #expect(result.failure?.isUnavailable == true)
                #expect(!(result.failure?.description.contains(Self.password) ?? true))
            }
        }
    }

    @Test func aClientCertificateTheServerRequiresIsPresentedAndItsAbsenceRefused() async throws {
        let (server, certificates) = try Self.server(requireClientCertificate: true)
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let url = server.tlsURL(user: Self.user, password: Self.password)
        let withCertificate = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: url, tls: try TLSClientContext(
            trusting: certificates.caFile, certificateFile: certificates.clientCertificateFile, keyFile: certificates.clientKeyFile)))
        // No login at all: the refusal must still be seen (TLS 1.3 refuses a client after its handshake ended).
        let without = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(
            url: "rediss://localhost:\(server.tlsPort ?? 0)",
            tls: try TLSClientContext(trusting: certificates.caFile, certificateFile: nil, keyFile: nil)))
        defer { withCertificate.close(); without.close() }
        try await withinHangDeadline { () async throws in
            #expect(await Self.attempt(withCertificate) == .ready)
            #expect(try await withCertificate.command(["ACL", "WHOAMI"]).string == Self.user)
            guard case .refused(let why) = await Self.attempt(without) else {
                Issue.record("a client without a certificate was not refused")
                return
            }
            #expect(why.contains("certificate"), "\(why)")
            #expect(!without.isConnected)
        }
    }

    @Test func aKeyThatIsNotTheCertificatesOrAFileThatIsNotPEMIsNamed() throws {
        let certificates = try TestCertificates()
        #expect(throws: TLSSetupError.self) {
            _ = try TLSClientContext(trusting: certificates.caFile, certificateFile: certificates.clientCertificateFile,
                                     keyFile: certificates.serverKeyFile)
        }
        do {
            _ = try TLSClientContext(trusting: certificates.clientKeyFile, certificateFile: nil, keyFile: nil)
            Issue.record("a key was accepted as a CA file")
        } catch {
            #expect(error.description.contains(certificates.clientKeyFile), "\(error)")
        }
    }

    /// A Python TLS server that records the server name each client sends (SNI) and answers `+PONG` to anything.
    @Test func theHostNameIsSentAsSNIAndAnIPAddressIsNot() async throws {
        let certificates = try TestCertificates()
        let script = #"""
import socket, ssl, sys, threading
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
context.sni_callback = lambda sock, name, ctx: print("SNI", name, flush=True)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
print(listener.getsockname()[1], flush=True)
def serve(conn):
    try:
        tls = context.wrap_socket(conn, server_side=True)
        while tls.recv(4096):
            tls.sendall(b"+PONG\r\n")
    except Exception:
        pass
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""#
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, certificates.serverCertificateFile, certificates.serverKeyFile]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        let lines = LineReader(output.fileHandleForReading)
        let port = try #require(lines.next().flatMap { Int($0) })
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let tls = try TLSClientContext(trusting: certificates.caFile, certificateFile: nil, keyFile: nil)
        let byName = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: "rediss://localhost:\(port)", tls: tls))
        defer { byName.close() }
        try await withinHangDeadline { () async throws in
            #expect(await Self.attempt(byName) == .ready)
        }
        #expect(lines.next() == "SNI localhost")
        let byAddress = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: "rediss://127.0.0.1:\(port)", tls: tls))
        defer { byAddress.close() }
        try await withinHangDeadline { () async throws in
            // Verified against the certificate's IP address; RFC 6066 allows no address as a server name.
            #expect(await Self.attempt(byAddress) == .ready)
        }
        #expect(lines.next() == "SNI None")
    }
}

/// Reads a pipe line by line (blocking).
private final class LineReader {
    private let handle: FileHandle
    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        var line = Data()
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte.first == 10 { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }
}
