//! A simulated cloud IP API (ENI-style), on its own node.
//!
//! Each instance (a Kubernetes node) has interfaces with a capacity of secondary IPs. `assign` adds
//! IPs to an interface, `unassign` removes them. Every change is an event, so the trace is the
//! ground truth of which IPs a node holds at every instant. Faults: unavailable (refused, not
//! applied: EC2's `Unavailable` or `InternalError`, or a refused connection), slow, and
//! ambiguous, which here means APPLIED but the answer lost, so the caller times out (the cloud
//! changed, the caller does not know). An SDK client retries all three of these errors (see
//! [`sdk`]), so the retry of an ambiguous request meets the state the lost attempt made.
//!
//! # Addresses
//!
//! All instances of a cloud draw from one [`Subnet`], as the interfaces of one VPC subnet do in
//! EC2: `AssignPrivateIpAddresses` with a count picks free addresses of the subnet (which ones is up
//! to EC2: here uniformly at random, from a generator derived from the run's seed), and
//! `UnassignPrivateIpAddresses` returns them to it. So an address released by one instance may
//! later go to another instance, or back to the same interface: an IP is never on two interfaces at
//! once, but "this IP is ours" is only true of the present. When fewer addresses are free than an
//! assign needs, it fails as a whole, like EC2's `InsufficientFreeAddressesInSubnet`.
//!
//! # Fencing (not in EC2)
//!
//! A client may carry a [`Fence`]: a lock's name and a token that grows with every change of the
//! lock's holder (a Lease's `leaderTransitions`, or its resourceVersion). The cloud keeps, per lock,
//! the highest token any request has carried (describes included, so a new leader's first resync
//! already fences the old one) and refuses a request with a lower one ([`CloudError::Fenced`],
//! nothing applied). This is the fix that closes the leader-election gap, where a deposed leader
//! that has not noticed yet still changes the cloud: **real EC2 has nothing like it** (its IP APIs
//! take no condition or token), so it shows what the gap would need, not what can be deployed.
//! Unfenced clients are never refused for it.
//!
//! # Transient server errors
//!
//! Outside any fault, a cloud may answer a share of requests ([`CloudConfig`]'s
//! `internal_errors_per_mille`) with a transient server error, EC2's `InternalError` (500) or
//! `Unavailable` (503), without applying them ([`CloudError::Unavailable`]); an SDK client
//! retries them. "Error codes for the Amazon EC2 API"
//! (docs.aws.amazon.com/ec2/latest/devguide/errors-overview.html) lists both among its server
//! errors, which come with a 500-series status and are usually an issue on AWS's side; it
//! gives no rate, nor does any source found, so the size a scenario sets is assumed.
//!
//! # Throttling
//!
//! Every request first takes a token from its API's bucket, as EC2's request rate limiting does;
//! without one it is refused with `RequestLimitExceeded` ([`CloudError::Throttled`], nothing
//! applied). A throttling fault stands for the account's other clients (see [`throttle`]); a
//! client made with [`CloudClient::with_sdk`] retries as the AWS SDK does (see [`sdk`]).
//!
//! # Stale reads
//!
//! Describes may answer with a past view while a stale-reads fault is in force (EC2's eventual
//! consistency: see [`stale`]).

mod client;
pub mod sdk;
pub mod stale;
pub mod throttle;
mod tokens;

pub use client::{CloudClient, SDK_RNG_LABEL};

use crate::event::{Event, NodeIx, Text};
use crate::net::{Call, Endpoint};
use crate::short::Short;
use crate::world::{Host, Proc, World};
use futures::StreamExt;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

