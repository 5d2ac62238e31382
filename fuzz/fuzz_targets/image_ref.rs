//! `cargo +nightly fuzz run image_ref`: any text as an image reference (`ImageRef::parse`,
//! `Digest::parse`, the registry guesses), which must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::image_ref::{self, Digest, ImageRef};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(image) = ImageRef::parse(&text) {
        let _ = (image.api_host(), image.reference(), image.to_string());
        let _ = pullpath::keyring::lookup_image(&image);
        let _ = ImageRef::parse(&image.to_string());
    }
    let _ = Digest::parse(&text);
    let _ = image_ref::named_registry(&text);
    let _ = image_ref::registry_read_as_repository(&text);
});
