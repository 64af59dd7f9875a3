//! The Cilium operator's ENI pool maintenance (spec/cilium.md, "Operator").
//!
//! An informer caches every CiliumNode. Maintenance runs on a 1-minute resync of every node, and
//! in between for a node whose update shows it short of IPs (upstream `UpdatedResource` triggers
//! that node's pool maintainer, not the others'): it folds the agent's answers into its in-memory
//! handshake state, assigns IPs when a node is below `pre-allocate` free, and for the IPs in
//! excess:
//! * skips those seen as excess for less than `excess-ip-release-delay` (180 s on its monotonic
//!   clock: Go's `time.Since`);
//! * no answer yet: marks them `marked-for-release`;
//! * `ready-for-release`: unassigns them in the cloud and marks them `released`;
//! * `do-not-release`: drops their state (they are re-timed if still excess later);
//! * no longer excess: drops their entry (abort), unless already released.
//!
//! Each cycle starts by re-reading the node's interfaces from the cloud (the instance resync): the
//! pool follows what the cloud says, and an IP in the handshake that the cloud no longer holds (an
//! unassign whose answer was lost) counts as released.
//!
//! Then it writes the status (its `release-ips`), then the spec (the pool), each tried twice, each
//! from a fresh read. A restart loses every timer and state; the first status write then rebuilds
//! `release-ips` from nothing. A standby instance only acts while it believes it leads.

use super::*;
use sim::cloud::{eni_name, Cloud, CloudClient, CloudError};
use sim::kube::{Body, Kube, KubeClient, KubeError, Part, WatchEvent};
use sim::sync::Notify;
use sim::world::Host;
use sim::{Event, NodeIx, Proc, World};
use std::cell::RefCell;
use std::rc::Rc;

/// Operator settings.
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// The nodes (CiliumNode names) it maintains.
    pub nodes: Vec<String>,
    /// `pre-allocate`.
    pub pre_allocate: usize,
    /// `max-above-watermark`.
    pub max_above_watermark: usize,
    /// `excess-ip-release` enabled.
    pub release_excess: bool,
    /// Interfaces per node and their capacity.
    pub enis: u32,
    pub eni_capacity: u32,
    /// Only act while the node is activated (a standby instance).
    pub standby: bool,
    pub switches: Switches,
}

#[derive(Default)]
struct State {
    /// node -> IPs of unassigns whose outcome is unknown.
    uncertain: BTreeMap<Short, BTreeSet<Short>>,
    observed: BTreeMap<Short, Rc<Observed>>,
    release: BTreeMap<Short, BTreeMap<Short, Short>>,
    first_seen: BTreeMap<Short, BTreeMap<Short, u64>>,
    /// Nodes seen short of IPs since the last pass (their pool maintainer was triggered).
    short: BTreeSet<Short>,
}

/// A CiliumNode as the operator last saw it, each part parsed when first needed (most versions
/// are superseded before a maintenance pass looks at them) and carried over to the next version
/// when that version shares the part (a status write keeps the spec).
struct Observed {
    obj: Rc<sim::kube::Object>,
    spec: std::cell::OnceCell<Rc<Spec>>,
    status: std::cell::OnceCell<Rc<Status>>,
}

impl Observed {
    fn of(obj: Rc<sim::kube::Object>, prev: Option<&Observed>) -> Rc<Observed> {
        let o = Observed {
            obj,
            spec: Default::default(),
            status: Default::default(),
        };
        if let Some(p) = prev {
            if let Some(s) = p
                .spec
                .get()
                .filter(|_| Rc::ptr_eq(&p.obj.spec, &o.obj.spec))
            {
                let _ = o.spec.set(s.clone());
            }
            if let Some(s) = p
                .status
                .get()
                .filter(|_| Rc::ptr_eq(&p.obj.status, &o.obj.status))
            {
                let _ = o.status.set(s.clone());
            }
        }
        Rc::new(o)
    }

    fn spec(&self) -> &Spec {
        self.spec.get_or_init(|| spec_of(&self.obj))
    }

    fn status(&self) -> &Status {
        self.status.get_or_init(|| status_of(&self.obj))
    }

