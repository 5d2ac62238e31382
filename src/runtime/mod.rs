//! The node's container runtime, asked the way the kubelet asks it.

pub mod cri;
