//! A process's cloud API client: one request per call, or, with [`CloudClient::with_sdk`], each
//! operation through the caller's rate limiter and the AWS SDK's standard retryer (see
//! [`super::sdk`]).

use super::sdk::{retry_cause, Limiter, RateLimit, Retryer};
use super::{CloudError, Fence, Interfaces, Reply, Request, Response, Sent, REQUEST_TIMEOUT};
use crate::event::Event;
use crate::net::Endpoint;
use crate::short::Short;
use crate::world::Proc;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The label of the generator of a client's retry jitter (under the run's seed and the
/// client's process).
pub const SDK_RNG_LABEL: &str = "cloud-sdk-retry";

/// The SDK layer a client may carry: shared by its clones, as one SDK client is by its callers.
struct Sdk {
    limiter: RefCell<Limiter>,
    retryer: RefCell<Retryer>,
}

/// A process's cloud API client.
#[derive(Clone)]
pub struct CloudClient {
    pub(super) endpoint: Endpoint<Sent, Reply>,
    pub(super) proc: Proc,
    pub(super) fence: Option<Fence>,
    sdk: Option<Rc<Sdk>>,
}

impl CloudClient {
    /// A bare client of `endpoint` for `proc`.
    pub(super) fn new(endpoint: Endpoint<Sent, Reply>, proc: &Proc) -> CloudClient {
        CloudClient {
            endpoint,
            proc: proc.clone(),
            fence: None,
            sdk: None,
        }
    }

    /// The same client, with every request carrying `fence` (see the module doc; real EC2 has no
    /// such thing).
    pub fn fenced(&self, fence: Fence) -> CloudClient {
        CloudClient {
            fence: Some(fence),
            ..self.clone()
        }
    }

    /// The same client as an SDK client behind a rate limiter of `limit`: each operation waits
    /// for the limiter once, then makes up to the SDK's attempts while its errors are retryable
    /// ([`super::sdk::retry_cause`]).
    pub fn with_sdk(&self, limit: RateLimit) -> CloudClient {
        let label = format!("{SDK_RNG_LABEL}:{}", self.proc.ident());
        let rng = crate::rng::rng_for(self.proc.world().seed(), &label);
        CloudClient {
            sdk: Some(Rc::new(Sdk {
                limiter: RefCell::new(Limiter::new(limit)),
                retryer: RefCell::new(Retryer::new(rng)),
            })),
            ..self.clone()
        }
    }

    /// The fence its requests carry, if any.
    pub fn fence(&self) -> Option<&Fence> {
        self.fence.as_ref()
    }

    /// The tokens left in its SDK's retry quota (`None` without an SDK).
    pub fn retry_quota(&self) -> Option<u32> {
        self.sdk.as_ref().map(|s| s.retryer.borrow().quota())
    }

    /// One attempt: a request, and its answer or a timeout.
    async fn attempt(&self, req: Request) -> Reply {
        let sent = Sent {
            fence: self.fence.clone(),
            req,
        };
        self.proc
            .call(&self.endpoint, sent, REQUEST_TIMEOUT)
            .await
            .unwrap_or(Err(CloudError::Timeout))
    }

    async fn call(&self, req: Request) -> Reply {
        let Some(sdk) = &self.sdk else {
            return self.attempt(req).await;
        };
        let wait = sdk.limiter.borrow_mut().reserve(self.proc.mono_us());
        if !wait.is_zero() {
            self.proc.sleep(wait).await;
        }
        let mut attempt = 1;
        let mut retried = None;
        loop {
            let reply = self.attempt(req.clone()).await;
            let err = match &reply {
                Ok(_) => {
                    sdk.retryer.borrow_mut().succeeded(retried);
                    return reply;
                }
                Err(e) => e,
            };
            let Some(cause) = retry_cause(err) else {
                return reply;
            };
            let delay = sdk.retryer.borrow_mut().retry_after(attempt, cause);
            self.proc.emit(Event::CloudRetry {
                op: req.op().into(),
                attempt,
                cause,
                delay_ms: delay.map(|d| d.as_millis() as u64),
            });
            let Some(d) = delay else {
                return reply;
            };
            self.proc.sleep(d).await;
            retried = Some(cause);
            attempt += 1;
        }
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

    /// Every instance's interfaces, in one call.
    pub async fn describe_all(&self) -> Result<BTreeMap<String, Rc<Interfaces>>, CloudError> {
        match self.call(Request::DescribeAll).await? {
            Response::All(all) => Ok(all),
            r => unreachable!("describe-all answered {r:?}"),
        }
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
