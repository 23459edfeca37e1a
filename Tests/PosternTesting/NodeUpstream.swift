import Foundation
import PosternHTTP

/// Node's own HTTP server (`node`, as Directus runs on) as the upstream, on 127.0.0.1 with a free port: it
/// answers `POST /auth/login` with `loginAnswer`, and `GET /items/posts` with one post whose title is the
/// request's `X-Request-Id`; `GET /__stats` gives the connections it accepted, the requests it answered and the
/// most request lines one read of a socket carried (above 1: the requests were pipelined). `stop()` ends the
/// process (by its PID).
package final class NodeUpstream {
    /// The port the server listens on.
    package let port: UInt16
    private let process: Process

    /// True where the test can run (node is installed).
    package static var available: Bool { FileManager.default.isExecutableFile(atPath: node) }
    private static let node = "/usr/bin/node"

    /// The base URL to put into `config.directus.url`.
    package var url: String { "http://127.0.0.1:\(port)" }

    private static let script = #"""
const http = require('http');
const login = process.argv[1];
let connections = 0, requests = 0, maxPerRead = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', c => body += c);
  req.on('end', () => {
    let answer;
    if (req.url === '/__stats') {
      answer = JSON.stringify({connections, requests, maxPerRead});
    } else {
      requests++;
      if (req.method === 'POST' && req.url.startsWith('/auth/login')) {
        answer = login;
      } else {
        const title = req.headers['x-request-id'] || '';
        answer = JSON.stringify({data: [{id: 1, title, content: 'c', user_created: 'user-1', date_created: null}],
                                 meta: {filter_count: 1}});
      }
    }
    res.writeHead(200, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer)});
    res.end(answer);
  });
});
server.on('connection', socket => {
  connections++;
  socket.on('data', chunk => {
    const lines = chunk.toString('latin1').match(/ HTTP\/1\.1\r\n/g);
    if (lines) maxPerRead = Math.max(maxPerRead, lines.length);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
"""#

    /// Starts the server; returns once it has printed its port.
    package init(loginAnswer: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.node)
        process.arguments = ["-e", Self.script, loginAnswer]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(10) {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line.append(byte)
        }
        guard let port = UInt16(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestFailure("node printed no port")
        }
        self.port = port
    }

    /// What the server counted: connections accepted, requests answered, most request lines in one read.
    package func stats() throws -> (connections: Int, requests: Int, maxPerRead: Int) {
        let client = RawHTTPClient(port: port)
        let r = try client.request("GET", "/__stats")
        guard let json = r.json, let c = json["connections"]?.intValue, let n = json["requests"]?.intValue,
              let m = json["maxPerRead"]?.intValue else { throw TestFailure("stats: \(r.text)") }
        return (Int(c), Int(n), Int(m))
    }

    /// Ends the server.
    package func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
