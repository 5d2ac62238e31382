//! `cargo +nightly fuzz run containerd_config`: any text as containerd's `config.toml`
//! (`pull_settings`, then the hosts directories and the download limit each containerd version
//! takes from it; `split_config_path`), as its command line (`config_flag`, NUL-separated
//! as `/proc/PID/cmdline`) and as the version its CRI reports (`ContainerdLine::of_version`).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pullpath::probe::containerd_config;
use pullpath::runtime::version::{ContainerdLine, RuntimeIdentity};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let file = Path::new("/etc/containerd/config.toml");
    let settings = containerd_config::pull_settings(&text, file).map(Some);
    for version in ["1.7.27", "2.0.4", "2.1.9", "2.2.1"] {
        let runtime = RuntimeIdentity::from_flag(version).expect("a containerd version");
        let _ = containerd_config::hosts_dirs(&settings, file, &runtime);
        let _ = containerd_config::download_limit(&settings, file, &runtime);
    }
    let _ = containerd_config::split_config_path(&text);
    let args: Vec<String> = data
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let _ = containerd_config::config_flag(&args);
    let _ = ContainerdLine::of_version(&text);
    let _ = RuntimeIdentity::from_cri("/run/containerd/containerd.sock", "containerd", &text);
});
