//! `cargo +nightly fuzz run docker_config`: any text as a docker `config.json` or
//! `.dockerconfigjson` (`creds::parse_auths`, `creds::from_docker_config`).
//! Input: the file, then optionally `0xFF` and the registry looked up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::creds;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 2);
    let text = pullpath_fuzz::text(&parts, 0, "");
    let registry = pullpath_fuzz::text(&parts, 1, "registry.example");
    if let Ok(auths) = creds::parse_auths(&text) {
        for (_, credentials) in auths {
            let _ = credentials.basic();
        }
    }
    let _ = creds::from_docker_config(&text, &registry);
});
