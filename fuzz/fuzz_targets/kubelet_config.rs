//! `cargo +nightly fuzz run kubelet_config`: any text as a KubeletConfiguration (YAML or JSON)
//! read for one field (`config_field`). Input: the file `0xFF` the field.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::kubelet_config;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 2);
    let text = pullpath_fuzz::text(&parts, 0, "");
    let field = pullpath_fuzz::text(&parts, 1, "containerRuntimeEndpoint");
    let _ = kubelet_config::config_field(&text, &field);
});
