import FoundationEssentials

/// Renders Directus item JSON as resource bodies.
///
/// The one seam between Directus answers and client bodies: `JSONTranscoder` (single pass over the
/// bytes, what the gateway uses) and `JSONValueRenderer` (through a `JSONValue` tree, the reference
/// the transcoder is tested against) implement it.
public protocol ResourceRenderer: Sendable {
    /// `{"<name>":[…],"total":N}` from a Directus list answer `{"data":[…],"meta":{"filter_count":N}}`.
    func renderList(directusBody: Data) throws(GatewayError) -> Data
    /// `{"<name>":[item],"total":1}` from `{"data":{…}}`.
    func renderItem(directusBody: Data) throws(GatewayError) -> Data
}