    /// Fewer free IPs than `pre_allocate` (counted without parsing a part written as JSON).
    fn short(&self, pre_allocate: usize) -> bool {
        let len = |v: &serde_json::Value| v.as_object().map_or(0, |m| m.len());
        let (spec, status) = (&self.obj.spec, &self.obj.status);
        let pool = spec
            .typed::<Spec>()
            .map_or_else(|| len(&spec["pool"]), |s| s.pool.len());
        let used = status
            .typed::<Status>()
            .map_or_else(|| len(&status["used"]), |s| s.used.len());
        pool.saturating_sub(used) < pre_allocate
    }
}

struct Operator {
    proc: Proc,
    kube: KubeClient,
    cloud: CloudClient,
    cfg: Rc<OperatorConfig>,
    /// The interfaces' names, `eni-0` .. (made once, not per pass).
    enis: Rc<[Short]>,
    state: RefCell<State>,
    trigger: Notify,
}

/// Installs an operator instance as the services of `node`.
pub fn install(world: &World, node: NodeIx, kube: &Kube, cloud: &Cloud, cfg: OperatorConfig) {
    let enis: Rc<[Short]> = (0..cfg.enis).map(eni_name).collect();
    let (kube, cloud, cfg) = (kube.clone(), cloud.clone(), Rc::new(cfg));
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            // The deployment's supervisor: restart the operator (new pid, empty state) when it dies.
            let sup = host.spawn_process("supervisor");
            let (k, c, cfg, s) = (kube.clone(), cloud.clone(), cfg.clone(), sup.clone());
            let enis = enis.clone();
            sup.spawn("restart", async move {
                loop {
                    let proc = s.spawn_child("cilium-operator");
                    let op = Rc::new(Operator {
                        kube: k.client(&proc),
                        cloud: c.client(&proc),
                        proc: proc.clone(),
                        cfg: cfg.clone(),
                        enis: enis.clone(),
                        state: RefCell::default(),
                        trigger: Notify::new(),
                    });
                    let o = op.clone();
                    proc.spawn("informer", async move { o.informer().await });
                    proc.spawn("maintenance", async move { op.maintenance().await });
                    proc.wait_exit().await;
                    s.sleep(Duration::from_secs(2)).await;
                }
            });
        }),
    );
}

/// The instance resync's two differences between the pool and the cloud's interfaces: the pool's
/// IPs the cloud no longer holds, and the (IP, interface) pairs the cloud holds that the pool
/// lacks, each in IP order. (An IP is on at most one interface: the cloud never hands out an
/// address twice.) One walk over the sorted lists instead of a set lookup per IP per interface.
fn resync(
    pool: &BTreeMap<Short, Short>,
    ifs: &sim::cloud::Interfaces,
) -> (Vec<Short>, Vec<(Short, Short)>) {
    // The interfaces' IP sets merged in IP order (each set is sorted already); were an IP on two
    // interfaces, the first interface by name would count, as a lookup in interface order finds.
    let mut heads: Vec<_> = ifs
        .iter()
        .map(|(eni, ips)| (*eni, ips.iter().peekable()))
        .collect();
    let held = std::iter::from_fn(move || {
        let mut min: Option<(Short, Short)> = None;
        for (eni, ips) in &mut heads {
            if let Some(&&ip) = ips.peek() {
                if min.is_none_or(|m| ip < m.0) {
                    min = Some((ip, *eni));
                }
            }
        }
        let (ip, _) = min?;
        for (_, ips) in &mut heads {
            ips.next_if_eq(&&ip);
        }
        min
    });
    let (mut gone, mut new) = (Vec::new(), Vec::new());
    let mut held = held.peekable();
    for ip in pool.keys() {
        while let Some(h) = held.next_if(|h| h.0 < *ip) {
            new.push(h);
        }
        if held.next_if(|h| h.0 == *ip).is_none() {
            gone.push(*ip);
        }
    }
    new.extend(held);
    (gone, new)
}

