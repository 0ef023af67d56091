//! Idle gaps under a what-if on the recorded machine: each step replayed
//! as a queue.
//!
//! A recorded step's gaps between kernels are the GPU waiting on its host.
//! Keeping them as recorded (`IdleGaps::Recorded`) prices a doubled batch
//! too slow: where the host launched a kernel while the GPU was idle, a
//! longer kernel before it fills the wait. So the step is replayed: the
//! host issues each kernel at its recorded launch (its GPU start less its
//! launch delay), on a timeline shrunk to the host's own time (the
//! profiler's cost and the runtime calls' waits taken out, as the host's
//! floor takes them), and the GPU runs each kernel once issued and once the
//! one before is done (kernels recorded overlapping keep their overlap).
//! The step's gaps shrink by what the replay with the what-if's kernel
//! times saves over the replay with the recorded ones, beyond the kernels'
//! own change. Only shrink: where kernels get shorter, the host's own time
//! already floors the step ([`crate::host`]), and opening gaps by the
//! replay priced halvings no better. On `bench/corpus`
//! (`bench/whatif_corpus.py`) doublings of the batch went from 19.3% to
//! 13.5% error (vision models) and from 10.5% to 6.9% (language models),
//! every other what-if as before; the H200's host-bound TF32 profile at
//! twice its batch from +34.7% to +10.4% (`bench/whatif_measured.sh`).

use std::collections::HashMap;

use tracecast_schemas::features::central_positions;
use tracecast_train::{Dataset, FeatureTable};

use crate::PredictError;
use crate::window_rows::{WindowRow, window_batches};

/// One central kernel of a step as recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RecordedItem {
    pub dur_ns: f64,
    /// The next item's start less this one's end (negative: overlapping).
    pub gap_ns: f64,
    /// GPU start less the start of the runtime call that launched it; NaN
    /// where the trace has no launch for it.
    pub launch_delay_ns: f64,
}

/// Where the replay's timeline ends: the last item's end and the gap after
/// it. `dur_ns[i]` is item `i`'s duration in this replay; the host issues
/// item `i` at its recorded launch, the host's time between launches
/// shrunk to `host_share` of it, the first launched item at its recorded
/// start.
pub(crate) fn replay_end_ns(items: &[RecordedItem], dur_ns: &[f64], host_share: f64) -> f64 {
    let mut recorded_start = 0.0;
    let mut first_launch: Option<(f64, f64)> = None;
    // The previous item's end, and the latest end so far (a collective on
    // its own stream can outlast the kernels after it).
    let (mut start, mut previous_end, mut end) = (0.0_f64, 0.0_f64, f64::NEG_INFINITY);
    for (i, (item, &dur)) in items.iter().zip(dur_ns).enumerate() {
        let launch = recorded_start - item.launch_delay_ns;
        let issued = if launch.is_finite() {
            let (launch0, start0) = *first_launch.get_or_insert((launch, recorded_start));
            start0 + (launch - launch0) * host_share
        } else {
            f64::NEG_INFINITY
        };
        // After the item before it, or as far into it as recorded (another stream).
        let after_previous = if i == 0 {
            0.0
        } else {
            previous_end + items[i - 1].gap_ns.min(0.0)
        };
        start = issued.max(after_previous).max(start);
        previous_end = start + dur;
        end = end.max(previous_end);
        recorded_start += item.dur_ns + item.gap_ns;
    }
    let last_gap = items.last().map_or(0.0, |i| i.gap_ns.max(0.0));
    if end.is_finite() { end + last_gap } else { 0.0 }
}

/// How much a step's gaps change under the what-if: the replay with the
/// what-if's kernel times less the replay with the recorded ones, less the
/// kernels' own change (which the step's span already holds).
pub(crate) fn gap_change_ns(items: &[RecordedItem], delta_ns: &[f64], host_share: f64) -> f64 {
    let recorded: Vec<f64> = items.iter().map(|i| i.dur_ns).collect();
    let asked: Vec<f64> = recorded.iter().zip(delta_ns).map(|(d, x)| (d + x).max(0.0)).collect();
    let moved: f64 = asked.iter().sum::<f64>() - recorded.iter().sum::<f64>();
    replay_end_ns(items, &asked, host_share) - replay_end_ns(items, &recorded, host_share) - moved
}

/// One central kernel of a step: where the what-if keeps its change (its
/// window, in the order `build_dataset` reads them as
/// `physical::window_deltas` counts them, and its position among the
/// central ones), its window's index in the step, and its recorded timing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepItem {
    pub at: (usize, usize),
    window_index: i64,
    pub recorded: RecordedItem,
}

/// Per (trace index, step id), each step's central items in launch order.
pub(crate) type StepItems = HashMap<(u32, i64), Vec<StepItem>>;

