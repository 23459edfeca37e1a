import Foundation
import PosternTesting

/// The built `postern` executable run as a child process, with a clean environment, a scratch working
/// directory (so no `config/postern.json` or `data/` of the checkout is used) and output captured in files.
final class PosternProcess: @unchecked Sendable {
    /// `.build/debug/postern` of this checkout (it exists once `swift build` built the executable).
    static let binary: URL = repositoryRoot.appendingPathComponent(".build/debug/postern")

    /// The executable, or a failure saying how to build it: a test that needs it fails without it, never skips.
    static func requireBinary() throws -> URL {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestFailure("\(binary.path) is missing: build it with `swift build --product postern` (`make test` does)")
        }
        return binary
    }

    let process = Process()
    let directory: URL
    private let stdoutURL: URL
    private let stderrURL: URL

    /// Starts `postern <arguments>` with only `environment` (plus PATH and HOME) set.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let executable = try PosternProcess.requireBinary()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutURL = directory.appendingPathComponent("stdout")
        stderrURL = directory.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": directory.path]
        env.merge(environment) { _, new in new }
        process.environment = env
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// Writes `text` into the scratch directory and returns its path.
    static func scratchFile(_ name: String, _ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("postern-\(UUID().uuidString)-\(name)")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Sends `signal` to the process.
    func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits up to `seconds` for the process to exit; returns its status, or nil (after SIGKILL) when it did not.
    @discardableResult
    func waitForExit(seconds: Double) -> Int32? {
        _ = try? eventually("postern exited", timeout: seconds) { !process.isRunning }
        if process.isRunning {
            send(SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    /// Kills the process if still running and removes the scratch directory.
    func cleanUp() {
        if process.isRunning { waitForExit(seconds: 0) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Waits until `GET /healthz` on `port` answers 200 (the server is up), at most `seconds`.
    static func waitUntilServing(port: UInt16, seconds: Double) -> Bool {
        (try? eventually("postern serves on \(port)", timeout: seconds) {
            (try? RawHTTPClient(port: port).request("GET", "/healthz"))?.status == 200
        }) != nil
    }
}
