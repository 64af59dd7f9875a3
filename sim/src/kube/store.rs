//! The server's object store and its open informers.

use super::{Object, Text, WatchEvent};
use crate::net::StreamTx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// An open informer: its kind, its name selector, its stream.
pub(super) struct Watcher {
    pub(super) kind: Text,
    pub(super) name: Option<Text>,
    pub(super) tx: StreamTx<WatchEvent>,
}

/// Open informers.
pub(super) type Watchers = RefCell<Vec<Watcher>>;

/// Objects by kind, then name (looked up by `&str`; iterated in (kind, name) order).
#[derive(Default)]
pub(super) struct Store(BTreeMap<Text, BTreeMap<Text, Rc<Object>>>);

impl Store {
    pub(super) fn get(&self, kind: &str, name: &str) -> Option<&Rc<Object>> {
        self.0.get(kind)?.get(name)
    }

    pub(super) fn insert(&mut self, obj: Rc<Object>) {
        let names = match self.0.get_mut(obj.kind.as_str()) {
            Some(n) => n,
            None => self.0.entry(obj.kind.clone()).or_default(),
        };
        match names.get_mut(obj.name.as_str()) {
            Some(slot) => *slot = obj,
            None => {
                names.insert(obj.name.clone(), obj);
            }
        }
    }

    pub(super) fn remove(&mut self, kind: &str, name: &str) -> Option<Rc<Object>> {
        self.0.get_mut(kind)?.remove(name)
    }

    /// The objects of one kind, by name.
    pub(super) fn of_kind(&self, kind: &str) -> impl Iterator<Item = &Rc<Object>> {
        self.0.get(kind).into_iter().flat_map(|n| n.values())
    }
}
