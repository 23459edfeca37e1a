/// What a reload did (`POST /admin/reload`, SIGHUP, the watch, `postern reload`).
package enum ConfigReloadOutcome: Sendable, Equatable {
    /// The config was read and is serving: generation `generation`, `changed` false when the file held nothing new.
    case reloaded(generation: Int, changed: Bool)
    /// The file is invalid: the old config keeps serving. The problems as `postern check` words them.
    case invalid([ConfigProblem])
    /// A restart-only key changed: the whole reload is refused; the keys.
    case restartRequired([String])

    /// The `result` label of `postern_config_reloads_total`.
    var result: String {
        switch self {
        case .reloaded: return "ok"
        case .invalid: return "invalid"
        case .restartRequired: return "restart_required"
        }
    }
}
