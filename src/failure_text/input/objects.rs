//! API objects streamed from one JSON document → their messages and the nodes' facts, in
//! passes over the input, each holding one item at a time.
//!
//! The first pass finds the pods that fail (an event in a pull failure's words, or a container
//! waiting on its image), keeps the nodes' facts, and counts events per first-seen time while
//! there are few distinct times. The second keeps only the failing pods, their events and their
//! Pods: a healthy pod's events never reach a verdict (`explain_each` drops subjects without a
//! failure); with the times counted, it also gives each kept event its place in the time order
//! of all events (`event N`, as `explain` always numbered them). With too many distinct times
//! (microsecond `eventTime`s over days) a third pass does that instead, counting the events
//! before each kept event's time without holding them. Memory grows with the failing pods, not with the
//! input; only input with no failing pod keeps every event (it gets one verdict over all of
//! them, as it always did).

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Seek, SeekFrom};

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Deserialize;
use serde_json::Value;

use super::distinct::Distinct;
use super::json_items::{self, Frame, FrameError};
use super::listing::{Budget, MAX_LISTED, text_decides};
use super::{Message, ReadError, cap, is_failure_line, strip_aggregation};
use crate::pod::node::{self, NodeFacts};
use crate::pod::{self, Item, ItemKind, PodEvent};

/// What a JSON document held, for `explain`.
pub struct Objects {
    pub messages: Vec<Message>,
    pub nodes: Vec<NodeFacts>,
    /// Events of a list with no failing pod left out past [`MAX_LISTED`] bytes of messages.
    pub unlisted: u64,
    /// Per message, the failing pod's events it stands for beyond itself (`distinct`).
    pub not_listed: Vec<u64>,
}

/// A pod as events and Pods name it: (namespace, name).
type PodKey = (Option<String>, String);

/// Distinct first-seen times the first pass counts (about 80 bytes each: 20 MiB at most): a
/// list's events within the hour events live (`--event-ttl`) at a second's resolution stay far
/// below, and so do the scheduler's microsecond `eventTime`s (one per pod) in most clusters.
/// Past it, a third pass places the kept events instead (`cargo bench --bench explain`: 38–48
/// against 66 MB/s for a million events, docs/benchmarks.md).
const MAX_TIMES: usize = 1 << 18;

/// Read the document at the start of `input`; `None` when it is not one JSON document (a log
/// whose first line is JSON or starts with a bracket: it is text).
pub fn read<R: Read + Seek>(input: &mut R, limit: usize) -> Result<Option<Objects>, ReadError> {
    read_counting(input, limit, MAX_TIMES)
}

/// [`read`], counting at most `max_times` distinct times in the first pass.
pub(super) fn read_counting<R: Read + Seek>(
    input: &mut R,
    limit: usize,
    max_times: usize,
) -> Result<Option<Objects>, ReadError> {
    let mut survey = Survey {
        times: Some(BTreeMap::new()),
        max_times,
        ..Survey::default()
    };
    match each_item(input, limit, |frame| survey.item(frame)) {
        Ok(()) => {}
        Err(e) if !is_json(&e) => return Ok(None),
        Err(e) => return Err(e),
    }
    let keep_all = survey.keep_all();
    input.seek(SeekFrom::Start(0)).map_err(ReadError::Io)?;
    let mut collect = Collect {
        keep_all,
        ranks: survey.ranks(),
        flagged: survey.flagged,
        items: 0,
        events: 0,
        pods: Vec::new(),
        kept: Vec::new(),
        distinct: Distinct::default(),
        budget: Budget::with_limit(MAX_LISTED),
        unlisted: 0,
        places: Vec::new(),
    };
    each_item(input, limit, |frame| collect.item(frame))?;
    let mut not_listed = Vec::new();
    if !keep_all {
        for kept in std::mem::take(&mut collect.distinct).into_kept() {
            collect.kept.push((kept.number, kept.event));
            not_listed.push(kept.not_listed);
            collect.places.push(kept.place.unwrap_or(kept.number));
        }
    }
    let places = if collect.ranks.is_some() {
        std::mem::take(&mut collect.places)
    } else if keep_all {
        // Every event is kept: its place is where a stable sort by time puts it.
        let mut order: Vec<usize> = (0..collect.kept.len()).collect();
        order.sort_by(|&a, &b| {
            collect.kept[a]
                .1
                .first_seen
                .cmp(&collect.kept[b].1.first_seen)
        });
        let mut places = vec![0; order.len()];
        for (place, i) in order.into_iter().enumerate() {
            places[i] = place;
        }
        places
    } else {
        input.seek(SeekFrom::Start(0)).map_err(ReadError::Io)?;
        let mut rank = Rank::new(&collect.kept);
        each_item(input, limit, |frame| rank.item(frame))?;
        rank.places()
    };
    not_listed.resize(collect.kept.len(), 0);
    let (messages, not_listed) = super::from_ranked(
        &collect.pods,
        collect
            .kept
            .iter()
            .zip(places)
            .zip(not_listed)
            .map(|(((_, e), place), alike)| (place, e, alike))
            .collect(),
    );
    Ok(Some(Objects {
        messages,
        nodes: survey.nodes,
        unlisted: collect.unlisted,
        not_listed,
    }))
}

