import CEvent  // SOCK_STREAM, as SocketAddress.swift has it (Foundation alone does not give it in a clean release build)
import FoundationEssentials
import Glibc

/// Looks host names (Directus's, Redis's) up with the system resolver, glibc's `getaddrinfo`: `/etc/hosts`, the
/// `search` domains and `ndots` of `/etc/resolv.conf`, its nameservers in order, each name sent as written (no
/// letter-case mixing). `getaddrinfo` blocks, so it runs on the resolver's own threads (at most `maxThreads`,
/// started when a lookup is queued and ended when none is left), never on a loop's thread; one lookup per name is
/// in flight at a time, and its answer goes to every connect waiting for it through each one's loop job queue.
/// Answers are cached per name by the rule of `ResolverCache` (used 30 s, then refreshed beside the connect that
/// finds them old); each connect gets a plan of the name's addresses (round robin over those that work, an address
/// whose connect failed left out for 10 s), and reports the connects that fail.
package final class HostResolver: @unchecked Sendable {
    /// The process's resolver (the cache is shared by every loop: one lookup per name, not one per loop).
    package static let shared = HostResolver()

    /// A blocking lookup of one name (run on a resolver thread): its addresses (at least one, in the order to prefer),
    /// or why there is none.
    package typealias Lookup = @Sendable (String) -> Result<[ResolvedAddress], LookupFailure>

    /// Why a name has no address (the resolver's own words).
    package struct LookupFailure: Error, Sendable, Equatable {
        /// For logs and error messages, e.g. "Name or service not known".
        package let reason: String

        /// A failure for `reason`.
        package init(reason: String) {
            self.reason = reason
        }
    }

    private let lookup: Lookup
    private let clock: @Sendable () -> UInt64
    private let maxThreads: Int
    /// Guards everything below.
    private let lock = PlainLock()
    private var cache = ResolverCache()
    /// The requests waiting for each name's lookup in flight.
    private var waiting: [String: [DNSLookup]] = [:]
    /// Names whose lookup is queued and not yet taken by a thread, oldest first.
    private var queued: [String] = []
    /// Resolver threads running.
    private var threads = 0

    /// A resolver that looks names up with `lookup` on at most `maxThreads` threads, reading time from `clock`
    /// (monotonic nanoseconds).
    package init(maxThreads: Int = 2, clock: @escaping @Sendable () -> UInt64 = { MonotonicInstant.now.nanoseconds },
         lookup: @escaping Lookup = HostResolver.systemLookup) {
        self.maxThreads = max(1, maxThreads)
        self.clock = clock
        self.lookup = lookup
    }

    /// Answers `request` for `host`: at once (on the caller's thread, the request's loop) from a cached address,
    /// else on its loop once the lookup has answered.
    func resolve(_ request: DNSLookup, host: String) {
        lock.lock()
        var cached: AddressPlan?
        switch cache.ask(host, now: clock()) {
        case .use(let plan):
            cached = plan
        case .useAndRefresh(let plan):
            cached = plan
            queued.append(host)
        case .wait(let start):
            waiting[host, default: []].append(request)
            if start { queued.append(host) }
        }
        let spawn = threads < maxThreads && !queued.isEmpty
        if spawn { threads += 1 }
        lock.unlock()
        if spawn { startThread() }
        if let cached { request.finish(.success(cached)) }
    }

    /// A connect to `address` of `host` failed (refused, unreachable, timed out): new connections leave it out for
    /// a while; when all of the name's addresses failed, the next connect waits for a fresh lookup. Names never
    /// looked up (numeric hosts) are not affected.
    package func connectFailed(host: String, address: ResolvedAddress) {
        lock.lock()
        cache.connectFailed(host, address, now: clock())
        lock.unlock()
    }

    /// A connect to `address` of `host`, tried again after it failed, succeeded: new connections use it again.
    package func connectSucceeded(host: String, address: ResolvedAddress) {
        lock.lock()
        cache.connectSucceeded(host, address)
        lock.unlock()
    }

    /// Starts one resolver thread (its slot is already counted in `threads`).
    private func startThread() {
        // One-shot: passRetained here, one takeRetainedValue in the thread's body, which pthread runs exactly once.
        let arg = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { arg in
            // pthread_create passes back the non-nil pointer it was given.
            let resolver = Unmanaged<HostResolver>.fromOpaque(arg!).takeRetainedValue()
            resolver.work()
            return nil
        }, arg)
        if rc == 0 {
            pthread_detach(thread)
            return
        }
        Unmanaged<HostResolver>.fromOpaque(arg).release()
        // No thread: unless another one runs and will take the queue, the queued names fail now.
        lock.lock()
        threads -= 1
        let failed = threads == 0 ? queued : []
        if threads == 0 { queued.removeAll() }
        lock.unlock()
        for host in failed {
            answer(host, .failure(LookupFailure(reason: "cannot start a resolver thread (\(rc))")))
        }
    }

    /// A resolver thread's body: looks the queued names up until none is left, then ends.
    private func work() {
        while true {
            lock.lock()
            guard !queued.isEmpty else {
                threads -= 1
                lock.unlock()
                return
            }
            let host = queued.removeFirst()
            lock.unlock()
            answer(host, lookup(host))
        }
    }

    /// Records the answer for `host` and hands it to every request waiting for it, on their loops.
    private func answer(_ host: String, _ result: Result<[ResolvedAddress], LookupFailure>) {
        lock.lock()
        let now = clock()
        cache.answered(host, try? result.get(), now: now)
        let requests = waiting.removeValue(forKey: host) ?? []
        // One plan per waiting connect, so that they too start at different addresses. A lookup that failed leaves
        // the addresses known before (all of which failed lately, or the connect would not have waited): they are
        // tried again rather than none.
        let plans: [Result<AddressPlan, LookupFailure>] = requests.map { _ in
            if let plan = cache.plan(host, now: now) { return .success(plan) }
            if case .failure(let failure) = result { return .failure(failure) }
            return .failure(LookupFailure(reason: "no address"))
        }
        lock.unlock()
        for (request, plan) in zip(requests, plans) { request.deliver(plan) }
    }

    /// glibc's `getaddrinfo` for `host` (TCP): its IPv4 addresses in the order glibc gives them, else its IPv6 ones
    /// (a name such as localhost often lists ::1 first, which a server bound to 127.0.0.1 refuses); each address
    /// once. Blocks.
    static let systemLookup: Lookup = { host in
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let list else {
            let reason = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            return .failure(LookupFailure(reason: reason))
        }
        defer { freeaddrinfo(list) }
        var v4: [ResolvedAddress] = []
        var v6: [ResolvedAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = list
        while let current = node {
            if let address = current.pointee.ai_addr, let found = ResolvedAddress(address) {
                if found.family == AF_INET {
                    if !v4.contains(found) { v4.append(found) }
                } else if !v6.contains(found) {
                    v6.append(found)
                }
            }
            node = current.pointee.ai_next
        }
        let chosen = v4.isEmpty ? v6 : v4
        guard !chosen.isEmpty else { return .failure(LookupFailure(reason: "no address")) }
        return .success(chosen)
    }
}
