import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A Directus that was never bootstrapped (docs/api.md, Upstream and edge rules): its 403 on a missing
/// collection is logged once with the hint "run `postern bootstrap`" and reported by `/readyz`; and the
/// bootstrap names a `posts` folder (no table) for what it is.
@Suite(.serialized) struct UnbootstrappedDirectusTests {
    static func freshOptions() -> DirectusStandIn.Options {
        var options = DirectusStandIn.Options()
        options.seedSchema = false
        return options
    }

    @Test func standInAnswers403ForAMissingCollectionEvenToTheAdmin() async throws {
        let standIn = DirectusStandIn(options: Self.freshOptions())
        let token = try #require(await BootstrapTests.adminToken(standIn))
        let r = standIn.handle(HTTPRequest(method: .get, target: "/items/posts", headers: ["Authorization": "Bearer \(token)"]))
        #expect(r.status == 403)
        let error = (try? JSONValue.parse(r.body))?["errors"]?.arrayValue?.first
        #expect(error?["extensions"]?["code"] == .string("FORBIDDEN"))
        #expect(error?["message"]?.stringValue?.contains("collection \"posts\" or it does not exist") == true)
    }

    @Test func missingCollectionIsLoggedOnceAndMakesReadyzUnready() async throws {
        let gw = try TestGateway(standInOptions: Self.freshOptions())
        defer { gw.stop() }
        #expect(try gw.client().request("GET", "/readyz").status == 200, "nothing known yet")
        // A fresh install has only the admin; it signs in through Postern like anyone.
        let token = try gw.login("admin@example.com", "admin-password")
        for _ in 0..<3 {
            let r = try gw.client().json("GET", "/api/v1/books", token: token)
            #expect(r.status == 403, "\(r.text)")
        }
        for port in [gw.port, gw.app.adminPort] {
            let ready = try RawHTTPClient(port: port).request("GET", "/readyz")
            #expect(ready.status == 503, "port \(port): \(ready.text)")
            #expect(ready.json?["code"]?.stringValue == "upstream_unavailable")
            #expect(ready.json?["error"]?.stringValue?.contains("directus not bootstrapped: collection posts missing") == true,
                    "\(ready.text)")
        }
        // One hint, however many lists hit the missing collection (readyz's own 503s are logged apart).
        let hints = gw.logLines.all.filter { $0.contains("run `postern bootstrap`") && $0.contains("Directus answers 403") }
        #expect(hints.count == 1, "\(hints)")
        #expect(hints.first?.contains(#""level":"error""#) == true)

        // Once Directus is bootstrapped, a successful list clears it.
        _ = try await BootstrapTests.bootstrap(gw.standIn).run()
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).status == 200)
        #expect(try gw.client().request("GET", "/readyz").status == 200)
    }

    @Test func theReportExpiresSoThatAnInstanceComesBack() {
        let clock = TestClock()
        let watch = SchemaWatch(log: nil, memory: 60, clock: { clock.seconds })
        watch.listForbidden(collection: "posts")
        #expect(watch.problem == "directus not bootstrapped: collection posts missing (run `postern bootstrap`)")
        clock.advance(59)
        #expect(watch.problem != nil)
        clock.advance(2)
        #expect(watch.problem == nil)
        watch.listForbidden(collection: "posts")
        watch.succeeded(collection: "posts")
        #expect(watch.problem == nil)
    }

    @Test func bootstrapNamesAPostsFolderInsteadOfBlamingAdminRights() async throws {
        let standIn = BootstrapTests.fresh()
        let token = try #require(await BootstrapTests.adminToken(standIn))
        let folder = standIn.handle(HTTPRequest(method: .post, target: "/collections",
                                                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                                                body: Data(#"{"collection":"posts","meta":{"icon":"folder"},"schema":null}"#.utf8)))
        #expect(folder.status == 200)
        let fields = standIn.handle(HTTPRequest(method: .get, target: "/fields/posts", headers: ["Authorization": "Bearer \(token)"]))
        #expect(fields.status == 403, "Directus answers 403 on the fields of a folder")
        standIn.clearReceived()
        do {
            _ = try await BootstrapTests.bootstrap(standIn).run()
            Issue.record("the bootstrap accepted a folder")
        } catch {
            #expect(error.description.contains("folder"), "\(error.description)")
            #expect(error.description.contains("no table"), "\(error.description)")
            #expect(!error.description.contains("administrator"), "\(error.description)")
        }
        #expect(BootstrapTests.writes(standIn).isEmpty)
    }
}
