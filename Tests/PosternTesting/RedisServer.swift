import Foundation
import Synchronization

/// A real `redis-server` for the Redis tests: 127.0.0.1 on a free port, its own temporary directory, no
/// persistence (`--save '' --appendonly no`), optionally a password. It can be stopped and started again on the
/// same port (outage tests) and always stops when it goes away. No mock Redis.
///
/// A missing `redis-server` is an error, never a skip: `make deps` installs it, and CI runs that first.
package final class RedisServer: @unchecked Sendable {
    /// Why the server could not start.
    package struct Failure: Error, CustomStringConvertible {
        /// What failed.
        package let description: String
    }

    /// The port it listens on (the same after `restart()`).
    package let port: Int
    /// The password it requires, if any.
    package let password: String?
    /// Its scratch directory (configuration, data).
    package let directory: URL
    /// Whether it writes every change to an append-only file (kept across `restart()`).
    package let persistent: Bool
    /// The TLS port (`--tls-port`, the same after `restart()`), when started with `tls`.
    package let tlsPort: Int?
    /// TLS settings of a server that also listens with TLS (`--tls-port`).
    package struct TLS: Sendable {
        /// Its certificate, key and the CA that verifies client certificates.
        package var certificates: TestCertificates
        /// `--tls-auth-clients yes`: a client must present a certificate signed by the CA.
        package var requireClientCertificate = false
        /// TLS settings with these certificates.
        package init(certificates: TestCertificates, requireClientCertificate: Bool = false) {
            self.certificates = certificates
            self.requireClientCertificate = requireClientCertificate
        }
    }
    /// Options beyond the port, password and persistence (TLS, ACL users), the same on every start.
    private let extraArguments: [String]
    private let executable: String
    private let lock = NSLock()
    private var process: pid_t?

    /// Starts a server; throws when redis-server is missing or does not come up. A `persistent` server
    /// writes every change to an append-only file in its directory (fsync always), so data survives `restart()`.
    /// With `tls`, it also listens with TLS on `tlsPort`. Each of `users` is an ACL rule set as `--user` takes
    /// it, e.g. `"app on >secret ~* &* +@all"`.
    package init(password: String? = nil, persistent: Bool = false, tls: TLS? = nil, users: [String] = []) throws {
        self.persistent = persistent
        var extra: [String] = []
        for user in users { extra += ["--user"] + user.split(separator: " ").map(String.init) }
        if let tls {
            let port = try RedisServer.freePort()
            tlsPort = port
            extra += ["--tls-port", String(port), "--tls-cert-file", tls.certificates.serverCertificateFile,
                      "--tls-key-file", tls.certificates.serverKeyFile, "--tls-ca-cert-file", tls.certificates.caFile,
                      "--tls-auth-clients", tls.requireClientCertificate ? "yes" : "no"]
        } else {
            tlsPort = nil
        }
        extraArguments = extra
        guard let executable = RedisServer.findExecutable() else {
            throw Failure(description: "redis-server is not installed: run `make deps` (it installs redis-server)")
        }
        self.executable = executable
        self.password = password
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A free port can be taken by someone else between the probe and redis-server's bind: try a few.
        var lastFailure: Error = Failure(description: "no free port")
        for _ in 0..<5 {
            let candidate = try RedisServer.freePort()
            do {
                process = try RedisServer.launch(executable: executable, port: candidate, password: password, directory: directory,
                                                persistent: persistent, extra: extra)
                port = candidate
                return
            } catch let failure as Failure where failure.description.contains("Address already in use") {
                lastFailure = failure
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastFailure
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// `redis://[:password@]127.0.0.1:port/db`.
    package func url(database: Int = 0, password: String? = nil) -> String {
        let secret = password ?? self.password
        let credentials = secret.map { ":\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)@" } ?? ""
        return "redis://\(credentials)127.0.0.1:\(port)/\(database)"
    }

    /// `rediss://[user:password@]localhost:tlsPort/db`, the credentials as written (no `/` in them); the server's
    /// certificate is for `localhost` and 127.0.0.1.
    package func tlsURL(user: String? = nil, password: String? = nil, host: String = "localhost", database: Int = 0) -> String {
        var credentials = ""
        if let password { credentials = "\(user ?? ""):\(password)@" }
        return "rediss://\(credentials)\(host):\(tlsPort ?? 0)/\(database)"
    }

    /// Every server still running, stopped at exit should a test have leaked one (a hung task holding it).
    private static let running = Mutex<Set<pid_t>>([])
    private static let stopAtExit: Void = {
        atexit {
            for pid in RedisServer.running.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
    }()

    /// The process id while running.
    package var pid: pid_t? { lock.withLock { process } }

    /// Stops the server (SIGTERM to its pid) and waits for it to exit; no-op when stopped.
    package func stop() {
        let running = lock.withLock { () -> pid_t? in
            defer { process = nil }
            return process
        }
        guard let pid = running else { return }
        _ = RedisServer.running.withLock { $0.remove(pid) }
        kill(pid, SIGCONT)  // in case a test left it frozen
        kill(pid, SIGTERM)
        // A hang detector only: redis-server without persistence exits within its next cron tick on SIGTERM.
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: watchdog)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        watchdog.cancel()
    }

    /// Starts it again on the same port (after `stop()`).
    package func restart() throws {
        stop()
        let started = try RedisServer.launch(executable: executable, port: port, password: password, directory: directory,
                                              persistent: persistent, extra: extraArguments)
        lock.withLock { process = started }
    }

    /// Runs one command with `redis-cli` on the plain port (as the default user) and returns what it printed.
    @discardableResult
    package func cli(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-h", "127.0.0.1", "-p", String(port)] + (password.map { ["-a", $0, "--no-auth-warning"] } ?? [])
            + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "redis-cli \(arguments): \(text)") }
        return text
    }

    /// Freezes the server (SIGSTOP): connections stay open but nothing is answered.
    package func pause() { if let pid { kill(pid, SIGSTOP) } }

    /// Lets a frozen server run again (SIGCONT).
    package func resume() { if let pid { kill(pid, SIGCONT) } }

    // MARK: Launching

    /// Spawns redis-server and returns its pid once it is ready. posix_spawn rather than Foundation's Process:
    /// the test threads block most signals and Process passes that mask on, so redis-server would never see
    /// SIGTERM; here the child starts with no signal blocked and default handlers.
    private static func launch(executable: String, port: Int, password: String?, directory: URL, persistent: Bool,
                               extra: [String]) throws -> pid_t {
        var arguments = ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "",
                         "--appendonly", persistent ? "yes" : "no", "--appendfsync", "always",
                         "--dir", directory.path, "--daemonize", "no", "--logfile", "", "--hz", "50"]
        if let password { arguments += ["--requirepass", password] }
        arguments += extra
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure(description: "pipe failed") }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        // Not inherited by other children spawned meanwhile (dup2 below clears the flag on the child's 1 and 2).
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
        // Nothing else of this process is inherited: a redis-server holding a copy of another test's socket
        // would keep that connection open after the test closed it.
        closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        // Ready when it logs so (the event), or failed when it exits first; its log goes on being drained.
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(20)  // a hang detector only
        func fail(_ why: String) -> Failure {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            close(readEnd)
            return Failure(description: "\(why):\n\(text)")
        }
        while !text.contains("Ready to accept connections") {
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let wait = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard wait > 0, poll(&poller, 1, wait) > 0 else { throw fail("redis-server did not start in time") }
            let count = read(readEnd, &buffer, buffer.count)
            guard count > 0 else { throw fail("redis-server exited") }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        let drain = Thread {
            var sink = [UInt8](repeating: 0, count: 4096)
            while read(readEnd, &sink, sink.count) > 0 {}
            close(readEnd)
        }
        drain.start()
        guard ping(port: port) else {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw Failure(description: "redis-server on port \(port) does not answer PING:\n\(text)")
        }
        RedisServer.stopAtExit
        _ = running.withLock { $0.insert(pid) }
        return pid
    }

    /// Adds "close every descriptor from 3 up" to `actions`: glibc's posix_spawn_file_actions_addclosefrom_np
    /// (2.34+, not exported to Swift without _GNU_SOURCE), else one close per descriptor open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, 3) == 0 { return }
        }
        // glibc ignores a close action on a descriptor that is no longer open by then.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// True when a server answers `PING` on the port (`+PONG`, or `-NOAUTH` when it wants a password).
    package static func ping(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("PING\r\n".utf8)
        guard write(fd, request, request.count) == request.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return false }
        let answer = String(decoding: buffer[0..<count], as: UTF8.self)
        return answer.hasPrefix("+PONG") || answer.hasPrefix("-NOAUTH")
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "cannot bind a probe socket") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func findExecutable() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        return directories.map { "\($0)/redis-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
