//! `tracecast`: the command-line front end. It only wires the stage crates
//! together; every verb lives in `cmd/<verb>.rs`.

mod cmd;
mod exit;
mod hardware;
mod logging;
mod progress;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// Fails to compile if datafusion's arrow and the workspace's arrow drift apart
// (two copies would make every batch handed between the crates a type error).
const _: fn(arrow::datatypes::SchemaRef) -> datafusion::arrow::datatypes::SchemaRef = |schema| schema;

/// Kineto traces -> Parquet lake -> features -> iteration-time predictions -> cluster schedules.
///
/// Typical nightly flow:
///   tracecast ingest /data/traces --lake /data/lake
///   tracecast sql --lake /data/lake "SELECT gpu_name, count(*) FROM traces GROUP BY 1"
///   tracecast features --lake /data/lake --window 16 --stride 4 --out /data/features
///   tracecast train --features /data/features --labels labels.csv --out /data/model
///   tracecast predict --model /data/model --trace run.pt.trace.json.gz --gpu H100 --gpus 1,2,4,8 --out pred
///
/// What-ifs on another GPU or batch size go through the built-in op model
/// (per-operator roofline time over a learned utilisation); retrain it with
///   tracecast ops train --public ../shared/public --out opmodel.json
#[derive(Parser)]
#[command(
    name = "tracecast",
    version,
    about,
    long_about,
    propagate_version = true,
    verbatim_doc_comment
)]
struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace). `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors; no progress bars.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Ingest(cmd::ingest::IngestArgs),
    Inspect(cmd::inspect::InspectArgs),
    Sql(cmd::sql::SqlArgs),
    Features(cmd::features::FeaturesArgs),
    Labels(cmd::labels::LabelsArgs),
    Train(cmd::train::TrainArgs),
    Predict(cmd::predict::PredictArgs),
    #[command(subcommand)]
    Ops(cmd::ops::OpsCommand),
    Scaling(cmd::scaling::ScalingArgs),
    Synth(cmd::synth::SynthArgs),
    Probe(cmd::probe::ProbeArgs),
    Plan(cmd::plan::PlanArgs),
    Simulate(cmd::simulate::SimulateArgs),
    Verify(cmd::verify::VerifyArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose, cli.quiet);
    let ui = progress::Ui::new(cli.quiet);
    let result = match cli.command {
        Command::Ingest(args) => cmd::ingest::run(args, &ui),
        Command::Inspect(args) => cmd::inspect::run(args),
        Command::Sql(args) => cmd::sql::run(args),
        Command::Features(args) => cmd::features::run(args, &ui),
        Command::Labels(args) => cmd::labels::run(args),
        Command::Train(args) => cmd::train::run(args, &ui),
        Command::Predict(args) => cmd::predict::run(args, &ui),
        Command::Ops(command) => cmd::ops::run(command, &ui),
        Command::Scaling(args) => cmd::scaling::run(args),
        Command::Synth(args) => cmd::synth::run(args),
        Command::Probe(args) => cmd::probe::run(args),
        Command::Plan(args) => cmd::plan::run(args, &ui),
        Command::Simulate(args) => cmd::simulate::run(args, &ui),
        Command::Verify(args) => cmd::verify::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", error_chain(&err));
            exit::FAILURE
        }
    }
}

/// The error and its causes joined by ": ", leaving out a cause whose text
/// the message already holds (the library errors name their cause in their
/// own message, so anyhow's chain would print it twice).
fn error_chain(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}
