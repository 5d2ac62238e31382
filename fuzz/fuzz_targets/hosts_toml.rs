//! `cargo +nightly fuzz run hosts_toml`: any text as containerd's `hosts.toml`
//! (`HostsConfig::parse`) for any registry, by each containerd line's rules.
//! Input: the file, then optionally `0xFF` and the registry.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pullpath::probe::hosts_toml::HostsConfig;
use pullpath::runtime::version::ContainerdLine;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 2);
    let text = pullpath_fuzz::text(&parts, 0, "");
    let registry = pullpath_fuzz::text(&parts, 1, "registry.example:5000");
    // A directory that does not exist: no `*.crt` is listed from the machine.
    let dir = Path::new("/nonexistent/pullpath-fuzz/certs.d/registry.example");
    for line in ContainerdLine::ALL {
        let _ = HostsConfig::parse(&text, dir, &registry, line);
    }
});
