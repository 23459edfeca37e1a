import FoundationEssentials
import PosternHTTP

/// The page of a list read and its `meta`, as Directus 11 answers them, for the items routes and the relational
/// reads alike.
extension DirectusStandIn {
    /// The rows of `count` selected ones a read returns: `limit` of them (100 by default, -1 for all) from
    /// `offset`, or from the start of the 1-based `page` when one is given.
    static func window(count: Int, limit: Int?, offset: Int?, page: Int?) -> Range<Int> {
        let limit = limit ?? 100
        if limit == -1 { return 0..<count }
        var offset = offset ?? 0
        if let page, page > 0, limit > 0 { offset = limit * (page - 1) }
        let start = min(offset, count)
        return start..<min(start + limit, count)
    }

    /// The `meta` members asked for in `wanted`: `total_count` (the rows the caller may see) and `filter_count`
    /// (those the filter and search left).
    static func meta(_ wanted: [String], total: Int, filtered: Int) -> [(String, JSONValue)] {
        var meta: [(String, JSONValue)] = []
        if wanted.contains("total_count") { meta.append(("total_count", .int(Int64(total)))) }
        if wanted.contains("filter_count") { meta.append(("filter_count", .int(Int64(filtered)))) }
        return meta
    }
}
