//! TLS: the handshake with SNI, verified against the trust the runtime uses (the system store,
//! the CA containerd's `certs.d/<registry>/hosts.toml` names, and `--ca-file`), keeping the
//! chain the server presented so a failure can say what was wrong with it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::system_trust::{SystemTrust, pem_certificates};
use crate::node_root::NodeRoot;

/// The roots a pull trusts, and where each came from.
#[derive(Clone)]
pub struct Trust {
    pub roots: Arc<RootCertStore>,
    pub sources: Vec<String>,
    /// hosts.toml `skip_verify = true`: any certificate is accepted (what was wrong with it is
    /// still recorded), as the runtime accepts it.
    pub skip_verify: bool,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("roots", &self.roots.len())
            .field("sources", &self.sources)
            .field("skip_verify", &self.skip_verify)
            .finish()
    }
}

/// The ring provider, installed explicitly: no process-wide default is assumed.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Trust {
    /// The runtime's system store + the registry's containerd CA files from hosts.toml (node
    /// paths, read inside the node root) + `--ca-file`s (paths on this machine).
    pub fn load(
        node: &NodeRoot,
        system: &SystemTrust,
        containerd_cas: &[PathBuf],
        extra: &[PathBuf],
    ) -> Trust {
        let mut roots = RootCertStore::empty();
        let mut sources = Vec::new();
        let (added, _) = roots.add_parsable_certificates(system.certs.iter().cloned());
        sources.push(format!("system store ({added} roots)"));
        let files = containerd_cas
            .iter()
            .map(|f| (f, node.read(f)))
            .chain(extra.iter().map(|f| (f, std::fs::read(f))));
        for (file, read) in files {
            match read {
                Ok(pem) => {
                    let (added, _) = roots.add_parsable_certificates(pem_certificates(&pem));
                    sources.push(format!("{} ({added} roots)", file.display()));
                }
                Err(e) => sources.push(format!("{} (unreadable: {e})", file.display())),
            }
        }
        Trust {
            roots: Arc::new(roots),
            sources,
            skip_verify: false,
        }
    }
}

/// One certificate as presented.
#[derive(Debug, Clone)]
pub struct CertSummary {
    pub subject: String,
    pub issuer: String,
    pub names: Vec<String>,
    pub not_before: String,
    pub not_after: String,
}

/// The handshake's evidence.
#[derive(Debug, Clone)]
pub struct TlsEvidence {
    pub server_name: String,
    pub ok: bool,
    /// What was wrong: unknown CA, wrong name, expired, timeout, plain HTTP.
    pub problem: Option<TlsProblem>,
    pub chain: Vec<CertSummary>,
    pub trusted: Vec<String>,
    /// Set when `skip_verify` accepted a certificate that does not verify: what was wrong.
    pub skipped: Option<String>,
    /// The server answered the ClientHello with an HTTP response (`HTTP/…`).
    pub answered_plain_http: bool,
    /// No TLS answer came within the timeout.
    pub timed_out: bool,
    pub elapsed_ms: u64,
}

impl TlsEvidence {
    /// Whether containerd (1.7 and later), trying HTTPS first on a host configured as
    /// `http://` with TLS settings, would retry it over plain HTTP: Go's `isTLSError`
    /// (`remotes/docker/resolver.go`) accepts exactly a record header reading `HTTP/` and a
    /// handshake timeout.
    pub fn containerd_retries_over_http(&self) -> bool {
        !self.ok && (self.answered_plain_http || self.timed_out)
    }
}

