import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

@Suite struct RenderingTests {
    private func renderList(_ resource: String, _ body: String) throws -> String {
        String(decoding: try shippedMapper(resource).renderer.renderList(directusBody: Data(body.utf8)), as: UTF8.self)
    }

    private func renderItem(_ resource: String, _ body: String) throws -> String {
        String(decoding: try shippedMapper(resource).renderer.renderItem(directusBody: Data(body.utf8)), as: UTF8.self)
    }

    @Test func rendersListInConfigOrderWithStringIDs() throws {
        let body = #"""
        {"data":[{"content":"B","extra":1,"user_created":"u1","title":"A","id":12},
                 {"id":"13","title":null,"content":null},
                 {"id":14}],
         "meta":{"filter_count":7}}
        """#
        #expect(try renderList("books", body) ==
            #"{"books":[{"id":"12","title":"A","subtitle":"B","user":"u1"},{"id":"13","title":""},{"id":"14","title":""}],"total":7}"#)
    }

    @Test func rendersPosts() throws {
        // `user_created` is also read below (the author), so Directus answers an object and the raw key is its id.
        let body = #"{"data":[{"id":1,"title":"T","content":"C","user_created":{"id":"u","first_name":"Ada"},"date_created":"2025-05-01T10:20:30.000Z"}]}"#
        #expect(try renderList("posts", body) ==
            #"{"posts":[{"id":"1","title":"T","content":"C","user_created":"u","date_created":"2025-05-01T10:20:30.000Z","author":{"id":"u","name":"Ada"}}],"total":1}"#)
    }

    @Test func keepsOptionalValueTypesAndRendersRequiredFieldsAsStrings() throws {
        let body = #"{"data":[{"id":"7","title":42,"content":true,"user_created":{"id":"u"}}],"meta":{"filter_count":1}}"#
        #expect(try renderList("books", body) ==
            #"{"books":[{"id":"7","title":"42","subtitle":true,"user":{"id":"u"}}],"total":1}"#)
        #expect(throws: GatewayError.self) { try renderList("books", #"{"data":[{"id":1,"title":{"x":1}}]}"#) }
    }

    @Test func escapesStrings() throws {
        let body = #"{"data":[{"id":1,"title":"say \"hi\"\n\u0001é"}]}"#
        let out = try renderList("books", body)
        let parsed = try JSONValue.parse(out)
        #expect(parsed["books"]?.arrayValue?.first?["title"] == .string("say \"hi\"\n\u{1}é"))
    }

    @Test func rendersEmptyListAsArray() throws {
        #expect(try renderList("books", #"{"data":[],"meta":{"filter_count":0}}"#) == #"{"books":[],"total":0}"#)
        #expect(try renderList("posts", #"{"data":[]}"#) == #"{"posts":[],"total":0}"#)
    }

    @Test(arguments: [
        (#"{"data":[{"id":1}],"meta":{"filter_count":9,"total_count":40}}"#, 9),
        (#"{"meta":{"total_count":40},"data":[{"id":1}]}"#, 40),
        (#"{"data":[{"id":1},{"id":2}]}"#, 2),
        (#"{"data":[{"id":1},{"id":2}],"meta":{}}"#, 2),
        (#"{"data":[{"id":1}],"meta":{"filter_count":"5"}}"#, 5),
        (#"{"data":[{"id":1}],"meta":{"filter_count":-3,"total_count":8}}"#, 8),
    ])
    func takesTotalFromMeta(body: String, total: Int64) throws {
        #expect(try JSONValue.parse(renderList("books", body))["total"] == .int(total))
    }

    @Test func rendersItem() throws {
        #expect(try renderItem("books", #"{"data":{"title":"x","id":3,"content":null}}"#) ==
            #"{"books":[{"id":"3","title":"x"}],"total":1}"#)
        #expect(try renderItem("posts", #"{"data":{"id":"a-b","date_created":null}}"#) ==
            #"{"posts":[{"id":"a-b","title":""}],"total":1}"#)
    }

    @Test(arguments: [
        "", "not json", "<html></html>", "[]", "null", "{}", #"{"data":null}"#, #"{"data":{}}"#, #"{"items":[]}"#,
        #"{"data":[1]}"#, #"{"data":[null]}"#, #"{"data":[[]]}"#, #"{"data":[{"title":"x"}]}"#,
        #"{"data":[{"id":null,"title":"x"}]}"#, #"{"data":[{"id":true}]}"#, #"{"data":[{"id":""}]}"#,
        #"{"data":[{"id":1.5}]}"#, #"{"data":[{"id":{"v":1}}]}"#, #"{"data":[{"id":1},{"title":"no id"}]}"#,
    ])
    func rejectsGarbageList(body: String) {
        let error = gatewayError { _ = try shippedMapper("books").renderer.renderList(directusBody: Data(body.utf8)) }
        #expect(error?.status == 502)
        #expect(error?.code == .upstreamError)
    }

    @Test(arguments: [
        "", "<html>", "[]", "{}", #"{"data":null}"#, #"{"data":[]}"#, #"{"data":[{"id":1}]}"#, #"{"data":"x"}"#,
        #"{"data":{"title":"x"}}"#, #"{"data":{"id":null}}"#, #"{"data":{"id":false}}"#,
    ])
    func rejectsGarbageItem(body: String) {
        let error = gatewayError { _ = try shippedMapper("posts").renderer.renderItem(directusBody: Data(body.utf8)) }
        #expect(error?.status == 502)
        #expect(error?.code == .upstreamError)
    }
}

@Suite struct WritePayloadTests {
    private func write(_ resource: String, _ body: String, _ mode: ResourceMapper.WriteMode) throws(GatewayError)
        -> (id: String?, payload: String) {
        let result = try shippedMapper(resource).writePayload(Data(body.utf8), mode: mode)
        return (result.id, result.payload.text)
    }

    @Test(arguments: [
        ("books", #"{"subtitle":"S","title":"T"}"#, ResourceMapper.WriteMode.create, nil, #"{"title":"T","content":"S"}"#),
        ("books", #"{"title":"T","subtitle":null}"#, .create, nil, #"{"title":"T","content":null}"#),
        ("books", #"{"title":"T"}"#, .create, nil, #"{"title":"T"}"#),
        ("books", #"{"subtitle":"x"}"#, .update, nil, #"{"content":"x"}"#),
        ("books", #"{"title":""}"#, .update, nil, #"{"title":""}"#),
        ("books", #"{"id":"12","title":"T"}"#, .createOrUpdate, "12", #"{"title":"T"}"#),
        ("books", #"{"subtitle":"S","id":12}"#, .createOrUpdate, "12", #"{"content":"S"}"#),
        // A JSON number without a fraction is an integer (JSON Schema, and so the OpenAPI document, says so).
        ("books", #"{"subtitle":"S","id":12.0}"#, .createOrUpdate, "12", #"{"content":"S"}"#),
        ("books", #"{"id":null,"title":"T"}"#, .createOrUpdate, nil, #"{"title":"T"}"#),
        ("books", #"{"title":"T"}"#, .createOrUpdate, nil, #"{"title":"T"}"#),
        ("posts", #"{"content":"C","title":"T"}"#, .create, nil, #"{"title":"T","content":"C"}"#),
        ("posts", #"{"content":null}"#, .update, nil, #"{"content":null}"#),
    ] as [(String, String, ResourceMapper.WriteMode, String?, String)])
    func mapsWritableFields(resource: String, body: String, mode: ResourceMapper.WriteMode,
                            id: String?, payload: String) throws {
        let result = try write(resource, body, mode)
        #expect(result.id == id)
        #expect(result.payload == payload)
    }

    @Test(arguments: [
        ("books", "nope", ResourceMapper.WriteMode.create, "request body is not valid JSON"),
        ("books", "", .update, "request body is not valid JSON"),
        ("books", #"{"title":"T""#, .create, "request body is not valid JSON"),
        ("books", "[1]", .create, "request body must be a JSON object"),
        ("books", #""x""#, .createOrUpdate, "request body must be a JSON object"),
        ("books", #"{"title":"T","x":1}"#, .create, #"unknown field "x""#),
        ("books", #"{"content":"c","title":"T"}"#, .create, #"unknown field "content""#),
        ("books", #"{"user":"u","title":"T"}"#, .create, #"field "user" is read-only"#),
        ("books", #"{"user":"u"}"#, .update, #"field "user" is read-only"#),
        ("books", #"{"id":"1","title":"T"}"#, .create, #"field "id" is read-only"#),
        ("books", #"{"id":"1","title":"T"}"#, .update, #"field "id" is read-only"#),
        ("books", #"{"id":"abc","title":"T"}"#, .createOrUpdate, #"field "id" is not a valid id"#),
        ("books", #"{"id":"-1","title":"T"}"#, .createOrUpdate, #"field "id" is not a valid id"#),
        ("books", #"{"id":-1,"title":"T"}"#, .createOrUpdate, #"field "id" is not a valid id"#),
        ("books", #"{"id":1.5,"title":"T"}"#, .createOrUpdate, #"field "id" is not a valid id"#),
        ("books", #"{"id":true,"title":"T"}"#, .createOrUpdate, #"field "id" is not a valid id"#),
        ("books", #"{"id":"","title":"T"}"#, .createOrUpdate, #"field "id" is not a valid id"#),
        ("books", #"{"title":5}"#, .create, #"field "title" must be a string or null, not a number"#),
        ("books", #"{"title":"T","subtitle":["x"]}"#, .create, #"field "subtitle" must be a string or null, not a array"#),
        ("books", #"{"subtitle":{}}"#, .update, #"field "subtitle" must be a string or null, not a object"#),
        ("books", #"{"title":null}"#, .update, #"field "title" is required"#),
        ("books", #"{"title":null}"#, .create, #"field "title" is required"#),
        ("books", #"{"subtitle":"S"}"#, .create, #"field "title" is required"#),
        ("books", #"{"subtitle":"S"}"#, .createOrUpdate, #"field "title" is required"#),
        ("books", "{}", .create, #"field "title" is required"#),
        ("books", "{}", .update, "no writable field given"),
        ("books", #"{"id":"5"}"#, .createOrUpdate, "no writable field given"),
        ("books", #"{"title":"a","title":"b"}"#, .update, #"field "title" is given twice"#),
        ("posts", #"{"user_created":"u","title":"T"}"#, .create, #"field "user_created" is read-only"#),
        ("posts", #"{"date_created":"2020-01-01"}"#, .update, #"field "date_created" is read-only"#),
        ("posts", #"{"subtitle":"S"}"#, .update, #"unknown field "subtitle""#),
    ] as [(String, String, ResourceMapper.WriteMode, String)])
    func rejectsBadBodies(resource: String, body: String, mode: ResourceMapper.WriteMode, message: String) {
        let error = gatewayError { _ = try write(resource, body, mode) }
        #expect(error?.status == 400)
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == message)
    }
}

@Suite struct IDAndPathTests {
    private func mapper(_ idType: IDType) -> ResourceMapper {
        var config = ResourceConfig.shipped[1]
        config.idType = idType
        return ResourceMapper(config)
    }

    @Test(arguments: [
        (IDType.integer, "1", true), (.integer, "12", true), (.integer, "0", true), (.integer, "999999999999999999", true),
        (.integer, "", false), (.integer, "012", false), (.integer, "00", false), (.integer, "-1", false),
        (.integer, "+1", false), (.integer, "1.0", false), (.integer, "1e3", false), (.integer, "12a", false),
        (.integer, " 12", false), (.integer, "1234567890123456789", false), (.integer, "١٢", false),
        (.integer, "../x", false),
        (.uuid, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", true), (.uuid, "3F2504E0-4F89-11D3-9A0C-0305E82C3301", true),
        (.uuid, "3f2504e04f8911d39a0c0305e82c3301", false), (.uuid, "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}", false),
        (.uuid, "3f2504e0-4f89-11d3-9a0c-0305e82c330", false), (.uuid, "3f2504e0-4f89-11d3-9a0c-0305e82c33011", false),
        (.uuid, "3f2504e0-4f89-11d3-9a0c-0305e82c330g", false), (.uuid, "3f2504e0-4f8911d3-9a0c--0305e82c3301", false),
        (.uuid, "", false), (.uuid, "12", false),
        (.string, "hello", true), (.string, "a.b", true), (.string, "ü-ß", true), (.string, "with space", true),
        (.string, "%2F", true), (.string, String(repeating: "x", count: 255), true),
        (.string, "", false), (.string, "a/b", false), (.string, "/", false), (.string, ".", false), (.string, "..", false),
        (.string, "a\u{0}b", false), (.string, "a\nb", false), (.string, "\u{7F}", false), (.string, "\u{85}", false),
        (.string, String(repeating: "x", count: 256), false),
    ] as [(IDType, String, Bool)])
    func validatesIDs(idType: IDType, raw: String, valid: Bool) {
        #expect(mapper(idType).isValidID(raw) == valid)
    }

    @Test(arguments: [
        ("12", "/items/posts/12"), ("../x", "/items/posts/%2E%2E%2Fx"), ("..", "/items/posts/%2E%2E"),
        ("%2F", "/items/posts/%252F"), ("a b", "/items/posts/a%20b"), ("a?b#c&d", "/items/posts/a%3Fb%23c%26d"),
        ("ü", "/items/posts/%C3%BC"), ("a-b_c~d", "/items/posts/a-b_c~d"),
    ])
    func encodesItemPaths(id: String, path: String) {
        #expect(mapper(.string).upstreamItemPath(id: id) == path)
    }

    @Test func encodesCollectionPath() {
        #expect(shippedMapper("books").upstreamCollectionPath == "/items/posts")
        let odd = ResourceMapper(ResourceConfig(name: "x", collection: "my posts/..", fields: [("id", "id")]))
        #expect(odd.upstreamCollectionPath == "/items/my%20posts%2F%2E%2E")
        #expect(odd.upstreamItemPath(id: "1") == "/items/my%20posts%2F%2E%2E/1")
    }
}

@Suite struct MapperLookupTests {
    @Test(arguments: [
        (#"{"data":{"id":1,"user_created":"u-1"}}"#, "u-1"), (#"{"data":{"user_created":null}}"#, nil),
        (#"{"data":{}}"#, nil), (#"{"data":{"user_created":7}}"#, "7"),
        (#"{"data":{"user_created":{"id":"u-2","email":"x@y.com"}}}"#, "u-2"),
        (#"{"data":{"user_created":{"id":null}}}"#, nil),
    ] as [(String, String?)])
    func readsOwner(body: String, owner: String?) throws {
        #expect(try shippedMapper("books").owner(ofDirectusItem: .data(Data(body.utf8))) == owner)
    }

    @Test(arguments: ["x", "", #"{"data":[]}"#, #"{"data":null}"#, #"{"data":{"user_created":true}}"#,
                      #"{"data":{"user_created":[1]}}"#])
    func rejectsOwnerGarbage(body: String) {
        let error = gatewayError { _ = try shippedMapper("posts").owner(ofDirectusItem: .data(Data(body.utf8))) }
        #expect(error?.status == 502)
    }

    @Test func noOwnerFieldMeansNoOwner() throws {
        var config = ResourceConfig.shipped[0]
        config.owner = nil
        #expect(try ResourceMapper(config).owner(ofDirectusItem: .data(Data(#"{"data":{"user_created":"u"}}"#.utf8))) == nil)
    }

    @Test(arguments: [
        ("books", "content", "subtitle"), ("books", "user_created", "user"), ("books", "id", "id"),
        ("books", "title", "title"), ("books", "date_created", nil), ("books", "subtitle", nil),
        ("posts", "content", "content"), ("posts", "date_created", "date_created"),
    ] as [(String, String, String?)])
    func mapsDirectusFieldNames(resource: String, directus: String, expected: String?) {
        #expect(shippedMapper(resource).resourceFieldName(forDirectus: directus) == expected)
    }

    @Test func listsDirectusFields() {
        #expect(shippedMapper("books").directusFieldList == "id,title,content,user_created")
        #expect(shippedMapper("posts").directusFieldList == "id,title,content,user_created.id,date_created,user_created.first_name")
        #expect(shippedMapper("posts").readQuery.map { "\($0.0)=\($0.1)" } == [
            "fields=id,title,content,user_created.id,date_created,user_created.first_name,comments.id,comments.body,comments.user_created.first_name",
            "deep[comments][_limit]=5", "deep[comments][_sort]=-date_created",
        ])
        var config = ResourceConfig(name: "notes", collection: "notes", fields: [("id", "id"), ("text", "body")])
        config.owner = "user_created"
        #expect(ResourceMapper(config).directusFieldList == "id,body,user_created")
    }

    /// The handlers render through `mapper.renderer` and nothing else: a replacement renderer's bytes are
    /// what the client gets, for a list (after a Directus call) and for an item the policy stage already read.
    @Test func rendererIsReplaceable() async throws {
        var mapper = shippedMapper("books")
        let replacement = JSONTranscoder(table: mapper.table, name: "replaced")
        mapper.renderer = replacement
        let listBody = Data(#"{"data":[],"meta":{"filter_count":0}}"#.utf8)
        let itemBody = Data(#"{"data":{"id":1}}"#.utf8)
        let directus = DirectusClient(transport: InProcessTransport { _ in
            HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: listBody)
        }, timeout: 3)
        let sessions = SessionManager(store: MemorySessionStore(), directus: directus, idleTTL: 60, maxTTL: 600)
        let handlers = ResourceHandlers(mapper: mapper, items: DirectusItems(directus: directus, sessions: sessions),
                                        cache: ResourceCache(mapper.resource, cache: MicroCache(maxEntries: 1), invalidations: LocalInvalidationBus()))
        let list = try await Endpoint(operation: .read(handlers.listOperation))
            .respond(to: HTTPRequest(method: .get, target: "/api/v1/books", remoteAddress: "10.0.0.1"),
                     context: RequestContext(requestID: "r", clientIP: "10.0.0.1"))
        #expect(list.status == 200)
        #expect(list.body == (try replacement.renderList(directusBody: listBody)))
        #expect(list.body != (try shippedMapper("books").renderer.renderList(directusBody: listBody)))
        let context = RequestContext(requestID: "r", clientIP: "10.0.0.1")
        context.itemID = "1"
        context.authorization = .ownerVerified(OwnedItem(directusBody: .data(itemBody), owner: "u"))
        let item = try await Endpoint(operation: .read(handlers.readOperation))
            .respond(to: HTTPRequest(method: .get, target: "/api/v1/books/1", remoteAddress: "10.0.0.1"), context: context)
        #expect(item.body == (try replacement.renderItem(directusBody: itemBody)))
        #expect(item.body != (try shippedMapper("books").renderer.renderItem(directusBody: itemBody)))
    }
}
