//! `pullpath azure`: which route, peering flag, DNS link or rule keeps each node pool from each
//! endpoint of an ACR pull, decided offline from the network's own exports (docs/azure.md).
//!
//! Data flows one way: the export directory is read ([`exports`](crate::azure::exports)) and typed ([`model`](crate::azure::model), both
//! JSON shapes via [`shape`](crate::azure::shape)); for each pool and endpoint the sequencer ([`analyse`](crate::azure::analyse)) asks the
//! decisions in the pull's order — [`dns`](crate::azure::dns), [`route`](crate::azure::route) (over [`rebuild`](crate::azure::rebuild) when no effective
//! routes were exported), [`peering`](crate::azure::peering), [`nsg`](crate::azure::nsg), [`registry`](crate::azure::registry) — and the result becomes the
//! serialize-only [`wire`](crate::azure::wire) report. pullpath never calls Azure: [`commands`](crate::azure::commands) prints the
//! read-only `az` commands that make the directory.

// A `Finding` is the decisions' `Err`: produced once per endpoint at most and carrying its
// evidence by value; boxing it would only add indirection to every constructor.
#![allow(clippy::result_large_err)]

/// The sequencer: every pool × every endpoint, step by step.
pub mod analyse;
/// IPv4 prefixes.
pub mod cidr;
/// `pullpath azure commands`: the export script.
pub mod commands;
/// What a name resolves to from a VNet: zones, links, records, custom DNS servers.
pub mod dns;
/// The directory layout, the command behind each file, reading it without trusting it.
pub mod exports;
/// A failing step as a value: resource, field, observed, expected, the `az` that shows it.
pub mod finding;
/// The exports as a typed network.
pub mod model;
/// NSG rules: first match by priority, NIC then subnet, service tags and expanded prefixes.
pub mod nsg;
/// Peering health, gateway transit, the return path.
pub mod peering;
/// A subnet's routes rebuilt from route table, peerings, private endpoints and gateways.
pub mod rebuild;
/// The registry's endpoints and its own network rules.
pub mod registry;
/// Route selection: longest prefix, User over BGP over System.
pub mod route;
/// Reading `az` and ARM shapes alike; case-insensitive ids.
pub mod shape;
/// The text view of the report.
pub mod text;
/// The JSON report: serialize-only wire types.
pub mod wire;

use std::path::Path;

/// Why `analyse` could not run at all (a usage error, exit 64).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Dir(#[from] exports::DirError),
    #[error("no node pool named {wanted:?}; the exports list: {known}")]
    NoSuchPool { wanted: String, known: String },
}

/// Read the export directory and analyse it: the whole of `pullpath azure analyse`.
pub fn run(dir: &Path, pool: Option<&str>) -> Result<wire::AzureReport, RunError> {
    let exports = exports::Exports::load(dir)?;
    let network = model::Network::from_exports(&exports);
    if let Some(wanted) = pool
        && !network.pools.is_empty()
        && !network
            .pools
            .iter()
            .any(|p| p.name.eq_ignore_ascii_case(wanted))
    {
        let known: Vec<&str> = network.pools.iter().map(|p| p.name.as_str()).collect();
        return Err(RunError::NoSuchPool {
            wanted: wanted.to_string(),
            known: known.join(", "),
        });
    }
    let analysis = analyse::analyse(&network, &exports, pool);
    Ok(wire::report(&analysis, &exports))
}
