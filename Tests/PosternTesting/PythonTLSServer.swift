import Foundation

/// A Python TLS server on loopback for upstream tests: a self-signed certificate for `localhost` made with
/// openssl, then a threading HTTPS server on an ephemeral port around the test's `Handler` class (`handler`,
/// Python source defining `class Handler(http.server.BaseHTTPRequestHandler)`). `stop()` ends the process (by
/// its PID) and removes the files.
package final class PythonTLSServer {
    /// The port the script listens on.
    package let port: UInt16
    /// The server's certificate (PEM): the CA file a verifying client trusts.
    package let certificatePath: String
    private let process: Process
    private let dir: URL

    /// True where the test can run (openssl and python3 are installed).
    package static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    }

    /// What runs around the handler: the modules it may use, then (after it) the server, which prints its port
    /// once it listens.
    private static let prelude = "import http.server, socketserver, ssl, sys\n"
    private static let serve = #"""
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""#

    /// Makes the certificate and starts the server around `handler`; returns once it has printed its port.
    package init(handler: String, name: String) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem",
                                          "-out", "cert.pem", "-days", "1", "-subj", "/CN=localhost",
                                          "-addext", "subjectAltName=DNS:localhost"], in: dir)
        certificatePath = dir.appendingPathComponent("cert.pem").path
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", PythonTLSServer.prelude + handler + "\n" + PythonTLSServer.serve, certificatePath, dir.appendingPathComponent("key.pem").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The server prints its port once it listens.
        var line = Data()
        while !line.contains(10) {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line.append(byte)
        }
        guard let port = UInt16(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: dir)
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "the TLS server printed no port"])
        }
        self.port = port
    }

    /// Ends the server and removes its certificate and key.
    package func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: dir)
    }
}
