//! `cargo +nightly fuzz run registry`: a registry's answers — `WWW-Authenticate`, the token
//! answer and its JWT, error envelopes, `Retry-After`, `Location` — through `probe::registry`
//! and `probe::redirect`. Input: header `0xFF` body `0xFF` status (2 bytes) `0xFF` repository.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::{redirect, refusal, registry};
use url::Url;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 4);
    let header = pullpath_fuzz::text(&parts, 0, "");
    let body = pullpath_fuzz::bytes(&parts, 1, b"");
    let status = pullpath_fuzz::number(&parts, 2, 401);
    let repository = pullpath_fuzz::text(&parts, 3, "team/app");

    let _ = registry::Challenge::parse(&header);
    let _ = registry::interpret_ping(status, Some(&header), body);
    let _ = registry::interpret_ping(status, None, body);
    let _ = registry::interpret_token(status, body, &repository, "");
    let _ = registry::interpret_token(200, body, &repository, "alice");
    let _ = registry::interpret_manifest_failure(status, Some(&header), body, true);
    let _ = refusal::Said::from_registry(body);
    let _ = registry::granted_actions(&header, &repository);
    let _ = registry::retry_note(429, Some(&header));
    let current =
        Url::parse("https://registry.example/v2/team/app/manifests/latest").expect("a fixed URL");
    let _ = redirect::interpret_redirect(&current, 307, Some(&header));
});
