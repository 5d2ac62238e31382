//! `cargo +nightly fuzz run resolv`: any texts as `/etc/resolv.conf` and `/etc/hosts`
//! (`ResolverConfig::parse`), then the names glibc would ask for one name (`candidates`,
//! `hosts_entry`). Input: resolv.conf `0xFF` hosts `0xFF` the name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::resolv::ResolverConfig;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 3);
    let resolv = pullpath_fuzz::text(&parts, 0, "");
    let hosts = pullpath_fuzz::text(&parts, 1, "");
    let name = pullpath_fuzz::text(&parts, 2, "registry.example");
    let config = ResolverConfig::parse(&resolv, &hosts);
    let _ = config.candidates(&name);
    let _ = config.hosts_entry(&name);
    // The same text as hosts: a line of either file is fair game for the other.
    let config = ResolverConfig::parse(&hosts, &resolv);
    let _ = config.candidates(&name);
});
