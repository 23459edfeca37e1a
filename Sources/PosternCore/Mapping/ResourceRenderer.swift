import Foundation

/// Renders Directus item JSON as resource bodies.
///
/// The one seam between Directus answers and client bodies: `JSONValueRenderer` implements it on
/// `JSONValue`; a single-pass byte transcoder may replace it without touching anything else.
public protocol ResourceRenderer: Sendable {
    /// `{"<name>":[…],"total":N}` from a Directus list answer `{"data":[…],"meta":{"filter_count":N}}`.
    func renderList(directusBody: Data) throws(GatewayError) -> Data
    /// `{"<name>":[item],"total":1}` from `{"data":{…}}`.
    func renderItem(directusBody: Data) throws(GatewayError) -> Data
}
