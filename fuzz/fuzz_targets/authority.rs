//! `cargo +nightly fuzz run authority`: any text as `host[:port]` (`Authority::parse`) and as
//! a URL (`Authority::of`), printed back for a URL (`for_url`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::authority::{Authority, Scheme};
use url::Url;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for port in [443, 0, u16::MAX] {
        if let Some(authority) = Authority::parse(&text, port) {
            let _ = authority.for_url(Scheme::Https);
            let _ = authority.for_url(Scheme::Http);
        }
    }
    if let Ok(url) = Url::parse(&text) {
        let _ = Scheme::of(&url);
        let _ = Authority::of(&url);
    }
});
