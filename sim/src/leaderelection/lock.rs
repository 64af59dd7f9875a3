//! The Lease lock: get, create and update with a per-request timeout (see the module documentation of `leaderelection`).

use super::*;

// ------------------------------------------------------------------------------------------------
// The lock

/// Why a lock call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockError {
    /// The API server's answer (or the client's timeout: [`KubeError::Timeout`]).
    Api(KubeError),
    /// `Update` before any `Get` or `Create` ("lease not initialized, call get or create first",
    /// `leaselock.go` @cg l. 74-76): no request is sent.
    NotInitialized,
    /// The stored spec does not decode as a Lease spec.
    Decode(String),
    /// The caller's context ended first (a stop, or a renew round's deadline): the request was
    /// abandoned and may or may not have been applied.
    Cancelled,
}

/// client-go's `resourcelock.LeaseLock` (`leaselock.go` @cg l. 31-120): the Lease named `name`,
/// the identity written into it, and the last Lease object read or written (`ll.lease`), whose
/// `resourceVersion` the next update is based on.
pub struct LeaseLock {
    client: KubeClient,
    name: String,
    identity: String,
    /// The client's timeout for one request (`rest.Config.Timeout`).
    pub(super) request_timeout: Duration,
    lease: RefCell<Option<Rc<Object>>>,
}

impl LeaseLock {
    /// A lock on the Lease `name` for `identity`, whose requests time out after
    /// `request_timeout` (capped by [`crate::kube::REQUEST_TIMEOUT`], the client's own limit).
    pub fn new(
        client: KubeClient,
        name: &str,
        identity: &str,
        request_timeout: Duration,
    ) -> LeaseLock {
        LeaseLock {
            client,
            name: name.to_string(),
            identity: identity.to_string(),
            request_timeout,
            lease: RefCell::new(None),
        }
    }

    /// `Identity()`.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// `Describe()`: the lock's name.
    pub fn describe(&self) -> &str {
        &self.name
    }

    /// The per-request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// `Get` (l. 42-54): reads the Lease and caches it.
    pub async fn get(&self) -> Result<LeaderElectionRecord, LockError> {
        self.get_within(self.request_timeout).await
    }

    /// `Create` (l. 57-70): creates the Lease holding `rec` and caches it.
    pub async fn create(&self, rec: &LeaderElectionRecord) -> Result<(), LockError> {
        self.create_within(rec, self.request_timeout).await
    }

    /// `Update` (l. 73-96): replaces the cached Lease's spec with `rec`, compare-and-swap on the
    /// cached `resourceVersion`; caches the result.
    pub async fn update(&self, rec: &LeaderElectionRecord) -> Result<(), LockError> {
        self.update_within(rec, self.request_timeout).await
    }

    async fn within<T>(
        limit: Duration,
        f: impl Future<Output = Result<T, KubeError>>,
    ) -> Result<T, LockError> {
        match crate::time::timeout(limit, f).await {
            Ok(r) => r.map_err(LockError::Api),
            Err(_) => Err(LockError::Api(KubeError::Timeout)),
        }
    }

    pub(super) async fn get_within(
        &self,
        limit: Duration,
    ) -> Result<LeaderElectionRecord, LockError> {
        let obj = Self::within(limit, self.client.get(LEASE_KIND, &self.name)).await?;
        *self.lease.borrow_mut() = Some(obj.clone());
        let spec = LeaseSpec::of(&obj).map_err(LockError::Decode)?;
        Ok(LeaderElectionRecord::from_spec(&spec))
    }

    pub(super) async fn create_within(
        &self,
        rec: &LeaderElectionRecord,
        limit: Duration,
    ) -> Result<(), LockError> {
        let spec = Body::of(Rc::new(rec.to_spec()));
        let create = self
            .client
            .create(LEASE_KIND, &self.name, spec, serde_json::Value::Null);
        let obj = Self::within(limit, create).await?;
        *self.lease.borrow_mut() = Some(obj);
        Ok(())
    }

    pub(super) async fn update_within(
        &self,
        rec: &LeaderElectionRecord,
        limit: Duration,
    ) -> Result<(), LockError> {
        let Some(rv) = self.lease.borrow().as_ref().map(|o| o.rv) else {
            return Err(LockError::NotInitialized);
        };
        let spec = Body::of(Rc::new(rec.to_spec()));
        let update = self
            .client
            .update(LEASE_KIND, &self.name, rv, Part::Spec, spec);
        let obj = Self::within(limit, update).await?;
        *self.lease.borrow_mut() = Some(obj);
        Ok(())
    }
}
