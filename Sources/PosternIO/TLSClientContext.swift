import COpenSSL
import FoundationEssentials

/// An OpenSSL client context that verifies the upstream's certificate and host name.
package final class TLSClientContext: @unchecked Sendable {
    private let context: OpaquePointer
    /// Verify the peer (on by default; off only for tests with self-signed certificates).
    package let verify: Bool

    /// The process-wide default context (system trust store, verification on).
    package static let shared = TLSClientContext(caFile: nil, verify: true)

    /// Creates a context trusting the system store, plus `caFile` when given.
    package init(caFile: String?, verify: Bool) {
        // SSL_CTX_new only fails when OpenSSL cannot allocate: fatal.
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { fatalError("SSL_CTX_new failed") }
        context = ctx
        self.verify = verify
        SSL_CTX_set_default_verify_paths(ctx)
        if let caFile { SSL_CTX_load_verify_locations(ctx, caFile, nil) }
        SSL_CTX_set_verify(ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
    }

    deinit { SSL_CTX_free(context) }

    /// A fresh client session for one TCP connection to `host`: SNI, and the host-name check when verifying.
    package func makeSSL(host: String) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        if verify { SSL_set1_host(ssl, host) }
        postern_ssl_set_sni(ssl, host)
        postern_ssl_prepare_nonblocking(ssl)
        return ssl
    }
}
