import FoundationEssentials
import PosternHTTP

extension RequestID {
    /// A request's `tracestate` as one list: its lines joined by commas, in the order they came (W3C Trace Context
    /// §3.3.1: a list split over several header lines is combined as one), the empty ones left out; nil without one.
    static func traceState(_ headers: HTTPHeaders) -> String? {
        let lines = headers.values("tracestate")
        if lines.count < 2 { return lines.first }
        let kept = lines.filter { !$0.isEmpty }
        return kept.isEmpty ? "" : kept.joined(separator: ",")
    }
}
