//! `cargo +nightly fuzz run connect`: any bytes as a proxy's answer to `CONNECT`
//! (`interpret_connect`). Input: the head (up to the blank line) `0xFF` the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::proxy;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 2);
    let head = pullpath_fuzz::bytes(&parts, 0, b"");
    let body = pullpath_fuzz::bytes(&parts, 1, b"");
    let _ = proxy::interpret_connect(head, body);
});
