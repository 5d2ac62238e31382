//! pullpath: why can't this Kubernetes node pull this image?
//!
//! Modules, in data-flow order:

/// The node's container runtime, asked through CRI as the kubelet asks it.
pub mod runtime;
