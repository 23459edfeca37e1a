import COpenSSL
import Glibc

/// The client side of TLS on a connected nonblocking socket, as the upstream connection and the Redis socket both
/// run it: the session (SNI and the certificate check, `TLSClientContext.makeSSL`) bound to the socket, the
/// handshake stepped on each readiness event, and why it failed in words. Once the handshake is done, the owner
/// reads and writes with `SSL_read`/`SSL_write` on the session and frees it with `SSL_free`.
package enum TLSClientHandshake {
    /// Where a handshake step left the session.
    package enum Step: Equatable {
        /// The handshake is done: application data may flow.
        case done
        /// It waits for the socket to be readable.
        case wantsRead
        /// It waits for the socket to be writable.
        case wantsWrite
        /// The server was refused (the certificate check failed) or it refused us (an alert): the reason.
        case refused(String)
        /// The connection closed or reset under the handshake (an outage, not a refusal): the reason.
        case failed(String)
    }

    /// A client session for `serverName` on the connected socket `fd`, in connect state; nil when OpenSSL cannot
    /// make one. OpenSSL writes with write(2), which raises SIGPIPE on a connection the peer reset: the calling
    /// thread (the loop's) blocks the signal, so that the write fails with EPIPE instead (plain sockets use
    /// MSG_NOSIGNAL).
    package static func start(_ context: TLSClientContext, fd: Int32, serverName: String) -> OpaquePointer? {
        guard let ssl = context.makeSSL(host: serverName) else { return nil }
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
        return ssl
    }

    /// Runs the handshake of `ssl` as far as the socket allows.
    package static func step(_ ssl: OpaquePointer) -> Step {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return .done }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ: return .wantsRead
        case SSL_ERROR_WANT_WRITE: return .wantsWrite
        case SSL_ERROR_SSL: return .refused(failureReason(ssl))
        default: return .failed(failureReason(ssl))
        }
    }

    /// Why the session failed, without secrets: the certificate check's verdict when it refused the server
    /// (e.g. "certificate verify failed: unable to get local issuer certificate"), else OpenSSL's error, else
    /// "the server closed the connection". Clears the thread's OpenSSL errors.
    package static func failureReason(_ ssl: OpaquePointer) -> String {
        let code = ERR_peek_last_error()
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        ERR_clear_error()
        let reason: String
        if code == 0 {
            reason = "the server closed the connection"
        } else if let cReason = ERR_reason_error_string(code) {
            reason = String(cString: cReason)
        } else {
            reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        let verdict = SSL_get_verify_result(ssl)
        if verdict != X509_V_OK, let text = X509_verify_cert_error_string(verdict) {
            return "\(reason): \(String(cString: text))"
        }
        return reason
    }
}
