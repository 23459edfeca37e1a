import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PosternIO

extension SessionsConfig {
    /// The TLS context of a `rediss://` store (docs/api.md, Several instances (Redis)): it verifies the server
    /// against `redis_ca_file`, else the system's trust store, and presents `redis_cert_file`/`redis_key_file`
    /// when set. Nil for a `redis://` store or any other. Throws a one-line reason naming the file.
    func redisTLSContext() throws(TLSSetupError) -> TLSClientContext? {
        guard redisURL?.tls == true else { return nil }
        return try TLSClientContext(trusting: redisCAFile, certificateFile: redisCertFile, keyFile: redisKeyFile)
    }

    /// The problems of the Redis TLS files, each by its key path: set without a `rediss://` store, unreadable,
    /// a certificate without its key (or the reverse), or files OpenSSL cannot use (not PEM, a key that does
    /// not match the certificate).
    func redisTLSProblems() -> [ConfigProblem] {
        let files = [("sessions.redis_ca_file", redisCAFile), ("sessions.redis_cert_file", redisCertFile),
                     ("sessions.redis_key_file", redisKeyFile)]
        var problems: [ConfigProblem] = []
        let tls = redisURL?.tls == true
        for case let (key, path?) in files {
            if !tls {
                problems.append(ConfigProblem(path: key, message: "is set, but sessions.store is not a rediss:// URL"))
            } else if let why = SessionsConfig.unreadable(path) {
                problems.append(ConfigProblem(path: key, message: "cannot read \(path) (\(why))"))
            }
        }
        if (redisCertFile == nil) != (redisKeyFile == nil) {
            let (key, other) = redisCertFile == nil ? ("sessions.redis_key_file", "sessions.redis_cert_file")
                : ("sessions.redis_cert_file", "sessions.redis_key_file")
            let variable = PosternConfig.environmentOverrides.first { $0.key == other }?.variable ?? other
            problems.append(ConfigProblem(path: key, message: "needs \(other) (\(variable)) too (a client certificate and its key)"))
        }
        guard tls, problems.isEmpty else { return problems }
        // The files are there: can OpenSSL use them?
        do throws(TLSSetupError) {
            _ = try TLSClientContext(trusting: redisCAFile, certificateFile: nil, keyFile: nil)
        } catch {
            return [ConfigProblem(path: "sessions.redis_ca_file", message: error.description)]
        }
        do throws(TLSSetupError) {
            _ = try redisTLSContext()
        } catch {
            return [ConfigProblem(path: "sessions.redis_cert_file", message: error.description)]
        }
        return []
    }

    /// Why `path` cannot be read as a file, or nil when it can.
    private static func unreadable(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return "not a file" }
        guard access(path, R_OK) == 0 else { return String(cString: strerror(errno)) }
        return nil
    }
}
