//! IPv4 prefixes as Azure writes them (`10.0.0.0/16`, a bare address as a /32).
//!
//! Only IPv4: the routes and rules of an ACR pull path are IPv4 (the registry's private
//! endpoint and data endpoints); an IPv6 prefix in an export is skipped, never misread.

use std::fmt;
use std::net::Ipv4Addr;

/// One IPv4 prefix; the address is kept with its host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    network: u32,
    len: u8,
}

impl Prefix {
    /// `a.b.c.d/n` or `a.b.c.d`; anything else (IPv6, a service tag, `*`) is `None`.
    pub fn parse(text: &str) -> Option<Prefix> {
        let text = text.trim();
        let (address, len) = match text.split_once('/') {
            Some((a, l)) => (a, l.parse::<u8>().ok().filter(|l| *l <= 32)?),
            None => (text, 32),
        };
        let address: Ipv4Addr = address.parse().ok()?;
        Some(Prefix::new(address, len))
    }

    pub fn new(address: Ipv4Addr, len: u8) -> Prefix {
        let len = len.min(32);
        Prefix {
            network: u32::from(address) & mask(len),
            len,
        }
    }

    pub fn prefix_len(self) -> u8 {
        self.len
    }

    /// The `n`th address of the prefix (saturating at its last).
    pub fn nth(self, n: u32) -> Ipv4Addr {
        let size = if self.len == 0 {
            u32::MAX
        } else {
            (1u32 << (32 - u32::from(self.len))) - 1
        };
        Ipv4Addr::from(self.network | n.min(size))
    }

    pub fn contains(self, address: Ipv4Addr) -> bool {
        u32::from(address) & mask(self.len) == self.network
    }

    /// True when every address of `inner` is in `self`.
    pub fn covers(self, inner: Prefix) -> bool {
        inner.len >= self.len && inner.network & mask(self.len) == self.network
    }

    pub fn overlaps(self, other: Prefix) -> bool {
        self.covers(other) || other.covers(self)
    }
}

fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n)),
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.len)
    }
}

/// The ranges Azure routes to `None` unless something more specific covers them (the UDR overview: the
/// default system routes for 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 and 100.64.0.0/10).
pub fn dropped_by_default() -> [Prefix; 4] {
    [
        Prefix::new(Ipv4Addr::new(10, 0, 0, 0), 8),
        Prefix::new(Ipv4Addr::new(172, 16, 0, 0), 12),
        Prefix::new(Ipv4Addr::new(192, 168, 0, 0), 16),
        Prefix::new(Ipv4Addr::new(100, 64, 0, 0), 10),
    ]
}

/// True for an address Azure's public side answers with: not RFC 1918, not 100.64/10, not
/// loopback or link-local.
pub fn is_public(address: Ipv4Addr) -> bool {
    !(dropped_by_default().iter().any(|p| p.contains(address))
        || address.is_loopback()
        || address.is_link_local()
        || address.is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches() {
        let p = Prefix::parse("10.1.0.0/16").expect("prefix");
        assert!(p.contains(Ipv4Addr::new(10, 1, 255, 4)));
        assert!(!p.contains(Ipv4Addr::new(10, 2, 0, 1)));
        assert_eq!(Prefix::parse("10.0.1.5").map(Prefix::prefix_len), Some(32));
        assert_eq!(
            Prefix::parse("10.1.2.3/16").map(|p| p.to_string()),
            Some("10.1.0.0/16".into())
        );
        assert!(
            Prefix::parse("0.0.0.0/0")
                .expect("default")
                .contains(Ipv4Addr::new(20, 1, 2, 3))
        );
    }

    #[test]
    fn refuses_what_is_not_an_ipv4_prefix() {
        for text in [
            "",
            "*",
            "VirtualNetwork",
            "fd00::/8",
            "10.0.0.0/33",
            "10.0.0/8",
        ] {
            assert_eq!(Prefix::parse(text), None, "{text}");
        }
    }

    #[test]
    fn covers_is_containment() {
        let wide = Prefix::parse("10.0.0.0/8").expect("p");
        let narrow = Prefix::parse("10.1.0.0/16").expect("p");
        assert!(wide.covers(narrow) && !narrow.covers(wide) && narrow.overlaps(wide));
        assert!(!is_public(Ipv4Addr::new(192, 168, 1, 1)));
        assert!(is_public(Ipv4Addr::new(20, 50, 1, 1)));
    }
}
