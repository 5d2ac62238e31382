//! `cargo +nightly fuzz run proxy`: any bytes as a process's `/proc/PID/environ`
//! (`parse_environ`), its proxy variables read as Go reads them (`ProxyConfig::from_env`) and
//! asked for a URL (`proxy_for`: `NO_PROXY` suffixes, CIDRs, ports), and redacted.
//! Input: environ `0xFF` the URL asked for.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use pullpath::probe::proxy::{self, ProxyConfig};
use url::Url;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 2);
    let environ = pullpath_fuzz::bytes(&parts, 0, b"");
    let asked = pullpath_fuzz::text(&parts, 1, "https://registry.example:5000/v2/");
    let env = proxy::parse_environ(environ);
    let config = ProxyConfig::from_env(&env);
    // The same values as plain `KEY=value` lines, as a unit's environment gives them.
    let mut upper: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in &env {
        upper.insert(key.to_ascii_uppercase(), value.clone());
        let _ = proxy::redact_value(value);
        let _ = proxy::parse_proxy(value);
    }
    let upper = ProxyConfig::from_env(&upper);
    let mut urls = vec![
        "https://registry.example/v2/".to_string(),
        "http://10.1.2.3:5000/v2/".to_string(),
        "https://[fd00::1]:443/v2/".to_string(),
    ];
    urls.push(asked.into_owned());
    for url in urls.iter().filter_map(|u| Url::parse(u).ok()) {
        for config in [&config, &upper] {
            if let Some(proxy_url) = config.proxy_for(&url) {
                let _ = proxy::basic_authorization(proxy_url);
                let _ = proxy::redact_proxy(proxy_url);
            }
        }
    }
});
