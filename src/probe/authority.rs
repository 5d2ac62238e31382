//! `host:port`, parsed once. Every host the walk touches is keyed by an [`Authority`], so a
//! registry named `r.example`, `r.example:443` and `https://r.example/v2/` is one host, and an
//! IPv6 literal keeps its brackets where a URL needs them and loses them where DNS does.

use std::fmt;

use url::Url;

/// Whether a host is spoken to over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    Https,
    Http,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
        }
    }

    pub fn of(url: &Url) -> Option<Scheme> {
        match url.scheme() {
            "https" => Some(Scheme::Https),
            "http" => Some(Scheme::Http),
            _ => None,
        }
    }
}

/// A host and its port. `host` is a DNS name or an IP literal without brackets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Authority {
    pub host: String,
    pub port: u16,
}

impl Authority {
    /// `r.example`, `r.example:5000`, `10.0.0.5`, `[::1]:5000`, `::1`; the port defaults to
    /// `default_port`. `None` for an empty host or a port that is not a number.
    pub fn parse(text: &str, default_port: u16) -> Option<Authority> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix('[') {
            let (ip, after) = rest.split_once(']')?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().ok()?,
                None if after.is_empty() => default_port,
                None => return None,
            };
            return (!ip.is_empty()).then(|| Authority {
                host: ip.to_string(),
                port,
            });
        }
        // A bare IPv6 literal has more than one colon and no brackets.
        if text.matches(':').count() > 1 {
            return text.parse::<std::net::Ipv6Addr>().ok().map(|_| Authority {
                host: text.to_string(),
                port: default_port,
            });
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (text, default_port),
        };
        (!host.is_empty()).then(|| Authority {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// The authority a URL points at, with the scheme's default port.
    pub fn of(url: &Url) -> Option<Authority> {
        let host = match url.host()? {
            url::Host::Domain(d) => d.to_ascii_lowercase(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        Some(Authority {
            host,
            port: url.port_or_known_default()?,
        })
    }

    fn is_ipv6(&self) -> bool {
        self.host.contains(':')
    }

    /// `host[:port]` as a URL carries it (brackets around IPv6), the port only when it is not
    /// the scheme's default.
    pub fn for_url(&self, scheme: Scheme) -> String {
        let host = if self.is_ipv6() {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// How people and the report name a host: `host` on 443, `host:port` otherwise.
impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.for_url(Scheme::Https))
    }
}

/// 169.254.0.0/16, fe80::/10, the cloud metadata names and AWS's IPv6 metadata address.
pub fn is_metadata_address(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return match ip {
            std::net::IpAddr::V4(v4) => v4.is_link_local(),
            std::net::IpAddr::V6(v6) => {
                (v6.segments()[0] & 0xffc0) == 0xfe80
                    || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
            }
        };
    }
    let name = bare.trim_end_matches('.').to_ascii_lowercase();
    matches!(
        name.as_str(),
        "metadata.google.internal" | "metadata" | "instance-data" | "instance-data.ec2.internal"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(host: &str, port: u16) -> Option<Authority> {
        Some(Authority {
            host: host.into(),
            port,
        })
    }

    #[test]
    fn names_ports_and_ip_literals() {
        assert_eq!(
            Authority::parse("R.example:5000", 443),
            a("r.example", 5000)
        );
        assert_eq!(Authority::parse("r.example", 443), a("r.example", 443));
        assert_eq!(Authority::parse("10.0.0.5", 80), a("10.0.0.5", 80));
        assert_eq!(Authority::parse("[::1]:5000", 443), a("::1", 5000));
        assert_eq!(Authority::parse("[fd00::2]", 443), a("fd00::2", 443));
        assert_eq!(Authority::parse("fd00::2", 443), a("fd00::2", 443));
        assert_eq!(Authority::parse("r.example:http", 443), None);
        assert_eq!(Authority::parse("", 443), None);
        assert_eq!(Authority::parse("[]:1", 443), None);
        assert_eq!(Authority::parse("[::1]x", 443), None);
    }

    #[test]
    fn urls_and_display() {
        let url = Url::parse("https://[fd00::2]:5000/v2/").expect("url");
        let authority = Authority::of(&url).expect("authority");
        assert_eq!(
            authority,
            Authority::parse("[fd00::2]:5000", 443).expect("parse")
        );
        assert_eq!(authority.to_string(), "[fd00::2]:5000");
        let plain = Authority::of(&Url::parse("http://store.example/x").expect("url"));
        assert_eq!(plain, a("store.example", 80));
        assert_eq!(
            plain.expect("authority").for_url(Scheme::Http),
            "store.example"
        );
        assert_eq!(a("r.example", 443).expect("a").to_string(), "r.example");
    }
}
