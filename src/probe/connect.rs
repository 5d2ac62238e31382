//! Connect: TCP to every address of a host at once, each bounded by the connect timeout, so a
//! dead host costs one timeout, not one per address. Timeout, refused and unreachable stay
//! distinct; each attempt keeps its timing.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use super::observed::connect::{ConnectAttempt, ConnectOutcome};

/// Connect to every address in parallel; return the first stream that connects and every
/// attempt's evidence (the others are dropped, closing their connections).
pub async fn connect_any(
    addresses: &[IpAddr],
    port: u16,
    timeout: Duration,
) -> (Option<(SocketAddr, TcpStream)>, Vec<ConnectAttempt>) {
    let mut set = tokio::task::JoinSet::new();
    for (order, ip) in addresses.iter().enumerate() {
        let address = SocketAddr::new(*ip, port);
        set.spawn(async move {
            let started = Instant::now();
            let result = tokio::time::timeout(timeout, TcpStream::connect(address)).await;
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let (outcome, error, stream) = match result {
                Err(_) => (
                    ConnectOutcome::Timeout,
                    Some(format!("no answer within {} ms", timeout.as_millis())),
                    None,
                ),
                Ok(Ok(stream)) => (ConnectOutcome::Connected, None, Some(stream)),
                Ok(Err(e)) => (classify(&e), Some(e.to_string()), None),
            };
            (
                order,
                ConnectAttempt {
                    address,
                    outcome,
                    elapsed_ms,
                    error,
                },
                stream,
            )
        });
    }
    let mut attempts = Vec::new();
    let mut winner = None;
    while let Some(joined) = set.join_next().await {
        let Ok((order, attempt, stream)) = joined else {
            continue;
        };
        if let (Some(stream), None) = (stream, &winner) {
            winner = Some((attempt.address, stream));
            // The first connection wins; the others would only add their timeouts.
            set.abort_all();
        }
        attempts.push((order, attempt));
    }
    attempts.sort_by_key(|(order, _)| *order);
    (winner, attempts.into_iter().map(|(_, a)| a).collect())
}

fn classify(error: &std::io::Error) -> ConnectOutcome {
    use std::io::ErrorKind::*;
    match error.kind() {
        ConnectionRefused | ConnectionReset => ConnectOutcome::Refused,
        NetworkUnreachable | HostUnreachable => ConnectOutcome::Unreachable,
        TimedOut => ConnectOutcome::Timeout,
        _ => ConnectOutcome::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::observed::connect::worst;
    use crate::vocab::Layer;

    #[tokio::test]
    async fn refused_and_connected_on_loopback() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("listen");
        let open = listener.local_addr().expect("addr").port();
        let (winner, attempts) = connect_any(
            &["127.0.0.1".parse().expect("ip")],
            open,
            Duration::from_secs(2),
        )
        .await;
        assert!(winner.is_some());
        assert_eq!(attempts[0].outcome, ConnectOutcome::Connected);
        drop(listener);
        let (winner, attempts) = connect_any(
            &["127.0.0.1".parse().expect("ip")],
            open,
            Duration::from_secs(2),
        )
        .await;
        assert!(winner.is_none());
        assert_eq!(attempts[0].outcome, ConnectOutcome::Refused);
        assert_eq!(
            worst(&attempts).map(|a| a.outcome.layer()),
            Some(Layer::Refused)
        );
    }
}
