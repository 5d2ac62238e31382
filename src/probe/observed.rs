//! What the probe's steps saw, as plain data: the floor under every step. The steps (`dns`,
//! `route`, `connect`, `tls`, `host`, `http`, `walk`) produce these; `evidence` and `stop`
//! read them. Nothing here does I/O or decides. Declared in the order data flows (a blank line
//! apart, so that rustfmt keeps it).

/// Every nameserver's answer for each name, and the resolution a host got.
pub mod dns;

/// The kernel's route to one address.
pub mod route;

/// Each TCP connect attempt to a host's addresses and how it ended.
pub mod connect;

/// A handshake: the chain presented and, when it failed, the problem as a value.
pub mod tls;

/// The proxy's answer to `CONNECT host:port`.
pub mod tunnel;

/// What broke after connecting, when a request got no answer.
pub mod transport;

/// A body that stalled, broke, ran long, did not verify, or trickled.
pub mod body;
