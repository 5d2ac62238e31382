//! How a run ended: every node answered, its deadline came, or it was interrupted. The report
//! says it, and a node without an answer says why by it.

/// How the run's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every node answered.
    Finished,
    /// The run's deadline came first.
    Deadline,
    /// Ctrl-C (SIGINT) or SIGTERM.
    Interrupted,
}
