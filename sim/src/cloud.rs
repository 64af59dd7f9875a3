//! A simulated cloud IP API (ENI-style), on its own node.
//!
//! Each instance (a Kubernetes node) has interfaces with a capacity of secondary IPs. `assign` adds
//! IPs to an interface, `unassign` removes them. Every change is an event, so the trace is the
//! ground truth of which IPs a node holds at every instant. Faults: unavailable (refused, not
//! applied), slow, and ambiguous, which here means APPLIED but reported to the caller as a timeout
//! (the cloud changed, the caller does not know).

use crate::event::{Event, NodeIx, Text};
use crate::net::{Call, Endpoint};
use crate::short::Short;
use crate::world::{Host, Proc, World};
use futures::StreamExt;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

/// A request to the cloud API.
#[derive(Clone, Debug)]
pub enum Request {
    /// Assign up to `count` new secondary IPs to `eni` of `instance`.
    Assign {
        instance: Text,
        eni: Short,
        count: u32,
    },
    /// Unassign these IPs from `eni` of `instance`.
    Unassign {
        instance: Text,
        eni: Short,
        ips: Vec<Short>,
    },
    /// The instance's interfaces and their IPs.
    Describe { instance: Text },
}

/// Cloud API errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloudError {
    /// Refused; nothing changed.
    Unavailable,
    /// No answer in time; the change may have been applied.
    Timeout,
    /// The interface is full, or the IP is not on it.
    Invalid(String),
}

/// Interface id -> IPs (dotted addresses and interface ids are [`Short`]s).
pub type Interfaces = BTreeMap<Short, BTreeSet<Short>>;

type Reply = Result<Response, CloudError>;

/// A successful response.
#[derive(Clone, Debug)]
pub enum Response {
    Assigned(Vec<Short>),
    Unassigned,
    /// Shared with the cloud's own record until the cloud next changes it (a describe, on every
    /// pass of an IPAM operator, copies nothing).
    Interfaces(Rc<Interfaces>),
}

struct Shared {
    node: NodeIx,
    capacity: u32,
    /// Each instance's interfaces (copied on change while a describe's answer still shares them).
    instances: RefCell<BTreeMap<String, Rc<Interfaces>>>,
    next_ip: RefCell<BTreeMap<String, u32>>,
    endpoint: Endpoint<Request, Reply>,
}

/// The cloud API (cheap to clone).
#[derive(Clone)]
pub struct Cloud(Rc<Shared>);

