use super::*;
use rustls::AlertDescription;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback server that answers whatever it is sent with `reply`, then closes.
async fn answering(reply: &'static [u8]) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        if let Ok((mut stream, _)) = listener.accept().await {
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello).await;
            let _ = stream.write_all(reply).await;
            let _ = stream.shutdown().await;
        }
    });
    address
}

async fn handshake_with(reply: &'static [u8]) -> TlsEvidence {
    let address = answering(reply).await;
    let stream = TcpStream::connect(address).await.expect("connect");
    let system = SystemTrust::load(&NodeRoot::host(), None, None);
    let trust = Trust::load(&NodeRoot::host(), &system, &[], &[]);
    handshake(stream, "registry.test", &trust, Duration::from_secs(5)).await
}

#[tokio::test]
async fn an_http_answer_to_the_client_hello_is_told_apart() {
    let evidence = handshake_with(
        b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n",
    )
    .await;
    assert!(!evidence.ok);
    assert!(evidence.answered_plain_http, "{:?}", evidence.problem);
    assert_eq!(evidence.problem, Some(TlsProblem::PlainHttp));
    assert!(evidence.containerd_retries_over_http());
}

fn leaf() -> CertSummary {
    CertSummary {
        subject: "CN=r.example".into(),
        issuer: "CN=Corp Root".into(),
        names: vec!["r.example".into(), "*.r.example".into()],
        not_before: "Jan  1 00:00:00 2024 +00:00".into(),
        not_after: "Jan  1 00:00:00 2025 +00:00".into(),
    }
}

/// The sentences as `describe_rustls` wrote them before the problem was typed: the words
/// are wire fields (`problem`, `failure.detail`, `cause`) and must not move.
#[test]
fn rustls_errors_map_to_their_kind_and_keep_their_words() {
    let chain = [leaf()];
    let cert = |e: CertificateError| rustls::Error::InvalidCertificate(e);
    let cases = [
        (
            cert(CertificateError::UnknownIssuer),
            "unknown-authority",
            r#"certificate signed by unknown authority: issuer "CN=Corp Root" is not in the trusted roots"#
                .to_string(),
        ),
        (
            cert(CertificateError::NotValidForName),
            "name-mismatch",
            "certificate is for r.example, *.r.example, not other.example".to_string(),
        ),
        (
            cert(CertificateError::Expired),
            "expired",
            "certificate expired: not valid after Jan  1 00:00:00 2025 +00:00".to_string(),
        ),
        (
            cert(CertificateError::NotValidYet),
            "not-yet-valid",
            "certificate not valid yet: not before Jan  1 00:00:00 2024 +00:00".to_string(),
        ),
        (
            cert(CertificateError::BadSignature),
            "certificate-rejected",
            "certificate rejected: BadSignature".to_string(),
        ),
        (
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
            "not-tls",
            "the server did not answer TLS (plain HTTP on an HTTPS port?)".to_string(),
        ),
        (
            rustls::Error::AlertReceived(AlertDescription::HandshakeFailure),
            "alert",
            format!(
                "TLS handshake failed: {}",
                rustls::Error::AlertReceived(AlertDescription::HandshakeFailure)
            ),
        ),
        (
            rustls::Error::General("boom".into()),
            "other",
            format!("TLS handshake failed: {}", rustls::Error::General("boom".into())),
        ),
    ];
    for (error, kind, words) in cases {
        let problem = TlsProblem::of(Some(&error), "io", &chain, "other.example");
        assert_eq!(problem.kind(), kind, "{error:?}");
        assert_eq!(problem.to_string(), words, "{error:?}");
        assert!(TlsProblem::KINDS.contains(&kind));
    }
    // No certificate seen: the facts read `?`, as before.
    let unseen = TlsProblem::of(
        Some(&cert(CertificateError::UnknownIssuer)),
        "io",
        &[],
        "r.example",
    );
    assert_eq!(
        unseen.to_string(),
        r#"certificate signed by unknown authority: issuer "?" is not in the trusted roots"#
    );
    // Not rustls's error at all: the transport's words.
    let io = TlsProblem::of(None, "connection reset by peer", &chain, "r.example");
    assert_eq!(
        io.to_string(),
        "TLS handshake failed: connection reset by peer"
    );
}

#[test]
fn the_problems_found_without_rustls_keep_their_words() {
    let cases = [
        (
            TlsProblem::PlainHttp,
            "plain-http",
            "the server answered TLS with plain HTTP (an http:// endpoint?)",
        ),
        (
            TlsProblem::Timeout { ms: 5000 },
            "timeout",
            "handshake timeout: no TLS answer within 5000 ms",
        ),
        (
            TlsProblem::ServerName {
                name: "bad_name".into(),
                reason: "invalid dns name".into(),
            },
            "server-name",
            "bad_name is not a valid TLS server name: invalid dns name",
        ),
        (
            TlsProblem::Setup("no usable trust roots: x".into()),
            "setup",
            "no usable trust roots: x",
        ),
    ];
    for (problem, kind, words) in cases {
        assert_eq!(
            (problem.kind(), problem.to_string().as_str()),
            (kind, words)
        );
    }
}

#[test]
fn the_schema_enumerates_exactly_the_kinds() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/report.schema.json")).expect("schema");
    let tls = &schema["$defs"]["probe"]["properties"]["hosts"]["items"]["properties"]["tls"];
    let listed: Vec<&str> = tls["properties"]["problem_kind"]["enum"]
        .as_array()
        .expect("the enum")
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    assert_eq!(listed, TlsProblem::KINDS);
}

#[tokio::test]
async fn other_garbage_is_not_an_http_answer() {
    let evidence = handshake_with(b"SSH-2.0-OpenSSH_9.2\r\n").await;
    assert!(!evidence.ok);
    assert!(!evidence.answered_plain_http);
    assert!(!evidence.containerd_retries_over_http());
}
