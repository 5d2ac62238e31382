//! What the runtime's proxy answered to `CONNECT host:port`.

/// What the proxy said to `CONNECT host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    /// The proxy, `host:port` (its credentials never shown).
    pub proxy: String,
    /// Its status line's code, when it answered.
    pub status: Option<u16>,
    /// The status line and the start of any body, in words.
    pub detail: String,
}

impl Tunnel {
    /// The proxy answered 2xx: what fails after this is the target's, not the proxy's.
    pub fn is_open(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}
