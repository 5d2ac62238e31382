//! `cargo +nightly fuzz run systemd`: any text as a unit file or drop-in (`parse_unit`),
//! `system.conf` (`parse_manager`), an `EnvironmentFile=` (`parse_environment_file`) and an
//! `Environment=` value (`split_assignments`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::systemd;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = systemd::parse_unit(&text);
    let _ = systemd::parse_manager(&text);
    let _ = systemd::parse_environment_file(&text);
    let _ = systemd::split_assignments(&text);
});