/// Client request timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl Cloud {
    /// Installs the cloud API on `node`; each interface holds at most `capacity` secondary IPs.
    pub fn install(world: &World, node: NodeIx, capacity: u32) -> Cloud {
        let c = Cloud(Rc::new(Shared {
            node,
            capacity,
            instances: RefCell::default(),
            next_ip: RefCell::default(),
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
        let ifs = (0..enis).map(|i| (eni_name(i), BTreeSet::new())).collect();
        self.0
            .instances
            .borrow_mut()
            .insert(instance.into(), Rc::new(ifs));
    }

    /// Assigns IPs directly (initial state, before anything runs); returns them.
    pub fn seed_assign(&self, instance: &str, eni: &Short, count: u32) -> Vec<Short> {
        self.apply_assign(instance, eni, count).unwrap_or_default()
    }

    /// A client for a process.
    pub fn client(&self, proc: &Proc) -> CloudClient {
        CloudClient {
            endpoint: self.0.endpoint.clone(),
            proc: proc.clone(),
        }
    }

    /// Assigns up to `count` new addresses to `eni`. Addresses come from a counter per instance,
    /// so one is never handed out twice (an address is on at most one interface, ever).
    fn apply_assign(
        &self,
        instance: &str,
        eni: &Short,
        count: u32,
    ) -> Result<Vec<Short>, CloudError> {
        let mut inst = self.0.instances.borrow_mut();
        let ifs = inst
            .get_mut(instance)
            .ok_or_else(|| CloudError::Invalid(format!("no instance {instance}")))?;
        let held = ifs
            .get(eni)
            .ok_or_else(|| CloudError::Invalid(format!("no interface {eni}")))?
            .len();
        let room = self.0.capacity.saturating_sub(held as u32);
        if room == 0 {
            return Err(CloudError::Invalid(format!("{eni} is full")));
        }
        // Copied here if a describe's answer still shares the interfaces.
        let ips = Rc::make_mut(ifs).get_mut(eni).expect("checked above");
        let mut next = self.0.next_ip.borrow_mut();
        let counter = next.entry(instance.to_string()).or_insert(1);
        let base = instance
            .bytes()
            .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32))
            % 250;
        let new: Vec<Short> = (0..count.min(room))
            .map(|_| {
                let n = *counter;
                *counter += 1;
                Short::from_fmt(format_args!("10.{base}.{}.{}", n / 250, n % 250 + 1))
                    .expect("a dotted address fits")
            })
            .collect();
        ips.extend(new.iter().copied());
        Ok(new)
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
                let op = match &req {
                    Request::Assign { .. } => "assign",
                    Request::Unassign { .. } => "unassign",
                    Request::Describe { .. } => "describe",
                };
                let resp = c.handle(&p, &caller, req);
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

    fn handle(&self, p: &Proc, caller: &str, req: Request) -> Reply {
        match req {
            Request::Assign {
                instance,
                eni,
                count,
            } => {
                let ips = self.apply_assign(&instance, &eni, count)?;
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
                let mut inst = self.0.instances.borrow_mut();
                let ifs = inst
                    .get_mut(instance.as_str())
                    .filter(|i| i.contains_key(&eni))
                    .ok_or_else(|| CloudError::Invalid(format!("no {instance}/{eni}")))?;
                if let Some(missing) = ips.iter().find(|ip| !ifs[&eni].contains(*ip)) {
                    return Err(CloudError::Invalid(format!("{missing} is not on {eni}")));
                }
                let set = Rc::make_mut(ifs).get_mut(&eni).expect("checked above");
                for ip in &ips {
                    set.remove(ip);
                }
                drop(inst);
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
            Request::Describe { instance } => Ok(Response::Interfaces(
                self.0
                    .instances
                    .borrow()
                    .get(instance.as_str())
                    .cloned()
                    .unwrap_or_default(),
            )),
        }
    }
}

/// The name of an instance's interface `i` ("eni-0", "eni-1", ...).
pub fn eni_name(i: u32) -> Short {
    Short::from_fmt(format_args!("eni-{i}")).expect("an interface name fits")
}

/// A process's cloud API client.
#[derive(Clone)]
pub struct CloudClient {
    endpoint: Endpoint<Request, Reply>,
    proc: Proc,
}

impl CloudClient {
    async fn call(&self, req: Request) -> Reply {
        self.proc
            .call(&self.endpoint, req, REQUEST_TIMEOUT)
            .await
            .unwrap_or(Err(CloudError::Timeout))
    }

    /// Assigns up to `count` IPs to an interface.
    pub async fn assign(
        &self,
        instance: &str,
        eni: &Short,
        count: u32,
    ) -> Result<Vec<Short>, CloudError> {
        match self
            .call(Request::Assign {
                instance: instance.into(),
                eni: *eni,
                count,
            })
            .await?
        {
            Response::Assigned(ips) => Ok(ips),
            r => unreachable!("assign answered {r:?}"),
        }
    }

    /// Unassigns IPs from an interface.
    pub async fn unassign(
        &self,
        instance: &str,
        eni: &Short,
        ips: Vec<Short>,
    ) -> Result<(), CloudError> {
        self.call(Request::Unassign {
            instance: instance.into(),
            eni: *eni,
            ips,
        })
        .await
        .map(|_| ())
    }

    /// The instance's interfaces.
    pub async fn describe(&self, instance: &str) -> Result<Rc<Interfaces>, CloudError> {
        match self
            .call(Request::Describe {
                instance: instance.into(),
            })
            .await?
        {
            Response::Interfaces(i) => Ok(i),
            r => unreachable!("describe answered {r:?}"),
        }
    }
}
