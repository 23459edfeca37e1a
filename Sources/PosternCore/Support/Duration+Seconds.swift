/// Durations as plain numbers, for metrics and logs.
extension Duration {
    /// The duration in seconds, with its fractional part.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
