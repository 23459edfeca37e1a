import DirectusStandIn
import Foundation
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// The gateway pipeline without sockets or threads (`Application.build` with an in-process transport),
/// in front of the stand-in called in process.
struct InProcessGateway {
    let standIn: DirectusStandIn
    let gateway: Gateway
    let store: MemorySessionStore

    init(standInOptions: DirectusStandIn.Options = DirectusStandIn.Options(), configure: (inout PosternConfig) -> Void = { _ in }) {
        let standIn = DirectusStandIn(options: standInOptions)
        self.standIn = standIn
        var config = PosternConfig.testing
        configure(&config)
        store = MemorySessionStore()
        do {
            gateway = try Application.build(config: config, transport: InProcessTransport { standIn.handle($0) }, store: store,
                                            logSink: { _ in }).gateway
        } catch {
            fatalError("test config is invalid: \(error)")  // PosternConfig.testing plus a test's changes must validate
        }
    }

    struct Answer {
        let response: HTTPResponse
        var status: Int { response.status }
        var json: JSONValue? { try? JSONValue.parse(response.body) }
        var code: String? { json?["code"]?.stringValue }
    }

    func send(_ method: HTTPMethod, _ target: String, _ body: String? = nil, token: String? = nil,
              headers: HTTPHeaders = HTTPHeaders()) async -> Answer {
        var h = headers
        if let token { h.add("Authorization", "Bearer \(token)") }
        if body != nil { h.add("Content-Type", "application/json") }
        let request = HTTPRequest(method: method, target: target, headers: h, body: Data((body ?? "").utf8), remoteAddress: "10.1.2.3")
        return Answer(response: await gateway.handle(request))
    }

    func login(_ email: String = "x@y.com", _ password: String = "123456") async throws -> String {
        let a = await send(.post, "/api/v1/user/login", #"{"email":"\#(email)","password":"\#(password)"}"#)
        guard a.status == 200, let token = a.json?["user"]?["token"]?.stringValue else {
            throw TestFailure("login failed: \(a.status) \(String(decoding: a.response.body, as: UTF8.self))")
        }
        return token
    }

    /// Write requests (POST/PATCH/PUT/DELETE) the stand-in received under `/items/`.
    var upstreamWrites: [HTTPRequest] {
        standIn.received.filter { $0.path.hasPrefix("/items/") && $0.method != .get }
    }

    /// Ids of posts owned by `email` in the stand-in.
    func postIDs(ownedBy email: String) -> [String] {
        let uid = standIn.userID(email: email)
        return standIn.posts().compactMap { post in
            guard post["user_created"]?.stringValue == uid, let id = post["id"]?.intValue else { return nil }
            return String(id)
        }
    }
}
