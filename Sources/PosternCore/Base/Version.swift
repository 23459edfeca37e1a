/// The gateway's version.
public enum PosternVersion {
    /// Semantic version of this build.
    public static let current = "0.1.0"
}
