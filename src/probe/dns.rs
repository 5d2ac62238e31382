//! Names: resolve a host the way the node's runtime would, and keep every server's answer.
//!
//! `/etc/hosts` first (flagged as a hand fix: it disappears when the node is replaced), then
//! each configured nameserver, asked directly with hickory's wire format so that NXDOMAIN,
//! SERVFAIL, an empty answer and silence stay distinct, and the CNAME chain is visible.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

use super::evidence::Evidence;
use super::observed::dns::{NameSource, Resolution, ServerAnswer, ServerReply};
use super::resolv::ResolverConfig;

impl Resolution {
    /// Why the name did not resolve (the answer for the host itself), or `None` when it did.
    pub fn failure(&self) -> Option<Evidence> {
        if !self.addresses.is_empty() {
            return None;
        }
        // Name the answer for the host itself first (not a search-domain variant).
        let main = self
            .servers
            .iter()
            .find(|a| a.name == self.host)
            .or(self.servers.first());
        Some(main.map_or(Evidence::NoNameserver, |a| Evidence::Dns {
            name: a.name.clone(),
            server: a.server,
            outcome: a.outcome,
            elapsed_ms: a.elapsed_ms,
        }))
    }
}

/// The loopback names every distribution's /etc/hosts carries.
fn is_stock_localhost(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    matches!(
        host.as_str(),
        "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback"
    ) || host.ends_with(".localhost")
}

/// Resolve `host` as glibc would with `config`, each query bounded by `timeout`.
pub async fn resolve(host: &str, config: &ResolverConfig, timeout: Duration) -> Resolution {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Resolution {
            host: host.into(),
            source: NameSource::IpLiteral,
            addresses: vec![ip],
            cname_chain: vec![],
            answered_by: None,
            servers: vec![],
            hand_fix: None,
        };
    }
    let from_hosts = config.hosts_entry(host);
    if from_hosts.is_empty() {
        return resolve_dns(host, config, timeout).await;
    }
    // `localhost` and its kin ship with every node image: no hand fix, and no DNS to compare.
    let (hand_fix, servers) = if is_stock_localhost(host) {
        (None, vec![])
    } else {
        let dns = resolve_dns(host, config, timeout).await;
        let dns_says = match dns.failure() {
            Some(failure) => format!("without it DNS gives {failure}"),
            None => format!("DNS alone gives {}", joined(&dns.addresses)),
        };
        let fix = format!(
            "/etc/hosts maps {host} to {}: a hand fix that disappears when the node is replaced; {dns_says}",
            joined(&from_hosts)
        );
        (Some(fix), dns.servers)
    };
    Resolution {
        host: host.into(),
        source: NameSource::HostsFile,
        addresses: from_hosts,
        cname_chain: vec![],
        answered_by: None,
        hand_fix,
        servers,
    }
}

