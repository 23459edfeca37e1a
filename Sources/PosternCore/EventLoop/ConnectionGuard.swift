import CEvent
import Foundation

/// One client connection's request deadline: a request must arrive whole (headers and body) within the
/// deadline from its first byte, however slowly it trickles in. libevent 2.1's own timer is an inactivity
/// timer that restarts on every byte, and evhttp has no hook before a request is complete, so the guard
/// watches the connection's input buffer: the first byte of a request arms the timer, the complete request
/// disarms it, and the answer starts watching for the next request. Loop thread only.
final class ConnectionGuard {
    /// The evhttp connection (evhttp owns it; its close callback ends this guard).
    let evcon: OpaquePointer
    /// The connection's bufferevent (created by `ServerWorker`'s bufferevent callback, owned by evhttp).
    let bev: OpaquePointer
    /// Counted in `openConnections` (it has sent a whole request).
    var counted = false
    private let input: OpaquePointer
    private var watch: OpaquePointer?
    private var timer: OpaquePointer?
    private var deadline: timeval
    private let expired: (ConnectionGuard) -> Void

    /// Starts guarding a connection whose first request has just begun to arrive.
    init(evcon: OpaquePointer, bev: OpaquePointer, base: OpaquePointer, seconds: Int, expired: @escaping (ConnectionGuard) -> Void) {
        self.evcon = evcon
        self.bev = bev
        self.expired = expired
        deadline = timeval(tv_sec: seconds, tv_usec: 0)
        // Not optional in practice: a bufferevent always has an input buffer.
        input = bufferevent_get_input(bev)
        // The guard owns the timer and the buffer callback and removes both in close(), which evhttp's
        // close callback calls before the connection goes: the unretained pointer is valid whenever they run.
        let me = Unmanaged.passUnretained(self).toOpaque()
        timer = event_new(base, -1, 0, { _, _, arg in
            guard let arg else { return }
            let guarded = Unmanaged<ConnectionGuard>.fromOpaque(arg).takeUnretainedValue()
            guarded.expired(guarded)
        }, me)
        watch = evbuffer_add_cb(input, { _, info, arg in
            guard let info, info.pointee.n_added > 0, let arg else { return }
            Unmanaged<ConnectionGuard>.fromOpaque(arg).takeUnretainedValue().requestStarted()
        }, me)
        requestStarted()
    }

    /// The first byte of a request arrived: arm its deadline and stop watching the input until it is answered.
    func requestStarted() {
        if let watch { evbuffer_cb_clear_flags(input, watch, UInt32(EVBUFFER_CB_ENABLED)) }
        if let timer { event_add(timer, &deadline) }
    }

    /// The request arrived whole: its deadline is met.
    func requestReceived() {
        if let timer { event_del(timer) }
    }

    /// The request was answered: the next one starts with its first byte, which may already be buffered.
    func requestAnswered() {
        if evbuffer_get_length(input) > 0 {
            requestStarted()
        } else if let watch {
            evbuffer_cb_set_flags(input, watch, UInt32(EVBUFFER_CB_ENABLED))
        }
    }

    /// Nothing is waiting to be written on the connection (so an answer of our own cannot mix with another).
    var outputIdle: Bool {
        guard let output = bufferevent_get_output(bev) else { return false }
        return evbuffer_get_length(output) == 0
    }

    /// Removes the timer and the buffer callback (from evhttp's close callback, before the connection goes).
    func close() {
        if let timer { event_free(timer) }
        timer = nil
        if let watch { evbuffer_remove_cb_entry(input, watch) }
        watch = nil
    }

    deinit { close() }

    /// Writes `response` straight to the socket, best effort, just before the connection is freed; evhttp is
    /// not writing anything then (`outputIdle`), so nothing interleaves.
    func sendFinal(_ response: HTTPResponse) {
        let fd = bufferevent_getfd(bev)
        guard fd >= 0 else { return }
        var head = "HTTP/1.1 \(response.status) \(HTTPResponse.reason(response.status))\r\n"
        for (name, value) in response.headers where !HTTPHeaders.sameName(name, "Content-Length") && !HTTPHeaders.sameName(name, "Connection") {
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + Array(response.body)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }
}

/// evhttp's bufferevent callback: the bufferevent of each new connection, made like evhttp's own, with a
/// watch on its input for the first byte (the argument is the bufferevent itself: the watch lives in its
/// input buffer, so it never outlives it).
func serverBufferEvent(_ base: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> OpaquePointer? {
    guard let bev = bufferevent_socket_new(base, -1, 0) else { return nil }
    evbuffer_add_cb(bufferevent_get_input(bev), firstByteArrived, UnsafeMutableRawPointer(bev))
    return bev
}

/// The first bytes on a new connection: hand it to its worker's guard and stop this watch. evhttp has set
/// up the connection by then; its bufferevent callbacks carry the connection as their argument (libevent
/// 2.1 and 2.2 `http.c`), which `evhttp_connection_get_bufferevent` confirms before it is used.
private func firstByteArrived(_ buffer: OpaquePointer?, _ info: UnsafePointer<evbuffer_cb_info>?, _ arg: UnsafeMutableRawPointer?) {
    guard let buffer, let info, info.pointee.n_added > 0, let arg else { return }
    let bev = OpaquePointer(arg)
    var cbarg: UnsafeMutableRawPointer?
    bufferevent_getcb(bev, nil, nil, nil, &cbarg)
    guard let cbarg else { return }
    let evcon = OpaquePointer(cbarg)
    guard evhttp_connection_get_bufferevent(evcon) == bev, let http = evhttp_connection_get_server(evcon),
          let worker = ServerWorker.byServer.withLock({ $0[http] }) else { return }
    evbuffer_remove_cb(buffer, firstByteArrived, arg)
    worker.takeUnretainedValue().guardConnection(evcon, bev: bev)
}
