//! `cargo +nightly fuzz run explain`: any bytes through input detection, chain parsing,
//! classification and the report, which must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let explanation = pullpath::failure_text::explain(&text);
    let _ = pullpath::report::explain_report(&explanation);
});