/// A request to the cloud API.
#[derive(Clone, Debug)]
pub enum Request {
    /// Assign up to `count` new secondary IPs to `eni` of `instance`.
    Assign {
        /// The instance (Kubernetes node name).
        instance: Text,
        /// The interface to add the IPs to (`eni-0`, ...).
        eni: Short,
        /// How many IPs are wanted; capped at the interface's free room.
        count: u32,
    },
    /// Unassign these IPs from `eni` of `instance`.
    Unassign {
        /// The instance (Kubernetes node name).
        instance: Text,
        /// The interface that holds the IPs.
        eni: Short,
        /// The IPs to release (dotted addresses), returned to the subnet.
        ips: Vec<Short>,
    },
    /// The instance's interfaces and their IPs.
    Describe {
        /// The instance (Kubernetes node name).
        instance: Text,
    },
    /// Every instance's interfaces, in one call (EC2's `DescribeNetworkInterfaces` over the VPC,
    /// which an IPAM operator's full resync makes: cilium `pkg/aws/eni/instances.go` `Resync`).
    DescribeAll,
}

/// Cloud API errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloudError {
    /// Refused; nothing changed.
    Unavailable,
    /// No answer in time; the change may have been applied.
    Timeout,
    /// `RequestLimitExceeded`: the API's request token bucket was empty; nothing changed.
    Throttled,
    /// `InsufficientFreeAddressesInSubnet`: the subnet has fewer free addresses than an assign
    /// wants; nothing changed (EC2 assigns all of a count or none).
    SubnetFull {
        /// Free addresses in the subnet.
        free: u32,
        /// Addresses the assign wanted.
        wanted: u32,
    },
    /// `PrivateIpAddressLimitExceeded`: the interface already holds as many secondary IPs as
    /// it may; nothing changed.
    InterfaceFull,
    /// `InvalidParameterValue` ("Some of the specified addresses are not assigned to interface
    /// ..."): an unassign names an IP its interface does not hold; nothing changed. Clients that
    /// unassign treat it as "already unassigned" when they know they may have unassigned it
    /// themselves: yunionio/cloudmux `pkg/multicloud/aws/instancenic.go` `UnassignAddress`
    /// l. 135-161 at dd5b1253884c6b767acffba4577c9f7312b37f38 answers it with success (l. 150-155).
    /// cilium's operator does not: `Node.handleIPRelease` returns the error of its
    /// `ReleaseIPs` call (pkg/ipam/node.go:876, 890-895 @ed90dd5).
    NotAssigned {
        /// The first listed IP the interface does not hold.
        ip: Short,
        /// The interface.
        eni: Short,
    },
    /// No such instance or interface.
    Invalid(String),
    /// The request's fencing token is below the highest the cloud has seen for its lock; nothing
    /// changed (see the module doc: EC2 has no such error).
    Fenced {
        /// The request's token.
        token: u64,
        /// The highest the cloud has seen for the lock.
        highest: u64,
    },
}

/// A fencing token: the name of a lock and a token that grows with each change of its holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The lock's name (the Lease's, say).
    pub lock: Text,
    /// The holder's token (the Lease's `leaderTransitions` or resourceVersion when it got it).
    pub token: u64,
}

/// A request as it travels: with the sender's fence, if it has one.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    fence: Option<Fence>,
    req: Request,
}

impl Request {
    /// The API it calls, whose token bucket it draws on.
    fn api(&self) -> throttle::Api {
        match self {
            Request::Assign { .. } => throttle::Api::Assign,
            Request::Unassign { .. } => throttle::Api::Unassign,
            Request::Describe { .. } | Request::DescribeAll => throttle::Api::Describe,
        }
    }

    /// The operation's name, as events give it.
    fn op(&self) -> &'static str {
        match self {
            Request::Assign { .. } => "assign",
            Request::Unassign { .. } => "unassign",
            Request::Describe { .. } | Request::DescribeAll => "describe",
        }
    }
}

/// Interface id -> IPs (dotted addresses and interface ids are [`Short`]s).
pub type Interfaces = BTreeMap<Short, BTreeSet<Short>>;

pub(crate) type Reply = Result<Response, CloudError>;

