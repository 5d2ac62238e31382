//! Progress bars for `--full` downloads, on a terminal only.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::oci::Descriptor;

pub struct Bars {
    multi: Option<MultiProgress>,
}

impl Bars {
    pub fn new(enabled: bool) -> Bars {
        Bars {
            multi: enabled.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
        }
    }

    /// A bar for one layer (hidden when progress is off).
    pub fn bar(&self, desc: &Descriptor) -> ProgressBar {
        let Some(multi) = &self.multi else {
            return ProgressBar::hidden();
        };
        let bar = multi.add(ProgressBar::new(desc.size));
        let style = ProgressStyle::with_template(
            "{prefix:>19} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(desc.digest.as_str().chars().take(19).collect::<String>());
        bar
    }
}