/// Folds the agent's answers in an observed `release-ips` into the operator's local handshake
/// state (IP -> state): an IP the operator holds as `marked-for-release` takes the agent's
/// `ready-for-release` or `do-not-release`, and a `released` IP whose entry the agent has removed
/// is forgotten (upstream: the reads of `handleIPReleaseResponse`, and `removeStaleReleaseIPs`).
pub fn fold_answers(local: &mut BTreeMap<Short, Short>, observed: &BTreeMap<Short, Short>) {
    for (ip, s) in observed {
        if local.get(ip).map(Short::as_str) == Some(MARKED) && (*s == READY || *s == DO_NOT_RELEASE)
        {
            local.insert(*ip, *s);
        }
    }
    local.retain(|ip, s| *s != RELEASED || observed.contains_key(ip));
}

/// What one maintenance pass's release step decided for a node ([`release_step`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReleaseStep {
    /// Handshake entries dropped because their IP is no longer excess, in IP order.
    pub aborted: Vec<Short>,
    /// IPs newly set to `marked-for-release`, in candidate order.
    pub marked: Vec<Short>,
    /// IPs to unassign: (IP, the handshake state seen, µs the IP has been excess), in candidate
    /// order.
    pub to_release: Vec<(Short, String, u64)>,
}

/// The release step of a maintenance pass for one node, on the operator's local handshake state
/// (`local`: IP -> state) and first-seen-excess times (`seen`: IP -> µs on its monotonic clock):
/// `candidates` are this pass's excess IPs ([`excess_ips`]), `uncertain` the IPs of unassigns
/// whose outcome is unknown (fix `cilium-hold-unknown-release`), `now` the pass's time and
/// `delay_us` the `excess-ip-release-delay`.
/// * times are dropped for IPs no longer excess; handshake entries of IPs no longer excess are
///   dropped (aborted) unless `released` or uncertain;
/// * a candidate excess for less than the delay waits; then with no entry it is marked, when
///   `ready-for-release` it is to be unassigned, when `do-not-release` its entry and time go.
///
/// With `no_handshake` (bug `cilium-no-handshake`) nothing is aborted or marked: every candidate
/// excess for the delay is to be unassigned.
pub fn release_step(
    local: &mut BTreeMap<Short, Short>,
    seen: &mut BTreeMap<Short, u64>,
    candidates: &[Short],
    uncertain: Option<&BTreeSet<Short>>,
    now: u64,
    delay_us: u64,
    no_handshake: bool,
) -> ReleaseStep {
    let mut step = ReleaseStep::default();
    seen.retain(|ip, _| candidates.contains(ip));
    if !no_handshake {
        step.aborted = local
            .iter()
            .filter(|(ip, s)| {
                !candidates.contains(*ip)
                    && **s != RELEASED
                    && !uncertain.is_some_and(|u| u.contains(*ip))
            })
            .map(|(ip, _)| *ip)
            .collect();
        for ip in &step.aborted {
            local.remove(ip);
        }
    }
    for ip in candidates {
        let since = *seen.entry(*ip).or_insert(now);
        if now - since < delay_us {
            continue;
        }
        if no_handshake {
            step.to_release.push((*ip, String::new(), now - since));
            continue;
        }
        match local.get(ip).map(Short::as_str) {
            None => {
                local.insert(*ip, Short::lit(MARKED));
                step.marked.push(*ip);
            }
            Some(READY) => step.to_release.push((*ip, READY.into(), now - since)),
            Some(DO_NOT_RELEASE) => {
                local.remove(ip);
                seen.remove(ip);
            }
            _ => {}
        }
    }
    step
}

/// A CiliumNode's name as a map key (node names are short).
fn key(name: &str) -> Short {
    Short::new(name).expect("CiliumNode names (node names) fit a Short")
}

impl Operator {
    fn now_us(&self) -> u64 {
        self.proc.mono_us()
    }

    async fn informer(&self) {
        self.kube
            .run_informer(KIND, None, INFORMER_IDLE, |ev| match ev {
                WatchEvent::Upsert(obj) => {
                    let node = key(&obj.name);
                    let o = self.remember(node, obj.clone());
                    if o.short(self.cfg.pre_allocate) {
                        let mut st = self.state.borrow_mut();
                        st.short.insert(node);
                        self.trigger.notify();
                    }
                }
                WatchEvent::Deleted { name, .. } => {
                    self.state.borrow_mut().observed.remove(&key(&name));
                }
            })
            .await;
    }

