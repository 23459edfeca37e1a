import Foundation
import Testing
@testable import PosternCore
import PosternHTTP

/// The redacted config (`GET /admin/stats`, the console's configuration panel) cuts a store URL's credentials where
/// `RedisURL`, the parse that connects, does: a password with `?`, `#`, `@`, `%` or `:` is hidden whole (issue 34).
@Suite struct SecretRedactionTests {
    @Test(arguments: ["p?ss", "p#ss", "p@ss", "p%2Fss", "p:ss", "a?b#c@d%e:f", "?", "#", "@@", "pass?word@x#y"])
    func aRedisPasswordWithURLDelimitersIsHiddenWhole(password: String) throws {
        var config = PosternConfig()
        config.sessions.store = "redis://:\(password)@cache.internal:6380/3"
        let parsed = try #require(RedisURL(config.sessions.store), "the parse that connects takes it")
        #expect(parsed.password == password)
        #expect(parsed.address.description == "cache.internal:6380")
        let shown = config.redactedJSON()["sessions"]?["store"]?.stringValue
        #expect(shown == "redis://<redacted>@cache.internal:6380/3", "\(shown ?? "nil")")
    }

    @Test func otherURLsAndPlainValuesAreAsBefore() {
        #expect(PosternConfig.redactingCredentials("redis://cache:6379/0") == "redis://cache:6379/0")
        #expect(PosternConfig.redactingCredentials("sqlite:data/s.db") == "sqlite:data/s.db")
        #expect(PosternConfig.redactingCredentials("http://u:p?w@cms:8055") == "http://<redacted>@cms:8055")
        #expect(PosternConfig.redactingCredentials("http://cms:8055") == "http://cms:8055")
    }
}
