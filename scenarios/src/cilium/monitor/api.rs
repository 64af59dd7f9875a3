//! The monitor's copy of what the API server stored: every version of every CiliumNode, read from
//! the simulated API server (`sim::kube::Kube::peek`, ground truth) when its `KubeWrite` event
//! comes, so that a decision that names the resourceVersion it was made on can be checked
//! against what that version really held.
//!
//! Independence: reads the model's `Status` type (the typed status part a writer stored) and the
//! JSON of a part stored as JSON, field by field; calls no model function.

use model::cilium::Status;
use sim::kube::{Body, Kube};
use sim::Short;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The API server, once the scenario's deployment has installed it.
pub(crate) type ApiSlot = Rc<RefCell<Option<Kube>>>;

/// `status.ipam.used` of a version: its IPs, in order.
pub(super) type Used = Rc<[Short]>;
/// `status.ipam.release-ips` of a version: (IP, state), in IP order.
pub(super) type ReleaseIps = Rc<[(Short, Short)]>;

/// One stored version of a CiliumNode: what the checks read of it (shared with the previous
/// version when unchanged, so that a run's history stays small).
pub(super) struct Version {
    /// When it was written (true µs).
    pub(super) t_us: u64,
    /// Who wrote it (`host:pid`).
    pub(super) client: sim::event::Text,
    /// Whether the write was a status write (not a spec write, which keeps the status).
    pub(super) status_write: bool,
    used: Used,
    release_ips: ReleaseIps,
}

/// Every stored version of each node's CiliumNode (versions before the first write are the
/// scenario's seeded object, whose status is empty).
pub(super) struct ApiView {
    slot: ApiSlot,
    /// Per node index: resourceVersion -> the version.
    versions: Vec<BTreeMap<u64, Version>>,
    empty: ReleaseIps,
}

impl Version {
    /// How many IPs its `status.ipam.used` lists.
    pub(super) fn used_count(&self) -> usize {
        self.used.len()
    }
}

impl ApiView {
    pub(super) fn new(nodes: usize) -> Self {
        ApiView {
            slot: ApiSlot::default(),
            versions: (0..nodes).map(|_| BTreeMap::new()).collect(),
            empty: Rc::new([]),
        }
    }

    /// The slot the scenario fills with the API server it installs.
    pub(super) fn slot(&self) -> ApiSlot {
        self.slot.clone()
    }

    /// Records the version `rv` of node `i`'s CiliumNode (named `name`) just written.
    pub(super) fn on_write(
        &mut self,
        i: usize,
        name: &str,
        rv: u64,
        part: &str,
        t_us: u64,
        client: &sim::event::Text,
    ) {
        let slot = self.slot.borrow();
        let Some(obj) = slot
            .as_ref()
            .and_then(|k| k.peek(model::cilium::KIND, name))
        else {
            return;
        };
        if obj.rv != rv {
            return; // a later write already replaced it (never within one event)
        }
        let prev = self.versions[i].values().next_back();
        let used = used(&obj.status);
        let used = match prev {
            Some(p) if *p.used == *used => p.used.clone(),
            _ => used.into(),
        };
        let release_ips = release_ips(&obj.status);
        let release_ips = match prev {
            Some(p) if *p.release_ips == *release_ips => p.release_ips.clone(),
            _ => release_ips.into(),
        };
        let status_write = part == "status";
        let client = client.clone();
        let v = Version {
            t_us,
            client,
            status_write,
            used,
            release_ips,
        };
        self.versions[i].insert(rv, v);
    }

    /// The version `rv` of node `i` (none: the seeded object, or an unknown version).
    pub(super) fn version(&self, i: usize, rv: u64) -> Option<&Version> {
        self.versions[i].get(&rv)
    }

    /// The last status write of node `i` at or before `t_us`: (time, writer).
    pub(super) fn last_status_write(&self, i: usize, t_us: u64) -> Option<(u64, &str)> {
        self.versions[i]
            .values()
            .filter(|v| v.status_write && v.t_us <= t_us)
            .max_by_key(|v| v.t_us)
            .map(|v| (v.t_us, v.client.as_str()))
    }

    /// Whether `status.ipam.used` of node `i` at version `rv` lists `ip` (the seeded object's
    /// is empty).
    pub(super) fn used_at(&self, i: usize, rv: u64, ip: &Short) -> bool {
        self.version(i, rv)
            .is_some_and(|v| v.used.binary_search(ip).is_ok())
    }

    /// The state of `ip` in `status.ipam.release-ips` of node `i` at version `rv` (the seeded
    /// object's is empty).
    pub(super) fn release_state_at(&self, i: usize, rv: u64, ip: &Short) -> Option<Short> {
        let v = self.version(i, rv)?;
        let k = v.release_ips.binary_search_by(|(x, _)| x.cmp(ip)).ok()?;
        Some(v.release_ips[k].1)
    }

    /// `status.ipam.release-ips` of node `i` as the API server holds it now.
    pub(super) fn release_ips_now(&self, i: usize) -> ReleaseIps {
        self.versions[i]
            .values()
            .next_back()
            .map_or_else(|| self.empty.clone(), |v| v.release_ips.clone())
    }
}

/// The IPs of a status part's `used` map, in order.
fn used(body: &Body) -> Vec<Short> {
    if let Some(st) = body.typed::<Status>() {
        return st.used.keys().copied().collect();
    }
    let mut v = keys(&body.json()["used"]);
    v.sort();
    v
}

/// A status part's `release_ips` map, in IP order.
fn release_ips(body: &Body) -> Vec<(Short, Short)> {
    if let Some(st) = body.typed::<Status>() {
        return st.release_ips.iter().map(|(a, b)| (*a, *b)).collect();
    }
    let Some(m) = body.json()["release_ips"].as_object() else {
        return Vec::new();
    };
    let mut v: Vec<(Short, Short)> = m
        .iter()
        .filter_map(|(ip, s)| Some((Short::new(ip).ok()?, Short::new(s.as_str()?).ok()?)))
        .collect();
    v.sort();
    v
}

/// The keys of a JSON object (none if it is not one).
fn keys(v: &serde_json::Value) -> Vec<Short> {
    v.as_object()
        .map(|m| m.keys().filter_map(|k| Short::new(k).ok()).collect())
        .unwrap_or_default()
}
