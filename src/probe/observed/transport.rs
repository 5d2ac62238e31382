//! What broke when a request to a connected host got no answer.

/// Why a request got no answer, by what broke. The host's check (DNS, route, connect, TLS)
/// passed before any request, so these are failures *after* the connection was made: what the
/// peer or the path did to the request, each with the transport's own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Transport {
    /// No answer within the transport's time.
    #[error("timed out: {0}")]
    TimedOut(String),
    /// The peer refused, reset or aborted the connection.
    #[error("connection reset: {0}")]
    Reset(String),
    /// The connection closed before a whole response head arrived.
    #[error("connection closed before a response: {0}")]
    Closed(String),
    /// The response head was larger than the client reads (hyper: 400 KiB or 100 headers;
    /// Go's client, containerd's, reads up to 10 MiB of response headers).
    #[error("response headers too large: {0}")]
    HeadersTooLarge(String),
    /// The answer was not HTTP/1.1 as a client parses it.
    #[error("malformed HTTP response: {0}")]
    Malformed(String),
    /// TLS broke after the handshake (an alert, a bad record).
    #[error("TLS failed after the handshake: {0}")]
    Tls(String),
    /// The walk asked for a host it had not checked: the tool's own mistake.
    #[error("{0} was not checked before this request")]
    Unchecked(String),
    /// Anything else the transport said.
    #[error("{0}")]
    Other(String),
}
