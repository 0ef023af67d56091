//! Progress bars, shown only on a terminal and never with `--quiet`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Ui {
    show: bool,
}

impl Ui {
    pub fn new(quiet: bool) -> Self {
        Ui {
            show: !quiet && std::io::stderr().is_terminal(),
        }
    }

    /// A bar counting `total` units of work; `unit` is `"files"`, `"bytes"`, ....
    pub fn bar(&self, total: u64, message: &str, bytes: bool) -> ProgressBar {
        if !self.show {
            return ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        }
        let template = if bytes {
            "{msg} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})"
        } else {
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} (eta {eta})"
        };
        let bar = ProgressBar::new(total);
        bar.set_style(ProgressStyle::with_template(template).expect("static template"));
        bar.set_message(message.to_string());
        bar
    }

    /// A spinner with elapsed time, for work of unknown length (a model fit).
    pub fn spinner(&self, message: &str) -> ProgressBar {
        if !self.show {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]").expect("static template"));
        bar.set_message(message.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    }
}