/// What was wrong with a handshake, kept typed from rustls's error so readers decide on the
/// kind (fleet asks "unknown authority?") and never on our English. `Display` is the sentence
/// the report has always carried in `hosts[].tls.problem`, `failure.detail` and `cause`: those
/// are wire fields, so the words must not move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsProblem {
    /// The chain ends at a CA outside the trusted roots; `issuer` is the leaf's issuer (`None`
    /// when no certificate was seen).
    UnknownAuthority {
        issuer: Option<String>,
    },
    /// The leaf is not for the name asked; `presented` are its names.
    NameMismatch {
        presented: Option<Vec<String>>,
        server_name: String,
    },
    Expired {
        not_after: Option<String>,
    },
    NotYetValid {
        not_before: Option<String>,
    },
    /// Another certificate error rustls reports, as rustls names it (`{:?}`).
    Rejected(String),
    /// The server sent a fatal alert during the handshake.
    Alert(AlertDescription),
    /// The answer was not TLS at all.
    NotTls,
    /// The answer to the ClientHello began `HTTP/` (containerd retries such a host over HTTP).
    PlainHttp,
    /// No TLS answer within the handshake timeout (containerd retries this too).
    Timeout {
        ms: u128,
    },
    /// The host's name cannot be a TLS server name.
    ServerName {
        name: String,
        reason: String,
    },
    /// The client configuration could not be built from the trust (no handshake was tried).
    Setup(String),
    /// Any other handshake failure, in rustls's or the transport's words.
    Other(String),
}

impl TlsProblem {
    /// The stable name of the problem (`hosts[].tls.problem_kind`, docs/report-schema.md):
    /// what machine readers match on instead of the sentence.
    pub fn kind(&self) -> &'static str {
        match self {
            TlsProblem::UnknownAuthority { .. } => "unknown-authority",
            TlsProblem::NameMismatch { .. } => "name-mismatch",
            TlsProblem::Expired { .. } => "expired",
            TlsProblem::NotYetValid { .. } => "not-yet-valid",
            TlsProblem::Rejected(_) => "certificate-rejected",
            TlsProblem::Alert(_) => "alert",
            TlsProblem::NotTls => "not-tls",
            TlsProblem::PlainHttp => "plain-http",
            TlsProblem::Timeout { .. } => "timeout",
            TlsProblem::ServerName { .. } => "server-name",
            TlsProblem::Setup(_) => "setup",
            TlsProblem::Other(_) => "other",
        }
    }

    /// Every kind, for the schema's enum and its test.
    pub const KINDS: [&'static str; 12] = [
        "unknown-authority",
        "name-mismatch",
        "expired",
        "not-yet-valid",
        "certificate-rejected",
        "alert",
        "not-tls",
        "plain-http",
        "timeout",
        "server-name",
        "setup",
        "other",
    ];

    /// rustls's error (when the failure was one) mapped to its kind, with the facts of the
    /// presented leaf a person needs; `error` is the transport's words for anything else.
    fn of(
        rustls_error: Option<&rustls::Error>,
        error: &str,
        chain: &[CertSummary],
        server_name: &str,
    ) -> TlsProblem {
        let leaf = chain.first();
        match rustls_error {
            Some(rustls::Error::InvalidCertificate(cert)) => match cert {
                CertificateError::UnknownIssuer => TlsProblem::UnknownAuthority {
                    issuer: leaf.map(|c| c.issuer.clone()),
                },
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => TlsProblem::NameMismatch {
                    presented: leaf.map(|c| c.names.clone()),
                    server_name: server_name.to_string(),
                },
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    TlsProblem::Expired {
                        not_after: leaf.map(|c| c.not_after.clone()),
                    }
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    TlsProblem::NotYetValid {
                        not_before: leaf.map(|c| c.not_before.clone()),
                    }
                }
                other => TlsProblem::Rejected(format!("{other:?}")),
            },
            Some(rustls::Error::InvalidMessage(_))
            | Some(rustls::Error::InappropriateMessage { .. }) => TlsProblem::NotTls,
            Some(rustls::Error::AlertReceived(alert)) => TlsProblem::Alert(*alert),
            Some(other) => TlsProblem::Other(other.to_string()),
            None => TlsProblem::Other(error.to_string()),
        }
    }
}

