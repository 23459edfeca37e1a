import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// `postern check` and `postern serve` against a real TLS Redis (`redis-server --tls-port`, the CA made by the
/// test), as an operator runs them: a refusing Redis is one clear line and a non-zero exit; never a password.
@Suite(.serialized) struct RedisTLSProcessTests {
    static let password = "proc-tls-Secret-31"

    static func environment(_ server: RedisServer, _ certificates: TestCertificates, password: String = password,
                            ca: String? = nil) -> [String: String] {
        ["POSTERN_SESSION_STORE": server.tlsURL(user: "app", password: password),
         "POSTERN_REDIS_CA_FILE": ca ?? certificates.caFile,
         "POSTERN_DIRECTUS_URL": "http://127.0.0.1:9"]
    }

    static func check(_ environment: [String: String]) throws -> (status: Int32?, output: String) {
        let p = try PosternProcess(["check"], environment: environment)
        defer { p.cleanUp() }
        let status = p.waitForExit(seconds: 60)  // a hang detector
        return (status, p.stdout + p.stderr)
    }

    @Test func checkConnectsOnceAndNamesARefusal() throws {
        let certificates = try TestCertificates()
        let server = try RedisServer(tls: RedisServer.TLS(certificates: certificates), users: ["app on >\(Self.password) ~* &* +@all"])
        defer { server.stop() }
        let port = server.tlsPort ?? 0
        let good = try Self.check(Self.environment(server, certificates))
        #expect(good.status == 0, "\(good.output)")
        #expect(good.output.contains("sessions.store: Redis at rediss://app:***@localhost:\(port)/0 answered (TLS, certificate verified)"),
                "\(good.output)")
        #expect(good.output.contains("sessions.redis_ca_file: from POSTERN_REDIS_CA_FILE"), "\(good.output)")

        let wrongCA = try Self.check(Self.environment(server, certificates, ca: certificates.otherCAFile))
        #expect(wrongCA.status == 1, "\(wrongCA.output)")
        #expect(wrongCA.output.contains("sessions.store: Redis at rediss://app:***@localhost:\(port)/0 refused this client: "
            + "TLS handshake with localhost:\(port) failed: certificate verify failed"), "\(wrongCA.output)")

        let wrongPassword = try Self.check(Self.environment(server, certificates, password: "Not-it-4567"))
        #expect(wrongPassword.status == 1, "\(wrongPassword.output)")
        #expect(wrongPassword.output.contains("refused this client: Redis refused AUTH: WRONGPASS"), "\(wrongPassword.output)")

        server.stop()
        let away = try Self.check(Self.environment(server, certificates))
        #expect(away.status == 0, "\(away.output)")
        #expect(away.output.contains("cannot be reached now"), "\(away.output)")
        for output in [good.output, wrongCA.output, wrongPassword.output, away.output] {
            #expect(!output.contains(Self.password) && !output.contains("Not-it-4567"), "\(output)")
        }
    }

    @Test func aClientCertificateTheServerRequiresComesFromTheEnvironment() throws {
        let certificates = try TestCertificates()
        let server = try RedisServer(tls: RedisServer.TLS(certificates: certificates, requireClientCertificate: true),
                                     users: ["app on >\(Self.password) ~* &* +@all"])
        defer { server.stop() }
        var environment = Self.environment(server, certificates)
        let without = try Self.check(environment)
        #expect(without.status == 1, "\(without.output)")
        #expect(without.output.contains("refused this client"), "\(without.output)")
        environment["POSTERN_REDIS_CERT_FILE"] = certificates.clientCertificateFile
        environment["POSTERN_REDIS_KEY_FILE"] = certificates.clientKeyFile
        let with = try Self.check(environment)
        #expect(with.status == 0, "\(with.output)")
        #expect(with.output.contains("answered (TLS, certificate verified)"), "\(with.output)")
    }

    @Test func serveRefusedByRedisExitsWithOneLine() throws {
        let certificates = try TestCertificates()
        let server = try RedisServer(tls: RedisServer.TLS(certificates: certificates), users: ["app on >\(Self.password) ~* &* +@all"])
        defer { server.stop() }
        for environment in [Self.environment(server, certificates, ca: certificates.otherCAFile),
                            Self.environment(server, certificates, password: "Not-it-4567")] {
            var env = environment
            env["POSTERN_LISTEN"] = "127.0.0.1:0"
            env["POSTERN_ADMIN_LISTEN"] = "127.0.0.1:0"
            let p = try PosternProcess(["serve"], environment: env)
            defer { p.cleanUp() }
            let status = p.waitForExit(seconds: 60)  // a hang detector
            #expect(status == 1, "\(p.stdout)\(p.stderr)")
            let message = p.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(message.hasPrefix("postern: cannot start: sessions.store: Redis at rediss://app:***@localhost:"), "\(message)")
            #expect(message.contains("certificate verify failed") || message.contains("WRONGPASS"), "\(message)")
            #expect(!message.contains("\n"), "one line: \(message)")
            #expect(!(p.stdout + p.stderr).contains(Self.password) && !(p.stdout + p.stderr).contains("Not-it-4567"))
        }
    }
}
