//! The messages kept for one verdict over the whole input (a log, or events with no failing
//! pod), bounded: a day of a runtime's journal can hold millions of failure lines. Up to
//! [`MAX_LISTED`] bytes of message text every message is kept; past it, a message is kept only
//! when it is the first that decides the verdict (explain's rule: the earliest message with a
//! real cause, [`crate::failure_text::decides`]), and the others are counted, so the verdict is
//! the one the whole input would give and the report says how many messages it leaves out.

use super::Message;
use crate::failure_text::{decides, diagnose_message};

/// Bytes of message text listed before messages are only counted: far more than any report a
/// person reads, far less than the input that reaches it.
pub const MAX_LISTED: usize = 1 << 20;

/// Whether a message, read alone, decides the verdict over later ones.
pub fn text_decides(text: &str) -> bool {
    decides(&diagnose_message(text))
}

/// The rule alone, for a reader that holds its messages in another shape (events).
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    /// Bytes of the messages admitted.
    bytes: usize,
    /// Whether an admitted message decides the verdict; asked once the budget is spent.
    decided: Option<bool>,
}

impl Budget {
    pub fn with_limit(limit: usize) -> Budget {
        Budget {
            limit,
            bytes: 0,
            decided: None,
        }
    }

    /// Whether a message of `text` is kept; `kept_decides` says whether one already kept
    /// decides (asked at most once).
    pub fn admits(&mut self, text: &str, kept_decides: impl FnOnce() -> bool) -> bool {
        if self.bytes + text.len() <= self.limit {
            self.bytes += text.len();
            return true;
        }
        let decided = *self.decided.get_or_insert_with(kept_decides);
        let first = !decided && text_decides(text);
        if first {
            self.decided = Some(true);
        }
        first
    }
}

#[derive(Debug)]
pub struct Listing {
    messages: Vec<Message>,
    budget: Budget,
    /// How many messages are settled: every one but the last, which may still grow (the rest
    /// of a wrapped line).
    settled: usize,
    unlisted: u64,
}

impl Default for Listing {
    fn default() -> Listing {
        Listing::with_limit(MAX_LISTED)
    }
}

impl Listing {
    pub fn with_limit(limit: usize) -> Listing {
        Listing {
            messages: Vec::new(),
            budget: Budget::with_limit(limit),
            settled: 0,
            unlisted: 0,
        }
    }

    /// The last message, which the next line may continue.
    pub fn last_mut(&mut self) -> Option<&mut Message> {
        self.messages.last_mut()
    }

    /// A new message: the one before it is complete now.
    pub fn push(&mut self, message: Message) {
        self.settle_last();
        self.messages.push(message);
    }

    /// The messages kept, oldest first, and how many were left out.
    pub fn finish(mut self) -> (Vec<Message>, u64) {
        self.settle_last();
        (self.messages, self.unlisted)
    }

    /// Keep the last message within the budget, or past it when it is the first to decide;
    /// else drop it and count it.
    fn settle_last(&mut self) {
        if self.settled == self.messages.len() {
            return;
        }
        let (kept, last) = self.messages.split_at(self.settled);
        let kept_decides = || kept.iter().any(|m| text_decides(&m.text));
        if self.budget.admits(&last[0].text, kept_decides) {
            self.settled += 1;
        } else {
            self.messages.pop();
            self.unlisted += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Message {
        Message {
            text: text.to_string(),
            origin: String::new(),
            subject: Default::default(),
            seen: None,
        }
    }

    const BACK_OFF: &str = "Back-off pulling image \"r.example/app:v1\"";
    const NXDOMAIN: &str = "Failed to pull image \"r.example/app:v1\": failed to resolve reference \"r.example/app:v1\": failed to do request: Head \"https://r.example/v2/app/manifests/v1\": dial tcp: lookup r.example on 10.0.0.10:53: no such host";

    #[test]
    fn within_the_budget_every_message_is_kept_and_the_last_may_grow() {
        let mut listing = Listing::with_limit(1000);
        listing.push(message(BACK_OFF));
        listing.push(message("first half"));
        listing
            .last_mut()
            .expect("a last")
            .text
            .push_str(" and the rest");
        let (kept, unlisted) = listing.finish();
        let texts: Vec<&str> = kept.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, [BACK_OFF, "first half and the rest"]);
        assert_eq!(unlisted, 0);
    }

    #[test]
    fn past_the_budget_only_the_first_deciding_message_is_kept_and_the_rest_counted() {
        let mut listing = Listing::with_limit(BACK_OFF.len() * 2);
        for _ in 0..5 {
            listing.push(message(BACK_OFF));
        }
        listing.push(message(NXDOMAIN));
        listing.push(message(NXDOMAIN));
        listing.push(message(BACK_OFF));
        let (kept, unlisted) = listing.finish();
        let texts: Vec<&str> = kept.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, [BACK_OFF, BACK_OFF, NXDOMAIN]);
        assert_eq!(unlisted, 5);
    }

    #[test]
    fn a_deciding_message_within_the_budget_leaves_no_room_for_a_later_one() {
        let mut listing = Listing::with_limit(NXDOMAIN.len());
        listing.push(message(NXDOMAIN));
        listing.push(message(NXDOMAIN));
        listing.push(message(BACK_OFF));
        let (kept, unlisted) = listing.finish();
        assert_eq!(kept.len(), 1);
        assert_eq!(unlisted, 2);
    }
}
