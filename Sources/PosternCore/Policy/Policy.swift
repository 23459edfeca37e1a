import FoundationEssentials

/// The decision of a rule for an identity, before any item is looked at.
enum PolicyDecision: Equatable, Sendable {
    /// Go ahead.
    case allow
    /// Refused: 403.
    case deny
    /// No identity where one is needed: 401.
    case unauthenticated
    /// Allowed only if the caller owns the item.
    case allowIfOwner
}

/// Pure rule evaluation (table-tested).
enum Policy {
    /// What `rule` decides for `identity`.
    static func decide(_ rule: PermissionRule, identity: Session?) -> PolicyDecision {
        switch rule {
        case .public: return .allow
        case .nobody: return .deny
        case .authenticated: return identity == nil ? .unauthenticated : .allow
        case .owner: return identity == nil ? .unauthenticated : .allowIfOwner
        case .role(let id):
            guard let identity else { return .unauthenticated }
            return identity.role == id ? .allow : .deny
        }
    }
}
