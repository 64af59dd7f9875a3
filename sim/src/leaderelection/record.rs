//! The Lease object and the leader-election record (see the module documentation of `leaderelection`).

use super::*;

// ------------------------------------------------------------------------------------------------
// The Lease object and the election record

/// The spec of a `coordination.k8s.io/v1` Lease (the fields leader election uses). Times are wall
/// readings in µs (see [`crate::clock`]) and serialize as `metav1.MicroTime` does
/// (`2026-01-01T00:00:05.000000Z`); `None` is an unset pointer or the zero time (JSON `null`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LeaseSpec {
    /// `holderIdentity`: the identity of the current holder (empty or unset: none).
    pub holder_identity: Option<String>,
    /// `leaseDurationSeconds`: how long (s) a candidate that saw the record change holds it valid
    /// before it may take the lock.
    pub lease_duration_seconds: Option<i32>,
    /// `acquireTime`: when the current holder acquired the lock (wall µs).
    #[serde(with = "micro_time")]
    pub acquire_time: Option<i64>,
    /// `renewTime`: when the holder last renewed (wall µs, on the holder's clock).
    #[serde(with = "micro_time")]
    pub renew_time: Option<i64>,
    /// `leaseTransitions`: how many times the holder has changed.
    pub lease_transitions: Option<i32>,
}

impl LeaseSpec {
    /// The spec of a stored Lease: the typed value its writer stored, or its JSON parsed (a spec
    /// of `null` is an empty spec). An error is a spec that does not decode.
    pub fn of(obj: &Object) -> Result<LeaseSpec, String> {
        if let Some(spec) = obj.spec.typed::<LeaseSpec>() {
            return Ok(LeaseSpec::clone(&spec));
        }
        match obj.spec.json() {
            serde_json::Value::Null => Ok(LeaseSpec::default()),
            v => serde_json::from_value(v.clone()).map_err(|e| e.to_string()),
        }
    }
}

impl LeaseSpec {
    /// The Lease a write event carries: its name and spec as the write left them, if `event` is
    /// a [`crate::event::Event::KubeWrite`] of a Lease and the server records Lease objects
    /// (`kube.record_objects(LEASE_KIND)`). How a monitor follows the holder from ground truth.
    pub fn written(event: &crate::event::Event) -> Option<(&str, LeaseSpec)> {
        match event {
            crate::event::Event::KubeWrite {
                kind,
                name,
                object: Some(o),
                ..
            } if kind == LEASE_KIND => Some((
                name.as_str(),
                serde_json::from_value(o.spec.clone()).unwrap_or_default(),
            )),
            _ => None,
        }
    }
}

/// Creates a Lease directly in the store (a scenario's initial state, before anything runs).
pub fn seed_lease(kube: &Kube, name: &str, spec: &LeaseSpec) {
    let json = serde_json::to_value(spec).expect("a lease spec serializes");
    kube.seed_object(LEASE_KIND, name, json, serde_json::Value::Null);
}

/// Reads a Lease's spec directly from the store (ground truth for tests and monitors).
pub fn peek_lease(kube: &Kube, name: &str) -> Option<LeaseSpec> {
    kube.peek(LEASE_KIND, name)
        .and_then(|o| LeaseSpec::of(&o).ok())
}

/// client-go's `resourcelock.LeaderElectionRecord` (`interface.go` @cg l. 46-59), without the
/// coordinated-election fields. Times are wall µs; `None` is the zero time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// `HolderIdentity`: the holder's identity (empty: none).
    pub holder_identity: String,
    /// `LeaseDurationSeconds` (0 if unset).
    pub lease_duration_seconds: i32,
    /// `AcquireTime` (wall µs).
    pub acquire_time_us: Option<i64>,
    /// `RenewTime` (wall µs).
    pub renew_time_us: Option<i64>,
    /// `LeaderTransitions` (0 if unset).
    pub leader_transitions: i32,
}

