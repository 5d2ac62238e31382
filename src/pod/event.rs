//! An Event about a pod, from either events API (core/v1 `Event`, events.k8s.io/v1 `Event`),
//! read field by field from JSON — a parsed `Value` (cluster mode) or one item's bytes of a
//! streamed list (`explain`), the same fields and the same rules both ways.
//!
//! [`Item`] is the part of any API object `explain` reads: its `kind`, whether it has container
//! statuses, and an event's fields. Every field is lenient: a value of the wrong JSON type reads
//! as absent, as `Value`'s indexing reads it, so a strange object never fails the whole item.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{PodId, parse_field_path};
use crate::pod::ContainerKind;

/// The visits every lenient reader answers with "absent": booleans, numbers other than a
/// non-negative integer, `null`, arrays (consumed, so the rest of the object reads on).
macro_rules! absent_for_other_types {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    };
}

/// Consume an object and read it as absent.
fn skip_map<'de, A: MapAccess<'de>, T>(mut map: A) -> Result<Option<T>, A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(None)
}

/// One event about a pod, from either events API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEvent {
    pub pod: PodId,
    pub container: Option<(ContainerKind, String)>,
    pub reason: String,
    pub message: String,
    /// When it first happened (RFC 3339), for ordering.
    pub first_seen: String,
    pub last_seen: String,
    pub count: u64,
    /// The node that reported it (the kubelet's host).
    pub node: Option<String>,
}

/// An Event as JSON (core/v1 or events.k8s.io/v1) → a pod event; `None` when it is not an event
/// or has no message. Events about other kinds keep `pod.name` empty.
pub fn event_from_value(event: &Value) -> Option<PodEvent> {
    Item::deserialize(event).ok()?.event()
}

/// The fields of one API object that `explain` reads (see the module's doc).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Item<'a> {
    #[serde(borrow)]
    kind: Str<'a>,
    status: Lenient<StatusHead>,
    #[serde(borrow)]
    message: Str<'a>,
    #[serde(borrow)]
    note: Str<'a>,
    #[serde(borrow)]
    reason: Str<'a>,
    #[serde(borrow)]
    involved_object: Lenient<ObjectRef<'a>>,
    #[serde(borrow)]
    regarding: Lenient<ObjectRef<'a>>,
    #[serde(borrow)]
    metadata: Lenient<Metadata<'a>>,
    #[serde(borrow)]
    event_time: Str<'a>,
    #[serde(borrow)]
    first_timestamp: Str<'a>,
    #[serde(borrow)]
    deprecated_first_timestamp: Str<'a>,
    #[serde(borrow)]
    last_timestamp: Str<'a>,
    #[serde(borrow)]
    deprecated_last_timestamp: Str<'a>,
    #[serde(borrow)]
    series: Lenient<Series<'a>>,
    count: Count,
    deprecated_count: Count,
    #[serde(borrow)]
    source: Lenient<EventSource<'a>>,
    #[serde(borrow)]
    deprecated_source: Lenient<EventSource<'a>>,
    #[serde(borrow)]
    reporting_instance: Str<'a>,
}

/// What kind of object an item is, for `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A Pod (by its kind, or a kind-less object with container statuses).
    Pod,
    Node,
    /// Anything else: an Event, or an object that is read as one if it has a message.
    Other,
}

