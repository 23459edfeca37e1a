import CEvent
import Foundation

/// Reads the input side of an evhttp request (a server's request or a client's response).
enum EvhttpInput {
    /// The input headers, in order.
    static func headers(_ req: OpaquePointer) -> HTTPHeaders {
        guard let input = evhttp_request_get_input_headers(req) else { return HTTPHeaders() }
        var count = 0
        var entry = input.pointee.tqh_first
        while let kv = entry {
            count += 1
            entry = kv.pointee.next.tqe_next
        }
        var headers = HTTPHeaders(capacity: count)  // one allocation for the list, not one per doubling
        entry = input.pointee.tqh_first
        while let kv = entry {
            headers.add(String(cString: kv.pointee.key), String(cString: kv.pointee.value))
            entry = kv.pointee.next.tqe_next
        }
        return headers
    }

    /// The input headers called one of `names` (compared case-insensitively), in order: the other fields
    /// are skipped without building a `String` for them (static names reach C without a bridging copy).
    static func headers(_ req: OpaquePointer, only names: [StaticString]) -> HTTPHeaders {
        guard let input = evhttp_request_get_input_headers(req) else { return HTTPHeaders() }
        var headers = HTTPHeaders()
        var entry = input.pointee.tqh_first
        while let kv = entry {
            if let key = kv.pointee.key, names.contains(where: { strcasecmp(cString($0), key) == 0 }) {
                headers.add(String(cString: key), String(cString: kv.pointee.value))
            }
            entry = kv.pointee.next.tqe_next
        }
        return headers
    }

    /// Whether the input header `name` (the first of that name) is `value`, compared case-insensitively,
    /// without building a `String`.
    static func header(_ req: OpaquePointer, _ name: StaticString, is value: StaticString) -> Bool {
        guard let input = evhttp_request_get_input_headers(req), let found = evhttp_find_header(input, cString(name)) else {
            return false
        }
        return strcasecmp(found, cString(value)) == 0
    }

    /// A string literal as the NUL-terminated C string it is stored as (no copy).
    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// The input body, drained from its buffer: copied once, chain by chain, into storage that is not
    /// zero-filled first.
    static func body(_ req: OpaquePointer) -> Data {
        guard let buffer = evhttp_request_get_input_buffer(req) else { return Data() }
        let length = evbuffer_get_length(buffer)
        guard length > 0 else { return Data() }
        var body = Data(capacity: length)
        let copied = withUnsafeTemporaryAllocation(of: iovec.self, capacity: 8) { vecs -> Bool in
            let chains = Int(evbuffer_peek(buffer, -1, nil, vecs.baseAddress, 8))
            guard chains <= 8 else { return false }
            for vec in vecs.prefix(chains) where vec.iov_len > 0 {
                if let base = vec.iov_base { body.append(base.assumingMemoryBound(to: UInt8.self), count: vec.iov_len) }
            }
            return true
        }
        guard copied, body.count == length else {
            // More chains than peeked at once (a large or trickled body): one copy out of the buffer.
            var whole = Data(count: length)
            whole.withUnsafeMutableBytes { raw in _ = evbuffer_remove(buffer, raw.baseAddress, length) }
            return whole
        }
        evbuffer_drain(buffer, length)
        return body
    }
}

/// Writes header fields into evhttp header lists.
enum EvhttpOutput {
    /// Adds `name: value` to `headers`. Swift hands a small string (15 bytes or fewer, kept inline) to C by
    /// allocating an array for it; this copies short strings to the stack instead (evhttp copies them anyway).
    static func addHeader(_ headers: UnsafeMutablePointer<evkeyvalq>?, _ name: String, _ value: String) {
        withCString(name) { n in
            withCString(value) { v in _ = evhttp_add_header(headers, n, v) }
        }
    }

    /// `body` with a NUL-terminated copy of `text`: on the stack up to 256 bytes, the usual bridging above.
    private static func withCString(_ text: String, _ body: (UnsafePointer<CChar>) -> Void) {
        var text = text
        text.withUTF8 { utf8 in
            guard utf8.count < 256 else {
                let heap = String(decoding: utf8, as: UTF8.self)
                heap.withCString(body)
                return
            }
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: utf8.count + 1) { buffer in
                // The capacity is count + 1, and the base exists for any capacity above 0.
                let base = buffer.baseAddress!
                utf8.withMemoryRebound(to: CChar.self) { source in
                    if let from = source.baseAddress { base.update(from: from, count: source.count) }
                }
                base[utf8.count] = 0
                body(base)
            }
        }
    }
}
