import FoundationEssentials

/// The hook of `POST /admin/reload`: the application attaches its reloader once built (on a gateway built without
/// one, the route answers 404).
final class ReloadTrigger: Sendable {
    private let action = LockedBox<(@Sendable () async -> ConfigReloadOutcome)?>(nil)

    /// Sets what a reload runs.
    func attach(_ body: @escaping @Sendable () async -> ConfigReloadOutcome) {
        action.withLock { $0 = body }
    }

    /// Runs the reload, or nil when none is attached.
    func run() async -> ConfigReloadOutcome? {
        guard let body = action.withLock({ $0 }) else { return nil }
        return await body()
    }
}