impl<'a> Item<'a> {
    /// Read one item's JSON bytes; `Err` for malformed JSON or a field given twice (which a
    /// `Value` would take the last of: read those through [`Item::deserialize`] of the `Value`).
    pub fn from_slice(bytes: &'a [u8]) -> serde_json::Result<Item<'a>> {
        serde_json::from_slice(bytes)
    }

    pub fn kind(&self) -> ItemKind {
        let kind = self.kind.0.as_deref().unwrap_or("");
        let has_statuses = self
            .status
            .0
            .as_ref()
            .is_some_and(|s| s.container_statuses.0);
        if kind == "Pod" || (kind.is_empty() && has_statuses) {
            ItemKind::Pod
        } else if kind == "Node" {
            ItemKind::Node
        } else {
            ItemKind::Other
        }
    }

    /// The pod event this item is, when it has a message (see [`event_from_value`]).
    pub fn event(&self) -> Option<PodEvent> {
        let message = self.message.text().or_else(|| self.note.text())?;
        let empty = ObjectRef::default();
        let object = self
            .involved_object
            .0
            .as_ref()
            .or(self.regarding.0.as_ref())
            .unwrap_or(&empty);
        let is_pod = object.kind.0.as_deref().is_none_or(|k| k == "Pod");
        let metadata = self.metadata.0.as_ref();
        let pod = PodId {
            namespace: object
                .namespace
                .text()
                .or_else(|| metadata.and_then(|m| m.namespace.text())),
            name: if is_pod {
                object.name.text().unwrap_or_default()
            } else {
                String::new()
            },
            uid: object.uid.text(),
        };
        let first_seen = [
            self.event_time.text(),
            self.first_timestamp.text(),
            self.deprecated_first_timestamp.text(),
            metadata.and_then(|m| m.creation_timestamp.text()),
            self.last_timestamp.text(),
        ]
        .into_iter()
        .flatten()
        .next()
        .unwrap_or_default();
        let series = self.series.0.as_ref();
        let last_seen = [
            series.and_then(|s| s.last_observed_time.text()),
            self.last_timestamp.text(),
            self.deprecated_last_timestamp.text(),
        ]
        .into_iter()
        .flatten()
        .next()
        .unwrap_or_else(|| first_seen.clone());
        let count = [
            series.and_then(|s| s.count.0),
            self.count.0,
            self.deprecated_count.0,
        ]
        .into_iter()
        .flatten()
        .next()
        .unwrap_or(1);
        let host = |s: &Lenient<EventSource<'_>>| s.0.as_ref().and_then(|s| s.host.text());
        let node = host(&self.source)
            .or_else(|| host(&self.deprecated_source))
            .or_else(|| self.reporting_instance.text());
        Some(PodEvent {
            pod,
            container: object.field_path.0.as_deref().and_then(parse_field_path),
            reason: self.reason.text().unwrap_or_default(),
            message,
            first_seen,
            last_seen,
            count,
            node,
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ObjectRef<'a> {
    #[serde(borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    namespace: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    uid: Str<'a>,
    #[serde(borrow)]
    field_path: Str<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Metadata<'a> {
    #[serde(borrow)]
    namespace: Str<'a>,
    #[serde(borrow)]
    creation_timestamp: Str<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Series<'a> {
    #[serde(borrow)]
    last_observed_time: Str<'a>,
    count: Count,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventSource<'a> {
    #[serde(borrow)]
    host: Str<'a>,
}

/// Whether `status.containerStatuses` is there at all (any value, `null` too).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct StatusHead {
    container_statuses: Present,
}

/// A string field: `None` for any other JSON type (as `Value::as_str`).
#[derive(Debug, Default)]
struct Str<'a>(Option<Cow<'a, str>>);

impl Str<'_> {
    /// The string when it is not empty (pod's `text` rule: an empty field is an absent one).
    fn text(&self) -> Option<String> {
        self.0
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}

/// A count: a non-negative integer, `None` for anything else (as `Value::as_u64`).
#[derive(Debug, Default)]
struct Count(Option<u64>);

/// A field that is there, whatever its value.
#[derive(Debug, Default)]
struct Present(bool);

/// An object field: `None` when the value is not an object (as indexing a `Value` reads it).
#[derive(Debug)]
struct Lenient<T>(Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Cow<'de, str>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Some(Cow::Owned(v)))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map)
            }
            absent_for_other_types!();
        }
        deserializer.deserialize_any(V).map(Str)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<u64>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Some(v))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map)
            }
            absent_for_other_types!();
        }
        deserializer.deserialize_any(V).map(Count)
    }
}

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Option<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            absent_for_other_types!();
        }
        deserializer
            .deserialize_any(V(std::marker::PhantomData))
            .map(Lenient)
    }
}
