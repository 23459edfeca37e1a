import CEvent
import Foundation

/// One host-name lookup through a loop's evdns resolver (loop thread only). The completion gets the chosen
/// address — the first IPv4 one, else the first IPv6 one (a name such as localhost often lists ::1 first, which a
/// server bound to 127.0.0.1 refuses) — valid only during the call, or nil and the reason. After `cancel()` it is
/// never called.
final class DNSLookup {
    private var completion: ((UnsafeMutablePointer<addrinfo>?, String) -> Void)?
    private var request: OpaquePointer?
    private var done = false

    /// A lookup that will hand its answer to `completion`.
    init(completion: @escaping (UnsafeMutablePointer<addrinfo>?, String) -> Void) {
        self.completion = completion
    }

    /// Starts looking `host` up on `dns`.
    func start(dns: OpaquePointer, host: String) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // One-shot: passRetained here, one takeRetainedValue in the callback, which evdns runs exactly once
        // (with the answer, an error, or EVUTIL_EAI_CANCEL after cancel()); possibly before evdns_getaddrinfo returns.
        let arg = Unmanaged.passRetained(self).toOpaque()
        let pending = evdns_getaddrinfo(dns, host, nil, &hints, { result, list, arg in
            guard let arg else { return }
            Unmanaged<DNSLookup>.fromOpaque(arg).takeRetainedValue().finish(result, list)
        }, arg)
        if !done { request = pending }
    }

    /// Cancels the lookup; evdns still runs its callback once, which then does nothing.
    func cancel() {
        completion = nil
        guard !done, let request else { return }
        self.request = nil
        evdns_getaddrinfo_cancel(request)
    }

    private func finish(_ result: Int32, _ list: UnsafeMutablePointer<addrinfo>?) {
        done = true
        request = nil
        defer { if let list { evutil_freeaddrinfo(list) } }
        guard let completion else { return }
        self.completion = nil
        guard result == 0, let list else {
            completion(nil, String(cString: evutil_gai_strerror(result)))
            return
        }
        var chosen: UnsafeMutablePointer<addrinfo>?
        var node: UnsafeMutablePointer<addrinfo>? = list
        while let current = node {
            if current.pointee.ai_family == AF_INET { chosen = current; break }
            if chosen == nil && current.pointee.ai_family == AF_INET6 { chosen = current }
            node = current.pointee.ai_next
        }
        guard let chosen, chosen.pointee.ai_addr != nil else {
            completion(nil, "no address")
            return
        }
        completion(chosen, "")
    }
}
