import DirectusStandIn
import Foundation
import PosternTesting
import Testing
import PosternIO
import PosternHTTP

/// The filters Postern's declared filters send (`filter[_and][i][field][op]`), as the stand-in applies them through
/// its HTTP, the way Directus does (reference §5a): ANDed items, CSV `_in`, `_icontains`, `_null`/`_nnull`, and
/// timestamps compared as instants whatever the RFC 3339 form of the operand.
@Suite struct StandInFilterTests {
    /// The ids of `/items/<collection>?<query>` as x@y.com, through a real socket.
    static func ids(_ collection: String, _ query: String) throws -> [Int64] {
        let standIn = DirectusStandIn()
        let group = EventLoopGroup(count: 1, name: "standin-filters")
        let server = HTTPServer(group: group, limits: standIn.serverLimits) { standIn.handle($0) }
        try server.start(host: "127.0.0.1", port: 0)
        let client = RawHTTPClient(port: server.port)
        defer {
            client.close()
            server.shutdown(grace: 0.5)
            group.shutdown()
        }
        let login = try client.json("POST", "/auth/login", #"{"email":"x@y.com","password":"123456"}"#)
        let token = login.json?["data"]?["access_token"]?.stringValue
        let answer = try client.json("GET", "/items/\(collection)?fields=id&\(query)", token: token)
        #expect(answer.status == 200, "\(query): \(answer.text)")
        return answer.json?["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
    }

    @Test(arguments: [
        ("posts", "filter[_and][0][date_created][_gt]=2025-05-03T12:30:45.500Z", [Int64(4), 5]),
        ("posts", "filter[_and][0][date_created][_gt]=2025-05-03T14:30:45.5%2B02:00", [4, 5]),
        ("posts", "filter[_and][0][date_created][_gte]=2025-05-03T14:30:45.5%2B02:00", [3, 4, 5]),
        ("posts", "filter[_and][0][date_created][_lt]=2025-05-02T08:00:00Z", [1]),
        ("posts", "filter[_and][0][id][_gt]=1&filter[_and][1][id][_lt]=5&filter[_and][2][title][_icontains]=o", [2, 4]),
        ("posts", "filter[_and][0][id][_in]=5,1,7", [1, 5]),
        ("posts", "filter[_and][0][content][_null]=true", [3]),
        ("posts", "filter[_and][0][content][_nnull]=true", [1, 2, 4, 5]),
        ("posts", "filter[_and][0][title][_neq]=Second%20thoughts", [1, 3, 4, 5]),
        ("comments", "filter[_and][0][post][_eq]=1", [1, 2, 3]),
        ("comments", "filter[_and][0][post][_in]=2,4", [4, 5]),
        ("comments", "filter[_and][0][date_created][_gt]=2025-05-02T11:00:00%2B02:00", [4, 5]),
    ])
    func filtersKeepWhatDirectusKeeps(collection: String, query: String, expected: [Int64]) throws {
        #expect(try Self.ids(collection, query) == expected, "\(collection)?\(query)")
    }
}
