//! The node's container runtime, asked the way the kubelet asks it.

pub mod cri;
/// The CRI v1 messages and client stubs, generated ahead of time from the pinned CRI proto
/// (`scripts/gen-cri.sh`), so building pullpath needs no `protoc`.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod cri_api;
pub mod version;