impl LeaderElectionRecord {
    /// `LeaseSpecToLeaderElectionRecord` (`leaselock.go` @cg l. 122-147): unset fields are zero.
    pub fn from_spec(spec: &LeaseSpec) -> Self {
        LeaderElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time_us: spec.acquire_time,
            renew_time_us: spec.renew_time,
            leader_transitions: spec.lease_transitions.unwrap_or(0),
        }
    }

    /// `LeaderElectionRecordToLeaseSpec` (`leaselock.go` @cg l. 149-166): every field set.
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time_us,
            renew_time: self.renew_time_us,
            lease_transitions: Some(self.leader_transitions),
        }
    }

    /// The record as client-go compares it (`observedRawRecord`, `leaderelection.go` @cg l. 487):
    /// `json.Marshal` of the record, whose `metav1.Time`s encode whole seconds (RFC 3339), so two
    /// records whose times differ within one second compare equal.
    pub fn raw(&self) -> RawRecord {
        let secs = |t: Option<i64>| t.map(|us| (EPOCH_UNIX_US + us).div_euclid(1_000_000));
        RawRecord {
            holder_identity: self.holder_identity.clone(),
            lease_duration_seconds: self.lease_duration_seconds,
            acquire_time_s: secs(self.acquire_time_us),
            renew_time_s: secs(self.renew_time_us),
            leader_transitions: self.leader_transitions,
        }
    }
}

/// A record as serialized for comparison (see [`LeaderElectionRecord::raw`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRecord {
    holder_identity: String,
    lease_duration_seconds: i32,
    acquire_time_s: Option<i64>,
    renew_time_s: Option<i64>,
    leader_transitions: i32,
}

/// `metav1.MicroTime` as JSON: RFC 3339 with microseconds, UTC, `null` for the zero time.
mod micro_time {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(us) => s.serialize_str(&format_rfc3339(*us)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) => parse_rfc3339(&s)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {s:?}"))),
        }
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)` into a wall reading (µs relative to
/// [`EPOCH_UNIX_US`]); digits beyond microseconds are truncated. Only UTC is accepted (the API
/// server writes UTC).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut micros = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for (i, c) in frac[..digits].bytes().enumerate().take(6) {
            micros += (c - b'0') as i64 * 10i64.pow(5 - i as u32);
        }
        rest = &frac[digits..];
    }
    if rest != "Z" && rest != "+00:00" {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let unix_us = ((days * 86_400 + h * 3600 + mi * 60 + sec) * 1_000_000) + micros;
    Some(unix_us - EPOCH_UNIX_US)
}

/// What an elector knows and believes, at one instant (see [`LeaderElector::snapshot`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The context `OnStartedLeading` received is live: code guarded by the lease may run. It
    /// ends when the renew loop gives up (after the release, if `release_on_cancel`), or at once
    /// on [`LeaderElector::stop`].
    pub leading: bool,
    /// It has led during this run.
    pub led: bool,
    /// `Run` has returned and `OnStoppedLeading` has been called (even if it never led).
    pub stopped: bool,
    /// `IsLeader()` (l. 246-248): the last observed record names this identity. It can turn false
    /// (a read showed another holder) while `leading` is still true.
    pub is_leader: bool,
    /// The last observed record and when it was observed (this node's monotonic µs).
    pub observed: LeaderElectionRecord,
    /// When `observed` was last set (this node's monotonic clock, µs): the lease is valid until
    /// this plus the observed record's `lease_duration_seconds`.
    pub observed_time_mono_us: u64,
    /// The last leader reported to `OnNewLeader` (empty before the first).
    pub reported_leader: String,
    /// `tryAcquireOrRenew` calls so far (each try of acquire, each try of a renew round).
    pub tries: u64,
    /// When its last acquire or renewal succeeded (this node's monotonic clock, µs; `None`
    /// before the first).
    pub last_renew_mono_us: Option<u64>,
}
