/// The gateway's version.
package enum PosternVersion {
    /// Semantic version of this build.
    package static let current = "0.1.0"
}
