//! Pictures of a schedule as hand-written SVG: a Gantt chart of GPU allocation
//! over time (one row per GPU, grouped by node, one colour per job) and the
//! cluster's utilization curve.

use std::fmt::Write;

use crate::schedule::Schedule;
use crate::workload::Workload;

const W: f64 = 1400.0;
const LEFT: f64 = 90.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 40.0;
/// Rectangles beyond this make browsers crawl; the chart then shows the first nodes only.
const MAX_RECTS: usize = 250_000;

fn time_range(s: &Schedule, w: &Workload) -> (f64, f64) {
    let t0 = w.jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    let t1 = s.segments.iter().flatten().map(|g| g.end).fold(t0 + 1.0, f64::max);
    (t0, t1)
}

fn hours(t: f64) -> String {
    let h = t / 3600.0;
    if h >= 100.0 {
        format!("{h:.0}h")
    } else if h >= 1.0 {
        format!("{h:.1}h")
    } else {
        format!("{:.0}m", t / 60.0)
    }
}

fn x_axis(out: &mut String, t0: f64, t1: f64, y: f64) {
    for i in 0..=8 {
        let f = i as f64 / 8.0;
        let x = LEFT + f * (W - LEFT - 20.0);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#444"/><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"##,
            y + 5.0,
            y + 18.0,
            hours(f * (t1 - t0))
        );
    }
}

/// Gantt chart: GPUs on the y axis (nodes stacked), time on the x axis.
pub fn gantt_svg(s: &Schedule, w: &Workload) -> String {
    let c = &w.cluster;
    let (t0, t1) = time_range(s, w);
    // Nodes drawn: as many as MAX_RECTS allows, counted before anything is
    // gathered (a big plan holds millions of node shares, most not drawn).
    let mut held = vec![0usize; c.nodes.len()];
    for &(node, _) in s.segments.iter().flatten().flat_map(|g| &g.nodes) {
        if let Some(n) = held.get_mut(node as usize) {
            *n += 1;
        }
    }
    let mut shown = c.nodes.len();
    let mut total = 0usize;
    for (i, n) in held.iter().enumerate() {
        total += n;
        if total > MAX_RECTS {
            shown = i.max(1);
            break;
        }
    }
    // Per node drawn: (start, end, job, gpus), put in start order below.
    let mut per_node: Vec<Vec<(f64, f64, usize, u32)>> = held[..shown].iter().map(|&n| Vec::with_capacity(n)).collect();
    for (j, segs) in s.segments.iter().enumerate() {
        for g in segs {
            for &(node, k) in &g.nodes {
                if let Some(v) = per_node.get_mut(node as usize) {
                    v.push((g.start, g.end, j, k));
                }
            }
        }
    }
    let gpus: u32 = c.nodes[..shown].iter().map(|n| n.gpus).sum();
    let row = (1600.0 / gpus as f64).clamp(0.05, 6.0);
    let plot_h = row * gpus as f64;
    let h = TOP + plot_h + BOTTOM;
    let sx = (W - LEFT - 20.0) / (t1 - t0);
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h:.0}" viewBox="0 0 {W} {h:.0}" font-family="sans-serif">"#
    );
    let title = if shown < c.nodes.len() {
        format!(" (nodes 0-{} of {})", shown - 1, c.nodes.len())
    } else {
        String::new()
    };
    let rejected: Vec<usize> = (0..s.rejected.len()).filter(|&j| s.rejected[j]).collect();
    let rejected_note = if rejected.is_empty() {
        String::new()
    } else {
        format!("; {} rejected (red ticks at arrival)", rejected.len())
    };
    let _ = write!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="24" font-size="15">GPU allocation over time: {} on {}{title}{rejected_note}</text>"#,
        s.policy,
        c.describe()
    );
    // Jobs admission control refused: a tick above the plot at their arrival.
    for &j in &rejected {
        let x = LEFT + (w.jobs[j].submit - t0) * sx;
        let _ = write!(
            out,
            r##"<line x1="{x:.2}" y1="{:.1}" x2="{x:.2}" y2="{:.1}" stroke="#d22" stroke-width="1"><title>{} rejected</title></line>"##,
            TOP - 10.0,
            TOP - 2.0,
            w.jobs[j].id
        );
    }
    let mut y = TOP;
    for (node, items) in c.nodes[..shown].iter().zip(&mut per_node) {
        items.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut slot_free = vec![f64::NEG_INFINITY; node.gpus as usize];
        for &(st, en, j, k) in items.iter() {
            // Lowest-numbered GPUs free at the start; one rectangle per contiguous run.
            let mut taken = Vec::with_capacity(k as usize);
            for (i, f) in slot_free.iter_mut().enumerate() {
                if taken.len() == k as usize {
                    break;
                }
                if *f <= st + 1e-6 {
                    *f = en;
                    taken.push(i);
                }
            }
            let hue = (j as u64).wrapping_mul(2_654_435_761) % 360;
            let mut i = 0;
            while i < taken.len() {
                let mut e = i;
                while e + 1 < taken.len() && taken[e + 1] == taken[e] + 1 {
                    e += 1;
                }
                let _ = write!(
                    out,
                    r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="hsl({hue},65%,55%)"><title>{}</title></rect>"#,
                    LEFT + (st - t0) * sx,
                    y + taken[i] as f64 * row,
                    ((en - st) * sx).max(0.3),
                    (e - i + 1) as f64 * row,
                    w.jobs[j].id
                );
                i = e + 1;
            }
        }
        if row * node.gpus as f64 >= 10.0 {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
                LEFT - 4.0,
                y + row * node.gpus as f64 / 2.0 + 3.0,
                node.name
            );
        }
        y += row * node.gpus as f64;
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.2}" x2="{:.1}" y2="{y:.2}" stroke="#ddd" stroke-width="0.5"/>"##,
            W - 20.0
        );
    }
    x_axis(&mut out, t0, t1, TOP + plot_h);
    out.push_str("</svg>\n");
    out
}

