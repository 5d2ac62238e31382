//! pullpath: why can't this Kubernetes node pull this image?
//!
//! Modules, in data-flow order (see ARCHITECTURE.md):

/// Who owns a failure, where to look, what will not help.
pub mod advice;
/// `pullpath azure`: Azure network exports → the missing route, flag, link or rule per pool.
pub mod azure;
/// The command line definitions.
pub mod cli;
/// Shell completions and man pages, generated from the command line definitions.
pub mod cli_docs;
/// Exit statuses.
pub mod exit;
/// Failure text → error chain → diagnosis.
pub mod failure_text;
/// Image references, read the way containerd reads them.
pub mod image_ref;
/// `pullpath probe`: the pull path walked hop by hop from this namespace.
pub mod probe;
/// Text and JSON renderers.
pub mod render;
/// The report renderers print (and its JSON schema).
pub mod report;
/// The node's container runtime, asked through CRI as the kubelet asks it.
pub mod runtime;
/// Layers, hops, owners, runtimes: the words every verdict uses.
pub mod vocab;
