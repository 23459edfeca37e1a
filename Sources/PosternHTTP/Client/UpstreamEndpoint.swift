import FoundationEssentials
import Glibc
import PosternIO

/// Where the upstream lives.
package struct UpstreamEndpoint: Sendable, Equatable {
    /// `http` or `https`.
    package var tls: Bool
    /// Host name or IP.
    package var host: String
    /// Port.
    package var port: UInt16
    /// A path prefix (no trailing slash), e.g. `` or `/directus`.
    package var basePath: String

    /// Parses `http://host[:port][/base]` or `https://…`.
    package init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else { return nil }
        tls = scheme == "https"
        self.host = host
        port = UInt16(components.port ?? (tls ? 443 : 80))
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
    }

    /// The `Host` header value.
    package var hostHeader: String {
        let isDefault = (tls && port == 443) || (!tls && port == 80)
        let h = host.contains(":") ? "[\(host)]" : host
        return isDefault ? h : "\(h):\(port)"
    }
}
