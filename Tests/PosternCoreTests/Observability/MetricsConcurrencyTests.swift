import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting

@Suite(.serialized) struct MetricsConcurrencyTests {
    /// Concurrent requests on a two-worker gateway, alternating between two series on every connection (so
    /// each loop's shard keeps switching series), are all counted: the scrape's sums are exact.
    @Test func concurrentRequestsOnTwoWorkersAreCountedExactly() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        let clients = 8
        let rounds = 5
        let statuses = gw.concurrently(clients) { client in
            var last: RawHTTPClient.Response?
            for round in 0..<rounds {
                let path = round % 2 == 0 ? "/api/v1/books" : "/api/v1/books/99999"
                let response = try client.json("GET", path, token: token)
                guard response.status == (round % 2 == 0 ? 200 : 404) else { return response }
                last = response
            }
            return last!  // rounds > 0: the loop ran and set it
        }
        #expect(statuses == Array(repeating: 200, count: clients))  // every client got every expected status (the last is a list)
        let text = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        let ok = clients * ((rounds + 1) / 2)
        let missing = clients * (rounds / 2)
        #expect(text.contains(#"postern_requests_total{route="/api/v1/books",method="GET",status="200"} \#(ok)"#))
        #expect(text.contains(#"postern_requests_total{route="/api/v1/books/{id}",method="GET",status="404"} \#(missing)"#))
        #expect(text.contains(#"postern_request_duration_seconds_count{route="/api/v1/books"} \#(ok)"#))
        #expect(text.contains(#"postern_request_duration_seconds_bucket{route="/api/v1/books/{id}",le="+Inf"} \#(missing)"#))
        #expect(text.contains(#"postern_requests_total{route="/api/v1/user/login",method="POST",status="200"} 1"#))
    }
}