fn joined(addresses: &[IpAddr]) -> String {
    addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

async fn resolve_dns(host: &str, config: &ResolverConfig, timeout: Duration) -> Resolution {
    let mut servers = Vec::new();
    for name in config.candidates(host) {
        // Every server, A and AAAA, at once: a dead server costs one timeout, not one each.
        let mut set = tokio::task::JoinSet::new();
        for (order, server) in config.nameservers.iter().enumerate() {
            for rtype in [RecordType::A, RecordType::AAAA] {
                let (name, server) = (name.clone(), *server);
                set.spawn(
                    async move { (order, rtype, query(&name, server, rtype, timeout).await) },
                );
            }
        }
        let mut answers: Vec<(usize, RecordType, ServerAnswer)> = set.join_all().await;
        answers.sort_by_key(|(order, rtype, _)| (*order, *rtype == RecordType::AAAA));
        // glibc takes the first server with a definitive answer; NXDOMAIN is definitive.
        let decided = answers.iter().map(|(o, _, a)| (o, a)).find(|(_, a)| {
            matches!(
                a.outcome,
                ServerReply::Answer | ServerReply::NxDomain | ServerReply::NoData
            )
        });
        let winner = decided.map(|(o, _)| *o);
        let mut addresses = Vec::new();
        let mut chain = Vec::new();
        for (order, _, answer) in &answers {
            if Some(*order) == winner && answer.outcome == ServerReply::Answer {
                addresses.extend(answer.addresses.iter().copied());
                if chain.is_empty() {
                    chain = answer.cname_chain.clone();
                }
            }
        }
        let answered_by = winner.map(|o| config.nameservers[o]);
        // Keep one entry per server and name: the A answer, or AAAA when only it answered.
        for (_, rtype, answer) in answers {
            let duplicate = servers
                .iter()
                .any(|s: &ServerAnswer| s.server == answer.server && s.name == answer.name);
            if !duplicate && (rtype == RecordType::A || answer.outcome == ServerReply::Answer) {
                servers.push(answer);
            }
        }
        if !addresses.is_empty() {
            addresses.sort_by_key(|a| a.is_ipv6());
            addresses.dedup();
            return Resolution {
                host: host.into(),
                source: NameSource::Dns,
                addresses,
                cname_chain: chain,
                answered_by,
                servers,
                hand_fix: None,
            };
        }
    }
    Resolution {
        host: host.into(),
        source: NameSource::Dns,
        addresses: vec![],
        cname_chain: vec![],
        answered_by: None,
        servers,
        hand_fix: None,
    }
}

/// One query to one server: UDP, then TCP if the answer was truncated.
async fn query(name: &str, server: IpAddr, rtype: RecordType, timeout: Duration) -> ServerAnswer {
    let started = Instant::now();
    let result = tokio::time::timeout(timeout, exchange(name, server, rtype)).await;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let mut answer = ServerAnswer {
        server,
        name: name.to_string(),
        outcome: ServerReply::Error,
        addresses: vec![],
        cname_chain: vec![],
        elapsed_ms,
    };
    match result {
        Err(_) => answer.outcome = ServerReply::Timeout,
        Ok(Err(_)) => answer.outcome = ServerReply::Error,
        Ok(Ok(message)) => {
            answer.outcome = match message.response_code() {
                ResponseCode::NoError => ServerReply::NoData,
                ResponseCode::NXDomain => ServerReply::NxDomain,
                ResponseCode::ServFail => ServerReply::ServFail,
                ResponseCode::Refused => ServerReply::Refused,
                _ => ServerReply::Error,
            };
            for record in message.answers() {
                match record.data() {
                    RData::A(a) => answer.addresses.push(IpAddr::V4(a.0)),
                    RData::AAAA(a) => answer.addresses.push(IpAddr::V6(a.0)),
                    RData::CNAME(c) => answer
                        .cname_chain
                        .push(c.0.to_utf8().trim_end_matches('.').to_string()),
                    _ => {}
                }
            }
            if !answer.addresses.is_empty() {
                answer.outcome = ServerReply::Answer;
            }
        }
    }
    answer
}

async fn exchange(name: &str, server: IpAddr, rtype: RecordType) -> std::io::Result<Message> {
    let invalid = |e: hickory_proto::ProtoError| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
    };
    let fqdn = Name::from_ascii(format!("{}.", name.trim_end_matches('.'))).map_err(invalid)?;
    let mut request = Message::new();
    let id: u16 = rand_id();
    request
        .set_id(id)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true)
        .add_query(Query::query(fqdn, rtype));
    let bytes = request.to_vec().map_err(invalid)?;
    let target = SocketAddr::new(server, 53);
    let bind: SocketAddr = if server.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    }
    .parse()
    .expect("static address");
    let socket = UdpSocket::bind(bind).await?;
    socket.connect(target).await?;
    socket.send(&bytes).await?;
    let mut buf = vec![0u8; 4096];
    let response = loop {
        let n = socket.recv(&mut buf).await?;
        // An answer to someone else's id is not ours; keep waiting (the caller's timeout bounds it).
        if let Ok(message) = Message::from_vec(&buf[..n])
            && message.id() == id
        {
            break message;
        }
    };
    if !response.truncated() {
        return Ok(response);
    }
    let mut stream = TcpStream::connect(target).await?;
    let length = u16::try_from(bytes.len()).map_err(|_| std::io::Error::other("query too long"))?;
    stream.write_all(&length.to_be_bytes()).await?;
    stream.write_all(&bytes).await?;
    let mut length = [0u8; 2];
    stream.read_exact(&mut length).await?;
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut body).await?;
    Message::from_vec(&body).map_err(invalid)
}

/// Query ids need not be secret here, only unlikely to collide; the clock's nanoseconds do.
fn rand_id() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (nanos ^ (nanos >> 16)) as u16
}
