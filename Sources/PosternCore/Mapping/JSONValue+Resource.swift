import FoundationEssentials
import PosternHTTP

/// How a Directus value reads in a resource body (docs/api.md, Resources): the rules `JSONTranscoder` applies to
/// the values it cannot copy as they are, and `ResourceMapper` to an item's owner.
extension JSONValue {
    /// A Directus answer body parsed; anything but JSON is a 502.
    static func parseAnswer(_ body: Data) throws(GatewayError) -> JSONValue {
        do {
            return try JSONValue.parse(body)
        } catch {
            throw .upstreamError("answer is not JSON: \(error.description)")
        }
    }

    /// The value as a key clients see: integers in decimal, non-empty strings as they are; nil for anything else.
    var idString: String? {
        switch self {
        case .string(let s) where !s.isEmpty: return s
        case .int, .double: return intValue.map { String($0) }
        default: return nil
        }
    }

    /// The value of a required field as a string: strings as they are, numbers and booleans as their text; nil for
    /// anything else.
    var requiredString: String? {
        switch self {
        case .string(let s): return s
        case .int, .double, .bool: return text
        default: return nil
        }
    }
}