impl std::fmt::Display for TlsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let or_unknown = |s: &Option<String>| s.clone().unwrap_or_else(|| "?".to_string());
        match self {
            TlsProblem::UnknownAuthority { issuer } => write!(
                f,
                "certificate signed by unknown authority: issuer {:?} is not in the trusted roots",
                issuer.as_deref().unwrap_or("?")
            ),
            TlsProblem::NameMismatch {
                presented,
                server_name,
            } => write!(
                f,
                "certificate is for {}, not {server_name}",
                presented.as_ref().map_or("?".to_string(), |n| n.join(", "))
            ),
            TlsProblem::Expired { not_after } => write!(
                f,
                "certificate expired: not valid after {}",
                or_unknown(not_after)
            ),
            TlsProblem::NotYetValid { not_before } => write!(
                f,
                "certificate not valid yet: not before {}",
                or_unknown(not_before)
            ),
            TlsProblem::Rejected(what) => write!(f, "certificate rejected: {what}"),
            TlsProblem::Alert(alert) => write!(
                f,
                "TLS handshake failed: {}",
                rustls::Error::AlertReceived(*alert)
            ),
            TlsProblem::NotTls => {
                f.write_str("the server did not answer TLS (plain HTTP on an HTTPS port?)")
            }
            TlsProblem::PlainHttp => {
                f.write_str("the server answered TLS with plain HTTP (an http:// endpoint?)")
            }
            TlsProblem::Timeout { ms } => {
                write!(f, "handshake timeout: no TLS answer within {ms} ms")
            }
            TlsProblem::ServerName { name, reason } => {
                write!(f, "{name} is not a valid TLS server name: {reason}")
            }
            TlsProblem::Setup(why) => f.write_str(why),
            TlsProblem::Other(words) => write!(f, "TLS handshake failed: {words}"),
        }
    }
}

/// A stream that keeps the first bytes the server sent, so a failed handshake can tell an
/// HTTP answer from other garbage, as Go's TLS client does with its record header.
pub struct FirstBytes<S> {
    inner: S,
    first: [u8; 5],
    seen: usize,
}

impl<S> FirstBytes<S> {
    fn new(inner: S) -> FirstBytes<S> {
        FirstBytes {
            inner,
            first: [0; 5],
            seen: 0,
        }
    }

