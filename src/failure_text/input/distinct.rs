//! The events of failing pods, kept as a finding needs them: per (pod, container, image) a
//! bounded set of distinct messages, each its earliest event with the count of the events alike
//! after it. A registry outage repeats the same four messages per pod for an hour (the kubelet's
//! back-off retries every few minutes, each retry an event); keeping each text once bounds
//! memory by the findings, not by the events.
//!
//! The verdict is unchanged: `explain_messages` picks the earliest message that decides, else
//! the earliest causal one, else the first; `explain_each` keeps a subject only with a failure
//! line. A text repeated later diagnoses as its first event did, so only the earliest event of a
//! text matters. Past [`MAX_DISTINCT`] texts in one bucket, a new text is kept only when it is
//! the earliest of one of those kinds (each kind's earliest stays, so at most four are needed
//! and a slot is always free to give), else it is counted.

use std::collections::HashMap;

use super::{cap, is_failure_line, strip_aggregation};
use crate::failure_text::{decides, diagnose_message};
use crate::pod::{ContainerKind, PodEvent};

/// Distinct messages kept per (pod, container, image): the four of a registry outage and as
/// many more, far fewer than the events of an hour of back-off.
pub const MAX_DISTINCT: usize = 8;

/// (namespace, pod, container, image the message names).
type Bucket = (
    Option<String>,
    String,
    Option<(ContainerKind, String)>,
    Option<String>,
);

/// One kept text: its earliest event and how many of the bucket's events it stands for.
#[derive(Debug)]
pub struct Kept {
    /// The event's number in input order.
    pub number: usize,
    /// Its place in time order, when the first pass counted the times.
    pub place: Option<usize>,
    pub event: PodEvent,
    /// Events of the bucket not listed, counted here: this text's later events, and (on the
    /// bucket's first slot) the texts not kept.
    pub not_listed: u64,
    /// What the text is, asked only once the bucket is full.
    kinds: Option<Kinds>,
}

/// The kinds of message the verdict's rules look for, in the order of [`Kinds::all`].
#[derive(Debug, Clone, Copy)]
struct Kinds {
    failure: bool,
    causal: bool,
    decides: bool,
}

impl Kinds {
    fn of(message: &str) -> Kinds {
        let text = cap(strip_aggregation(message).to_string());
        let d = diagnose_message(&text);
        Kinds {
            failure: is_failure_line(&text),
            causal: d.causal,
            decides: decides(&d),
        }
    }

    /// Any message, a failure line, a causal one, a deciding one.
    fn all(self) -> [bool; 4] {
        [true, self.failure, self.causal, self.decides]
    }
}

/// The kept texts of every bucket.
#[derive(Debug, Default)]
pub struct Distinct {
    slots: Vec<Kept>,
    buckets: HashMap<Bucket, Vec<usize>>,
}

impl Distinct {
    /// One event of a failing pod, `number` in input order, at `place` in time order if known.
    pub fn offer(&mut self, number: usize, place: Option<usize>, event: PodEvent) {
        let text = strip_aggregation(&event.message);
        let bucket: Bucket = (
            event.pod.namespace.clone(),
            event.pod.name.clone(),
            event.container.clone(),
            super::image_named(&event.message),
        );
        let slots = &mut self.slots;
        let kept = self.buckets.entry(bucket).or_default();
        if let Some(&i) = kept
            .iter()
            .find(|&&i| strip_aggregation(&slots[i].event.message) == text)
        {
            let slot = &mut slots[i];
            slot.not_listed += 1;
            // The earliest event of the text is the one listed (time, then input order: the
            // order a stable sort by time gives).
            if (&event.first_seen, number) < (&slot.event.first_seen, slot.number) {
                slot.event = event;
                slot.number = number;
                slot.place = place;
            }
            return;
        }
        let new = Kept {
            number,
            place,
            event,
            not_listed: 0,
            kinds: None,
        };
        if kept.len() < MAX_DISTINCT {
            kept.push(slots.len());
            slots.push(new);
            return;
        }
        let Some(give) = slot_to_give(slots, kept, new) else {
            slots[kept[0]].not_listed += 1;
            return;
        };
        // The new text took the place of `old`: its events are counted on the bucket's first.
        let (_, old) = give;
        slots[kept[0]].not_listed += 1 + old.not_listed;
    }

    /// The kept events, in input order.
    pub fn into_kept(self) -> Vec<Kept> {
        let mut slots = self.slots;
        slots.sort_by_key(|k| k.number);
        slots
    }
}

