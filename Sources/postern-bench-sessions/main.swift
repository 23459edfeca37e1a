// `make bench-sessions`: the gateway's own cost of sessions with 100 000 of them live.
//
// Usage: postern-bench-sessions [memory|sqlite] [SESSIONS]
//
// Opens SESSIONS sessions (10 per user) through `SessionManager` over the chosen store (SQLite: a temporary
// file), then times, one operation at a time, `authenticate` on a cached token, `authenticate` on a token
// the cache has not seen (the manager's cache emptied first, as after a restart), and logout (`revoke`: the store delete, the
// cache removal and the Directus logout call over a transport that answers at once). Prints the median and
// p99 in µs, the RSS after opening (and what it grew by per session), the process's peak RSS (VmHWM), and
// whether the targets are met (docs/api.md, Limits and defaults): each median under 50 µs, peak RSS under
// 150 MB. Exits 1 when one is missed.
import Foundation
import PosternCore
import PosternHTTP

/// Answers Directus's `/auth/login` (a JWT naming the user of the email) and `/auth/logout` at once.
struct InstantDirectus: UpstreamTransport {
    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        guard request.target.hasPrefix("/auth/login") else { return HTTPResponse(status: 204) }
        let email = (try? JSONValue.parse(request.body))?["email"]?.stringValue ?? "nobody@bench"
        let user = email.split(separator: "@").first.map(String.init) ?? "nobody"
        let header = Crypto.base64URLEncode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = Crypto.base64URLEncode(Array(
            #"{"id":"\#(user)-0000-4000-8000-000000000000","role":"6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","app_access":true,"admin_access":false,"iat":1764500000,"exp":1764500900,"iss":"directus"}"#.utf8))
        let jwt = "\(header).\(payload).\(Crypto.base64URLEncode(Crypto.randomBytes(32)))"
        let body = JSONValue.object([("data", .object([
            ("access_token", .string(jwt)), ("expires", .int(900_000)),
            ("refresh_token", .string(Crypto.base64URLEncode(Crypto.randomBytes(48)))),
        ]))])
        return .json(200, body)
    }
}

/// Nanoseconds on the monotonic clock.
func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Median and 99th percentile of per-operation times, in µs.
func summary(_ samples: [UInt64]) -> (median: Double, p99: Double) {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return (0, 0) }
    return (Double(sorted[sorted.count / 2]) / 1000, Double(sorted[min(sorted.count - 1, sorted.count * 99 / 100)]) / 1000)
}

/// The process's peak resident set (VmHWM), in MB.
func peakRSSMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kb = line.split(separator: " ").compactMap({ Double($0) }).first else { return -1 }
    return kb / 1024
}

/// The process's current resident set (VmRSS), in MB.
func rssMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kb = line.split(separator: " ").compactMap({ Double($0) }).first else { return -1 }
    return kb / 1024
}

/// The bench's own list of the issued access tokens, as one run of UTF-8 bytes: not a `String` each, so
/// that the harness adds little to the process's RSS (which measures the gateway's sessions).
struct TokenList {
    private var bytes: [UInt8] = []
    private var ends: [Int32] = []

    /// The number of tokens.
    var count: Int { ends.count }

    /// Makes room for `count` tokens of about `length` bytes.
    mutating func reserve(_ count: Int, length: Int) {
        bytes.reserveCapacity(count * length)
        ends.reserveCapacity(count)
    }

    /// Adds a token.
    mutating func append(_ token: String) {
        bytes.append(contentsOf: token.utf8)
        ends.append(Int32(bytes.count))
    }

    /// The token at `index`, as a new `String`.
    subscript(index: Int) -> String {
        let start = index == 0 ? 0 : Int(ends[index - 1])
        return String(decoding: bytes[start..<Int(ends[index])], as: UTF8.self)
    }
}

