import Dispatch
import FoundationEssentials
import Synchronization
import PosternIO
import PosternRedis

extension Application {
    /// The endpoint of a `redis[s]://` store: where, who (`AUTH [user] password`), which database, and for
    /// `rediss://` the TLS context of `sessions.redis_*_file` (docs/api.md, Several instances (Redis)).
    static func redisEndpoint(_ url: RedisURL, config: PosternConfig) throws(StartError) -> RedisEndpoint {
        let tls: TLSClientContext?
        do throws(TLSSetupError) {
            tls = try config.sessions.redisTLSContext()
        } catch {
            throw StartError("sessions.store: \(error.description)")
        }
        return RedisEndpoint(host: url.address.host, port: Int(url.address.port), username: url.username,
                             password: url.password, database: url.db, tls: tls)
    }

    /// How `client`'s connection attempt in progress ends, waiting at most `seconds` (nil past them). Blocks
    /// the calling thread, never a loop's: the answer comes from the client's loop.
    static func firstAttempt(of client: RedisClient, within seconds: Double) -> RedisAttemptOutcome? {
        let outcome = Mutex<RedisAttemptOutcome?>(nil)
        let done = DispatchSemaphore(value: 0)
        client.whenAttemptEnds { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }

    /// `postern check`'s look at a Redis store: connects once (TLS and login included) and returns one line,
    /// and whether it is a problem. Refused (a wrong CA, a client certificate refused, a wrong password or ACL
    /// user): a problem. Out of reach: said, not a problem (Redis may come later; the gateway then connects by
    /// itself). Nil for any other store. Never a password.
    package static func checkRedisStore(_ config: PosternConfig) -> (line: String, problem: Bool)? {
        guard let url = config.sessions.redisURL else { return nil }
        let endpoint: RedisEndpoint
        do throws(StartError) {
            endpoint = try redisEndpoint(url, config: config)
        } catch {
            return (error.description, true)
        }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: endpoint,
                                 options: RedisOptions(connectTimeout: 5, reconnectMinimum: 60))
        defer { client.close() }
        switch firstAttempt(of: client, within: 10) {
        case .ready:
            return ("sessions.store: Redis at \(endpoint) answered\(endpoint.tls == nil ? "" : " (TLS, certificate verified)")",
                    false)
        case .refused(let why):
            return ("sessions.store: Redis at \(endpoint) refused this client: \(why)", true)
        case .unreachable(let why):
            return ("sessions.store: Redis at \(endpoint) cannot be reached now (\(why)); not checked", false)
        case .closed, nil:
            return ("sessions.store: Redis at \(endpoint) did not answer in time; not checked", false)
        }
    }
}
