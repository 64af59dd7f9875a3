//! API objects: an object's two parts (spec and status), each JSON or a typed value.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::rc::Rc;

use super::Text;

/// An API object. `spec` and `status` are shared between versions: a write of one part keeps
/// the other (`Rc::ptr_eq` tells a reader that a part did not change).
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// The object's kind (`Lease`, `Node`, `Endpoints`, ...).
    pub kind: Text,
    /// Its name, unique within the kind.
    pub name: Text,
    /// `metadata.resourceVersion`.
    pub rv: u64,
    /// The desired state, written by [`Part::Spec`] updates.
    pub spec: Rc<Body>,
    /// The observed state, written by [`Part::Status`] updates (the status subresource).
    pub status: Rc<Body>,
}

/// One part of an object (`spec` or `status`): JSON, or a typed value as its writer built it.
///
/// A typed part is the value a client serialized into its request, kept unserialized: readers
/// that know the type take it as it is ([`Body::typed`]), and its JSON is made only if someone
/// reads the part as JSON (through `Deref`, once). The stored object is the same either way (the
/// JSON is a pure function of the value), so this changes the cost of a write and a read, never
/// what a reader sees.
pub struct Body {
    json: std::cell::OnceCell<Value>,
    /// A typed part: the value, and how to make its JSON (the writer's `Serialize`).
    typed: Option<(Rc<dyn std::any::Any>, ToJson)>,
}

/// Makes the JSON of a typed part's value.
type ToJson = fn(&dyn std::any::Any) -> Value;

impl Body {
    /// A part holding `value`, serialized only when read as JSON.
    pub fn of<T: Serialize + 'static>(value: Rc<T>) -> Body {
        fn to_json<T: Serialize + 'static>(v: &dyn std::any::Any) -> Value {
            let v = v
                .downcast_ref::<T>()
                .expect("a body's value has its own type");
            serde_json::to_value(v).expect("a typed body serializes")
        }
        Body {
            json: std::cell::OnceCell::new(),
            typed: Some((value, to_json::<T>)),
        }
    }

    /// The typed value, if the part was written as a `T` (a part written as JSON gives `None`:
    /// parse [`Body::json`] instead).
    pub fn typed<T: 'static>(&self) -> Option<Rc<T>> {
        self.typed.as_ref()?.0.clone().downcast::<T>().ok()
    }

    /// The part as JSON.
    pub fn json(&self) -> &Value {
        // A JSON part is created with its JSON set; only a typed part reaches the closure.
        self.json.get_or_init(|| match &self.typed {
            Some((v, to_json)) => to_json(&**v),
            None => Value::Null,
        })
    }
}

impl From<Value> for Body {
    fn from(v: Value) -> Body {
        Body {
            json: std::cell::OnceCell::from(v),
            typed: None,
        }
    }
}

impl std::ops::Deref for Body {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.json()
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.json() == other.json()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.json().fmt(f)
    }
}

/// Which part of an object a write replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// The object's `spec`.
    Spec,
    /// The object's `status` (the status subresource).
    Status,
}