/// The benchmark itself, off the main actor: every `await` below runs on the same executor, as a request's
/// stages do on their event loop (top-level code would hop to the main actor and back on each call).
enum SessionsBench {
    static func run() async -> Bool {
        let arguments = CommandLine.arguments.dropFirst()
        let storeKind = arguments.first ?? "memory"
        let sessionCount = arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000
        let sampleCount = min(20_000, sessionCount / 5)
        let context = CallFields(requestID: "bench", clientIP: "127.0.0.1")

        var temporary: URL?
        let store: any SessionStore
        switch storeKind {
        case "memory":
            store = MemorySessionStore()
        case "sqlite":
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-sessions-\(UUID().uuidString)")
            temporary = dir
            do {
                store = try SQLiteSessionStore(path: dir.appendingPathComponent("sessions.db").path, secretBox: nil)
            } catch {
                FileHandle.standardError.write(Data("postern-bench-sessions: \(error)\n".utf8))
                return false
            }
        default:
            FileHandle.standardError.write(Data("usage: postern-bench-sessions [memory|sqlite] [SESSIONS]\n".utf8))
            return false
        }

        let directus = DirectusClient(transport: InstantDirectus(), timeout: 5)
        let manager = SessionManager(store: store, directus: directus, idleTTL: 604_800, maxTTL: 2_592_000, maxPerUser: 20)

        // 1. Open the sessions: 10 per user, as logins do.
        let rssBefore = rssMB()
        let started = nowNs()
        var tokens = TokenList()
        tokens.reserve(sessionCount, length: 48)
        for n in 0..<sessionCount {
            let user = String(format: "%08x", n / 10)
            do {
                let directusTokens = try await directus.login(email: "\(user)@bench.example", password: "secret", context: context)
                tokens.append(try await manager.open(tokens: directusTokens, email: "\(user)@bench.example", context: context).accessToken)
            } catch {
                FileHandle.standardError.write(Data("postern-bench-sessions: open failed: \(error)\n".utf8))
                return false
            }
        }
        let openSeconds = Double(nowNs() - started) / 1e9
        let live = (try? await store.count()) ?? -1
        let rssAfterOpen = rssMB(), peakAfterOpen = peakRSSMB()
        let perSession = (rssAfterOpen - rssBefore) * 1_048_576 / Double(max(1, sessionCount))
        // The bench's own list of tokens is in that figure too: its bytes and a 4-byte end offset each.
        let tokenBytes = Double(sessionCount > 0 ? tokens[0].utf8.count + 4 : 0)

        // 2. Authenticate, cache hit: a random live token, used once untimed (the cache holds at most
        //    SessionManager.defaultCacheCapacity sessions, so this brings it in), then timed.
        var generator = SystemRandomNumberGenerator()
        var hitSamples: [UInt64] = []
        hitSamples.reserveCapacity(sessionCount)
        for _ in 0..<sessionCount {
            let token = tokens[Int.random(in: 0..<tokens.count, using: &generator)]
            _ = try? await manager.authenticate(token: token)
            let t0 = nowNs()
            let session = try? await manager.authenticate(token: token)
            hitSamples.append(nowNs() - t0)
            precondition(session != nil, "a live token was refused")
        }

        // 3. Authenticate, cache miss: the manager's cache emptied first, as after a restart (a second manager
        //    beside the first would add a second cache, which no gateway process holds), then distinct tokens.
        var coldSamples: [UInt64] = []
        do {
            manager.forgetAllCached()
            var picked = Set<Int>()
            while picked.count < sampleCount { picked.insert(Int.random(in: 0..<tokens.count, using: &generator)) }
            for i in picked {
                let token = tokens[i]
                let t0 = nowNs()
                let session = try? await manager.authenticate(token: token)
                coldSamples.append(nowNs() - t0)
                precondition(session != nil, "a live token was refused")
            }
        }

        // 4. Logout: what the logout handler does after the authentication stage (timed above).
        var logoutSamples: [UInt64] = []
        var victims = Set<Int>()
        while victims.count < sampleCount { victims.insert(Int.random(in: 0..<tokens.count, using: &generator)) }
        for i in victims {
            guard let session = try? await manager.authenticate(token: tokens[i]) else { preconditionFailure("a live token was refused") }
            let t0 = nowNs()
            try? await manager.revoke(session, context: context)
            logoutSamples.append(nowNs() - t0)
        }
        for i in victims.prefix(100) {
            let revoked = try? await manager.authenticate(token: tokens[i])
            precondition(revoked == nil, "a revoked token was accepted")
        }

        let hit = summary(hitSamples), cold = summary(coldSamples), logout = summary(logoutSamples)
        let rss = peakRSSMB()
        let targetUs = 50.0, targetMB = 150.0
        let met = hit.median < targetUs && cold.median < targetUs && logout.median < targetUs && rss > 0 && rss < targetMB
        func row(_ name: String, _ s: (median: Double, p99: Double), _ n: Int) -> String {
            let verdict = s.median < targetUs ? "ok" : "MISSED"
            return "  \(name.padding(toLength: 26, withPad: " ", startingAt: 0)) median \(String(format: "%7.2f", s.median)) µs   p99 \(String(format: "%8.2f", s.p99)) µs   (\(n) ops)  [\(verdict): < \(Int(targetUs)) µs]"
        }
        print("bench-sessions: \(storeKind) store, \(live) live sessions (\(sessionCount / 10) users × 10), opened in \(String(format: "%.1f", openSeconds)) s; in-process cache: \(SessionManager.defaultCacheCapacity) sessions at most")
        print("  memory after opening: RSS \(String(format: "%.1f", rssAfterOpen)) MB (+\(String(format: "%.0f", perSession)) B per session, of which ~\(String(format: "%.0f", tokenBytes)) B is the bench's token list), peak RSS so far \(String(format: "%.1f", peakAfterOpen)) MB")
        print(row("authenticate (cache hit)", hit, hitSamples.count))
        print(row("authenticate (cold)", cold, coldSamples.count))
        print(row("logout (revoke)", logout, logoutSamples.count))
        print("  peak RSS (VmHWM)           \(String(format: "%.1f", rss)) MB   [\(rss > 0 && rss < targetMB ? "ok" : "MISSED"): < \(Int(targetMB)) MB]")
        print("  targets \(met ? "met" : "NOT met")")
        if let temporary { try? FileManager.default.removeItem(at: temporary) }
        return met
    }
}

exit(await SessionsBench.run() ? 0 : 1)
