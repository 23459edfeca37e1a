import Foundation
@testable import PosternCore

/// Config loading from arbitrary JSON and environment values: never crashes; a config that loads
/// gives resource mappers that serve a default list query and render a minimal item.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let json = Fuzz.data(bytes, size)
    check(PosternConfig.load(json: json, environment: [:]))
    // The same bytes as the value of every environment override, over the shipped defaults.
    let text = Fuzz.string(bytes, size)
    for (variable, _) in PosternConfig.environmentOverrides {
        check(PosternConfig.load(json: nil, environment: [variable: text]))
    }
    return 0
}

private func check(_ result: Result<PosternConfig, ConfigError>) {
    switch result {
    case .failure(let error):
        Fuzz.check(!error.problems.isEmpty, "failure without a problem")
        _ = error.description
    case .success(let config):
        Fuzz.check(config.problems().isEmpty, "loaded config has problems: \(config.problems())")
        for resource in config.resources {
            let mapper = ResourceMapper(resource)
            Fuzz.check((try? mapper.listQuery([])) != nil, "default list query fails for \(resource.name)")
            _ = try? mapper.renderer.renderItem(directusBody: Data(#"{"data":{"id":1}}"#.utf8))
            _ = mapper.upstreamItemPath(id: "1")
        }
    }
}
