import Foundation

/// A certificate authority and certificates made by a test with the openssl command (EC P-256, valid one day),
/// in a scratch directory removed when this goes away: `ca` signed `server` (for `localhost` and 127.0.0.1) and
/// `client` (a client certificate); `otherCA` is a second, unrelated authority (the wrong CA).
package final class TestCertificates: @unchecked Sendable {
    /// The scratch directory holding the files.
    package let directory: URL
    /// The authority's certificate (PEM): the CA file a verifying client trusts.
    package var caFile: String { path("ca.crt") }
    /// The server's certificate and key, signed by `ca`, for DNS `localhost` and IP 127.0.0.1.
    package var serverCertificateFile: String { path("server.crt") }
    package var serverKeyFile: String { path("server.key") }
    /// A client certificate and key, signed by `ca`.
    package var clientCertificateFile: String { path("client.crt") }
    package var clientKeyFile: String { path("client.key") }
    /// A second authority that signed nothing here: a client trusting only it refuses the server.
    package var otherCAFile: String { path("other-ca.crt") }

    /// Makes every file; throws when openssl fails (it is installed on every machine that runs the tests).
    package init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
        try openssl(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=Postern Test CA"])
        try openssl(["req", "-x509"] + ec + ["-keyout", "other-ca.key", "-out", "other-ca.crt", "-subj", "/CN=Another CA"])
        try sign("server", subject: "/CN=localhost", extensions: "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        try sign("client", subject: "/CN=postern-client", extensions: "extendedKeyUsage=clientAuth\n")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func sign(_ name: String, subject: String, extensions: String) throws {
        try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
        try extensions.write(to: directory.appendingPathComponent("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "1", "-out", "\(name).crt", "-extfile", "\(name).ext"])
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let text = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: text, as: UTF8.self))")
        }
    }
}