/// Share of the cluster's GPUs held over time (time-averaged over up to 1000 bins).
pub fn utilization_svg(s: &Schedule, w: &Workload) -> String {
    let (t0, t1) = time_range(s, w);
    let bins = 1000usize;
    let dt = (t1 - t0) / bins as f64;
    let mut held = vec![0.0f64; bins];
    for g in s.segments.iter().flatten() {
        // Spread each segment's GPU-seconds over the bins it covers.
        let (a, b) = ((g.start - t0) / dt, (g.end - t0) / dt);
        let (ia, ib) = (a.floor().max(0.0) as usize, (b.ceil() as usize).min(bins));
        for (i, h) in held.iter_mut().enumerate().take(ib).skip(ia) {
            let overlap = (b.min(i as f64 + 1.0) - a.max(i as f64)).max(0.0);
            *h += overlap * g.gpus as f64;
        }
    }
    let total = w.cluster.total_gpus() as f64;
    let plot_h = 300.0;
    let h = TOP + plot_h + BOTTOM;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h:.0}" viewBox="0 0 {W} {h:.0}" font-family="sans-serif">"#
    );
    let mean = held.iter().sum::<f64>() / bins as f64 / total * 100.0;
    let _ = write!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="24" font-size="15">GPU utilization: {} on {} (mean {mean:.1}%)</text>"#,
        s.policy,
        w.cluster.describe()
    );
    for pct in [0, 25, 50, 75, 100] {
        let y = TOP + plot_h * (1.0 - pct as f64 / 100.0);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{pct}%</text>"##,
            W - 20.0,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let sx = (W - LEFT - 20.0) / bins as f64;
    let pts: Vec<String> = held
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1}",
                LEFT + (i as f64 + 0.5) * sx,
                TOP + plot_h * (1.0 - (v / total).min(1.0))
            )
        })
        .collect();
    let _ = write!(
        out,
        r##"<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{}"/>"##,
        pts.join(" ")
    );
    x_axis(&mut out, t0, t1, TOP + plot_h);
    out.push_str("</svg>\n");
    out
}