/// The [`StepItems`] of the traces `replayed` says (and `only_trace`).
pub(crate) fn step_items(
    table: &FeatureTable,
    data: &Dataset,
    only_trace: Option<&str>,
    replayed: &dyn Fn(usize) -> bool,
) -> Result<StepItems, PredictError> {
    let central = central_positions(table.window, table.stride);
    let mut steps = StepItems::new();
    for batch in &window_batches(table, data, only_trace)?.0 {
        // A table from edited SQL may lack the timeline: its steps keep
        // their gaps as recorded.
        let timeline = |p: usize| {
            Some((
                batch.optional_position(p, "dur_ns")?,
                batch.optional_position(p, "gap_ns")?,
                batch.optional_position(p, "launch_delay_ns")?,
            ))
        };
        let Some(cols) = central.clone().map(timeline).collect::<Option<Vec<_>>>() else {
            continue;
        };
        for &WindowRow { row: i, trace, window } in batch.rows.iter().filter(|r| replayed(r.trace)) {
            let step = steps.entry((trace as u32, batch.step_ids[i] as i64)).or_default();
            for (k, (dur, gap, delay)) in cols.iter().enumerate() {
                if dur[i].is_nan() {
                    continue;
                }
                step.push(StepItem {
                    at: (window, k),
                    window_index: batch.window_index[i] as i64,
                    recorded: RecordedItem {
                        dur_ns: dur[i],
                        gap_ns: if gap[i].is_nan() { 0.0 } else { gap[i] },
                        launch_delay_ns: delay[i],
                    },
                });
            }
        }
    }
    for items in steps.values_mut() {
        items.sort_by_key(|s| (s.window_index, s.at.1));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(dur_ns: f64, gap_ns: f64, launch_delay_ns: f64) -> RecordedItem {
        RecordedItem {
            dur_ns,
            gap_ns,
            launch_delay_ns,
        }
    }

    /// A host-bound step: each kernel launched while the GPU was idle, 10
    /// µs of work and 40 µs of waiting. Doubling the kernels fills the
    /// waits before the last one instead of adding to them; kernels grown
    /// beyond the host's pace add what they outgrow it by.
    #[test]
    fn longer_kernels_fill_the_waits_on_the_host() {
        let step = vec![item(10.0, 40.0, 5.0); 4];
        assert_eq!(replay_end_ns(&step, &[10.0; 4], 1.0), 200.0);
        assert_eq!(gap_change_ns(&step, &[10.0; 4], 1.0), -30.0);
        // 80 µs kernels: the GPU's pace, 4 x 80 + the last gap.
        assert_eq!(replay_end_ns(&step, &[80.0; 4], 1.0), 320.0 + 40.0);
        // Shorter kernels on a host-bound step: the host's pace stays.
        assert_eq!(replay_end_ns(&step, &[5.0; 4], 1.0), 200.0 - 5.0);
    }

    /// A GPU-bound step (launched long before they ran, the GPU a step
    /// behind): no waits to fill, the kernels' change is the step's.
    #[test]
    fn a_step_bound_by_its_gpu_moves_with_its_kernels() {
        let step = vec![
            item(100.0, 0.0, 5_000.0),
            item(100.0, 0.0, 5_090.0),
            item(100.0, 0.0, 5_180.0),
        ];
        assert_eq!(gap_change_ns(&step, &[100.0, 100.0, 100.0], 1.0), 0.0);
        assert_eq!(gap_change_ns(&step, &[-50.0, -50.0, -50.0], 1.0), 0.0);
    }

    /// The host's time between launches shrinks to its own share (the
    /// profiler's cost out), and kernels without a launch run when the
    /// one before is done; recorded overlap is kept.
    #[test]
    fn the_hosts_own_pace_and_kernels_without_launches() {
        let step = vec![item(10.0, 90.0, 5.0), item(10.0, 0.0, 5.0)];
        // Launched 100 µs apart; at half the host's time, 50.
        assert_eq!(replay_end_ns(&step, &[10.0, 10.0], 0.5), 60.0);
        let unlaunched = vec![item(10.0, 90.0, 5.0), item(10.0, 0.0, f64::NAN)];
        assert_eq!(replay_end_ns(&unlaunched, &[10.0, 10.0], 1.0), 20.0);
        let overlapping = vec![item(100.0, -60.0, 5.0), item(50.0, 0.0, 5.0)];
        assert_eq!(replay_end_ns(&overlapping, &[100.0, 50.0], 1.0), 100.0);
    }

    /// A collective on its own stream, overlapping the kernels launched
    /// after it: those kernels follow each other, not its end, so growing
    /// one of them while the collective runs costs nothing.
    #[test]
    fn kernels_beside_a_long_collective_follow_each_other() {
        // All-reduce 0..1000; two kernels at 100..200 and 210..310.
        let step = vec![
            item(1000.0, -900.0, 5.0),
            item(100.0, 10.0, 5.0),
            item(100.0, -310.0, 5.0),
        ];
        assert_eq!(replay_end_ns(&step, &[1000.0, 100.0, 100.0], 1.0), 1000.0);
        assert_eq!(gap_change_ns(&step, &[0.0, 100.0, 100.0], 1.0), -200.0);
    }
}
