/// A parsed `host:port` listen or connect address; IPv6 hosts are written `[::1]:8080`.
package struct HostPort: Sendable, Equatable, CustomStringConvertible {
    /// The host name or IP address (IPv6 without brackets).
    package var host: String
    /// The port; 0 asks the system for a free one.
    package var port: UInt16

    /// Builds an address from its parts.
    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[ipv6]:port`; nil when the host is empty or odd, or the port is not 0…65535.
    init?(_ text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "-" || c == "_") }
            guard !host.isEmpty, host.allSatisfy(allowed) else { return nil }
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText) else { return nil }
        self.host = String(host)
        self.port = port
    }

    /// `host:port`, with brackets around an IPv6 host.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
