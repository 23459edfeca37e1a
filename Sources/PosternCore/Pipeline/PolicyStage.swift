import FoundationEssentials

/// The one place permission rules are evaluated (docs/api.md, Resources): no identity → 401, denied → 403,
/// not visible → 404. Runs before anything is written upstream; handlers act on its `Authorization`.
struct PolicyStage: Sendable {
    let action: ResourceAction
    let rule: PermissionRule
    let mapper: ResourceMapper
    let items: DirectusItems<SessionManager>

    /// Creates the stage for one route.
    init(action: ResourceAction, rule: PermissionRule, mapper: ResourceMapper, items: DirectusItems<SessionManager>) {
        self.action = action
        self.rule = rule
        self.mapper = mapper
        self.items = items
    }

    /// The decision that needs no upstream call: throws 403 or 401, sets `.ownItemsOnly` on an owner list,
    /// and says whether the caller's ownership of the item must still be read upstream (`verifyOwner`).
    func decide(_ context: RequestContext) throws(GatewayError) -> Bool {
        switch Policy.decide(rule, identity: context.session) {
        case .allow:
            return false
        case .deny:
            throw .forbidden("you may not \(action.rawValue) \(mapper.resource.name)")
        case .unauthenticated:
            throw .unauthorized("sign in first")
        case .allowIfOwner:
            guard context.session != nil else { throw .unauthorized("sign in first") }
            if action == .list {
                context.authorization = .ownItemsOnly
                return false
            }
            return context.itemID != nil  // create: the creator owns what it creates
        }
    }

    /// The caller must own the item: read its owner with the caller's own token first, so that a missing
    /// (or unreadable) item is 404 and someone else's is 403, and nothing is written when denied.
    func verifyOwner(_ context: RequestContext) async throws(GatewayError) {
        guard let session = context.session else { throw .unauthorized("sign in first") }
        guard let id = context.itemID else { return }
        let body = try await items.readItem(id: id, mapper: mapper, session: session, call: context.call)
        let owner = try mapper.owner(ofDirectusItem: body)
        guard let owner, Crypto.constantTimeEquals(Array(owner.utf8), Array(session.userID.utf8)) else {
            throw .forbidden("only the creator may \(action.rawValue) this item")
        }
        context.authorization = .ownerVerified(OwnedItem(directusBody: body, owner: owner))
    }
}
