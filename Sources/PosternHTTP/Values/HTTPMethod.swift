import PosternIO

/// An HTTP request method.
package enum HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    case get, head, post, put, patch, delete, options
    /// Any other method, by its name.
    case other(String)

    /// Builds a method from its wire name.
    package init(_ name: String) {
        switch name.uppercased() {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "PATCH": self = .patch
        case "DELETE": self = .delete
        case "OPTIONS": self = .options
        default: self = .other(name.uppercased())
        }
    }

    /// The wire name.
    package var description: String {
        switch self {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        case .patch: return "PATCH"
        case .delete: return "DELETE"
        case .options: return "OPTIONS"
        case .other(let name): return name
        }
    }
}
