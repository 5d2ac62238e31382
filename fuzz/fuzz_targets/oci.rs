//! `cargo +nightly fuzz run oci`: any bytes as a manifest or index (`interpret_manifest`), the
//! platform chosen from it (`select_platform`, `Platform::parse`) and blobs checked against its
//! descriptors (`BlobCheck`). Input: body `0xFF` content type `0xFF` platform.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::oci::{self, BlobCheck, Manifest, Platform};

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 3);
    let body = pullpath_fuzz::bytes(&parts, 0, b"");
    let content_type = pullpath_fuzz::text(&parts, 1, "application/vnd.oci.image.index.v1+json");
    let platform = pullpath_fuzz::text(&parts, 2, "linux/amd64");
    let wanted = Platform::parse(&platform).unwrap_or_else(Platform::host);
    let digest = oci::sha256_digest(body);
    let _ = oci::interpret_manifest(body, Some(&digest), &content_type);
    let Ok(read) = oci::interpret_manifest(body, None, &content_type) else {
        return;
    };
    let descriptors = match &read.manifest {
        Manifest::Index(entries) => {
            let _ = oci::select_platform(entries, &wanted);
            entries.clone()
        }
        Manifest::Image { config, layers } => {
            let mut all = vec![config.clone()];
            all.extend(layers.iter().cloned());
            all
        }
    };
    // A descriptor may claim any size: the check must not allocate for it.
    for descriptor in descriptors.iter().take(4) {
        let mut check = BlobCheck::new(descriptor);
        if check.feed(body).is_ok() {
            let _ = check.finish();
        }
    }
});
