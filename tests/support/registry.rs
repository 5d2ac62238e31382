//! A well-behaved registry stand-in on 127.0.0.1, plain HTTP (as containerd speaks to a
//! `hosts.toml` server given as `http://`), in the style of tests/hostile_registry.rs and the
//! Basic registry of tests/credential_provider.rs: `/v2/`, one image manifest (HEAD and GET,
//! with `Docker-Content-Digest`), its config and one layer with true sizes and sha256 digests
//! (the Distribution API's shapes). Anything else is the registry's 404 error envelope.

#![allow(dead_code)]

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

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
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let (manifest, blobs, manifest_digest) =
                (manifest.clone(), blobs.clone(), manifest_digest.clone());
            tokio::spawn(async move {
                let Some(head) = crate::support::read_request_head(&mut tcp).await else {
                    return;
                };
                let mut words = head.split_whitespace();
                let method = words.next().unwrap_or("GET").to_string();
                // containerd adds `?ns=REGISTRY` when it asks a hosts.toml host.
                let target = words.next().unwrap_or("/");
                let path = target.split('?').next().unwrap_or("/").to_string();
                let (status, headers, body): (&str, String, Vec<u8>) = if path == "/v2/" {
                    ("200 OK", String::new(), b"{}".to_vec())
                } else if path == "/v2/team/app/manifests/v1" || path.ends_with(&manifest_digest) {
                    (
                        "200 OK",
                        format!(
                            "Content-Type: application/vnd.oci.image.manifest.v1+json\r\nDocker-Content-Digest: {manifest_digest}\r\n"
                        ),
                        manifest.into_bytes(),
                    )
                } else if let Some((_, blob)) = blobs.iter().find(|(p, _)| *p == path) {
                    (
                        "200 OK",
                        "Content-Type: application/octet-stream\r\n".to_string(),
                        blob.clone(),
                    )
                } else {
                    (
                        "404 Not Found",
                        "Content-Type: application/json\r\n".to_string(),
                        br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#
                            .to_vec(),
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
            });
        }
    });
    Registry {
        port,
        repository: "team/app",
        tag: "v1",
    }
}
