import FoundationEssentials
import PosternHTTP
import PosternIO

/// One part of a composite, resolved once from config: the GET endpoint of its route and how the composite's
/// placeholder values make its request (docs/api.md, Composite endpoints).
struct CompositePart: Sendable {
    /// The part's key in the answer.
    let key: String
    /// A failed required part fails the composite.
    let required: Bool
    /// The route's GET endpoint (its stages after authentication, its mapping, its micro-cache).
    let endpoint: Endpoint
    /// The route's pattern (the part's context, its errors' log lines).
    let routePattern: String
    /// The route's resource, when it is a resource's.
    let resourceName: String?
    /// The part's path as written, its placeholders to be filled in.
    let pathTemplate: String
    /// The `{id}` segment of a read, as written (a placeholder or a literal, percent-encoded).
    let itemTemplate: String?
    /// The query as written, its values' placeholders to be filled in.
    let queryTemplate: [(String, String)]

    /// The part's request and context for a composite request with `context` and placeholder `values` (decoded):
    /// a GET with the query filled in, no header (the caller was authenticated once, for the composite), and a
    /// context of its own with the caller's session and the item id the route reads.
    func request(values: [(String, String)], parent context: RequestContext) -> (HTTPRequest, RequestContext) {
        let query = queryTemplate.map { ($0.0, CompositePart.fill($0.1, values, encode: false)) }
        let path = CompositePart.fill(pathTemplate, values, encode: true)
        let itemID = itemTemplate.map { template -> String in
            if let name = CompositeConfig.placeholder(in: Substring(template)),
               let value = values.first(where: { $0.0 == name })?.1 { return value }
            return QueryString.decode(template.replacingBytes(of: "+", with: "%2B"))
        }
        let partContext = RequestContext(partOf: context, routePattern: routePattern, resourceName: resourceName, itemID: itemID)
        return (HTTPRequest(method: .get, path: path, query: QueryString.build(query)), partContext)
    }

    /// `text` with each `{name}` of `values` replaced by its value (percent-encoded when `encode`: a path segment).
    static func fill(_ text: String, _ values: [(String, String)], encode: Bool) -> String {
        guard text.utf8.contains(UInt8(ascii: "{")) else { return text }
        var filled = text
        for (name, value) in values {
            filled = filled.replacingBytes(of: "{\(name)}", with: encode ? QueryString.encode(value, encodingDots: true) : value)
        }
        return filled
    }
}

extension Endpoint {
    /// The endpoint's answer to a composite's part (`CompositeResponder`): the same steps as any request, with the
    /// identity in `context` taken as authenticated (`prepare(_:_:identified:)`).
    func answerPart(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await complete(request, context, from: prepare(request, context, identified: true))
    }
}