/// A successful response.
#[derive(Clone, Debug)]
pub enum Response {
    /// Answer to [`Request::Assign`]: the IPs newly added to the interface.
    Assigned(Vec<Short>),
    /// Answer to [`Request::Unassign`]: every listed IP was removed.
    Unassigned,
    /// Shared with the cloud's own record until the cloud next changes it (a describe, on every
    /// pass of an IPAM operator, copies nothing).
    Interfaces(Rc<Interfaces>),
    /// Every instance's interfaces (each shared as in `Interfaces`).
    All(BTreeMap<String, Rc<Interfaces>>),
}

/// The label of the generator that picks a subnet's addresses (under the run's seed).
pub const SUBNET_RNG_LABEL: &str = "cloud-subnet";

/// Addresses in the default subnet: a /24 less the five AWS reserves (network, router, DNS, one
/// for future use, broadcast), enough for the ENI capacity of any scenario's nodes.
pub const DEFAULT_SUBNET_SIZE: u32 = 251;

/// The subnet's first host number: AWS keeps 10.0.0.0 to 10.0.0.3.
const FIRST_HOST: u32 = 4;

/// The largest subnet: 10.0.0.4 to 10.0.255.254 (addresses stay `10.0.x.y`).
pub const MAX_SUBNET_SIZE: u32 = 65_531;

/// A cloud's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloudConfig {
    /// Secondary IPs each interface holds at most.
    pub capacity: u32,
    /// Addresses in the subnet that all instances share (at most [`MAX_SUBNET_SIZE`]).
    pub subnet_size: u32,
    /// Requests in a thousand the cloud answers with a transient server error (EC2's
    /// `InternalError`, a 500, or `Unavailable`, a 503) without applying them, outside any
    /// fault (see the module doc: the size is assumed).
    pub internal_errors_per_mille: u32,
}

impl CloudConfig {
    /// Interfaces of `capacity` in a subnet of [`DEFAULT_SUBNET_SIZE`], no transient errors.
    pub fn new(capacity: u32) -> Self {
        CloudConfig {
            capacity,
            subnet_size: DEFAULT_SUBNET_SIZE,
            internal_errors_per_mille: 0,
        }
    }
}

/// The label of the generator that draws a cloud's transient server errors (under the run's
/// seed).
pub const INTERNAL_ERROR_RNG_LABEL: &str = "cloud-internal-errors";

/// The subnet's `i`-th address (from 0): `10.0.0.4`, `10.0.0.5`, ... `10.0.0.255`, `10.0.1.0`, ...
pub fn subnet_address(i: u32) -> Short {
    let h = FIRST_HOST + i;
    Short::from_fmt(format_args!("10.0.{}.{}", h >> 8, h & 255)).expect("a dotted address fits")
}

/// A subnet's free addresses and the generator that picks among them.
///
/// The free pool is ordered (a `BTreeSet`), and a pick is its `k`-th address for a `k` drawn
/// uniformly: the same seed and the same calls give the same addresses.
#[derive(Clone, Debug)]
pub struct Subnet {
    free: BTreeSet<Short>,
    rng: ChaCha8Rng,
}

impl Subnet {
    /// A subnet of `size` addresses, all free, picked with `rng`.
    pub fn new(size: u32, rng: ChaCha8Rng) -> Subnet {
        assert!(
            size <= MAX_SUBNET_SIZE,
            "a subnet holds at most {MAX_SUBNET_SIZE} addresses"
        );
        Subnet {
            free: (0..size).map(subnet_address).collect(),
            rng,
        }
    }

    /// The subnet a cloud installed in the run of `seed` starts with ([`Cloud::install_with`]
    /// makes exactly this one): a scenario that must know the initial assignments before the run
    /// replays its [`Cloud::seed_assign`] calls on it.
    pub fn of_run(seed: u64, size: u32) -> Subnet {
        Subnet::new(size, crate::rng::rng_for(seed, SUBNET_RNG_LABEL))
    }

