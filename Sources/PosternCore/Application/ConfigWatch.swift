import FoundationEssentials
import Glibc
import Dispatch

/// `POSTERN_CONFIG_WATCH=1` (docs/api.md, Reloading the config): polls the config file every 2 s on the
/// reloader's queue and reloads when it changed: its modification time, its size, or the file it resolves to.
///
/// The file is looked at through `stat`, which follows symbolic links, so a Kubernetes ConfigMap update is seen:
/// the mounted `dir/postern.json` is a link to `..data/postern.json`, `..data` a link to a timestamped
/// directory, and the update renames a new `..data` link over the old one, after which the same path resolves to
/// another inode.
final class ConfigWatch: @unchecked Sendable {
    /// How often the file is looked at.
    static let interval: DispatchTimeInterval = .seconds(2)

    /// What identifies one version of the file.
    struct Signature: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int

        /// The signature of the file `path` resolves to now; nil when it cannot be read (mid-update: looked at
        /// again at the next poll).
        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modifiedSeconds = info.st_mtim.tv_sec
            modifiedNanoseconds = info.st_mtim.tv_nsec
        }
    }

    private let path: String
    private let reloader: ConfigReloader
    private var timer: DispatchSourceTimer?
    /// The version last seen (reloader's queue only).
    private var seen: Signature?

    /// A watch of `path` (not started).
    init(path: String, reloader: ConfigReloader) {
        self.path = path
        self.reloader = reloader
        seen = Signature(path: path)
    }

    /// Starts polling.
    func start() {
        let timer = DispatchSource.makeTimerSource(queue: reloader.queue)
        timer.schedule(deadline: .now() + ConfigWatch.interval, repeating: ConfigWatch.interval)
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.resume()
        self.timer = timer
    }

    /// Stops polling.
    func stop() {
        timer?.cancel()
        timer = nil
    }

    /// Reloads when the file changed since the last look (on the reloader's queue).
    private func poll() {
        guard let now = Signature(path: path), now != seen else { return }
        seen = now
        _ = reloader.reloadNow(trigger: "watch")
    }
}
