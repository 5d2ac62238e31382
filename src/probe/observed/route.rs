//! What the kernel said about the route to one address.

use std::net::IpAddr;

/// The kernel's route for one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteLookup {
    pub destination: IpAddr,
    /// `None` when the kernel has no route.
    pub interface: Option<String>,
    pub gateway: Option<IpAddr>,
    pub source: Option<IpAddr>,
    /// The kernel's refusal (`network is unreachable`), when there is no route.
    pub error: Option<String>,
}

impl RouteLookup {
    pub fn has_route(&self) -> bool {
        self.error.is_none()
    }

    pub fn describe(&self) -> String {
        match (&self.error, &self.interface) {
            (Some(e), _) => format!("{}: no route ({e})", self.destination),
            (None, iface) => {
                let mut s = format!(
                    "{} dev {}",
                    self.destination,
                    iface.as_deref().unwrap_or("?")
                );
                if let Some(gw) = self.gateway {
                    s.push_str(&format!(" via {gw}"));
                }
                if let Some(src) = self.source {
                    s.push_str(&format!(" src {src}"));
                }
                s
            }
        }
    }
}
