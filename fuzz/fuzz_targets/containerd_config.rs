//! `cargo +nightly fuzz run containerd_config`: any text as containerd's `config.toml`
//! (`registry_section`, `split_config_path`), as its command line (`config_flag`, NUL-separated
//! as `/proc/PID/cmdline`) and as the version its CRI reports (`ContainerdLine::of_version`).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pullpath::probe::containerd_config;
use pullpath::runtime::version::{ContainerdLine, RuntimeIdentity};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = containerd_config::registry_section(&text, Path::new("/etc/containerd/config.toml"));
    let _ = containerd_config::split_config_path(&text);
    let args: Vec<String> = data
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let _ = containerd_config::config_flag(&args);
    let _ = ContainerdLine::of_version(&text);
    let _ = RuntimeIdentity::from_cri("/run/containerd/containerd.sock", "containerd", &text);
});
