//! `cargo +nightly fuzz run keyring`: any docker config key against any image as the kubelet's
//! keyring matches them (`urls_match`, `near_miss`, `normalize_key`, `key_covers`): never a
//! panic, whatever bytes a pull secret's key or a pod's image holds (issue 30: a multi-byte host
//! once made the old cluster-mode copy slice inside a character). Input: the key `0xFF` the image.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::image_ref::ImageRef;
use pullpath::keyring;

fuzz_target!(|data: &[u8]| {
    let parts = pullpath_fuzz::parts(data, 2);
    let key = pullpath_fuzz::text(&parts, 0, "");
    let target = pullpath_fuzz::text(&parts, 1, "r.example/team/app");
    let normalized = keyring::normalize_key(&key);
    let _ = keyring::urls_match(&normalized, &target);
    let _ = keyring::near_miss(&normalized, &target);
    if let Ok(image) = ImageRef::parse(&target) {
        let _ = keyring::key_covers(&key, &image);
    }
});