    /// Takes `count` free addresses, each uniformly among those still free, in the order picked;
    /// none if fewer than `count` are free.
    pub fn take(&mut self, count: u32) -> Option<Vec<Short>> {
        if (count as usize) > self.free.len() {
            return None;
        }
        Some((0..count).map(|_| self.take_one()).collect())
    }

    fn take_one(&mut self) -> Short {
        let k = self.rng.random_range(0..self.free.len() as u32) as usize;
        let ip = *self.free.iter().nth(k).expect("k < free addresses");
        self.free.remove(&ip);
        ip
    }

    /// Returns an address to the pool.
    pub fn give_back(&mut self, ip: Short) {
        let fresh = self.free.insert(ip);
        debug_assert!(fresh, "{ip} was given back twice");
    }

    /// How many addresses are free.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Whether `ip` is free.
    pub fn is_free(&self, ip: &Short) -> bool {
        self.free.contains(ip)
    }
}

/// What the cloud holds: the instances' interfaces and the subnet they draw from. Pure state, so
/// its rules are tested without a world.
struct State {
    capacity: u32,
    /// Each instance's interfaces (copied on change while a describe's answer still shares them).
    instances: BTreeMap<String, Rc<Interfaces>>,
    subnet: Subnet,
    /// Per lock, the highest fencing token a request has carried.
    fences: BTreeMap<Text, u64>,
}

impl State {
    fn new(cfg: CloudConfig, subnet: Subnet) -> State {
        State {
            capacity: cfg.capacity,
            instances: BTreeMap::new(),
            subnet,
            fences: BTreeMap::new(),
        }
    }

    /// Admits a request carrying `fence` if its token is at least the highest seen for its lock,
    /// and raises that to it; else the highest, and nothing is recorded.
    fn admit_fence(&mut self, fence: &Fence) -> Result<(), u64> {
        let highest = self.fences.entry(fence.lock.clone()).or_insert(0);
        if fence.token < *highest {
            return Err(*highest);
        }
        *highest = fence.token;
        Ok(())
    }

    fn add_instance(&mut self, instance: &str, enis: u32) {
        let ifs = (0..enis).map(|i| (eni_name(i), BTreeSet::new())).collect();
        self.instances.insert(instance.into(), Rc::new(ifs));
    }

    /// Assigns up to `count` free addresses of the subnet to `eni` (as many as the interface has
    /// room for); none if the interface is full or the subnet has too few free.
    fn assign(
        &mut self,
        instance: &str,
        eni: &Short,
        count: u32,
    ) -> Result<Vec<Short>, CloudError> {
        let ifs = self
            .instances
            .get_mut(instance)
            .ok_or_else(|| CloudError::Invalid(format!("no instance {instance}")))?;
        let held = ifs
            .get(eni)
            .ok_or_else(|| CloudError::Invalid(format!("no interface {eni}")))?
            .len();
        let room = self.capacity.saturating_sub(held as u32);
        if room == 0 {
            return Err(CloudError::InterfaceFull);
        }
        let want = count.min(room);
        let new = self.subnet.take(want).ok_or(CloudError::SubnetFull {
            free: self.subnet.free_count() as u32,
            wanted: want,
        })?;
        // Copied here if a describe's answer still shares the interfaces.
        let ips = Rc::make_mut(ifs).get_mut(eni).expect("checked above");
        ips.extend(new.iter().copied());
        Ok(new)
    }

    /// Removes `ips` from `eni` and returns them to the subnet: all of them, or none if one is
    /// not on it.
    fn unassign(&mut self, instance: &str, eni: &Short, ips: &[Short]) -> Result<(), CloudError> {
        let ifs = self
            .instances
            .get_mut(instance)
            .filter(|i| i.contains_key(eni))
            .ok_or_else(|| CloudError::Invalid(format!("no {instance}/{eni}")))?;
        if let Some(missing) = ips.iter().find(|ip| !ifs[eni].contains(*ip)) {
            return Err(CloudError::NotAssigned {
                ip: *missing,
                eni: *eni,
            });
        }
        let set = Rc::make_mut(ifs).get_mut(eni).expect("checked above");
        for ip in ips {
            if set.remove(ip) {
                self.subnet.give_back(*ip);
            }
        }
        Ok(())
    }
}

