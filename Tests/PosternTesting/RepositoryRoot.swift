import Foundation

/// The checkout's root directory (for `config/`, `deploy/`, `Fuzz/`, `Sources/` and `.build/`), found from this file's
/// own place, `Tests/PosternTesting/`, so that a test file can move without counting its folders again.
package let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
