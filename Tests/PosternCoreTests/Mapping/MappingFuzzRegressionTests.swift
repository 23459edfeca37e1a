import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// Inputs that made the `json_roundtrip` fuzz target fail, as the mapper meets them in a Directus answer (the JSON
/// values themselves: FuzzRegressionTests in PosternHTTPTests).
@Suite struct MappingFuzzRegressionTests {
    /// A Directus answer carrying an out-of-range number is a 502, not an item with `null` in it.
    @Test func outOfRangeNumberInDirectusAnswerIs502() throws {
        let mapper = ResourceMapper(ResourceConfig.shipped[0])
        let body = Data(#"{"data":[{"id":1,"title":"t","content":1e999}]}"#.utf8)
        #expect(throws: GatewayError.self) { try mapper.renderer.renderList(directusBody: body) }
        do {
            _ = try mapper.renderer.renderList(directusBody: body)
        } catch {
            #expect(error.status == 502)
        }
    }
}
