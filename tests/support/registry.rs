//! A well-behaved registry stand-in on 127.0.0.1, plain HTTP (as containerd speaks to a
//! `hosts.toml` server given as `http://`), in the style of tests/hostile_registry.rs and the
//! Basic registry of tests/credential_provider.rs: `/v2/`, one image manifest (HEAD and GET,
//! with `Docker-Content-Digest`), its config and one layer with true sizes and sha256 digests
//! (the Distribution API's shapes). Anything else is the registry's 404 error envelope.
//! [`serve_with`] adds TLS (a certificate the test made) and Basic authentication, answering
//! a request without the credential with Distribution's 401 and `WWW-Authenticate: Basic`.

#![allow(dead_code)]

use std::sync::Arc;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// How the registry answers beyond the default plain, anonymous one.
#[derive(Default, Clone)]
pub struct Options {
    /// Serve TLS with this configuration.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Require `Authorization: Basic` with this `user:password`.
    pub basic: Option<(String, String)>,
    /// The `message` of the 404 error envelope (anything a registry may say).
    pub not_found_message: Option<String>,
}

pub struct Registry {
    pub port: u16,
    /// `team/app`, tag `v1`.
    pub repository: &'static str,
    pub tag: &'static str,
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// Serve until the runtime ends.
pub async fn serve() -> Registry {
    serve_with(Options::default()).await
}

/// Serve with `options` until the runtime ends.
pub async fn serve_with(options: Options) -> Registry {
    let layer: Vec<u8> = b"pullpath fleet test layer\n".repeat(64);
    let config = br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{}}"#.to_vec();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{}","size":{}}}]}}"#,
        digest(&config),
        config.len(),
        digest(&layer),
        layer.len()
    );
    let blobs = vec![
        (format!("/v2/team/app/blobs/{}", digest(&config)), config),
        (format!("/v2/team/app/blobs/{}", digest(&layer)), layer),
    ];
    let manifest_digest = digest(manifest.as_bytes());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen on loopback");
    let port = listener.local_addr().expect("address").port();
    let expected = options.basic.as_ref().map(|(user, password)| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    });
    let acceptor = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let not_found = serde_json::json!({"errors": [{"code": "MANIFEST_UNKNOWN",
        "message": options.not_found_message.as_deref().unwrap_or("manifest unknown")}]})
    .to_string();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let answer = Answer {
                not_found: not_found.clone(),
                manifest: manifest.clone(),
                blobs: blobs.clone(),
                manifest_digest: manifest_digest.clone(),
                expected: expected.clone(),
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                match acceptor {
                    Some(acceptor) => {
                        if let Ok(tls) = acceptor.accept(tcp).await {
                            answer.serve(tls).await;
                        }
                    }
                    None => answer.serve(tcp).await,
                }
            });
        }
    });
    Registry {
        port,
        repository: "team/app",
        tag: "v1",
    }
}

/// One connection's answers.
struct Answer {
    /// The 404 error envelope.
    not_found: String,
    manifest: String,
    blobs: Vec<(String, Vec<u8>)>,
    manifest_digest: String,
    /// The base64 `user:password` a request must carry, when authentication is on.
    expected: Option<String>,
}

impl Answer {
    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(self, mut tcp: S) {
        let Some(head) = crate::support::read_request_head(&mut tcp).await else {
            return;
        };
        let mut words = head.split_whitespace();
        let method = words.next().unwrap_or("GET").to_string();
        // containerd adds `?ns=REGISTRY` when it asks a hosts.toml host.
        let target = words.next().unwrap_or("/");
        let path = target.split('?').next().unwrap_or("/").to_string();
        let authorized = self.expected.as_ref().is_none_or(|expected| {
            head.lines().any(|line| {
                line.split_once(':').is_some_and(|(name, value)| {
                    name.eq_ignore_ascii_case("authorization")
                        && value.trim() == format!("Basic {expected}")
                })
            })
        });
        let (status, headers, body): (&str, String, Vec<u8>) = if !authorized {
            (
                "401 Unauthorized",
                "Content-Type: application/json\r\nWWW-Authenticate: Basic realm=\"pullpath-test\"\r\n".to_string(),
                br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#.to_vec(),
            )
        } else if path == "/v2/" {
            ("200 OK", String::new(), b"{}".to_vec())
        } else if path == "/v2/team/app/manifests/v1" || path.ends_with(&self.manifest_digest) {
            (
                "200 OK",
                format!(
                    "Content-Type: application/vnd.oci.image.manifest.v1+json\r\nDocker-Content-Digest: {}\r\n",
                    self.manifest_digest
                ),
                self.manifest.into_bytes(),
            )
        } else if let Some((_, blob)) = self.blobs.iter().find(|(p, _)| *p == path) {
            (
                "200 OK",
                "Content-Type: application/octet-stream\r\n".to_string(),
                blob.clone(),
            )
        } else {
            (
                "404 Not Found",
                "Content-Type: application/json\r\n".to_string(),
                self.not_found.into_bytes(),
            )
        };
        let mut reply = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        if method != "HEAD" {
            reply.extend(body);
        }
        let _ = tcp.write_all(&reply).await;
        let _ = tcp.shutdown().await;
    }
}

/// A server TLS configuration for `name`, its certificate issued by a CA made here, and that
/// CA's PEM (what a node must trust to pull from it).
pub fn tls_for(name: &str) -> (Arc<rustls::ServerConfig>, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf = CertificateParams::new(vec![name.to_string()])
        .expect("leaf params")
        .signed_by(&leaf_key, &issuer)
        .expect("leaf cert");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)
    .expect("server config");
    (Arc::new(config), ca_cert.pem())
}