/// A full bucket and a new text: the slot the new text takes (and what it held), or `None`
/// when the new text is the earliest of no kind and is only counted.
fn slot_to_give(slots: &mut [Kept], kept: &[usize], mut new: Kept) -> Option<(usize, Kept)> {
    for &i in kept {
        let slot = &mut slots[i];
        if slot.kinds.is_none() {
            slot.kinds = Some(Kinds::of(&slot.event.message));
        }
    }
    new.kinds = Some(Kinds::of(&new.event.message));
    let order = |k: &Kept| (k.event.first_seen.clone(), k.number);
    let kinds = |k: &Kept| k.kinds.map_or([true; 4], Kinds::all);
    // Per kind, the earliest of the bucket with the new text among them (`None`: the new one).
    let mut earliest: [Option<Option<usize>>; 4] = [None; 4];
    let new_kinds = kinds(&new);
    for (kind, best) in earliest.iter_mut().enumerate() {
        if new_kinds[kind] {
            *best = Some(None);
        }
        for &i in kept {
            let slot = &slots[i];
            if !kinds(slot)[kind] {
                continue;
            }
            let earlier = match *best {
                None => true,
                Some(None) => order(slot) < order(&new),
                Some(Some(b)) => order(slot) < order(&slots[b]),
            };
            if earlier {
                *best = Some(Some(i));
            }
        }
    }
    if !earliest.contains(&Some(None)) {
        return None;
    }
    // The latest slot that is no kind's earliest gives its place.
    let needed = |i: usize| earliest.contains(&Some(Some(i)));
    let give = kept
        .iter()
        .copied()
        .filter(|&i| !needed(i))
        .max_by_key(|&i| order(&slots[i]))?;
    let old = std::mem::replace(&mut slots[give], new);
    Some((give, old))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::PodId;

    fn event(pod: &str, message: &str, second: usize) -> PodEvent {
        PodEvent {
            pod: PodId {
                namespace: Some("shop".into()),
                name: pod.into(),
                uid: None,
            },
            container: Some((ContainerKind::App, "app".into())),
            reason: "Failed".into(),
            message: message.into(),
            first_seen: format!("2026-12-01T00:{:02}:{:02}Z", second / 60, second % 60),
            last_seen: String::new(),
            count: 1,
            node: None,
        }
    }

    const NOTFOUND: &str =
        r#"Failed to pull image "r/a:1": rpc error: code = NotFound desc = r/a:1: not found"#;
    const BACK_OFF: &str = r#"Back-off pulling image "r/a:1""#;

    #[test]
    fn a_repeated_text_is_kept_once_at_its_earliest_event_and_its_repeats_counted() {
        let mut distinct = Distinct::default();
        distinct.offer(0, None, event("a", BACK_OFF, 30));
        distinct.offer(1, None, event("a", NOTFOUND, 20));
        distinct.offer(2, None, event("a", NOTFOUND, 10));
        distinct.offer(3, None, event("a", BACK_OFF, 40));
        distinct.offer(4, None, event("b", BACK_OFF, 5));
        let kept = distinct.into_kept();
        let seen: Vec<(usize, &str, u64)> = kept
            .iter()
            .map(|k| (k.number, k.event.pod.name.as_str(), k.not_listed))
            .collect();
        assert_eq!(seen, [(0, "a", 1), (2, "a", 1), (4, "b", 0)]);
    }

    #[test]
    fn past_the_cap_the_earliest_deciding_text_still_takes_a_slot() {
        let mut distinct = Distinct::default();
        for n in 0..MAX_DISTINCT + 3 {
            let text = format!(r#"Back-off pulling image "r/a:1" ({n})"#);
            distinct.offer(n, None, event("a", &text, 100 + n));
        }
        // Later in the input, earlier in time: the real cause.
        distinct.offer(50, None, event("a", NOTFOUND, 1));
        distinct.offer(
            51,
            None,
            event("a", "Back-off pulling image \"r/a:1\" (late)", 500),
        );
        let kept = distinct.into_kept();
        assert_eq!(kept.len(), MAX_DISTINCT);
        assert!(kept.iter().any(|k| k.event.message == NOTFOUND));
        // The earliest message of all stays: the notfound one now.
        let total: u64 = kept.iter().map(|k| k.not_listed + 1).sum();
        assert_eq!(total, MAX_DISTINCT as u64 + 5);
    }
}