struct Shared {
    node: NodeIx,
    /// Requests in a thousand answered with a transient server error, and their draws.
    internal_errors: (u32, RefCell<ChaCha8Rng>),
    state: RefCell<State>,
    history: RefCell<stale::History>,
    buckets: RefCell<throttle::Buckets>,
    endpoint: Endpoint<Sent, Reply>,
}

/// The cloud API (cheap to clone).
#[derive(Clone)]
pub struct Cloud(Rc<Shared>);

/// Client request timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl Cloud {
    /// Installs the cloud API on `node`; each interface holds at most `capacity` secondary IPs, and
    /// all draw from a subnet of [`DEFAULT_SUBNET_SIZE`] addresses.
    pub fn install(world: &World, node: NodeIx, capacity: u32) -> Cloud {
        Cloud::install_with(world, node, CloudConfig::new(capacity))
    }

    /// Installs the cloud API on `node` with `cfg`. Its subnet picks addresses with a generator
    /// derived from the run's seed ([`Subnet::of_run`]).
    pub fn install_with(world: &World, node: NodeIx, cfg: CloudConfig) -> Cloud {
        let subnet = Subnet::of_run(world.seed(), cfg.subnet_size);
        let c = Cloud(Rc::new(Shared {
            node,
            internal_errors: (
                cfg.internal_errors_per_mille,
                RefCell::new(crate::rng::rng_for(world.seed(), INTERNAL_ERROR_RNG_LABEL)),
            ),
            state: RefCell::new(State::new(cfg, subnet)),
            history: RefCell::new(stale::History::new(crate::rng::rng_for(
                world.seed(),
                stale::STALE_RNG_LABEL,
            ))),
            buckets: RefCell::new(throttle::Buckets::new()),
            endpoint: Endpoint::new(node),
        }));
        let c2 = c.clone();
        world.set_services(node, Rc::new(move |host: &Host| c2.start(host)));
        c
    }

    /// The node it runs on.
    pub fn node(&self) -> NodeIx {
        self.0.node
    }

    /// Gives an instance its interfaces (empty) before the run starts.
    pub fn add_instance(&self, instance: &str, enis: u32) {
        self.0.state.borrow_mut().add_instance(instance, enis);
    }

    /// Assigns IPs directly (initial state, before anything runs; no events): free addresses of
    /// the subnet, picked as a request's are. Returns them.
    pub fn seed_assign(&self, instance: &str, eni: &Short, count: u32) -> Vec<Short> {
        self.0
            .state
            .borrow_mut()
            .assign(instance, eni, count)
            .unwrap_or_default()
    }

    /// How many addresses of the subnet are free.
    pub fn free_addresses(&self) -> usize {
        self.0.state.borrow().subnet.free_count()
    }

    /// A client for a process.
    pub fn client(&self, proc: &Proc) -> CloudClient {
        CloudClient::new(self.0.endpoint.clone(), proc)
    }

    /// The highest fencing token a request has carried for `lock` (0 if none has).
    pub fn highest_fence(&self, lock: &str) -> u64 {
        self.0.state.borrow().fences.get(lock).copied().unwrap_or(0)
    }

    fn start(&self, host: &Host) {
        let proc = host.spawn_process("cloud-api");
        let mut inbox = self.0.endpoint.open();
        let (c, p) = (self.clone(), proc.clone());
        let mut shell = crate::net::FaultShell::new(host.world(), "cloud-faults");
        proc.spawn("server", async move {
            while let Some(Call {
                caller, req, reply, ..
            }) = inbox.next().await
            {
                let Some(ambiguous) = shell.admit(&p).await else {
                    reply.send(Err(CloudError::Unavailable));
                    continue;
                };
                let op = req.req.op();
                if c.internal_error() {
                    p.emit(Event::CloudInternalError {
                        op: op.into(),
                        client: (*caller).into(),
                    });
                    reply.send(Err(CloudError::Unavailable));
                    continue;
                }
                let resp = c.handle_sent(&p, &caller, req);
                if ambiguous {
                    p.emit(Event::CloudAmbiguous {
                        op: op.into(),
                        client: (*caller).into(),
                    });
                    reply.lose();
                } else {
                    reply.send(resp);
                }
            }
        });
    }

    /// Whether this request gets a transient server error (drawn only when the rate is not 0).
    fn internal_error(&self) -> bool {
        let (per_mille, rng) = &self.0.internal_errors;
        *per_mille > 0 && rng.borrow_mut().random_range(0..1_000) < *per_mille
    }

    /// Takes the request's throttling token, checks its fence, if any, then carries it out.
    /// Only requests the cloud admitted get here (one refused as unavailable records no token);
    /// an ambiguous one records its token like any applied request.
    fn handle_sent(&self, p: &Proc, caller: &str, sent: Sent) -> Reply {
        let others = p.service_faults().throttle_percent;
        let now_us = p.world().now_us();
        let api = sent.req.api();
        if !self.0.buckets.borrow_mut().admit(api, now_us, others) {
            p.emit(Event::CloudThrottled {
                op: sent.req.op().into(),
                client: caller.into(),
            });
            return Err(CloudError::Throttled);
        }
        if let Some(fence) = &sent.fence {
            let admitted = self.0.state.borrow_mut().admit_fence(fence);
            if let Err(highest) = admitted {
                p.emit(Event::CloudFenced {
                    op: sent.req.op().into(),
                    client: caller.into(),
                    lock: fence.lock.clone(),
                    token: fence.token,
                    highest,
                });
                return Err(CloudError::Fenced {
                    token: fence.token,
                    highest,
                });
            }
        }
        self.handle(p, caller, sent.req)
    }

    fn handle(&self, p: &Proc, caller: &str, req: Request) -> Reply {
        let before = self.0.state.borrow().instances.clone();
        let now_us = p.world().now_us();
        match req {
            Request::Assign {
                instance,
                eni,
                count,
            } => {
                let ips = self.0.state.borrow_mut().assign(&instance, &eni, count)?;
                self.0.history.borrow_mut().replaced(now_us, before);
                for ip in &ips {
                    p.emit(Event::CloudAssign {
                        instance: instance.clone(),
                        eni,
                        ip: *ip,
                        client: caller.into(),
                    });
                }
                Ok(Response::Assigned(ips))
            }
            Request::Unassign { instance, eni, ips } => {
                self.0.state.borrow_mut().unassign(&instance, &eni, &ips)?;
                self.0.history.borrow_mut().replaced(now_us, before);
                for ip in ips {
                    p.emit(Event::CloudUnassign {
                        instance: instance.clone(),
                        eni,
                        ip,
                        client: caller.into(),
                    });
                }
                Ok(Response::Unassigned)
            }
            Request::DescribeAll => Ok(Response::All(self.read(p, now_us, &before))),
            Request::Describe { instance } => {
                let view = self.read(p, now_us, &before);
                Ok(Response::Interfaces(
                    view.get(&*instance).cloned().unwrap_or_default(),
                ))
            }
        }
    }

    /// A describe's view: the present, or a past one under a stale-reads fault.
    fn read(&self, p: &Proc, now_us: u64, present: &stale::View) -> stale::View {
        let lag_us = p.service_faults().stale_lag_us;
        let (view, _age) = self.0.history.borrow_mut().read(now_us, lag_us, present);
        view
    }
}

/// The name of an instance's interface `i` ("eni-0", "eni-1", ...).
pub fn eni_name(i: u32) -> Short {
    Short::from_fmt(format_args!("eni-{i}")).expect("an interface name fits")
}

#[cfg(test)]
mod tests;
