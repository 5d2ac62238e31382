//! `cargo +nightly fuzz run pod`: any JSON as API objects — a Pod, an Event of either events
//! API, a list — through `pod` (`from_value`, `image_waits`, `event_from_value`) and
//! `failure_text::input` (`read`, streamed as `explain` reads a file, with the real limits and
//! with small ones; `from_json` on a whole value), as `explain` and cluster mode read them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::failure_text::input;
use pullpath::pod;

fuzz_target!(|data: &[u8]| {
    let _ = input::read(std::io::Cursor::new(data), &input::LIMITS);
    // Small limits: an item or a line over them is refused, never held.
    let small = input::Limits { item: 64, line: 64 };
    let _ = input::read(std::io::Cursor::new(data), &small);
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = input::from_json(&value);
    let _ = pod::event_from_value(&value);
    if let Some(path) = value
        .pointer("/involvedObject/fieldPath")
        .and_then(|v| v.as_str())
    {
        let _ = pod::parse_field_path(path);
    }
    if let Ok(found) = pod::from_value(value) {
        let _ = (pod::pod_id(&found), pod::node_name(&found));
        let _ = pod::image_waits(&found);
        let _ = pod::running_image_ids(&found);
        let _ = pod::stuck(std::slice::from_ref(&found));
    }
});
