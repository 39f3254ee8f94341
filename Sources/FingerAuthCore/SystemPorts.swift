/// Seconds since the epoch (the login side's grant clock, the authenticator's request time).
package protocol Clock {
    func now() -> Int64
}

/// Random bytes (a `jti`, a challenge); nil when none could be had.
package protocol RandomSource {
    func bytes(_ count: Int) -> [UInt8]?
}
