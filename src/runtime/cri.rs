//! A CRI client: `Version`, `PullImage` and `ImageStatus` over the runtime's unix socket,
//! exactly the calls the kubelet makes, so an error here is the text a kubelet event carries.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

use super::cri_api::image_service_client::ImageServiceClient;
use super::cri_api::runtime_service_client::RuntimeServiceClient;
use super::cri_api::{
    AuthConfig, ImageSpec, ImageStatusRequest, PullImageRequest, RemoveImageRequest, VersionRequest,
};

/// Why the runtime could not be asked (not a pull failure: those are [`PullOutcome::Failed`]).
#[derive(Debug, thiserror::Error)]
pub enum CriError {
    #[error("cannot connect to the CRI socket {socket}: {source}")]
    Connect {
        socket: PathBuf,
        source: tonic::transport::Error,
    },
    #[error("the runtime did not answer {call} within {timeout:?}")]
    Deadline {
        call: &'static str,
        timeout: Duration,
    },
    #[error("CRI {call} failed: {status}")]
    Call {
        call: &'static str,
        status: tonic::Status,
    },
}

/// What the runtime said about one pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullOutcome {
    /// The image is in the node's store; the runtime's image reference (a digest).
    Pulled { image_ref: String },
    /// The runtime refused: its gRPC code (Go's name for it) and its own error message.
    Failed { code: &'static str, message: String },
}

impl PullOutcome {
    /// The failure as a kubelet event carries it: `Failed to pull image "X": rpc error: ...`.
    pub fn kubelet_event(&self, image: &str) -> Option<String> {
        match self {
            PullOutcome::Pulled { .. } => None,
            PullOutcome::Failed { code, message } => Some(format!(
                "Failed to pull image \"{image}\": rpc error: code = {code} desc = {message}"
            )),
        }
    }
}

/// gRPC codes by the names Go's `codes.Code` prints, which is what users paste.
fn go_code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "Canceled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}

use crate::credentials::Credentials;

/// A connection to one runtime's image service.
pub struct ImageService {
    client: ImageServiceClient<Channel>,
    timeout: Duration,
}

impl ImageService {
    /// Connect to a runtime's CRI socket (e.g. `/run/containerd/containerd.sock`).
    pub async fn connect(socket: &Path, timeout: Duration) -> Result<Self, CriError> {
        Ok(Self {
            client: ImageServiceClient::new(channel(socket, timeout).await?),
            timeout,
        })
    }

    /// `PullImage`, as the kubelet calls it. A runtime error is an outcome, not an `Err`.
    pub async fn pull(
        &mut self,
        image: &str,
        credentials: Option<&Credentials>,
    ) -> Result<PullOutcome, CriError> {
        let request = PullImageRequest {
            image: Some(spec(image)),
            auth: credentials.map(|c| AuthConfig {
                username: c.username.clone(),
                password: c.password.clone(),
                ..AuthConfig::default()
            }),
            sandbox_config: None,
        };
        match within("PullImage", self.timeout, self.client.pull_image(request)).await? {
            Ok(response) => Ok(PullOutcome::Pulled {
                image_ref: response.image_ref,
            }),
            // Unavailable and Unimplemented mean the runtime itself could not serve the call;
            // every other code carries the runtime's verdict on the pull (containerd maps
            // "not found" to NotFound and dial timeouts to DeadlineExceeded).
            Err(status)
                if !matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::Unimplemented
                ) =>
            {
                Ok(PullOutcome::Failed {
                    code: go_code_name(status.code()),
                    message: status.message().to_string(),
                })
            }
            Err(status) => Err(CriError::Call {
                call: "PullImage",
                status,
            }),
        }
    }

    /// `ImageStatus`: the image's id when the node already holds it (what `IfNotPresent` trusts).
    pub async fn cached(&mut self, image: &str) -> Result<Option<String>, CriError> {
        Ok(self.status(image).await?.map(|held| held.id))
    }

    /// `ImageStatus`: the image the node holds under this name, with every name it has.
    pub async fn status(&mut self, image: &str) -> Result<Option<HeldImage>, CriError> {
        let request = ImageStatusRequest {
            image: Some(spec(image)),
            verbose: false,
        };
        let response = within(
            "ImageStatus",
            self.timeout,
            self.client.image_status(request),
        )
        .await?
        .map_err(|status| CriError::Call {
            call: "ImageStatus",
            status,
        })?;
        Ok(response.image.map(|image| HeldImage {
            id: image.id,
            names: image
                .repo_tags
                .into_iter()
                .chain(image.repo_digests)
                .collect(),
        }))
    }

    /// `RemoveImage`, as the kubelet's image garbage collector calls it: the image and every
    /// name it has.
    pub async fn remove(&mut self, image: &str) -> Result<(), CriError> {
        let request = RemoveImageRequest {
            image: Some(spec(image)),
        };
        within(
            "RemoveImage",
            self.timeout,
            self.client.remove_image(request),
        )
        .await?
        .map(drop)
        .map_err(|status| CriError::Call {
            call: "RemoveImage",
            status,
        })
    }
}

/// One CRI call bounded by `timeout`: running out of time is a [`CriError::Deadline`]; the
/// runtime's answer, or the status it refused with, is the caller's to read.
async fn within<T>(
    call: &'static str,
    timeout: Duration,
    request: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<Result<T, tonic::Status>, CriError> {
    match tokio::time::timeout(timeout, request).await {
        Err(_) => Err(CriError::Deadline { call, timeout }),
        Ok(answer) => Ok(answer.map(tonic::Response::into_inner)),
    }
}

/// An image in the node's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldImage {
    pub id: String,
    /// Its tags and digests (`repo:tag`, `repo@sha256:…`).
    pub names: Vec<String>,
}

/// A gRPC channel over the runtime's unix socket (for the other CRI services a caller needs).
pub async fn channel(socket: &Path, timeout: Duration) -> Result<Channel, CriError> {
    let path = socket.to_path_buf();
    // The URI is ignored by the connector; tonic only needs a syntactically valid one.
    Endpoint::from_static("http://[::]:50051")
        .connect_timeout(timeout)
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
        }))
        .await
        .map_err(|source| CriError::Connect {
            socket: socket.to_path_buf(),
            source,
        })
}

/// The runtime's own name and version, from CRI `Version` (the kubelet's first call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeVersion {
    pub name: String,
    pub version: String,
    /// The CRI API version it speaks (`v1`).
    pub api_version: String,
}

/// Ask the runtime on `socket` its name and version, bounded by `timeout`.
pub async fn runtime_version(socket: &Path, timeout: Duration) -> Result<RuntimeVersion, CriError> {
    let deadline = CriError::Deadline {
        call: "Version",
        timeout,
    };
    let asked = tokio::time::timeout(timeout, async {
        let mut client = RuntimeServiceClient::new(channel(socket, timeout).await?);
        let request = VersionRequest {
            version: "v1".into(),
        };
        client
            .version(request)
            .await
            .map_err(|status| CriError::Call {
                call: "Version",
                status,
            })
    });
    let response = asked.await.map_err(|_| deadline)??.into_inner();
    Ok(RuntimeVersion {
        name: response.runtime_name,
        version: response.runtime_version,
        api_version: response.runtime_api_version,
    })
}

fn spec(image: &str) -> ImageSpec {
    ImageSpec {
        image: image.to_string(),
        ..ImageSpec::default()
    }
}
