import FoundationEssentials
import PosternHTTP

/// What the policy stage decided for one request; handlers act on it and never evaluate rules.
package enum Authorization: Sendable {
    /// The rule lets the caller act without looking at owners (public, authenticated, role, or an
    /// owner rule on create, where the creator owns what it creates).
    case unrestricted
    /// An owner rule on a list: only the caller's own items may be shown.
    case ownItemsOnly
    /// An owner rule on one item: the caller owns it, as the item read with the caller's token shows.
    case ownerVerified(OwnedItem)
}

/// An item the policy stage read and found owned by the caller.
package struct OwnedItem: Sendable {
    /// The Directus answer `{"data":{…}}`, as received (the read handler renders it without a second call).
    let directusBody: HTTPBody
    /// The owner's user id, parsed once from that answer.
    let owner: String
}
