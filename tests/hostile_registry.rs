//! A hostile registry on loopback: redirect loops, endless bodies, garbage manifests and silence
//! each get a clear verdict from `pullpath probe`, quickly, never a hang or a panic.
//!
//! The server is a few lines of HTTP/1.1 over real TLS (tokio-rustls, a CA made by rcgen) on
//! 127.0.0.1; the probe trusts it through `--ca-file` and reaches it by IP literal.

#[path = "support/registry.rs"]
mod registry;
mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

#[derive(Clone, Copy)]
enum Misbehaviour {
    /// Every blob request redirects to another URL on the same host, forever.
    RedirectLoop,
    /// The manifest body never ends.
    EndlessManifest,
    /// The manifest is not JSON.
    GarbageManifest,
    /// Accepts TLS, reads the request, never answers.
    Silence,
}

const LAYER: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const CONFIG: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

struct Server {
    port: u16,
    ca: PathBuf,
    certs: PathBuf,
    /// The server's files, and the probe's own node state (see `support::probe_isolated_in`).
    dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn serve(mode: Misbehaviour) -> Server {
    let (config, ca_pem) = registry::tls_for("127.0.0.1");
    let dir = std::env::temp_dir().join(format!(
        "pullpath-hostile-{}-{}",
        std::process::id(),
        mode as u8
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ca_pem).expect("CA file");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen on loopback");
    let port = listener.local_addr().expect("address").port();
    // containerd speaks plain HTTP to a localhost registry unless hosts.toml says https.
    let hosts_dir = dir.join(format!("certs.d/127.0.0.1_{port}_"));
    std::fs::create_dir_all(&hosts_dir).expect("certs.d");
    std::fs::write(
        hosts_dir.join("hosts.toml"),
        format!("server = \"https://127.0.0.1:{port}\"\n\n[host.\"https://127.0.0.1:{port}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"),
    )
    .expect("hosts.toml");
    let acceptor = TlsAcceptor::from(config);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 16384 {
                    if tls.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                respond(&mut tls, mode, &path, port).await;
            });
        }
    });
    Server {
        port,
        ca,
        certs: dir.join("certs.d"),
        dir: TempDir(dir),
    }
}

async fn respond<S: AsyncWriteExt + Unpin>(out: &mut S, mode: Misbehaviour, path: &str, port: u16) {
    let reply = |status: &str, headers: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{CONFIG}","size":2}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{LAYER}","size":4}}]}}"#
    );
    let text = match (mode, path) {
        (Misbehaviour::Silence, _) => {
            // Hold the connection open without a byte of answer.
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            return;
        }
        (_, "/v2/") => reply("200 OK", "", "{}"),
        (Misbehaviour::EndlessManifest, p) if p.contains("/manifests/") => {
            let _ = out.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nTransfer-Encoding: chunked\r\n\r\n").await;
            let chunk = format!("{:x}\r\n{}\r\n", 65536, "x".repeat(65536));
            // Bounded: stops by itself once far past any sane limit.
            for _ in 0..4096 {
                if out.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            }
            return;
        }
        (Misbehaviour::GarbageManifest, p) if p.contains("/manifests/") => reply(
            "200 OK",
            "Content-Type: application/vnd.oci.image.manifest.v1+json\r\n",
            "<html>not a manifest</html>",
        ),
        (_, p) if p.contains("/manifests/") => reply(
            "200 OK",
            "Content-Type: application/vnd.oci.image.manifest.v1+json\r\n",
            &manifest,
        ),
        (Misbehaviour::RedirectLoop, p) => {
            let next: u32 = p
                .rsplit('/')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
                + 1;
            reply(
                "307 Temporary Redirect",
                &format!("Location: https://127.0.0.1:{port}/loop/{next}\r\n"),
                "",
            )
        }
        _ => reply(
            "404 Not Found",
            "",
            r#"{"errors":[{"code":"BLOB_UNKNOWN","message":"no"}]}"#,
        ),
    };
    let _ = out.write_all(text.as_bytes()).await;
}

fn probe(server: &Server, extra: &[&str]) -> (Value, Option<i32>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
    command
        .args([
            "probe",
            &format!("127.0.0.1:{}/hostile/app:v1", server.port),
            "-o",
            "json",
            "--http-timeout",
            "2s",
            "--ca-file",
        ])
        .arg(&server.ca)
        .arg("--containerd-certs")
        .arg(&server.certs)
        .args(extra);
    support::probe_isolated_in(&mut command, &server.dir.0);
    let out = command.output().expect("probe runs");
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON: {e}; stderr {}", String::from_utf8_lossy(&out.stderr)));
    (report, out.status.code())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_loop_is_cut_and_named() {
    let server = serve(Misbehaviour::RedirectLoop).await;
    let (report, status) = tokio::task::spawn_blocking(move || probe(&server, &[]))
        .await
        .expect("probe");
    let v = &report["verdict"];
    assert_eq!(v["layer"], "blob", "{report:#}");
    assert!(
        v["cause"]
            .as_str()
            .is_some_and(|c| c.contains("redirect loop")),
        "{v:#}"
    );
    assert_eq!(status, Some(20));
    // None of this machine's node state was read: no runtime answered, no proxy was found.
    assert_eq!(report["runtime"]["source"], "assumed", "{report:#}");
    assert!(report.get("proxy").is_none(), "{report:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_manifest_is_refused_at_the_limit() {
    let server = serve(Misbehaviour::EndlessManifest).await;
    let (report, _) = tokio::task::spawn_blocking(move || probe(&server, &[]))
        .await
        .expect("probe");
    let v = &report["verdict"];
    assert_eq!(
        (v["layer"].as_str(), v["hop"].as_str()),
        (Some("other"), Some("registry")),
        "{report:#}"
    );
    assert!(
        v["cause"].as_str().is_some_and(|c| c.contains("limit")),
        "{v:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_garbage_manifest_is_named_not_a_panic() {
    let server = serve(Misbehaviour::GarbageManifest).await;
    let (report, _) = tokio::task::spawn_blocking(move || probe(&server, &[]))
        .await
        .expect("probe");
    assert!(
        report["verdict"]["cause"]
            .as_str()
            .is_some_and(|c| c.contains("not valid JSON")),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_registry_costs_one_http_timeout() {
    let server = serve(Misbehaviour::Silence).await;
    let (report, _) = tokio::task::spawn_blocking(move || probe(&server, &[]))
        .await
        .expect("probe");
    let v = &report["verdict"];
    assert_eq!(v["layer"], "route", "{report:#}");
    assert!(
        v["cause"]
            .as_str()
            .is_some_and(|c| c.contains("no response headers within 2000 ms")),
        "{v:#}"
    );
}
