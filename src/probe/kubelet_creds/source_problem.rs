//! Why a credential source could not be used, as typed as the step that failed. `Display` gives
//! the words of the report's `sources[].detail`, and never a plugin's output beyond its redacted
//! stderr, a password or a token.

use std::mem::discriminant;
use std::path::PathBuf;
use std::sync::Arc;

use super::{ContainerdAuthProblem, DockerConfigProblem, PluginProblem, ProviderConfigError};

/// The underlying errors are shared (`Arc`) so that a plan's evidence stays `Clone`, as the
/// report copies it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SourceProblem {
    /// The kubelet's MakeDockerKeyring returns this error: the pull fails outright.
    #[error("{0} (the kubelet fails the pull on an unparsable pull secret)")]
    PullSecret(Arc<DockerConfigProblem>),
    #[error("{0}")]
    NodeConfig(Arc<DockerConfigProblem>),
    #[error("{0} (the kubelet would not start)")]
    ProviderConfig(ProviderConfigError),
    #[error(
        "no --image-credential-provider-bin-dir: the kubelet refuses a provider config without one"
    )]
    NoProviderBinDir,
    #[error("{0}")]
    Plugin(Arc<PluginProblem>),
    #[error("cannot read {}: {error}", path.display())]
    ContainerdUnreadable {
        path: PathBuf,
        error: Arc<std::io::Error>,
    },
    #[error("{}: {problem}", path.display())]
    ContainerdAuth {
        path: PathBuf,
        problem: Arc<ContainerdAuthProblem>,
    },
}

/// Equal when the same thing went wrong in the same place: the same kind of problem with the
/// same file or plugin (I/O and parser errors themselves are not comparable).
impl PartialEq for SourceProblem {
    fn eq(&self, other: &SourceProblem) -> bool {
        use SourceProblem::*;
        match (self, other) {
            (PullSecret(a), PullSecret(b)) | (NodeConfig(a), NodeConfig(b)) => {
                discriminant(&**a) == discriminant(&**b) && a.path() == b.path()
            }
            (ProviderConfig(a), ProviderConfig(b)) => a == b,
            (NoProviderBinDir, NoProviderBinDir) => true,
            (Plugin(a), Plugin(b)) => {
                discriminant(&**a) == discriminant(&**b) && a.to_string() == b.to_string()
            }
            (ContainerdUnreadable { path, error }, ContainerdUnreadable { path: p, error: e }) => {
                path == p && error.kind() == e.kind()
            }
            (
                ContainerdAuth { path, problem },
                ContainerdAuth {
                    path: p,
                    problem: q,
                },
            ) => path == p && discriminant(&**problem) == discriminant(&**q),
            _ => false,
        }
    }
}

impl Eq for SourceProblem {}