/// Each item of the document, each parsed from its own bytes.
fn each_item<R: Read>(
    input: &mut R,
    limit: usize,
    mut each: impl FnMut(&Frame<'_>) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    json_items::for_each_item(input, limit, |frame| {
        // Invalid UTF-8 reads as U+FFFD, as `explain` always read its input
        // (`String::from_utf8_lossy`) rather than refusing it.
        match std::str::from_utf8(frame.bytes) {
            Ok(_) => each(&frame),
            Err(_) => {
                let text = String::from_utf8_lossy(frame.bytes);
                each(&Frame {
                    bytes: text.as_bytes(),
                    ..frame
                })
            }
        }
    })
}

/// Whether a failure means "broken JSON" (an error to report) rather than "not JSON": only
/// what breaks on the input's first line, before any item was read, may be text.
fn is_json(error: &ReadError) -> bool {
    match error {
        ReadError::Json(FrameError::Trailing { .. }) => false,
        ReadError::Json(
            FrameError::Malformed { first_line, .. } | FrameError::Truncated { first_line, .. },
        ) => !first_line,
        ReadError::Item {
            first_item,
            first_line,
            ..
        } => !(*first_item && *first_line),
        _ => true,
    }
}

/// One item's fields, from its bytes (or, for a field given twice, from its `Value`, which
/// keeps the last as `explain` always did).
fn with_item<T>(
    frame: &Frame<'_>,
    first_item: bool,
    f: impl FnOnce(&Item<'_>) -> T,
) -> Result<T, ReadError> {
    if let Ok(item) = Item::from_slice(frame.bytes) {
        return Ok(f(&item));
    }
    let value: Value = parse(frame, first_item)?;
    // A JSON value that is no object (a string, a number) is an item with no fields.
    let item = Item::deserialize(&value).unwrap_or_default();
    Ok(f(&item))
}

/// The whole item, for a Pod or a Node.
fn parse<T: serde::de::DeserializeOwned>(
    frame: &Frame<'_>,
    first_item: bool,
) -> Result<T, ReadError> {
    serde_json::from_slice(frame.bytes).map_err(|e| {
        let at = offset_in(frame.bytes, e.line(), e.column());
        ReadError::Item {
            offset: frame.offset + at as u64,
            error: e,
            first_item,
            first_line: frame.first_line && !frame.bytes[..at].contains(&b'\n'),
        }
    })
}

/// serde_json's line and column (1-based, in bytes) → a byte offset in `bytes`.
fn offset_in(bytes: &[u8], line: usize, column: usize) -> usize {
    let line_start = bytes
        .split_inclusive(|b| *b == b'\n')
        .take(line.saturating_sub(1))
        .map(<[u8]>::len)
        .sum::<usize>();
    (line_start + column.saturating_sub(1)).min(bytes.len())
}

/// The first pass.
#[derive(Default)]
struct Survey {
    items: usize,
    /// Pods with a failure: an event in a failure's words, a container waiting on its image.
    flagged: HashSet<PodKey>,
    /// Whether any message names a pod (else every message is one subject's, and kept).
    names_pods: bool,
    /// Events per first-seen time (RFC 3339 text, ordered as text as `explain` orders them),
    /// while there are at most `max_times` of them.
    times: Option<BTreeMap<String, usize>>,
    max_times: usize,
    nodes: Vec<NodeFacts>,
}

impl Survey {
    fn item(&mut self, frame: &Frame<'_>) -> Result<(), ReadError> {
        let first_item = self.items == 0;
        self.items += 1;
        let (kind, event) = with_item(frame, first_item, |i| (i.kind(), i.event()))?;
        match kind {
            ItemKind::Pod => {
                let value: Value = parse(frame, first_item)?;
                if let Ok(p) = pod::from_value(value)
                    && !pod::image_waits(&p).is_empty()
                {
                    let id = pod::pod_id(&p);
                    self.flagged.insert((id.namespace, id.name));
                    self.names_pods = true;
                }
                return Ok(());
            }
            ItemKind::Node => {
                if let Ok(node) = parse::<Node>(frame, first_item) {
                    self.nodes.push(node::facts(&node));
                }
            }
            ItemKind::Other => {}
        }
        let Some(event) = event else {
            return Ok(());
        };
        if let Some(times) = &mut self.times {
            *times.entry(event.first_seen.clone()).or_default() += 1;
            if times.len() > self.max_times {
                self.times = None;
            }
        }
        if !event.pod.name.is_empty() {
            self.names_pods = true;
            if is_failure_line(&cap(strip_aggregation(&event.message).to_string())) {
                self.flagged.insert((event.pod.namespace, event.pod.name));
            }
        }
        Ok(())
    }

    /// Each first-seen time → the place (0-based) of its first event in time order, when
    /// the times were counted (the counts become places where they are: no second map).
    fn ranks(&mut self) -> Option<BTreeMap<String, usize>> {
        let mut times = self.times.take()?;
        let mut next = 0;
        for count in times.values_mut() {
            let rank = next;
            next += *count;
            *count = rank;
        }
        Some(times)
    }

    /// Whether every event must be kept: no pod named (one subject), or no pod failing (then
    /// `explain` gives one verdict over every message, as it always did).
    fn keep_all(&self) -> bool {
        !self.names_pods || self.flagged.is_empty()
    }
}

/// The second pass.
struct Collect {
    items: usize,
    keep_all: bool,
    flagged: HashSet<PodKey>,
    /// Events seen so far: the next event's number in input order.
    events: usize,
    pods: Vec<Pod>,
    /// The events kept, with their numbers in input order: every one when `keep_all`, else
    /// (after the pass) the failing pods' distinct messages.
    kept: Vec<(usize, PodEvent)>,
    /// The failing pods' events, each text once (`keep_all` false).
    distinct: Distinct,
    /// With every event kept (no failing pod): past [`MAX_LISTED`] bytes of messages an event
    /// is kept only when it is the first to decide the verdict (as `listing` keeps a log's
    /// lines), else counted.
    budget: Budget,
    unlisted: u64,
    /// With the times counted: the place in time order of the next event of each time, and
    /// each kept event's place.
    ranks: Option<BTreeMap<String, usize>>,
    places: Vec<usize>,
}

impl Collect {
    fn item(&mut self, frame: &Frame<'_>) -> Result<(), ReadError> {
        let first_item = self.items == 0;
        self.items += 1;
        let (kind, event) = with_item(frame, first_item, |i| (i.kind(), i.event()))?;
        if kind == ItemKind::Pod {
            let value: Value = parse(frame, first_item)?;
            if let Ok(p) = pod::from_value(value) {
                let id = pod::pod_id(&p);
                if self.keep_all || self.flagged.contains(&(id.namespace, id.name)) {
                    self.pods.push(p);
                }
            }
            return Ok(());
        }
        let Some(event) = event else {
            return Ok(());
        };
        let number = self.events;
        self.events += 1;
        // The first pass counted this time: the same bytes give the same event.
        let place = self
            .ranks
            .as_mut()
            .and_then(|r| r.get_mut(&event.first_seen))
            .map(|rank| {
                *rank += 1;
                *rank - 1
            });
        let key = (event.pod.namespace.clone(), event.pod.name.clone());
        let kept = &self.kept;
        let kept_decides = || kept.iter().any(|(_, e)| text_decides(&e.message));
        if self.keep_all && !self.budget.admits(&event.message, kept_decides) {
            self.unlisted += 1;
            return Ok(());
        }
        if self.keep_all {
            self.kept.push((number, event));
            self.places.push(place.unwrap_or(number));
        } else if self.flagged.contains(&key) {
            self.distinct.offer(number, place, event);
        }
        Ok(())
    }
}

/// The third pass: each kept event's place in the time order of all events (0-based; equal
/// times in input order, as a stable sort of every event by its first-seen text puts them).
/// Holds the kept events' distinct times and a few counters each, never the other events.
struct Rank {
    items: usize,
    /// The events seen so far.
    events: usize,
    /// The kept events' distinct first-seen times, sorted as text.
    times: Vec<String>,
    /// Summed up to `j`: the events whose time sorts before `times[j]`.
    before: Vec<usize>,
    /// Events of time `times[j]` seen so far.
    equal: Vec<usize>,
    /// The kept events in input order: (number, index of its time).
    kept: Vec<(usize, usize)>,
    /// The next kept event to meet, and for each one met, the events of its time before it.
    next: usize,
    ties: Vec<usize>,
}

impl Rank {
    fn new(kept: &[(usize, PodEvent)]) -> Rank {
        let mut times: Vec<String> = kept.iter().map(|(_, e)| e.first_seen.clone()).collect();
        times.sort();
        times.dedup();
        let kept = kept
            .iter()
            .map(|(n, e)| (*n, times.partition_point(|t| *t < e.first_seen)))
            .collect();
        Rank {
            items: 0,
            events: 0,
            before: vec![0; times.len() + 1],
            equal: vec![0; times.len()],
            times,
            kept,
            next: 0,
            ties: Vec::new(),
        }
    }

    fn item(&mut self, frame: &Frame<'_>) -> Result<(), ReadError> {
        let first_item = self.items == 0;
        self.items += 1;
        let time = with_item(frame, first_item, |i| {
            (i.kind() != ItemKind::Pod)
                .then(|| i.event().map(|e| e.first_seen))
                .flatten()
        })?;
        let Some(time) = time else {
            return Ok(());
        };
        let number = self.events;
        self.events += 1;
        // Every kept time after this one has one more event before it: `before` holds the
        // differences, summed in `places`.
        let after = self.times.partition_point(|t| *t <= time);
        self.before[after] += 1;
        if after > 0 && self.times[after - 1] == time {
            let j = after - 1;
            if self.kept.get(self.next).is_some_and(|k| k.0 == number) {
                self.ties.push(self.equal[j]);
                self.next += 1;
            }
            self.equal[j] += 1;
        }
        Ok(())
    }

    /// Each kept event's place, in the order they were kept.
    fn places(self) -> Vec<usize> {
        let mut below = Vec::with_capacity(self.times.len());
        let mut sum = 0;
        for difference in &self.before[..self.times.len()] {
            sum += difference;
            below.push(sum);
        }
        self.kept
            .iter()
            .enumerate()
            .map(|(i, (_, j))| {
                // A kept event the pass did not meet (the input changed between passes) goes
                // after its time's others.
                below.get(*j).copied().unwrap_or(sum) + self.ties.get(i).copied().unwrap_or(0)
            })
            .collect()
    }
}
