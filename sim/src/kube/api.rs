//! The API server's protocol: requests, responses, errors, informer events.

use super::{Body, Object, Part, Text};
use crate::net::StreamTx;
use std::rc::Rc;

/// A request to the API server (kinds and names are [`Text`]: most fit inline, so a request
/// and the write event it makes allocate no strings).
pub enum Request {
    /// Reads one object ([`KubeError::NotFound`] if it does not exist).
    Get {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
    },
    /// Reads every object of a kind.
    List {
        /// The kind listed.
        kind: Text,
    },
    /// Creates an object ([`KubeError::AlreadyExists`] if it exists).
    Create {
        /// The new object's kind.
        kind: Text,
        /// The new object's name.
        name: Text,
        /// Its initial spec.
        spec: Body,
        /// Its initial status.
        status: Body,
    },
    /// Replaces one part of an object, if it is still at resourceVersion `rv`
    /// ([`KubeError::Conflict`] otherwise).
    Update {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
        /// The resourceVersion the writer read (compare-and-swap).
        rv: u64,
        /// Which part is replaced (the other is kept).
        part: Part,
        /// The part's new value.
        value: Body,
    },
    /// Deletes an object, whatever its resourceVersion.
    Delete {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
    },
    /// An informer on a kind; with `name`, only that object (the field selector
    /// `metadata.name=NAME`).
    Watch {
        /// The kind watched.
        kind: Text,
        /// Only this object, if set.
        name: Option<Text>,
        /// Where the server sends the current objects, then every change.
        tx: StreamTx<WatchEvent>,
    },
}

/// What an informer receives.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// The object exists in this version (replayed at the start, or changed). Shared: every
    /// informer of the kind gets the same copy.
    Upsert(Rc<Object>),
    /// The object was deleted.
    Deleted {
        /// The deleted object's kind.
        kind: Text,
        /// The deleted object's name.
        name: Text,
    },
}

/// API errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeError {
    /// The write was based on a stale resourceVersion.
    Conflict,
    /// No object of that kind and name exists.
    NotFound,
    /// A create named an object that already exists.
    AlreadyExists,
    /// The server refused the request (not applied).
    Unavailable,
    /// No answer in time; it may have been applied.
    Timeout,
}

pub(super) type Reply = Result<Response, KubeError>;

/// A successful response.
#[derive(Clone, Debug)]
pub enum Response {
    /// The stored version itself (shared, as the store's objects are immutable).
    Object(Rc<Object>),
    /// Every object of the listed kind (shared, like [`Response::Object`]).
    Objects(Vec<Rc<Object>>),
    /// A delete was applied.
    Done,
    /// A watch is open (its events arrive on its stream): the names of the objects it replays
    /// first, i.e. the list it started from.
    Watching(Vec<Text>),
}
