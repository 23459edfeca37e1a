import Foundation

/// Runs `tool` with `args` in `dir`, its output dropped, and waits until it exits (making a test certificate, say).
package func runTool(_ tool: String, _ args: [String], in dir: URL) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = args
    process.currentDirectoryURL = dir
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
}
