//! Progress bars for the long commands: drawn on a terminal, hidden when stderr is not one
//! (indicatif's own rule), so logs and pipes stay clean.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps with an indicatif `template`.
pub fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()));
    bar
}

/// A bar counting bytes.
pub fn bytes(len: u64, what: &str) -> ProgressBar {
    bar(len, &format!("{what} {{bytes}}/{{total_bytes}} {{bar:30}} {{msg}}"))
}
