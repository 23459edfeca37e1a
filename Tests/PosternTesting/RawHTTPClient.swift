import Foundation
import PosternHTTP

/// A blocking HTTP/1.1 client over a plain socket, for live tests (independent of the gateway's own client).
package final class RawHTTPClient {
    /// One answer as read off the wire.
    package struct Response {
        /// The status code.
        package var status: Int
        /// The header fields.
        package var headers: HTTPHeaders
        /// The body (chunked bodies joined).
        package var body: Data
        /// The body parsed as JSON, or nil.
        package var json: JSONValue? { try? JSONValue.parse(body) }
        /// The body as UTF-8 text.
        package var text: String { String(decoding: body, as: UTF8.self) }

        /// An answer with these parts.
        package init(status: Int, headers: HTTPHeaders, body: Data) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// Why a request got no answer.
    package enum ClientError: Error { case connect(Int32), closed, timeout }

    private var fd: Int32 = -1
    /// The server's port on 127.0.0.1.
    package let port: UInt16
    private var buffer: [UInt8] = []

    /// A client of 127.0.0.1:`port` (it connects on first use).
    package init(port: UInt16) {
        self.port = port
    }

    deinit { close() }

    /// Connects now (a no-op when connected).
    package func connect() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var tv = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 { throw ClientError.connect(errno) }
    }

    /// Half-closes the connection: the server reads EOF, this client can still read the answers.
    package func shutdownWrite() {
        if fd >= 0 { shutdown(fd, Int32(SHUT_WR)) }
    }

    /// Closes the connection.
    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        buffer.removeAll()
    }

    /// Writes `bytes` as they are.
    package func sendRaw(_ bytes: [UInt8]) throws {
        if fd < 0 { try connect() }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw ClientError.closed }
            sent += n
        }
    }

    /// Sends one request and reads the response (keeps the connection open for the next one).
    package func request(_ method: String, _ target: String, headers: [String: String] = [:], body: Data? = nil) throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        if let body { bytes += Array(body) }
        try sendRaw(bytes)
        return try readResponse(method: method)
    }

    /// A JSON request with an optional bearer token.
    package func json(_ method: String, _ target: String, _ body: String? = nil, token: String? = nil,
              headers: [String: String] = [:]) throws -> Response {
        var h = headers
        if let token { h["Authorization"] = "Bearer \(token)" }
        if body != nil { h["Content-Type"] = "application/json" }
        return try request(method, target, headers: h, body: body.map { Data($0.utf8) })
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { throw ClientError.closed }
        if n < 0 { throw errno == EAGAIN || errno == EWOULDBLOCK ? ClientError.timeout : ClientError.closed }
        buffer += chunk[0..<n]
    }

    /// True when the server closed the connection (reads EOF within `seconds`).
    package func waitForClose(seconds: Int) -> Bool {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        }
    }

    /// Reads one answer (to a request of `method`).
    package func readResponse(method: String = "GET") throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if let r = findSubsequence(buffer, separator) { headEnd = r } else { try fill() }
        }
        let headText = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        let status = Int(statusLine[1]) ?? 0
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Data()
        if method != "HEAD", status != 204, status != 304 {
            if let length = headers["Content-Length"].flatMap(Int.init) {
                while buffer.count < length { try fill() }
                body = Data(buffer[0..<length])
                buffer.removeFirst(length)
            } else if headers["Transfer-Encoding"]?.lowercased() == "chunked" {
                body = try readChunked()
            } else if headers["Connection"]?.lowercased() == "close" {
                while true { do { try fill() } catch { break } }
                body = Data(buffer)
                buffer.removeAll()
            }
        }
        return Response(status: status, headers: headers, body: body)
    }

    private func readChunked() throws -> Data {
        var out = Data()
        while true {
            var lineEnd: Int?
            while lineEnd == nil {
                if let r = findSubsequence(buffer, [13, 10]) { lineEnd = r } else { try fill() }
            }
            let size = Int(String(decoding: buffer[0..<lineEnd!], as: UTF8.self), radix: 16) ?? 0
            buffer.removeFirst(lineEnd! + 2)
            while buffer.count < size + 2 { try fill() }
            out += buffer[0..<size]
            buffer.removeFirst(size + 2)
            if size == 0 { return out }
        }
    }

    private func findSubsequence(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        guard a.count >= b.count else { return nil }
        for i in 0...(a.count - b.count) where a[i..<(i + b.count)].elementsEqual(b) { return i }
        return nil
    }
}
