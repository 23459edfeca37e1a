import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternRedis
import PosternHTTP
import PosternIO

/// Two gateway instances on one real redis-server and one Directus stand-in, through real sockets
/// (docs/api.md, Several instances (Redis)).
@Suite(.serialized) struct RedisTwoInstanceTests {
    @Test func aLoginOnAWorksOnB() throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        #expect(try gw.me(gw.b, token) == 200)
        let list = try gw.client(gw.b).json("GET", "/api/v1/books?limit=1", token: token)
        #expect(list.status == 200, "\(list.text)")
        #expect(try gw.me(gw.b, Crypto.newToken(prefix: Crypto.accessTokenPrefix)) == 401)
    }

    @Test func aLogoutOnBIsRefusedOnAWithinOneSecond() throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        #expect(try gw.me(gw.a, token) == 200)  // now in A's own cache
        #expect(try gw.me(gw.b, token) == 200)
        #expect(try gw.client(gw.b).json("POST", "/api/v1/user/logout", token: token).status == 204)
        try eventually("A refuses the logged-out token", timeout: 1) { try gw.me(gw.a, token) == 401 }
        #expect(try gw.me(gw.b, token) == 401)
        #expect(try gw.me(gw.a, token) == 401)
    }

    @Test func theOldRefreshTokenOnBAfterARefreshOnARevokesTheSessionOnBoth() throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        let (token, refresh) = try gw.login(gw.a)
        let rotated = try gw.client(gw.a).json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(refresh)"}"#)
        #expect(rotated.status == 200, "\(rotated.text)")
        let newToken = try #require(rotated.json?["user"]?["token"]?.stringValue)
        let newRefresh = try #require(rotated.json?["data"]?["refreshToken"]?.stringValue)
        #expect(try gw.me(gw.a, token) == 401)  // the old token died with the rotation, on both
        #expect(try gw.me(gw.b, token) == 401)
        #expect(try gw.me(gw.a, newToken) == 200)
        #expect(try gw.me(gw.b, newToken) == 200)
        // The reused refresh token, presented on the other instance, ends the whole session.
        let reused = try gw.client(gw.b).json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(refresh)"}"#)
        #expect(reused.status == 401)
        try eventually("A refuses the session after the reuse", timeout: 1) { try gw.me(gw.a, newToken) == 401 }
        #expect(try gw.me(gw.b, newToken) == 401)
        let after = try gw.client(gw.a).json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(newRefresh)"}"#)
        #expect(after.status == 401)
    }

    @Test func twentyConcurrentRequestsWithAnExpiredDirectusTokenRefreshOnceAcrossInstances() throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        #expect(try gw.me(gw.b, token) == 200)  // both instances hold the session
        gw.standIn.expireAllAccessTokens()
        let before = gw.standIn.refreshCount
        let requests = BackgroundRequests()
        let (portA, portB) = (gw.a.port, gw.b.port)
        let turn = LockedBox(0)
        requests.start(20) {
            let port = turn.withLock { n in defer { n += 1 }; return n % 2 == 0 ? portA : portB }
            return try RawHTTPClient(port: port).json("GET", "/api/v1/books?limit=1", token: token)
        }
        let statuses = requests.join().map { $0?.status ?? -1 }
        #expect(statuses == Array(repeating: 200, count: 20), "\(statuses)")
        #expect(gw.standIn.refreshCount - before == 1)
        #expect(try gw.me(gw.a, token) == 200)
        #expect(try gw.me(gw.b, token) == 200)
    }

    @Test func failedLoginLimitsAreShared() throws {
        let gw = try TwoGateways { config in
            config.rateLimits.failedLoginsPerEmailPerMinute = 3
            config.rateLimits.failedLoginsPerIPPerMinute = 100
        }
        defer { gw.stop() }
        let wrong = #"{"email":"x@y.com","password":"wrong-password"}"#
        var statuses: [Int] = []
        for app in [gw.a, gw.b, gw.a] {
            statuses.append(try gw.client(app).json("POST", "/api/v1/user/login", wrong).status)
        }
        #expect(statuses == [401, 401, 401])
        // The fourth failure, on either instance, is over the shared budget.
        let limited = try gw.client(gw.b).json("POST", "/api/v1/user/login", wrong)
        #expect(limited.status == 429, "\(limited.text)")
        #expect(limited.headers["Retry-After"] != nil)
        #expect(try gw.client(gw.a).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#).status == 429)
    }

    @Test func afterAStopsBServesItsSessions() throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        let (token, refresh) = try gw.login(gw.a)
        #expect(try gw.me(gw.a, token) == 200)
        gw.killA()
        #expect(try gw.me(gw.b, token) == 200)
        let rotated = try gw.client(gw.b).json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(refresh)"}"#)
        #expect(rotated.status == 200, "\(rotated.text)")
    }

    @Test func redisDownIs503WithNoFalse401AndEverythingWorksAgainWithNothingLost() throws {
        let gw = try TwoGateways(persistent: true)
        defer { gw.stop() }
        let (cachedOnB, _) = try gw.login(gw.b)
        let (onlyOnA, refreshA) = try gw.login(gw.a)
        #expect(try gw.me(gw.b, cachedOnB) == 200)

        gw.redis.stop()
        try eventually("B notices Redis is down", timeout: 10) {
            try gw.client(gw.b).json("GET", "/readyz").status == 503
        }
        let unknown = try gw.client(gw.b).json("GET", "/api/v1/user/me", token: onlyOnA)
        #expect(unknown.status == 503, "\(unknown.text)")
        #expect(unknown.json?["code"]?.stringValue == "session_store_unavailable")
        let readyz = try gw.client(gw.b).json("GET", "/readyz")
        #expect(readyz.status == 503)
        #expect(try gw.me(gw.b, cachedOnB) == 200)  // a session B holds keeps working
        let refresh = try gw.client(gw.b).json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(refreshA)"}"#)
        #expect(refresh.status == 503)
        let login = try gw.client(gw.b).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(login.status == 503)

        try gw.redis.restart()
        try gw.waitUntilReady(gw.a)
        try gw.waitUntilReady(gw.b)
        #expect(try gw.me(gw.b, onlyOnA) == 200)
        #expect(try gw.me(gw.a, cachedOnB) == 200)
        let rotated = try gw.client(gw.b).json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(refreshA)"}"#)
        #expect(rotated.status == 200, "\(rotated.text)")
        #expect(try gw.client(gw.a).json("POST", "/api/v1/user/logout", token: cachedOnB).status == 204)
        try eventually("B refuses the logged-out token", timeout: 1) { try gw.me(gw.b, cachedOnB) == 401 }
    }

    @Test func thePerUserCapHoldsAcrossInstances() throws {
        let gw = try TwoGateways { config in config.sessions.maxPerUser = 2 }
        defer { gw.stop() }
        let first = try gw.login(gw.a).token
        #expect(try gw.me(gw.a, first) == 200)
        let second = try gw.login(gw.b).token
        let third = try gw.login(gw.b).token  // ends the least recently used: `first`
        try eventually("A refuses the capped session", timeout: 1) { try gw.me(gw.a, first) == 401 }
        #expect(try gw.me(gw.b, first) == 401)
        #expect(try gw.me(gw.a, second) == 200)
        #expect(try gw.me(gw.a, third) == 200)
    }

    @Test func aReadInFlightOnACannotUndoALogoutOnB() throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        for _ in 0..<15 {
            let (token, _) = try gw.login(gw.b)
            let requests = BackgroundRequests()
            let (portA, portB) = (gw.a.port, gw.b.port)
            requests.start(4) { try RawHTTPClient(port: portA).json("GET", "/api/v1/user/me", token: token) }
            requests.start(1) { try RawHTTPClient(port: portB).json("POST", "/api/v1/user/logout", token: token) }
            let answers = requests.join()
            #expect(answers.allSatisfy { [200, 204, 401].contains($0?.status ?? -1) })
            try eventually("A refuses the logged-out token", timeout: 1) { try gw.me(gw.a, token) == 401 }
            #expect(try gw.me(gw.a, token) == 401)
            #expect(try gw.me(gw.b, token) == 401)
        }
    }

    @Test func aWriteThroughADropsBsCachedAnswers() throws {
        let gw = try TwoGateways { config in
            for i in config.resources.indices { config.resources[i].cache.ttlMs = 60_000 }
        }
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        let path = "/api/v1/books?limit=100"
        #expect(try gw.client(gw.b).json("GET", path, token: token).headers["X-Cache"] == "MISS")
        #expect(try gw.client(gw.b).json("GET", path, token: token).headers["X-Cache"] == "HIT")
        let created = try gw.client(gw.a).json("POST", "/api/v1/books", #"{"title":"Written on A"}"#, token: token)
        #expect(created.status == 201 || created.status == 200, "\(created.text)")
        try eventually("B sees the write", timeout: 1) {
            try gw.client(gw.b).json("GET", path, token: token).text.contains("Written on A")
        }
    }

    @Test func aCommentWrittenOnADropsTheCachedPostOnB() throws {
        // `posts` reads comments through a relation; `notes` writes the `comments` collection.
        let gw = try TwoGateways { config in
            for i in config.resources.indices { config.resources[i].cache.ttlMs = 60_000 }
            config.resources.append(LiveRelationsTests.notesResource())
        }
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        let path = "/api/v1/posts/3"
        let miss = try gw.client(gw.b).json("GET", path, token: token)
        #expect(miss.headers["X-Cache"] == "MISS")
        #expect(miss.json?["posts"]?.arrayValue?.first?["comments"] == .array([]))
        #expect(try gw.client(gw.b).json("GET", path, token: token).headers["X-Cache"] == "HIT")
        let created = try gw.client(gw.a).json("POST", "/api/v1/notes", #"{"post":"3","text":"Written on A"}"#, token: token)
        #expect(created.status == 201, "\(created.text)")
        try eventually("B drops its cached post", timeout: 1) {
            try gw.client(gw.b).json("GET", path, token: token).text.contains("Written on A")
        }
    }

    @Test func redisHoldsDigestsOnlyAndSealedDirectusTokens() async throws {
        let key = Data(Crypto.randomBytes(32)).base64EncodedString()
        let gw = try TwoGateways { config in config.secretKey = key }
        defer { gw.stop() }
        let (token, refresh) = try gw.login(gw.a)
        #expect(try gw.me(gw.b, token) == 200)
        let loop = try #require(gw.a.group?.loops.first)
        let client = RedisClient(loop: loop, endpoint: try RedisEndpoint(url: gw.redis.url()))
        defer { client.close() }
        let keys = try await client.command(["KEYS", "*"]).array?.compactMap(\.string) ?? []
        var everything = keys.joined(separator: "\n")
        for k in keys where k.hasPrefix("postern:s:") {
            let values = try await client.command(["HGETALL", .string(k)]).array?.compactMap(\.string) ?? []
            everything += values.joined(separator: "\n")
            #expect(values.contains("1"))  // sealed flag
        }
        #expect(keys.contains { $0.hasPrefix("postern:t:") })
        #expect(!everything.contains(token) && !everything.contains(refresh))
        #expect(!everything.contains("eyJ"))  // no Directus JWT in clear
        #expect(everything.contains(TokenKey(token: token).hex))
    }
}

extension RedisTwoInstanceTests {
    @Test func aRefreshLockLeftByADeadHolderExpiresAndTheSessionStillRefreshes() async throws {
        let gw = try TwoGateways()
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        let loop = try #require(gw.b.group?.loops.first)
        let redis = RedisClient(loop: loop, endpoint: try RedisEndpoint(url: gw.redis.url()))
        defer { redis.close() }
        let id = try #require(try await redis.command(["GET", .string("postern:t:" + TokenKey(token: token).hex)]).string)
        // An instance took the lock and died before refreshing: its lock outlives it for a while.
        #expect(try await redis.command(["SET", .string("postern:lock:" + id), "dead-holder", "NX", "PX", 500]) == .status("OK"))
        gw.standIn.expireAllAccessTokens()
        let before = gw.standIn.refreshCount
        let r = try gw.client(gw.b).json("GET", "/api/v1/books?limit=1", token: token)
        #expect(r.status == 200, "\(r.text)")
        #expect(gw.standIn.refreshCount - before == 1)
        #expect(try gw.me(gw.a, token) == 200)
    }
}

extension RedisTwoInstanceTests {
    @Test func registrationLimitsAreShared() throws {
        let gw = try TwoGateways { config in config.rateLimits.registrationsPerIPPerMinute = 2 }
        defer { gw.stop() }
        func register(_ app: Application, _ n: Int) throws -> Int {
            try gw.client(app).json("POST", "/api/v1/user", #"{"email":"new-\#(n)@example.com","password":"password-\#(n)"}"#).status
        }
        #expect(try register(gw.a, 1) == 200)
        #expect(try register(gw.b, 2) == 200)
        #expect(try register(gw.a, 3) == 429)
        #expect(try register(gw.b, 4) == 429)
    }
}

extension RedisTwoInstanceTests {
    @Test func perTokenLimitsAreShared() throws {
        let gw = try TwoGateways { config in config.rateLimits.requestsPerTokenPerMinute = 3 }
        defer { gw.stop() }
        let (token, _) = try gw.login(gw.a)
        let statuses = try [gw.a, gw.b, gw.a, gw.b].map { app in
            try gw.client(app).json("GET", "/api/v1/books?limit=1", token: token).status
        }
        #expect(statuses == [200, 200, 200, 429])
    }
}
