import COpenSSL
import Glibc

/// One `SSL_read` or `SSL_write` on a non-blocking socket after the handshake, told in the terms of the plain
/// socket calls it stands in for, for the upstream connection and the Redis socket alike.
package enum TLSTransfer {
    /// What a read found.
    package enum Read {
        /// Bytes were read (more than 0).
        case bytes(Int)
        /// Nothing yet: wait until the socket is readable.
        case wouldBlock
        /// The session must write first (a key update): wait until the socket is writable, then read again.
        case wantsWrite
        /// The peer ended the stream (close_notify).
        case closed
        /// The peer sent an alert (e.g. TLS 1.3 refusing a client certificate after the handshake).
        case alert
        /// The connection failed.
        case failed

        /// The read as `recv` would have given it: the bytes, 0 at the end of the stream, or -1 with `errno` EAGAIN
        /// (nothing yet, also when the session must write first) or ECONNRESET.
        package var received: Int {
            switch self {
            case .bytes(let n): return n
            case .closed: return 0
            case .wouldBlock, .wantsWrite: errno = EAGAIN
            case .alert, .failed: errno = ECONNRESET
            }
            return -1
        }
    }

    /// Reads at most `count` bytes into `buffer`.
    package static func read(_ ssl: OpaquePointer, into buffer: UnsafeMutableRawPointer?, count: Int) -> Read {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer, Int32(min(count, Int(Int32.max))))
        if n > 0 { return .bytes(Int(n)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ: return .wouldBlock
        case SSL_ERROR_WANT_WRITE: return .wantsWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SSL: return .alert
        default: return .failed
        }
    }

    /// Writes up to `count` bytes from `start`, like `send`: the number written, or -1 with `errno` EAGAIN (wait
    /// until writable), EINPROGRESS (the session must read first: the read event brings the write back) or EPIPE.
    package static func write(_ ssl: OpaquePointer, from start: UnsafeRawPointer, count: Int) -> Int {
        ERR_clear_error()
        let rc = SSL_write(ssl, start, Int32(min(count, Int(Int32.max))))
        if rc > 0 { return Int(rc) }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_WRITE: errno = EAGAIN
        case SSL_ERROR_WANT_READ: errno = EINPROGRESS
        default: errno = EPIPE
        }
        return -1
    }
}
