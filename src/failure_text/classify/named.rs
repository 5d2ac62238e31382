//! What a message names outright, read the same by every classifier: the HTTP status it
//! quotes, the registry of the image it names. At the bottom of `classify`: it reads text only.

use std::sync::LazyLock;

use regex::Regex;

use super::re;
use crate::image_ref::named_registry;

pub(super) static STATUS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:^|[\s:\[])(4\d\d|5\d\d)(?: [A-Z][A-Za-z ]+| response body| \()|HTTP (?:status|code)[: ]+(\d{3})|status code[= ](\d{3})|HTTP (\d{3}) response|(?:http code|StatusCode): (\d{3})|Status (\d{3}) trying to pull",
    )
});

/// The first HTTP status `text` quotes, in any of the ways runtimes and registries write one.
pub(super) fn status_code(text: &str) -> Option<u16> {
    STATUS.captures_iter(text).find_map(|c| {
        (1..=6)
            .find_map(|i| c.get(i))
            .and_then(|m| m.as_str().parse().ok())
    })
}

/// The image reference's registry (`nginx` → `docker.io`).
pub(super) fn registry_of(image: &str) -> Option<String> {
    if let Some(registry) = named_registry(image) {
        Some(registry.to_ascii_lowercase())
    } else if image.contains('*') && crate::image_ref::registry_read_as_repository(image).is_none()
    {
        // A masked first component may have been the registry.
        None
    } else {
        Some("docker.io".into())
    }
}
