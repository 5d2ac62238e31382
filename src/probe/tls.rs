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
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::observed::tls::{CertSummary, TlsEvidence, TlsProblem};

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
mod tests;
