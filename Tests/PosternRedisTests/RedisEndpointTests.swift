import Testing
@testable import PosternRedis
import PosternTesting

@Suite struct RedisEndpointTests {
    @Test(arguments: [
        ("redis://127.0.0.1", RedisEndpoint(host: "127.0.0.1")),
        ("redis://localhost:6380", RedisEndpoint(host: "localhost", port: 6380)),
        ("REDIS://cache.internal:7000/2", RedisEndpoint(host: "cache.internal", port: 7000, database: 2)),
        ("redis://:secret@redis:6379/0", RedisEndpoint(host: "redis", password: "secret")),
        ("redis://:p%40ss%3Aw%2Frd@10.0.0.5:6379/15", RedisEndpoint(host: "10.0.0.5", password: "p@ss:w/rd", database: 15)),
        ("redis://:p@ss@host", RedisEndpoint(host: "host", password: "p@ss")),
        ("redis://app:secret@host/1", RedisEndpoint(host: "host", username: "app", password: "secret", database: 1)),
        ("redis://[::1]:6390/3", RedisEndpoint(host: "::1", port: 6390, database: 3)),
        ("redis://host/", RedisEndpoint(host: "host")),
        ("rediss://app:secret@redis.example.com:6380/2",
         RedisEndpoint(host: "redis.example.com", port: 6380, username: "app", password: "secret", database: 2, tls: .shared)),
        ("REDISS://:secret@10.0.0.5", RedisEndpoint(host: "10.0.0.5", password: "secret", tls: .shared)),
    ])
    func parsesValidURLs(url: String, expected: RedisEndpoint) throws {
        #expect(try RedisEndpoint(url: url) == expected)
    }

    @Test(arguments: [
        ("http://host:6379", "the scheme must be redis:// or rediss://"),
        ("host:6379", "expected redis://"),
        ("redis://", "the host is missing"),
        ("redis://:6379", "the host is missing"),
        ("redis://host:0", "the port must be a number from 1 to 65535"),
        ("redis://host:65536", "the port must be a number from 1 to 65535"),
        ("redis://host:abc", "the port must be a number from 1 to 65535"),
        ("redis://host:", "the port must be a number from 1 to 65535"),
        ("redis://host/x", "the database after the / must be a number"),
        ("redis://host/-1", "the database after the / must be a number"),
        ("redis://host/99999999999", "the database after the / must be a number"),
        ("redis://host?db=1", "query parameters"),
        ("redis://secret@host", "expected :password@"),
        ("redis://:bad%zzpass@host", "bad percent-encoding"),
        ("redis://user:@host", "a user name needs a password"),
        ("redis://[::1:6379", "closing ]"),
        ("redis://ho st", "only letters, digits"),
    ])
    func refusesBadURLsWithAClearReason(url: String, reason: String) {
        #expect {
            _ = try RedisEndpoint(url: url)
        } throws: { error in
            guard case .invalidURL(let message) = error as? RedisError else { return false }
            return message.contains(reason)
        }
    }

    @Test func neitherTheDescriptionNorAnErrorShowsThePassword() throws {
        let endpoint = try RedisEndpoint(url: "redis://:hunter2@cache:6379/4")
        #expect(endpoint.description == "redis://:***@cache:6379/4")
        #expect(!endpoint.description.contains("hunter2"))
        let tls = try RedisEndpoint(url: "rediss://app:hunter2@cache:6380")
        #expect(tls.description == "rediss://app:***@cache:6380/0")
        for bad in ["rediss://:hunter2@cache:0", "redis://:hunter2@cache:99999", "redis://:hunter2@cache/x"] {
            do {
                _ = try RedisEndpoint(url: bad)
                Issue.record("\(bad) was accepted")
            } catch {
                #expect(!error.description.contains("hunter2"))
            }
        }
    }
}
