//! Routes: ask the kernel, over rtnetlink (`RTM_GETROUTE`, what `ip route get` does), which
//! route it would use for an address. Nothing is sent on the network.

use std::net::IpAddr;

use netlink_packet_core::{NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use super::observed::route::RouteLookup;

/// Look up the route for `destination`. Runs a blocking netlink exchange: call from a blocking
/// task (it answers in microseconds; the kernel does not go to the network).
pub fn lookup(destination: IpAddr) -> RouteLookup {
    match ask_kernel(destination) {
        Ok(found) => found,
        Err(e) => RouteLookup {
            destination,
            interface: None,
            gateway: None,
            source: None,
            error: Some(e.to_string()),
        },
    }
}

fn ask_kernel(destination: IpAddr) -> std::io::Result<RouteLookup> {
    let mut message = RouteMessage::default();
    let (family, length, address) = match destination {
        IpAddr::V4(v4) => (AddressFamily::Inet, 32, RouteAddress::Inet(v4)),
        IpAddr::V6(v6) => (AddressFamily::Inet6, 128, RouteAddress::Inet6(v6)),
    };
    message.header.address_family = family;
    message.header.destination_prefix_length = length;
    message
        .attributes
        .push(RouteAttribute::Destination(address));

    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    let mut request = NetlinkMessage::new(
        header,
        NetlinkPayload::from(RouteNetlinkMessage::GetRoute(message)),
    );
    request.finalize();
    let mut bytes = vec![0u8; request.buffer_len()];
    request.serialize(&mut bytes);

    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    socket.send(&bytes, 0)?;
    let mut buffer = vec![0u8; 8192];
    let n = socket.recv(&mut &mut buffer[..], 0)?;
    let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buffer[..n])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    match reply.payload {
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(route)) => {
            let mut found = RouteLookup {
                destination,
                interface: None,
                gateway: None,
                source: None,
                error: None,
            };
            for attribute in route.attributes {
                match attribute {
                    RouteAttribute::Oif(index) => found.interface = Some(interface_name(index)),
                    RouteAttribute::Gateway(gw) => found.gateway = ip_of(gw),
                    RouteAttribute::PrefSource(src) => found.source = ip_of(src),
                    _ => {}
                }
            }
            Ok(found)
        }
        NetlinkPayload::Error(error) => {
            let code = error.code.map_or(0, |c| -c.get());
            Err(std::io::Error::from_raw_os_error(code))
        }
        other => Err(std::io::Error::other(format!(
            "unexpected netlink reply {other:?}"
        ))),
    }
}

fn ip_of(a: RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(v6)),
        _ => None,
    }
}

/// The interface's name from its index, through sysfs (no extra netlink round trip).
fn interface_name(index: u32) -> String {
    let found = std::fs::read_dir("/sys/class/net")
        .ok()
        .and_then(|entries| {
            entries.flatten().find_map(|entry| {
                let ifindex = std::fs::read_to_string(entry.path().join("ifindex")).ok()?;
                (ifindex.trim().parse::<u32>().ok()? == index)
                    .then(|| entry.file_name().to_string_lossy().into_owned())
            })
        });
    found.unwrap_or_else(|| format!("if{index}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_a_route_through_lo() {
        let route = lookup("127.0.0.1".parse().expect("ip"));
        assert!(route.has_route(), "{route:?}");
        assert_eq!(route.interface.as_deref(), Some("lo"));
    }
}
