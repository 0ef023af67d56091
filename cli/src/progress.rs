//! Progress bars, shown only on a terminal and never with `--quiet`.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Work that takes longer than this shows a [`Ui::late_bar`].
const LATE_BAR_AFTER: Duration = Duration::from_secs(1);

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

    /// A `(done, total)` callback that shows a bar only once [`LATE_BAR_AFTER`]
    /// has passed (most plans take milliseconds), and finishes it at `total`.
    pub fn late_bar(&self, message: &str) -> impl Fn(u64, u64) + Sync + use<> {
        let (show, start, message) = (self.show, Instant::now(), message.to_string());
        let bar: OnceLock<ProgressBar> = OnceLock::new();
        move |done, total| {
            if !show || (bar.get().is_none() && start.elapsed() < LATE_BAR_AFTER) {
                return;
            }
            let b = bar.get_or_init(|| {
                let b = ProgressBar::new(total);
                let style = "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} (eta {eta})";
                b.set_style(ProgressStyle::with_template(style).expect("static template"));
                b.set_message(message.clone());
                b
            });
            b.set_position(done);
            if done >= total {
                b.finish_and_clear();
            }
        }
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
