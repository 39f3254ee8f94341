import FingerAuthCore

/// The host's clocks at one moment: the wall clock, and the boot's monotonic clock
/// (CLOCK_BOOTTIME, which counts suspend too) with the boot it belongs to.
package struct GrantClockReading: Equatable, Sendable {
    package var wall: Int64
    package var bootID: String
    package var bootMilliseconds: Int64

    package init(wall: Int64, bootID: String, bootMilliseconds: Int64) {
        self.wall = wall
        self.bootID = bootID
        self.bootMilliseconds = bootMilliseconds
    }
}

/// A grant as the host keeps it (`offline-grant` in the user's state directory, root 0600):
/// the token and the clocks when it arrived.
package struct GrantReceipt: Equatable, Sendable {
    package var token: String
    package var received: GrantClockReading

    package init(token: String, received: GrantClockReading) {
        self.token = token
        self.received = received
    }

    package var json: JSONValue {
        .object([
            ("grant", .string(token)), ("wall", .integer(received.wall)), ("boot_id", .string(received.bootID)),
            ("boot_ms", .integer(received.bootMilliseconds)),
        ])
    }

    /// The grant's claims as written, its signature not checked: enough to show it; a login
    /// verifies it (`OfflineGrant.verified`).
    package var unverifiedGrant: OfflineGrant? {
        unverifiedClaims.flatMap(OfflineGrant.init(claims:))
    }

    /// The grant's `gid`, its signature not checked: it only names the grant to the
    /// authenticator, which says whether that grant still stands.
    package var gid: String? { unverifiedClaims?["gid"]?.stringValue }

    private var unverifiedClaims: JSONValue? {
        (try? CompactJWT(parsing: token, maxBytes: OfflineGrant.maxBytes))?.claims
    }

    package init?(json: JSONValue) {
        guard let token = json["grant"]?.stringValue, let wall = json["wall"]?.int64Value,
            let boot = json["boot_id"]?.stringValue, let ms = json["boot_ms"]?.int64Value
        else { return nil }
        self.init(token: token, received: GrantClockReading(wall: wall, bootID: boot, bootMilliseconds: ms))
    }
}

/// Whether a verified grant may be used now, judged by both clocks: the time since it
/// arrived is the larger of the monotonic time (same boot) and the wall clock's. The wall
/// clock may not be behind the latest time this host saw — the clock floor (`floor`: any
/// online answer, sync or offline login), the grant's arrival and the last offline login
/// (`latestSeen`) — or the grant is refused: after a reboot the monotonic clock starts anew,
/// and a clock set back would otherwise stop the grant's hours. Setting the clock forward
/// only ends the grant sooner.
package enum OfflineJudgement {
    /// The wall time at which the grant stops (for the person's message), or why it cannot be used.
    package static func judge(
        _ grant: OfflineGrant, receipt: GrantClockReading, now: GrantClockReading, latestSeen: Int64,
        floor: Int64 = 0, usesSoFar: Int, service: String
    ) -> Result<Int64, GrantRefusal> {
        guard grant.covers(service: service) else { return .failure(GrantRefusal("grant is not for this service")) }
        guard usesSoFar < grant.uses else {
            return .failure(GrantRefusal("grant used up (\(grant.uses) of \(grant.uses) offline logins)"))
        }
        let seen = max(floor, latestSeen, receipt.wall)
        guard now.wall >= seen else {
            return .failure(GrantRefusal("clock behind the last time this host saw (\(UTCTime.seconds(seen)) UTC)"))
        }
        // The clocks come from files and the kernel: every difference is checked, and one
        // that does not fit refuses.
        let outOfRange = GrantRefusal("clocks out of range")
        let effective = now.wall
        let (wallElapsed, wallOverflow) = effective.subtractingReportingOverflow(receipt.wall)
        guard !wallOverflow else { return .failure(outOfRange) }
        var elapsed = wallElapsed
        if now.bootID == receipt.bootID {
            guard now.bootMilliseconds >= receipt.bootMilliseconds else {
                return .failure(GrantRefusal("monotonic clock behind the grant's arrival"))
            }
            let (monotonic, overflow) = now.bootMilliseconds.subtractingReportingOverflow(receipt.bootMilliseconds)
            guard !overflow else { return .failure(outOfRange) }
            elapsed = max(elapsed, monotonic / 1000)
        }
        guard elapsed < grant.ttlSeconds else { return .failure(GrantRefusal("grant lifetime over")) }
        guard effective < grant.notAfter else { return .failure(GrantRefusal("grant expired")) }
        let (end, overflow) = effective.addingReportingOverflow(grant.ttlSeconds - elapsed)
        return .success(overflow ? grant.notAfter : min(grant.notAfter, end))
    }
}