    fn is_http(&self) -> bool {
        self.seen == self.first.len() && &self.first == b"HTTP/"
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FirstBytes<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let this = &mut *self;
        if this.seen < this.first.len() {
            let new = &buf.filled()[before..];
            let take = new.len().min(this.first.len() - this.seen);
            this.first[this.seen..this.seen + take].copy_from_slice(&new[..take]);
            this.seen += take;
        }
        polled
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for FirstBytes<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Records the presented chain, then lets webpki decide — unless the trust says
/// `skip_verify`, where webpki's objection is recorded and the certificate accepted.
#[derive(Debug)]
struct Recording {
    inner: Arc<dyn ServerCertVerifier>,
    seen: Mutex<Vec<CertificateDer<'static>>>,
    skip_verify: bool,
    overruled: Mutex<Option<rustls::Error>>,
}

impl Recording {
    fn new(inner: Arc<dyn ServerCertVerifier>, skip_verify: bool) -> Recording {
        Recording {
            inner,
            seen: Mutex::new(Vec::new()),
            skip_verify,
            overruled: Mutex::new(None),
        }
    }
}

impl ServerCertVerifier for Recording {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = std::iter::once(end_entity)
                .chain(intermediates)
                .map(|c| c.clone().into_owned())
                .collect();
        }
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(e) if self.skip_verify => {
                if let Ok(mut overruled) = self.overruled.lock() {
                    *overruled = Some(e);
                }
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A client configuration that verifies against `trust` (the HTTP requests use it).
pub fn client_config(trust: &Trust) -> Result<ClientConfig, rustls::Error> {
    let verifier = webpki_verifier(trust)?;
    if trust.skip_verify {
        return config_with(Arc::new(Recording::new(verifier, true)));
    }
    config_with(verifier)
}

/// webpki's verifier over the trust's roots; with no root at all (a node whose trust store is
/// empty or missing), a verifier that trusts nothing, as Go's empty pool does: every
/// certificate is then signed by an unknown authority, a TLS finding rather than a tool error.
fn webpki_verifier(trust: &Trust) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    if trust.roots.is_empty() {
        return Ok(Arc::new(TrustsNothing(provider())));
    }
    let verifier: Arc<dyn ServerCertVerifier> =
        WebPkiServerVerifier::builder_with_provider(trust.roots.clone(), provider())
            .build()
            .map_err(|e| rustls::Error::General(format!("no usable trust roots: {e}")))?;
    Ok(verifier)
}

/// The verifier of an empty trust store: no chain ends at a trusted root.
#[derive(Debug)]
struct TrustsNothing(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for TrustsNothing {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The one place a rustls configuration is built: ring, safe protocol versions, HTTP/1.1.
/// (`dangerous()` is only the door to pass the verifier as a trait object; every verifier given
/// here is webpki's, possibly wrapped to record the chain.)
fn config_with(verifier: Arc<dyn ServerCertVerifier>) -> Result<ClientConfig, rustls::Error> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Handshake over `stream` as `server_name`, bounded by `timeout`.
pub async fn handshake(
    stream: TcpStream,
    server_name: &str,
    trust: &Trust,
    timeout: Duration,
) -> TlsEvidence {
    handshake_over(stream, server_name, trust, timeout).await.0
}

/// The same over any stream (a proxy's tunnel, or TLS to an `https://` proxy), keeping the
/// session when the handshake succeeded.
pub async fn handshake_over<S>(
    stream: S,
    server_name: &str,
    trust: &Trust,
    timeout: Duration,
) -> (
    TlsEvidence,
    Option<tokio_rustls::client::TlsStream<FirstBytes<S>>>,
)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let started = Instant::now();
    let mut evidence = TlsEvidence {
        server_name: server_name.to_string(),
        ok: false,
        problem: None,
        chain: vec![],
        trusted: trust.sources.clone(),
        skipped: None,
        answered_plain_http: false,
        timed_out: false,
        elapsed_ms: 0,
    };
    let built = webpki_verifier(trust).and_then(|inner| {
        let recording = Arc::new(Recording::new(inner, trust.skip_verify));
        config_with(recording.clone()).map(|config| (recording, config))
    });
    let (recording, config) = match built {
        Ok(pair) => pair,
        Err(e) => {
            evidence.problem = Some(TlsProblem::Setup(e.to_string()));
            return (evidence, None);
        }
    };
    let name = match ServerName::try_from(
        server_name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
    ) {
        Ok(n) => n,
        Err(e) => {
            evidence.problem = Some(TlsProblem::ServerName {
                name: server_name.to_string(),
                reason: e.to_string(),
            });
            return (evidence, None);
        }
    };
    let connector = TlsConnector::from(Arc::new(config));
    let attempt = connector
        .connect(name, FirstBytes::new(stream))
        .into_fallible();
    let result = tokio::time::timeout(timeout, attempt).await;
    evidence.elapsed_ms = started.elapsed().as_millis() as u64;
    evidence.chain = recording
        .seen
        .lock()
        .map(|seen| seen.iter().filter_map(summarize).collect())
        .unwrap_or_default();
    let mut session = None;
    match result {
        Err(_) => {
            evidence.timed_out = true;
            evidence.problem = Some(TlsProblem::Timeout {
                ms: timeout.as_millis(),
            })
        }
        Ok(Ok(tls)) => {
            session = Some(tls);
            evidence.ok = true;
            let overruled = recording.overruled.lock().ok().and_then(|mut o| o.take());
            evidence.skipped = overruled.map(|e| {
                format!(
                    "skip_verify accepted it: {}",
                    TlsProblem::of(Some(&e), &e.to_string(), &evidence.chain, server_name)
                )
            });
        }
        Ok(Err((e, stream))) => {
            evidence.answered_plain_http = stream.is_http();
            evidence.problem = Some(if evidence.answered_plain_http {
                TlsProblem::PlainHttp
            } else {
                describe(&e, &evidence.chain, server_name)
            });
        }
    }
    (evidence, session)
}

/// Name what was wrong from the handshake's I/O error, which wraps rustls's own.
fn describe(error: &std::io::Error, chain: &[CertSummary], server_name: &str) -> TlsProblem {
    let rustls_error = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>());
    TlsProblem::of(rustls_error, &error.to_string(), chain, server_name)
}

fn summarize(der: &CertificateDer<'_>) -> Option<CertSummary> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let mut names: Vec<String> = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                    x509_parser::extensions::GeneralName::IPAddress(ip) => Some(format!("{ip:?}")),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        names = cert
            .subject()
            .iter_common_name()
            .filter_map(|cn| cn.as_str().ok())
            .map(String::from)
            .collect();
    }
    Some(CertSummary {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        names,
        not_before: cert.validity().not_before.to_string(),
        not_after: cert.validity().not_after.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
            serde_json::from_str(include_str!("../../docs/report.schema.json")).expect("schema");
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
}
