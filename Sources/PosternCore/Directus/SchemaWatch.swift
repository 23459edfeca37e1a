import FoundationEssentials
import Synchronization
import PosternIO
import PosternHTTP

/// What the gateway learns about Directus's schema from its answers (docs/api.md, Upstream and edge rules).
///
/// Directus answers 403 for a collection that does not exist (its collection-exists check), the same as for
/// one the caller may not read. A 403 on a signed-in caller's list of a configured collection therefore means
/// the collection is missing, or the app role cannot read it: Directus was not (fully) bootstrapped. That is
/// logged once at error level with the hint "run `postern bootstrap`", and `/readyz` reports it until a call
/// on the collection succeeds, or for `memory` seconds after the last such answer (so that an instance a load
/// balancer took out of rotation comes back once Directus is fixed).
final class SchemaWatch: @unchecked Sendable {
    private let lock = PlainLock()
    /// Collection → when the last 403 on a list of it arrived.
    private var missing: [String: TimeInterval] = [:]
    /// Collections already logged (until they are seen again).
    private var logged: Set<String> = []
    /// Lets successful lists skip the lock while nothing is missing.
    private let anyMissing = Atomic<Bool>(false)
    private let memory: TimeInterval
    private let log: AccessLog?
    private let clock: @Sendable () -> TimeInterval

    /// A watch that logs to `log`.
    init(log: AccessLog?, memory: TimeInterval = 60,
                clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.log = log
        self.memory = memory
        self.clock = clock
    }

    /// A signed-in caller's list of `collection` got Directus's 403.
    func listForbidden(collection: String) {
        let first = lock.withLock { () -> Bool in
            missing[collection] = clock()
            anyMissing.store(true, ordering: .relaxed)
            return logged.insert(collection).inserted
        }
        if first {
            log?.event(.error, "directus not bootstrapped: collection \(collection) missing (Directus answers 403 "
                + "on it to a signed-in user); run `postern bootstrap`", [("collection", .string(collection))])
        }
    }

    /// A call on `collection` succeeded: it exists.
    func succeeded(collection: String) {
        guard anyMissing.load(ordering: .relaxed) else { return }
        lock.withLock {
            missing[collection] = nil
            logged.remove(collection)
            if missing.isEmpty { anyMissing.store(false, ordering: .relaxed) }
        }
    }

    /// The reason `/readyz` gives, or nil when nothing is known to be missing.
    var problem: String? {
        guard anyMissing.load(ordering: .relaxed) else { return nil }
        let now = clock()
        let names = lock.withLock { missing.filter { now - $0.value < memory }.keys.sorted() }
        guard !names.isEmpty else { return nil }
        return "directus not bootstrapped: collection \(names.joined(separator: ", ")) missing (run `postern bootstrap`)"
    }
}
