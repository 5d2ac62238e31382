//! pullpath: why can't this Kubernetes node pull this image?
//!
//! Modules in data-flow order, bottom first (see ARCHITECTURE.md): each imports only modules
//! listed before it (tests/source_shape.rs holds every module to that, and to no circle among
//! the children of any module).

/// Layers, hops, owners, runtimes: the words every verdict uses.
pub mod vocab;
/// Image references, read the way containerd reads them.
pub mod image_ref;
/// A registry credential (user name and secret), as the kubelet passes it and the probe sends it.
pub mod credentials;
/// The kubelet's keyring rules: which docker config key covers an image, in the order tried.
pub mod keyring;
/// The node's filesystem, read inside its root as the node's own processes read it.
pub mod node_root;
/// Who owns a failure, where to look, what will not help.
pub mod advice;
/// The verdict: passed, failed at one layer, or undecided.
pub mod verdict;
/// The node's container runtime, asked through CRI as the kubelet asks it.
pub mod runtime;
/// `pullpath probe`: the pull path walked hop by hop from this namespace.
pub mod probe;
/// A Pod, its Events and its Node, pasted or from the API → the image pulls it is stuck on.
pub mod pod;
/// Failure text → error chain → diagnosis.
pub mod failure_text;
/// The reports renderers print (and their JSON schema).
pub mod report;
/// Cluster mode: `explain pod/NAME` and `scan` from the Kubernetes API.
pub mod cluster;
/// Text and JSON renderers.
pub mod render;
/// `pullpath fleet`: the probe on fresh nodes of every pool, through short-lived pods, compared.
pub mod fleet;
/// `pullpath azure`: Azure network exports → the missing route, flag, link or rule per pool.
pub mod azure;
/// The command line definitions.
pub mod cli;
/// Shell completions and man pages, generated from the command line definitions.
pub mod cli_docs;
/// The command line's arguments → the engine's configuration.
pub mod configure;
/// Exit statuses.
pub mod exit;
/// Each command's workflow: what `main` dispatches to (nothing else imports it).
pub mod commands;
