//! `cargo +nightly fuzz run node_processes`: any text as a `/proc/PID/net/unix` table
//! (`unix_listeners`, then which fds hold those sockets), as a k3s/RKE2 `config.yaml`
//! (`config_flags`, merged with itself as `config.yaml.d` would be), and as kubectl's
//! `--request-timeout` (`parse_request_timeout`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::cli::go_duration::parse_request_timeout;
use pullpath::probe::process::{socket_holders, unix_listeners};
use pullpath::probe::rancher::{config_flags, merge_config_flags};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let listeners = unix_listeners(&text);
    let inodes: Vec<u64> = listeners.iter().map(|(inode, _)| *inode).collect();
    let fds: Vec<(u32, Vec<String>)> = text
        .lines()
        .enumerate()
        .map(|(pid, line)| (pid as u32, vec![line.to_string()]))
        .collect();
    let _ = socket_holders(&inodes, &fds);
    if let Ok(flags) = config_flags(&text) {
        let _ = merge_config_flags(&[flags.clone(), flags]);
    }
    let _ = parse_request_timeout(&text);
});
