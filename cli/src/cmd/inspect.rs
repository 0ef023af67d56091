use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tracecast_ingest::inspect::{TraceSummary, summarize};

use crate::exit;

/// Summarise one trace without a lake: format and era, GPUs, rank, steps,
/// kernel counts, GPU busy share per step, top kernels and operators,
/// communication and unlinked-kernel shares.
///
/// Uses the same parser and linking as `ingest`. An archive of ranks is
/// summarised member by member.
///
/// Example:
///   tracecast inspect rank0.pt.trace.json.gz
///   tracecast inspect rank0.pt.trace.json.gz --json | jq .steps
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct InspectArgs {
    /// The trace file (.json, .json.gz, .json.zst, or a .tar.gz of ranks).
    file: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// How many top kernels and operators to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

pub fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    let mut out = Vec::new();
    tracecast_ingest::read_traces(&args.file, |member, trace| {
        let label = match member {
            Some(m) => format!("{} [{}]", args.file.display(), m),
            None => args.file.display().to_string(),
        };
        match trace {
            Ok(t) => out.push((label, summarize(t, args.top))),
            Err(reason) => {
                eprintln!("error: {label}: {reason}");
                failed = true;
            }
        }
    })
    .with_context(|| format!("inspect {}", args.file.display()))?;
    if args.json {
        let json: Vec<serde_json::Value> = out
            .iter()
            .map(|(label, s)| serde_json::json!({ "source": label, "summary": s }))
            .collect();
        let value = if json.len() == 1 {
            json[0].clone()
        } else {
            serde_json::Value::Array(json)
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        for (label, s) in &out {
            print_text(label, s);
        }
    }
    Ok(if failed { exit::FAILURE } else { ExitCode::SUCCESS })
}

fn print_text(label: &str, s: &TraceSummary) {
    println!("{label}");
    println!(
        "  format      {} ({}{})",
        s.format,
        s.era,
        s.schema_version
            .as_deref()
            .map(|v| format!(", schema {v}"))
            .unwrap_or_default()
    );
    let gpus = if s.devices.is_empty() {
        "none listed".to_string()
    } else {
        format!("{} x {}", s.devices.len(), s.gpu_name.as_deref().unwrap_or("?"))
    };
    println!("  gpus        {gpus}");
    let dist = match (s.rank, s.world_size) {
        (Some(r), Some(w)) => format!(
            "rank {r} of {w}{}",
            s.backend.as_deref().map(|b| format!(" ({b})")).unwrap_or_default()
        ),
        (Some(r), None) => format!("rank {r}"),
        _ => "single process".to_string(),
    };
    println!("  distributed {dist}");
    if s.format == "pytorch_et" {
        println!("  et nodes    {}", s.et_nodes);
        return;
    }
    println!(
        "  events      {} ({} ops, {} launches, {} kernels, {} memcpy/memset)",
        s.events, s.ops, s.launches, s.kernels, s.memcpys
    );
    println!(
        "  kernels     {:.3} ms in all; communication {:.1}%; without a launch in the trace {:.1}%; linked to an operator {:.1}%",
        s.kernel_time_ms, s.communication_share_pct, s.unlinked_kernel_share_pct, s.kernels_with_op_pct
    );
    if s.steps.is_empty() {
        println!("  steps       none found (no ProfilerStep#, PARAM iteration or Optimizer.step annotations)");
    } else {
        println!("  steps       {} ({})", s.steps.len(), s.steps[0].source);
        for st in &s.steps {
            println!(
                "    {:<28} {:>10.3} ms  {:>6} kernels  GPU busy {:>5.1}%",
                st.name, st.dur_ms, st.kernels, st.gpu_busy_pct
            );
        }
    }
    for (title, rows) in [
        ("top kernels", &s.top_kernels),
        ("top operators (by the GPU time of their kernels)", &s.top_ops),
    ] {
        if rows.is_empty() {
            continue;
        }
        println!("  {title}");
        for r in rows.iter() {
            println!(
                "    {:>6.1}% {:>10.3} ms {:>6}x  {}",
                r.share_pct,
                r.total_ms,
                r.count,
                shorten(&r.name, 90)
            );
        }
    }
}

fn shorten(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        format!("{}...", name.chars().take(max - 3).collect::<String>())
    }
}
