import Foundation
import Testing
@testable import PosternCore

/// What a reload compares (docs/api.md, Reloading the config): the restart-only keys, the keys applied at the next
/// start, the pool keys, and the watch's switch.
struct ConfigReloadRulesTests {
    @Test(arguments: PosternConfig.restartOnlyKeys)
    func eachRestartOnlyKeyIsNamed(_ key: String) {
        let running = PosternConfig()
        var next = running
        switch key {
        case "listen": next.listen = "0.0.0.0:9999"
        case "admin_listen": next.adminListen = "127.0.0.1:9999"
        case "workers": next.workers = 7
        case "sessions.redis_ca_file": next.sessions.redisCAFile = "/etc/redis/ca.pem"
        case "sessions.redis_cert_file": next.sessions.redisCertFile = "/etc/redis/client.pem"
        case "sessions.redis_key_file": next.sessions.redisKeyFile = "/etc/redis/client.key"
        default: next.sessions.store = "memory"
        }
        next.cors.maxAgeSeconds = 1  // a reloadable change beside it does not hide it
        #expect(running.restartOnlyChanges(to: next) == [key])
    }

    @Test func reloadableChangesNameNoRestartKey() {
        let running = PosternConfig()
        var next = running
        next.resources[0].fields[1] = ("name", "title")
        next.directus.url = "http://directus.internal:8055"
        next.admin.token = "another-admin-token-0123"
        #expect(running.restartOnlyChanges(to: next).isEmpty)
        #expect(running.changedSections(to: next) == ["admin", "directus", "resources"])
        #expect(running.needsNewPool(next))
        var timeoutOnly = running
        timeoutOnly.directus.timeoutMs = 1
        #expect(!running.needsNewPool(timeoutOnly), "a timeout is the client's, not the pool's")
    }

    @Test func sessionLifetimesAndListenerTimeoutsApplyAtTheNextStart() {
        let running = PosternConfig()
        var next = running
        next.sessions.idleTTLSeconds = 60
        next.limits.inactivityTimeoutSeconds = 3
        next.limits.maxBodyBytes = 10
        #expect(running.appliedAtRestart(to: next) == ["sessions.idle_ttl_s", "limits.inactivity_timeout_s"])
    }

    @Test(arguments: [("1", true), ("true", true), ("YES", true), (" 1 ", true), ("0", false), ("", false), ("on", false)])
    func theWatchIsOnFor(_ value: String, _ on: Bool) {
        #expect(ConfigSource.watchRequested(["POSTERN_CONFIG_WATCH": value]) == on)
        #expect(!ConfigSource.watchRequested([:]))
    }
}
