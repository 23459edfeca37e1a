import COpenSSL
import FoundationEssentials
import Glibc

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

    /// A verifying context for a private service (Redis over TLS): it trusts the certificates of `caFile` alone
    /// when given, else the system store, and presents `certificateFile` with `keyFile` (PEM) when the server
    /// asks for a client certificate. Verification cannot be turned off. Throws a one-line reason naming the
    /// file (unreadable, not PEM, a key that does not match the certificate).
    package init(trusting caFile: String?, certificateFile: String?, keyFile: String?) throws(TLSSetupError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { fatalError("SSL_CTX_new failed") }
        context = ctx
        verify = true
        ERR_clear_error()
        if let caFile {
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                throw TLSSetupError("cannot load the CA certificates of \(caFile): \(TLSClientContext.lastError())")
            }
        } else {
            SSL_CTX_set_default_verify_paths(ctx)
        }
        if let certificateFile {
            guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
                throw TLSSetupError("cannot load the client certificate \(certificateFile): \(TLSClientContext.lastError())")
            }
        }
        if let keyFile {
            guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
                throw TLSSetupError("cannot load the client key \(keyFile): \(TLSClientContext.lastError())")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else {
                throw TLSSetupError("the client key \(keyFile) does not match the certificate \(certificateFile ?? "")")
            }
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
    }

    deinit { SSL_CTX_free(context) }

    /// A fresh client session for one TCP connection to `host`: SNI, and the host-name check when verifying.
    /// An IP address is checked against the certificate's IP addresses and is not sent as SNI (RFC 6066 allows
    /// host names only there).
    package func makeSSL(host: String) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        if TLSClientContext.isIPAddress(host) {
            if verify { X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) }
        } else {
            if verify { SSL_set1_host(ssl, host) }
            postern_ssl_set_sni(ssl, host)
        }
        postern_ssl_prepare_nonblocking(ssl)
        return ssl
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// OpenSSL's reason for the last error of this thread (e.g. "no such file", "no start line"), cleared.
    private static func lastError() -> String {
        let code = ERR_peek_last_error()
        defer { ERR_clear_error() }
        guard code != 0 else { return "unknown error" }
        if ERR_GET_LIB(code) == ERR_LIB_SYS, let text = strerror(ERR_GET_REASON(code)) { return String(cString: text) }
        if let reason = ERR_reason_error_string(code) { return String(cString: reason) }
        return "error \(code)"
    }
}

/// Why a TLS context could not be set up (a file named in the configuration): one line, no secrets.
package struct TLSSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason.
    package let description: String
    /// An error with this reason.
    package init(_ description: String) { self.description = description }
}
