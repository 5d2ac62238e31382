//! The innermost cause as the report shows it: the runtime's words without the kubelet's and
//! the runtime's wrapping, the event's columns or a stray quote, cut to a readable length.

use crate::failure_text::chain::Chain;

/// Links that only wrap the cause: the kubelet's and the runtime's outer context.
const WRAPPERS: [&str; 17] = [
    "Failed to pull image",
    "failed to pull image",
    "rpc error",
    "code = ",
    "failed to pull and unpack image",
    "failed to resolve reference",
    "failed to resolve image",
    "Error response from daemon",
    "Error while pulling image",
    "pulling image",
    "ErrImagePull",
    "level=",
    "initializing source",
    "reading manifest",
    "Back-off pulling image",
    "choosing an image from manifest list",
    "Error choosing image instance",
];

/// A pasted event line's columns before its message (`Warning  Failed  3s (x2 over 20s)
/// kubelet  spec.containers{app}`): recent kubectl ends them with the field path and a colon,
/// so they become a link of their own. They are the event's, not the cause's.
fn is_event_columns(link: &str) -> bool {
    let link = link.trim_start();
    let typed = (link.starts_with('W') || link.starts_with('N'))
        && ["Warning ", "Normal ", "Warning\t", "Normal\t"]
            .iter()
            .any(|t| link.starts_with(t));
    typed
        || link.ends_with('}')
            && link
                .rsplit([' ', '\t'])
                .next()
                .is_some_and(|last| last.starts_with("spec."))
}

/// The innermost cause in the runtime's words, with the lookup or dial that frames it.
pub(super) fn innermost_cause(chain: &Chain, cause_links: &[String]) -> String {
    let framed: Vec<&str> = cause_links
        .iter()
        .map(String::as_str)
        .filter(|l| !l.is_empty())
        .skip_while(|l| {
            is_event_columns(l)
                || chain.innermost_request().is_none()
                    && (*l == "Error" || *l == "errors" || WRAPPERS.iter().any(|w| l.contains(w)))
        })
        .collect();
    let text = if framed.is_empty() {
        chain.text.trim()
    } else {
        &framed.join(": ")
    };
    let text = text.trim_end_matches([']', '.']);
    // A closing quote stays when it closes a quoted name (`Back-off pulling image "x"`); one
    // left over from an outer quoted log value goes.
    let text = if text.ends_with('"') && text.matches('"').count() % 2 == 1 {
        text.trim_end_matches('"')
    } else {
        text
    };
    let mut out: String = text.chars().take(400).collect();
    if text.chars().count() > 400 {
        out.push('…');
    }
    out
}
