//! The generated CRI client (src/runtime/cri_api.rs) speaking gRPC over a unix socket, as the
//! kubelet speaks to containerd: a CRI image service stand-in, served by tonic on a socket in a
//! scratch directory, sees the method paths and messages of k8s.io/cri-api's `runtime.v1` and
//! answers as containerd does (containerd's CRI plugin returns the pull error as a gRPC status:
//! NotFound for a missing reference, Unknown for most others). tests/lab.rs runs the same client
//! against the real containerd.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pullpath::credentials::Credentials;
use pullpath::runtime::cri::{CriError, ImageService, PullOutcome};
use pullpath::runtime::cri_api::{
    Image, ImageStatusRequest, ImageStatusResponse, PullImageRequest, PullImageResponse,
};
use support::scratch::Scratch;
use tonic::codegen::http;
use tonic_prost::ProstCodec;

/// What the stand-in answers to `PullImage`.
#[derive(Clone)]
enum Answer {
    Pulled(&'static str),
    Refuse(tonic::Code, &'static str),
    Never,
}

/// The requests the stand-in received: method path and the decoded message.
#[derive(Default)]
struct Seen {
    pulls: Vec<PullImageRequest>,
    statuses: Vec<ImageStatusRequest>,
    paths: Vec<String>,
}

/// Serve the image service stand-in on `socket` until the test's runtime ends.
fn serve(socket: &std::path::Path, answer: Answer, seen: Arc<Mutex<Seen>>) {
    let listener = tokio::net::UnixListener::bind(socket).expect("bind the unix socket");
    let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
    let service = tower::service_fn(move |request: http::Request<tonic::body::Body>| {
        let (answer, seen) = (answer.clone(), seen.clone());
        async move {
            let path = request.uri().path().to_string();
            seen.lock().expect("seen").paths.push(path.clone());
            let response = match path.as_str() {
                "/runtime.v1.ImageService/PullImage" => {
                    let handler =
                        tower::service_fn(move |call: tonic::Request<PullImageRequest>| {
                            let (answer, seen) = (answer.clone(), seen.clone());
                            async move {
                                seen.lock().expect("seen").pulls.push(call.into_inner());
                                match answer {
                                    Answer::Pulled(image_ref) => {
                                        Ok(tonic::Response::new(PullImageResponse {
                                            image_ref: image_ref.to_string(),
                                        }))
                                    }
                                    Answer::Refuse(code, message) => {
                                        Err(tonic::Status::new(code, message))
                                    }
                                    Answer::Never => std::future::pending().await,
                                }
                            }
                        });
                    tonic::server::Grpc::new(
                        ProstCodec::<PullImageResponse, PullImageRequest>::default(),
                    )
                    .unary(handler, request)
                    .await
                }
                "/runtime.v1.ImageService/ImageStatus" => {
                    let handler =
                        tower::service_fn(move |call: tonic::Request<ImageStatusRequest>| {
                            let seen = seen.clone();
                            async move {
                                let request = call.into_inner();
                                let known = request
                                    .image
                                    .as_ref()
                                    .is_some_and(|spec| spec.image == "cached:v1");
                                seen.lock().expect("seen").statuses.push(request);
                                // containerd answers an unknown image with an empty status, not an error.
                                Ok::<_, tonic::Status>(tonic::Response::new(ImageStatusResponse {
                                    image: known.then(|| Image {
                                        id: "sha256:cached".to_string(),
                                        ..Image::default()
                                    }),
                                    ..ImageStatusResponse::default()
                                }))
                            }
                        });
                    tonic::server::Grpc::new(
                        ProstCodec::<ImageStatusResponse, ImageStatusRequest>::default(),
                    )
                    .unary(handler, request)
                    .await
                }
                _ => tonic::Status::unimplemented(path).into_http(),
            };
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    tokio::spawn(tonic::transport::Server::builder().serve_with_incoming(service, incoming));
}

async fn connected(scratch: &Scratch, answer: Answer) -> (ImageService, Arc<Mutex<Seen>>) {
    let socket = scratch.path().join("cri.sock");
    let seen = Arc::new(Mutex::new(Seen::default()));
    serve(&socket, answer, seen.clone());
    let service = ImageService::connect(&socket, Duration::from_secs(5))
        .await
        .expect("connects to the stand-in");
    (service, seen)
}

#[tokio::test]
async fn pull_sends_the_image_and_the_kubelets_credentials_and_reads_the_image_ref() {
    let scratch = Scratch::new("cri-pulled");
    let (mut service, seen) = connected(&scratch, Answer::Pulled("sha256:0123abcd")).await;
    let credentials = Credentials {
        username: "alice".into(),
        password: "alice-secret".into(),
    };
    let outcome = service
        .pull("registry.example.test/team-a/small:v1", Some(&credentials))
        .await
        .expect("the runtime answered");
    assert_eq!(
        outcome,
        PullOutcome::Pulled {
            image_ref: "sha256:0123abcd".into()
        }
    );
    let seen = seen.lock().expect("seen");
    assert_eq!(seen.paths, ["/runtime.v1.ImageService/PullImage"]);
    let [request] = seen.pulls.as_slice() else {
        panic!("one PullImage");
    };
    let image = request.image.as_ref().expect("image spec");
    assert_eq!(image.image, "registry.example.test/team-a/small:v1");
    let auth = request.auth.as_ref().expect("auth config");
    assert_eq!(
        (auth.username.as_str(), auth.password.as_str()),
        ("alice", "alice-secret")
    );
    assert!(request.sandbox_config.is_none());
}

#[tokio::test]
async fn a_refused_pull_is_an_outcome_in_the_kubelets_words() {
    let scratch = Scratch::new("cri-refused");
    let message = "failed to pull and unpack image \"registry.example.test/team-a/small:v9\": failed to resolve reference \"registry.example.test/team-a/small:v9\": registry.example.test/team-a/small:v9: not found";
    let (mut service, seen) =
        connected(&scratch, Answer::Refuse(tonic::Code::NotFound, message)).await;
    let outcome = service
        .pull("registry.example.test/team-a/small:v9", None)
        .await
        .expect("a refusal is not an Err");
    assert_eq!(
        outcome,
        PullOutcome::Failed {
            code: "NotFound",
            message: message.into()
        }
    );
    assert_eq!(
        outcome.kubelet_event("registry.example.test/team-a/small:v9").as_deref(),
        Some(format!("Failed to pull image \"registry.example.test/team-a/small:v9\": rpc error: code = NotFound desc = {message}").as_str())
    );
    assert!(
        seen.lock().expect("seen").pulls[0].auth.is_none(),
        "anonymous pull"
    );
}

#[tokio::test]
async fn a_runtime_that_cannot_serve_the_call_is_an_error() {
    let scratch = Scratch::new("cri-unavailable");
    let (mut service, _) = connected(
        &scratch,
        Answer::Refuse(tonic::Code::Unavailable, "shutting down"),
    )
    .await;
    let error = service.pull("x:v1", None).await.expect_err("Unavailable");
    assert!(
        matches!(
            error,
            CriError::Call {
                call: "PullImage",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn a_runtime_that_never_answers_hits_the_deadline() {
    let scratch = Scratch::new("cri-silent");
    let socket = scratch.path().join("cri.sock");
    serve(&socket, Answer::Never, Arc::default());
    let mut service = ImageService::connect(&socket, Duration::from_millis(300))
        .await
        .expect("connects");
    let error = service.pull("x:v1", None).await.expect_err("no answer");
    assert!(
        matches!(
            error,
            CriError::Deadline {
                call: "PullImage",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn image_status_says_whether_the_node_holds_the_image() {
    let scratch = Scratch::new("cri-status");
    let (mut service, seen) = connected(&scratch, Answer::Never).await;
    assert_eq!(
        service
            .cached("cached:v1")
            .await
            .expect("answered")
            .as_deref(),
        Some("sha256:cached")
    );
    assert_eq!(service.cached("absent:v1").await.expect("answered"), None);
    let seen = seen.lock().expect("seen");
    assert!(
        seen.paths
            .iter()
            .all(|p| p == "/runtime.v1.ImageService/ImageStatus")
    );
    assert_eq!(seen.statuses.len(), 2);
    assert!(seen.statuses.iter().all(|s| !s.verbose));
}

#[tokio::test]
async fn no_socket_is_a_connect_error_naming_it() {
    let scratch = Scratch::new("cri-nosocket");
    let socket = scratch.path().join("missing.sock");
    let error = ImageService::connect(&socket, Duration::from_secs(1))
        .await
        .err()
        .expect("nothing listens");
    assert!(matches!(error, CriError::Connect { .. }));
    assert!(error.to_string().contains("missing.sock"), "{error}");
}
