import FoundationEssentials
import PosternHTTP

extension DashboardPage {
    /// The whole document.
    static var html: String {
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            + "<title>Postern · operator console</title>\n<link rel=\"icon\" href=\"data:,\">\n"
            + "<style>\(style)</style>\n</head>\n<body>\n\(body)\n<script>\(script)</script>\n</body>\n</html>\n"
    }

    /// The policy of the page: nothing but its own style and script (by their SHA-256), calls to its own
    /// origin, `data:` images; no frame may hold it, no form posts anywhere, no `<base>`.
    static var contentSecurityPolicy: String {
        func hash(_ text: String) -> String { "'sha256-\(Data(Crypto.sha256(text)).base64EncodedString())'" }
        return "default-src 'none'; script-src \(hash(script)); style-src \(hash(style)); connect-src 'self'; "
            + "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// The answer to `GET /`, built once: the page with its headers (`text/html`, the policy, `DENY` framing,
    /// `no-store`, no referrer).
    static func response() -> HTTPResponse {
        HTTPResponse(status: 200, headers: [
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": contentSecurityPolicy,
            "X-Frame-Options": "DENY",
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        ], body: Data(html.utf8))
    }
}
