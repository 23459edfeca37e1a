import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The mapper of a shipped resource, by name.
func shippedMapper(_ name: String) -> ResourceMapper {
    // The shipped config declares exactly `books` and `posts`; tests only ask for those.
    ResourceMapper(ResourceConfig.shipped.first { $0.name == name }!)
}

/// The error `body` throws, or nil when it throws none.
func gatewayError(_ body: () throws -> Void) -> GatewayError? {
    do {
        try body()
        return nil
    } catch let error as GatewayError {
        return error
    } catch {
        Issue.record("not a GatewayError: \(error)")
        return nil
    }
}

@Suite struct QueryTranslationTests {
    /// Runs `query` (a raw client query string) through `resource`'s mapper, as `name=value` lines.
    private func translate(_ resource: String, _ query: String) throws -> [String] {
        try shippedMapper(resource).listQuery(QueryString.parse(query)).map { "\($0.0)=\($0.1)" }
    }

    @Test func defaultsWithNoQuery() throws {
        #expect(try translate("books", "") == [
            "fields=id,title,content,user_created", "limit=20", "offset=0", "meta=filter_count",
        ])
        #expect(try translate("posts", "") == [
            "fields=id,title,content,user_created.id,date_created,user_created.first_name", "limit=20", "offset=0",
            "meta=filter_count",
        ])
    }

    @Test(arguments: [
        ("books", "limit=5&offset=10", ["limit=5", "offset=10"]),
        ("books", "limit=1", ["limit=1", "offset=0"]),
        ("books", "limit=100", ["limit=100", "offset=0"]),
        ("books", "limit=010", ["limit=10", "offset=0"]),
        ("books", "limit=10&page=3", ["limit=10", "offset=20"]),
        ("books", "page=2", ["limit=20", "offset=20"]),
        ("books", "page=1", ["limit=20", "offset=0"]),
        ("books", "limit=7&limit=7", ["limit=7", "offset=0"]),
        ("books", "sort=-subtitle", ["limit=20", "offset=0", "sort=-content"]),
        ("books", "sort=title,-id", ["limit=20", "offset=0", "sort=title,-id"]),
        ("books", "sort=-user,%20subtitle", ["limit=20", "offset=0", "sort=-user_created,content"]),
        ("posts", "sort=-date_created,content", ["limit=20", "offset=0", "sort=-date_created,content"]),
        ("books", "search=hello+world", ["limit=20", "offset=0", "filter[_or][0][title][_icontains]=hello world",
                                         "filter[_or][1][content][_icontains]=hello world"]),
        ("books", "search=", ["limit=20", "offset=0"]),
        ("books", "search=a&sort=id&page=2&limit=3", ["limit=3", "offset=3", "sort=id", "filter[_or][0][title][_icontains]=a",
                                                     "filter[_or][1][content][_icontains]=a"]),
        ("posts", "search=Swift", ["limit=20", "offset=0", "filter[_or][0][title][_icontains]=swift",
                                   "filter[_or][1][content][_icontains]=swift"]),
    ])
    func translatesKnownParameters(resource: String, query: String, expected: [String]) throws {
        let out = try translate(resource, query)
        #expect(out.first?.hasPrefix("fields=") == true)
        #expect(out.last == "meta=filter_count")
        #expect(Array(out.dropFirst().dropLast()) == expected)
    }

    @Test(arguments: [
        "filter[title][_eq]=x", "filter=%7B%22user_created%22%3A%7B%22_neq%22%3A1%7D%7D", "fields=*,user_created.*",
        "deep[user_created][_limit]=1", "access_token=abc", "meta=*", "aggregate[count]=*", "groupBy=title",
        "alias[x]=title", "export=csv", "version=main", "backlink=true", "LIMIT=5", "Sort=x",
    ])
    func dropsUnknownParameters(query: String) throws {
        for resource in ["books", "posts"] {
            let mapper = shippedMapper(resource)
            let out = try mapper.listQuery(QueryString.parse(query))
            #expect(out.map(\.0) == ["fields", "limit", "offset", "meta"])
            #expect(out.first { $0.0 == "fields" }?.1 == mapper.directusFieldList)
            #expect(out.first { $0.0 == "meta" }?.1 == "filter_count")
            #expect(out.first { $0.0 == "limit" }?.1 == "20")
        }
    }

    @Test(arguments: [
        ("books", "limit=0", "limit"), ("books", "limit=101", "limit"), ("books", "limit=-1", "limit"),
        ("books", "limit=abc", "limit"), ("books", "limit=", "limit"), ("books", "limit=1.5", "limit"),
        ("books", "limit=%2B5", "limit"), ("books", "limit=%205", "limit"), ("books", "limit=99999999999999999999", "limit"),
        ("books", "limit=5&limit=6", "limit"),
        ("books", "offset=-1", "offset"), ("books", "offset=x", "offset"), ("books", "offset=", "offset"),
        ("books", "page=0", "page"), ("books", "page=-2", "page"), ("books", "page=x", "page"),
        ("books", "page=999999999999999999", "page"),
        ("books", "offset=0&page=1", "page"), ("books", "offset=0&page=1", "offset"),
        ("books", "sort=", "sort"), ("books", "sort=-", "sort"), ("books", "sort=title,,id", "sort"),
        ("books", "sort=nope", "sort"), ("books", "sort=content", "sort"), ("books", "sort=user_created", "sort"),
        ("books", "sort=%2Btitle", "sort"), ("books", "sort=user_created.email", "sort"),
        ("posts", "sort=subtitle", "sort"), ("posts", "sort=-user", "sort"),
        ("books", "search=" + String(repeating: "a", count: 201), "search"),
        ("books", "search=" + String(repeating: "%C3%A9", count: 101), "search"),
    ])
    func rejectsBadValues(resource: String, query: String, parameter: String) {
        let error = gatewayError { _ = try shippedMapper(resource).listQuery(QueryString.parse(query)) }
        #expect(error?.status == 400)
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("\"\(parameter)\"") == true, "\(error?.message ?? "no error")")
    }

    @Test func honoursConfiguredLimits() throws {
        var config = ResourceConfig.shipped[0]
        config.maxLimit = 50
        config.defaultLimit = 10
        let mapper = ResourceMapper(config)
        #expect(try mapper.listQuery([]).first { $0.0 == "limit" }?.1 == "10")
        #expect(try mapper.listQuery([("limit", "50")]).first { $0.0 == "limit" }?.1 == "50")
        let error = gatewayError { _ = try mapper.listQuery([("limit", "51")]) }
        #expect(error?.message.contains("50") == true)
    }

    @Test func searchIsNeverForwardedAsDirectusSearch() throws {
        for resource in ["books", "posts"] {
            let out = try shippedMapper(resource).listQuery([("search", "x")])
            #expect(!out.contains { $0.0 == "search" })
            #expect(out.filter { $0.0.hasPrefix("filter[_or]") }.count == 2)
        }
    }

    @Test func searchUsesConfiguredSearchFieldsWithDirectusNames() throws {
        var config = ResourceConfig.shipped[0]  // books: subtitle is Directus's content
        config.searchFields = ["subtitle"]
        let out = try ResourceMapper(config).listQuery([("search", "Déjà Vu")]).map { "\($0.0)=\($0.1)" }
        #expect(out.filter { $0.hasPrefix("filter") } == ["filter[_or][0][content][_icontains]=déjà vu"])
    }

    @Test func searchFieldsDefaultToTheWritableFields() {
        var config = ResourceConfig.shipped[1]
        config.writable = ["content"]
        #expect(ResourceMapper(config).searchDirectusFields == ["content"])
        config.searchFields = ["title", "date_created"]
        #expect(ResourceMapper(config).searchDirectusFields == ["title", "date_created"])
    }

    @Test func emptySearchFieldsRefuseSearch() throws {
        var config = ResourceConfig.shipped[0]
        config.searchFields = []
        let mapper = ResourceMapper(config)
        let error = gatewayError { _ = try mapper.listQuery([("search", "x")]) }
        #expect(error?.status == 400)
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("\"search\"") == true)
        // An empty search is no search.
        #expect(try mapper.listQuery([("search", "")]).allSatisfy { !$0.0.hasPrefix("filter") })
    }

    /// Directus coerces `true`/`false`/`null`/`NULL` and resolves `$NOW`, `$CURRENT_USER…` in filter values;
    /// a search term must reach it as plain text, matching the same rows (Directus lowercases it anyway).
    @Test(arguments: [
        ("true", "True"), ("FALSE", "False"), ("null", "Null"), ("NULL", "Null"), ("nullable", "nullable"),
        ("$CURRENT_USER", "$current_user"), ("$CURRENT_USER.email", "$current_user.email"), ("$NOW(-1 day)", "$now(-1 day)"),
        ("$CURRENT_ROLES", "$current_roles"), ("Ünïcode ÀB", "Ünïcode Àb"), ("a%b_c", "a%b_c"),
    ])
    func searchTermsReachDirectusAsText(term: String, sent: String) throws {
        let out = try shippedMapper("books").listQuery([("search", term)])
        #expect(out.filter { $0.0.hasPrefix("filter") }.map(\.1) == [sent, sent])
    }

    @Test func searchOfTheLongestLengthIsAccepted() throws {
        let term = String(repeating: "é", count: 100)  // 200 bytes
        let out = try shippedMapper("books").listQuery([("search", term)])
        #expect(out.filter { $0.0.hasPrefix("filter") }.count == 2)
    }

    @Test func searchFilterIsPercentEncodedOnTheWire() throws {
        let query = QueryString.build(try shippedMapper("books").listQuery([("search", "a&b=c")]))
        #expect(query.contains("filter%5B_or%5D%5B0%5D%5Btitle%5D%5B_icontains%5D=a%26b%3Dc"))
        #expect(!query.contains("search="))
    }
}
