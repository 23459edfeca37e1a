import Foundation
import Testing
@testable import PosternCore
import PosternHTTP

/// The OpenAPI document of relations (docs/api.md, Relations): nested objects and list rows have their own
/// schemas, `GET /{id}` answers `<T>DetailList` when the resource has detail fields, `sort` accepts nested paths.
@Suite struct OpenAPIRelationsTests {
    @Test func theShippedPostsHaveAnAuthorSchemaAndADetailWithComments() throws {
        let document = OpenAPIDocument(config: try OpenAPITests.shipped()).value
        let posts = OpenAPITests.schema(document, "Posts")
        #expect(OpenAPITests.keys(posts?["properties"]) == ["id", "title", "content", "user_created", "date_created", "author"])
        #expect(posts?["properties"]?["author"]?["allOf"]?.arrayValue?.first?["$ref"]?.stringValue == "#/components/schemas/PostsAuthor")
        #expect(posts?["properties"]?["author"]?["readOnly"] == .bool(true))
        #expect(posts?["properties"]?["comments"] == nil, "the list shape has no detail field")
        let author = OpenAPITests.schema(document, "PostsAuthor")
        #expect(OpenAPITests.keys(author?["properties"]) == ["id", "name"])
        #expect(author?["properties"]?["name"]?["x-postern-directus-field"]?.stringValue == "user_created.first_name")
        #expect(author?["additionalProperties"] == .bool(false))

        let detail = OpenAPITests.schema(document, "PostsDetail")
        #expect(OpenAPITests.keys(detail?["properties"]) == ["id", "title", "content", "user_created", "date_created", "author", "comments"])
        let comments = detail?["properties"]?["comments"]
        #expect(comments?["type"] == .string("array"))
        #expect(comments?["maxItems"] == .int(5))
        #expect(comments?["items"]?["$ref"]?.stringValue == "#/components/schemas/PostsComments")
        #expect(OpenAPITests.strings(detail?["required"]).contains("comments") == true)
        let row = OpenAPITests.schema(document, "PostsComments")
        #expect(OpenAPITests.keys(row?["properties"]) == ["id", "text", "author"])
        #expect(row?["properties"]?["text"]?["x-postern-directus-field"]?.stringValue == "body")

        let read = document["paths"]?["/api/v1/posts/{id}"]?["get"]?["responses"]?["200"]?["content"]?["application/json"]?["schema"]
        #expect(read?["$ref"]?.stringValue == "#/components/schemas/PostsDetailList")
        let list = document["paths"]?["/api/v1/posts"]?["get"]?["responses"]?["200"]?["content"]?["application/json"]?["schema"]
        #expect(list?["$ref"]?.stringValue == "#/components/schemas/PostsList")
        // books has no relation: its read answers the list shape as before.
        let book = document["paths"]?["/api/v1/books/{id}"]?["get"]?["responses"]?["200"]?["content"]?["application/json"]?["schema"]
        #expect(book?["$ref"]?.stringValue == "#/components/schemas/BooksList")
        #expect(OpenAPITests.schema(document, "BooksDetail") == nil)

        let sort = document["paths"]?["/api/v1/posts"]?["get"]?["parameters"]?.arrayValue?.first { $0["name"] == .string("sort") }
        let pattern = try #require(sort?["schema"]?["pattern"]?.stringValue)
        let regex = try Regex(pattern)
        #expect((try? regex.wholeMatch(in: "-author.name,id")) != nil)
        #expect((try? regex.wholeMatch(in: "author")) == nil)
        #expect((try? regex.wholeMatch(in: "comments")) == nil)
    }
}
