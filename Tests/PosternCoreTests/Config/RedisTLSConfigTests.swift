import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// The Redis store's URL and TLS files in the config: `rediss://` and ACL users parse; the files are checked by
/// key path (or by the variable that set them): readable, a certificate with its key, only with `rediss://`.
@Suite struct RedisTLSConfigTests {
    @Test func redissURLsAndACLUsersParse() throws {
        let tls = try #require(RedisURL("rediss://app:p@ss:w%rd@redis.example.com:6380/2"))
        #expect(tls.tls && tls.username == "app" && tls.password == "p@ss:w%rd" && tls.db == 2)
        #expect(tls.address == HostPort(host: "redis.example.com", port: 6380))
        let defaultUser = try #require(RedisURL("redis://:secret@host:6379"))
        #expect(!defaultUser.tls && defaultUser.username == nil && defaultUser.password == "secret" && defaultUser.db == 0)
        #expect(SessionStoreKind("rediss://host:6380") == .redis(HostPort(host: "host", port: 6380)))
        for bad in ["rediss://host", "redis://user:@host:6379", "rediss://app@host:6379", "redisss://host:1"] {
            #expect(RedisURL(bad) == nil, "\(bad)")
        }
    }

    @Test func theFilesAreCheckedByTheirVariable() throws {
        let certificates = try TestCertificates()
        func problems(_ environment: [String: String]) -> [String] {
            switch PosternConfig.load(json: nil, environment: environment) {
            case .success: return []
            case .failure(let error): return error.problems.map(\.description)
            }
        }
        let store = ["POSTERN_SESSION_STORE": "rediss://app:pw@localhost:6380"]
        #expect(problems(store.merging(["POSTERN_REDIS_CA_FILE": certificates.caFile,
                                         "POSTERN_REDIS_CERT_FILE": certificates.clientCertificateFile,
                                         "POSTERN_REDIS_KEY_FILE": certificates.clientKeyFile]) { $1 }) == [])
        #expect(problems(store.merging(["POSTERN_REDIS_CA_FILE": "/nonexistent/ca.pem"]) { $1 })
            == ["POSTERN_REDIS_CA_FILE: cannot read /nonexistent/ca.pem (No such file or directory)"])
        #expect(problems(store.merging(["POSTERN_REDIS_CERT_FILE": certificates.clientCertificateFile]) { $1 })
            == ["POSTERN_REDIS_CERT_FILE: needs sessions.redis_key_file (POSTERN_REDIS_KEY_FILE) too (a client certificate and its key)"])
        #expect(problems(store.merging(["POSTERN_REDIS_KEY_FILE": certificates.clientKeyFile]) { $1 })
            == ["POSTERN_REDIS_KEY_FILE: needs sessions.redis_cert_file (POSTERN_REDIS_CERT_FILE) too (a client certificate and its key)"])
        let mismatched = problems(store.merging(["POSTERN_REDIS_CERT_FILE": certificates.clientCertificateFile,
                                                 "POSTERN_REDIS_KEY_FILE": certificates.serverKeyFile]) { $1 })
        #expect(mismatched.count == 1 && mismatched[0].hasPrefix("POSTERN_REDIS_CERT_FILE: ")
                && mismatched[0].contains(certificates.serverKeyFile), "\(mismatched)")
        #expect(problems(["POSTERN_SESSION_STORE": "redis://localhost:6379", "POSTERN_REDIS_CA_FILE": certificates.caFile])
            == ["POSTERN_REDIS_CA_FILE: is set, but sessions.store is not a rediss:// URL"])
        // In the file, by key path.
        let json = #"{"sessions": {"store": "rediss://h:6380", "redis_ca_file": "/nonexistent/ca.pem"}}"#
        guard case .failure(let error) = PosternConfig.load(json: Data(json.utf8), environment: [:]) else {
            Issue.record("an unreadable CA file passed")
            return
        }
        #expect(error.problems.map(\.description) == ["sessions.redis_ca_file: cannot read /nonexistent/ca.pem (No such file or directory)"])
    }
}