    /// The resync of every node every `OPERATOR_RESYNC` (counted from the end of the previous
    /// one), and in between a pass over the nodes seen short of IPs (upstream: each node's pool
    /// maintainer trigger).
    async fn maintenance(&self) {
        let period = OPERATOR_RESYNC.as_micros() as u64;
        let mut resync = self.proc.sleep_until_mono(self.now_us() + period);
        loop {
            let seen = self.trigger.generation();
            let all = matches!(
                futures::future::select(&mut resync, self.trigger.changed_since(seen)).await,
                futures::future::Either::Left(_)
            );
            let short = std::mem::take(&mut self.state.borrow_mut().short);
            if !self.cfg.standby || self.proc.service_faults().active {
                for node in self.cfg.nodes.iter().map(|n| key(n)) {
                    if all || short.contains(&node) {
                        self.maintain(node).await;
                    }
                }
            }
            if all {
                resync.reset(self.proc.mono_instant(self.now_us() + period));
            }
        }
    }

    async fn maintain(&self, node: Short) {
        let Some(obj) = self.state.borrow().observed.get(&node).cloned() else {
            return;
        };
        let (spec, status) = (obj.spec(), obj.status());
        let used = &status.used;
        let now = self.now_us();
        // Fold the agent's answers (and its removal of released entries) into the local state.
        {
            let mut st = self.state.borrow_mut();
            let local = st.release.entry(node).or_default();
            fold_answers(local, &status.release_ips);
            if self.cfg.release_excess && self.cfg.switches.merge_release_ips {
                // Entries another (or an earlier) operator wrote: adopt them before the instance
                // resync (which turns a ready entry whose IP the cloud no longer holds into
                // released) and before `before`, so that an adopted entry this pass aborts is
                // removed by the write below.
                for (ip, s) in &status.release_ips {
                    if *s != RELEASED && !local.contains_key(ip) {
                        local.insert(*ip, *s);
                    }
                }
            }
        }
        // The local state before this pass (what a merging write compares with).
        let before = if self.cfg.switches.merge_release_ips {
            self.state
                .borrow()
                .release
                .get(&node)
                .cloned()
                .unwrap_or_default()
        } else {
            BTreeMap::new()
        };
        // The pool as this pass changes it (copied only if it does).
        let mut pool = std::borrow::Cow::Borrowed(&spec.pool);
        let (mut added, mut removed) = (BTreeMap::new(), BTreeSet::new());
        // Instance resync: the cloud is the truth about which IPs the node holds.
        if let Ok(ifs) = self.cloud.describe(&node).await {
            let (gone, new) = resync(&pool, &ifs);
            for ip in gone {
                pool.to_mut().remove(&ip);
                removed.insert(ip);
                let mut st = self.state.borrow_mut();
                let local = st.release.entry(node).or_default();
                if matches!(local.get(&ip).map(Short::as_str), Some(READY)) {
                    local.insert(ip, Short::lit(RELEASED));
                }
            }
            self.state.borrow_mut().uncertain.remove(&node);
            for (ip, eni) in new {
                pool.to_mut().insert(ip, eni);
                added.insert(ip, eni);
            }
        }
        // Allocation: keep pre-allocate IPs free.
        // (Counted: the free IPs themselves are needed only when some are in excess.)
        let mut free = unused(&pool, used).count();
        let need = needed_ips(free, self.cfg.pre_allocate);
        if need > 0 {
            let need = need as u32;
            // IPs per interface, in one pass over the pool.
            let mut counts: Vec<(Short, usize)> = self.enis.iter().map(|e| (*e, 0)).collect();
            for eni in pool.values() {
                if let Some(c) = counts.iter_mut().find(|c| c.0 == *eni) {
                    c.1 += 1;
                }
            }
            // The interface with the fewest IPs that has room (ties: the first by name).
            if let Some((eni, _)) = counts
                .iter()
                .filter(|(_, n)| (*n as u32) < self.cfg.eni_capacity)
                .min_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)))
            {
                if let Ok(ips) = self.cloud.assign(&node, eni, need).await {
                    for ip in ips {
                        pool.to_mut().insert(ip, *eni);
                        added.insert(ip, *eni);
                    }
                    free = unused(&pool, used).count();
                }
            }
        }
        if self.cfg.release_excess {
            let (pre, above) = (self.cfg.pre_allocate, self.cfg.max_above_watermark);
            let candidates = if free > pre + above {
                excess_ips(&unused(&pool, used).collect::<Vec<_>>(), pre, above)
            } else {
                Vec::new() // what `excess_ips` finds when none are in excess
            };
            let to_release = {
                let mut st = self.state.borrow_mut();
                let State {
                    release,
                    first_seen,
                    uncertain,
                    ..
                } = &mut *st;
                let step = release_step(
                    release.entry(node).or_default(),
                    first_seen.entry(node).or_default(),
                    &candidates,
                    uncertain.get(&node),
                    now,
                    RELEASE_DELAY.as_micros() as u64,
                    self.cfg.switches.no_handshake,
                );
                for ip in step.aborted {
                    self.proc.emit(Event::CiliumAbort {
                        node: node.into(),
                        ip: ip.into(),
                    });
                }
                for ip in step.marked {
                    self.proc.emit(Event::CiliumMark {
                        node: node.into(),
                        ip: ip.into(),
                        observed_used: used.contains_key(&ip),
                        observed_rv: obj.obj.rv,
                    });
                }
                step.to_release
            };
            for (ip, seen_state, excess_for) in to_release {
                let eni = pool.get(&ip).copied().unwrap_or_default();
                self.proc.emit(Event::CiliumRelease {
                    node: node.into(),
                    ip: ip.into(),
                    state_seen: seen_state,
                    excess_for_ms: excess_for / 1000,
                    observed_rv: obj.obj.rv,
                    handshake: !self.cfg.switches.no_handshake,
                });
                let done = match self.cloud.unassign(&node, &eni, vec![ip]).await {
                    Ok(()) => true,
                    // An earlier attempt that timed out was applied after all.
                    Err(CloudError::Invalid(_)) => true,
                    Err(CloudError::Timeout) => {
                        if self.cfg.switches.hold_unknown_release {
                            self.state
                                .borrow_mut()
                                .uncertain
                                .entry(node)
                                .or_default()
                                .insert(ip);
                        }
                        false
                    }
                    Err(_) => false,
                };
                if done {
                    pool.to_mut().remove(&ip);
                    removed.insert(ip);
                    let mut st = self.state.borrow_mut();
                    st.first_seen.entry(node).or_default().remove(&ip);
                    if !self.cfg.switches.no_handshake {
                        st.release
                            .entry(node)
                            .or_default()
                            .insert(ip, Short::lit(RELEASED));
                    }
                }
            }
        }
        // Status first, then spec; each write tried twice from a fresh read.
        let differs = match self.state.borrow().release.get(&node) {
            Some(local) => *local != status.release_ips,
            None => !status.release_ips.is_empty(),
        };
        if !self.cfg.switches.no_handshake && differs {
            // Copied: the state may change while the write waits for its answers.
            let local = self
                .state
                .borrow()
                .release
                .get(&node)
                .cloned()
                .unwrap_or_default();
            if self.cfg.switches.merge_release_ips {
                // Only what this operator changed since the version it observed.
                let dropped: Vec<Short> = before
                    .keys()
                    .filter(|ip| !local.contains_key(*ip))
                    .copied()
                    .collect();
                let changed: BTreeMap<Short, Short> = local
                    .iter()
                    .filter(|(ip, s)| before.get(*ip) != Some(*s))
                    .map(|(a, b)| (*a, *b))
                    .collect();
                self.write(node, |st| {
                    for ip in &dropped {
                        st.release_ips.remove(ip);
                    }
                    st.release_ips.extend(changed.iter().map(|(a, b)| (*a, *b)));
                })
                .await;
            } else {
                self.write(node, |st| st.release_ips = local.clone()).await;
            }
        }
        if !added.is_empty() || !removed.is_empty() {
            self.write_spec(node, &added, &removed).await;
        }
    }

    /// `obj` as an observed version of `node` (sharing the parts it has in common with the
    /// version observed before; a part this operator wrote is its own typed value).
    fn remember(&self, node: Short, obj: Rc<sim::kube::Object>) -> Rc<Observed> {
        let mut st = self.state.borrow_mut();
        // (A node's entry is replaced in place: no key string per version.)
        match st.observed.get_mut(&node) {
            Some(slot) => {
                *slot = Observed::of(obj, Some(&**slot));
                slot.clone()
            }
            None => {
                let o = Observed::of(obj, None);
                st.observed.insert(node, o.clone());
                o
            }
        }
    }

    /// A fresh read of `node` (parsed as needed, sharing what it has in common with the version
    /// observed last).
    async fn fresh(&self, node: Short) -> Option<Rc<Observed>> {
        let obj = self.kube.get(KIND, &node).await.ok()?;
        let st = self.state.borrow();
        Some(Observed::of(obj, st.observed.get(&node).map(|o| &**o)))
    }

    async fn write(&self, node: Short, f: impl Fn(&mut Status)) -> bool {
        for _ in 0..WRITE_ATTEMPTS {
            let Some(fresh) = self.fresh(node).await else {
                continue;
            };
            let mut status = fresh.status().clone();
            f(&mut status);
            let value = Body::of(Rc::new(status));
            match self
                .kube
                .update(KIND, &node, fresh.obj.rv, Part::Status, value)
                .await
            {
                Ok(obj) => {
                    self.remember(node, obj);
                    return true;
                }
                Err(KubeError::Conflict) | Err(_) => continue,
            }
        }
        false
    }

    async fn write_spec(
        &self,
        node: Short,
        added: &BTreeMap<Short, Short>,
        removed: &BTreeSet<Short>,
    ) {
        for _ in 0..WRITE_ATTEMPTS {
            let Some(fresh) = self.fresh(node).await else {
                continue;
            };
            let mut spec = fresh.spec().clone();
            spec.pool.extend(added.iter().map(|(a, b)| (*a, *b)));
            spec.pool.retain(|ip, _| !removed.contains(ip));
            let value = Body::of(Rc::new(spec));
            if let Ok(obj) = self
                .kube
                .update(KIND, &node, fresh.obj.rv, Part::Spec, value)
                .await
            {
                self.remember(node, obj);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The resync as a lookup per pool IP and per held IP (what `resync` replaces).
    fn resync_by_lookup(
        pool: &BTreeMap<Short, Short>,
        ifs: &sim::cloud::Interfaces,
    ) -> (Vec<Short>, Vec<(Short, Short)>) {
        let gone = pool
            .keys()
            .filter(|ip| !ifs.values().any(|ips| ips.contains(*ip)))
            .copied()
            .collect();
        let mut new = BTreeMap::new();
        for (eni, ips) in ifs {
            for ip in ips {
                if !pool.contains_key(ip) {
                    new.entry(*ip).or_insert(*eni);
                }
            }
        }
        (gone, new.into_iter().collect())
    }

    fn ip(i: u8) -> Short {
        Short::from_fmt(format_args!("10.0.{}.{}", i / 16, i % 16)).unwrap()
    }

    proptest! {
        /// Pools and interfaces that overlap in every way (including an IP on two interfaces,
        /// which the cloud never does) give the same differences as per-IP lookups.
        #[test]
        fn resync_walk_matches_lookups(
            pool in proptest::collection::btree_map(0u8..40, 0u32..3, 0..25),
            held in proptest::collection::vec(proptest::collection::btree_set(0u8..40, 0..15), 0..4),
        ) {
            let pool: BTreeMap<Short, Short> =
                pool.into_iter().map(|(i, e)| (ip(i), eni_name(e))).collect();
            let ifs: sim::cloud::Interfaces = held
                .into_iter()
                .enumerate()
                .map(|(e, ips)| (eni_name(e as u32), ips.into_iter().map(ip).collect()))
                .collect();
            prop_assert_eq!(resync(&pool, &ifs), resync_by_lookup(&pool, &ifs));
        }
    }
}
