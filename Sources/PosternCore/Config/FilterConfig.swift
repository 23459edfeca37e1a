/// One declared filter of a resource (`resources[i].filters.<name>`, docs/api.md, Declared filters): a list query
/// parameter that becomes a Directus filter on one field.
struct FilterConfig: Sendable, Equatable {
    /// The comparison a filter makes.
    enum Operation: String, Sendable, Equatable, CaseIterable {
        case eq, neq, gt, gte, lt, lte, `in`, contains, null

        /// Whether the operation orders values (`gt`, `gte`, `lt`, `lte`).
        var orders: Bool { self == .gt || self == .gte || self == .lt || self == .lte }
    }

    /// The type of a filter's value.
    enum ValueType: String, Sendable, Equatable, CaseIterable {
        case string, integer, uuid, datetime, boolean
    }

    /// A flag's fixed value (the file's `value`).
    enum Fixed: Sendable, Equatable {
        /// A string (also `$CURRENT_USER`, the caller's Directus user id).
        case string(String)
        /// An integer.
        case integer(Int64)
        /// `true` or `false`.
        case boolean(Bool)
        /// The values of an `in` flag.
        case list([Fixed])
    }

    /// The query parameter's name.
    var name: String
    /// The Directus field it filters on (a plain field of the collection, no relation path).
    var field: String
    /// The comparison.
    var op: Operation
    /// The type of the value (`string` when the file says nothing).
    var type: ValueType
    /// The fixed value of a flag (`?name=true` applies it, `false` does not); nil for a filter whose value the
    /// client gives.
    var value: Fixed?

    /// A filter of `name` on `field`.
    init(name: String, field: String, op: Operation, type: ValueType = .string, value: Fixed? = nil) {
        self.name = name
        self.field = field
        self.op = op
        self.type = type
        self.value = value
    }

    /// The dynamic value of a flag that narrows a list to the caller's own items.
    static let currentUser = "$CURRENT_USER"

    /// Whether the filter needs the caller's identity (a flag whose value is `$CURRENT_USER`).
    var needsUser: Bool {
        if case .string(Self.currentUser) = value { return true }
        return false
    }
}
