import FoundationEssentials

/// Why `postern bootstrap` stopped; `description` is the one-line reason the CLI prints.
package enum BootstrapError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Directus could not be reached at `url` within the wait.
    case unreachable(url: String, reason: String)
    /// Directus answered, but `/server/health` never said ok within the wait.
    case unhealthy(url: String, status: String)
    /// Neither a token nor an email and password were given.
    case missingCredentials
    /// Directus refused the admin email/password or token (401).
    case credentialsRejected
    /// The account is not an administrator (403 on an admin-only route).
    case notAdmin(path: String)
    /// A Directus version Postern does not support.
    case unsupportedVersion(version: String, reason: String)
    /// A step failed with an answer the bootstrap cannot handle.
    case step(name: String, reason: String)

    /// The one-line reason, without secrets.
    package var description: String {
        switch self {
        case .unreachable(let url, let reason):
            return "Directus is not reachable at \(url) (\(reason)); is it running and is POSTERN_DIRECTUS_URL right?"
        case .unhealthy(let url, let status):
            return "Directus at \(url) is not healthy (/server/health: \(status))"
        case .missingCredentials:
            return "no admin credentials: set POSTERN_DIRECTUS_ADMIN_EMAIL and POSTERN_DIRECTUS_ADMIN_PASSWORD, or POSTERN_DIRECTUS_ADMIN_TOKEN"
        case .credentialsRejected:
            return "admin credentials rejected by Directus (401); note that ADMIN_EMAIL/ADMIN_PASSWORD/ADMIN_TOKEN "
                + "only apply when Directus is first installed"
        case .notAdmin(let path):
            return "the Directus account is not an administrator (403 on \(path))"
        case .unsupportedVersion(let version, let reason):
            return "Directus \(version) is not supported: \(reason)"
        case .step(let name, let reason):
            return "\(name) failed: \(reason)"
        }
    }
}

/// What one step of the bootstrap did.
enum BootstrapOutcome: String, Sendable, Equatable {
    /// Already as wanted: nothing sent.
    case unchanged
    /// Created.
    case created
    /// Changed to what is wanted.
    case updated
    /// Removed (something the current mode must not leave in place).
    case removed
}

/// The result of a successful bootstrap.
package struct BootstrapReport: Sendable, Equatable {
    /// One step and its outcome.
    struct Step: Sendable, Equatable {
        /// What the step is about, e.g. `collection posts`.
        var name: String
        /// What it did.
        var outcome: BootstrapOutcome
    }

    /// The Directus version (`/server/info` `data.version`).
    var version: String
    /// The id of the App User role.
    var roleID: String
    /// The id of the App User policy.
    var policyID: String
    /// The id of the Public policy used for registration.
    var publicPolicyID: String
    /// Every step, in order.
    var steps: [Step]

    /// True when any step created or updated something.
    var changed: Bool { steps.contains { $0.outcome != .unchanged } }

    /// One line: what changed, or that nothing did.
    var summary: String {
        let created = steps.filter { $0.outcome == .created }.count
        let updated = steps.filter { $0.outcome == .updated }.count
        let removed = steps.filter { $0.outcome == .removed }.count
        if created + updated + removed == 0 { return "done: Directus \(version) already set up, nothing changed" }
        return "done: Directus \(version), \(created) created, \(updated) updated, "
            + (removed > 0 ? "\(removed) removed, " : "")
            + "\(steps.count - created - updated - removed) already in place (role \(roleID), policy \(policyID))"
    }
}
