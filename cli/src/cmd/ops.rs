//! `tracecast ops`: the per-operator model (physics + learned utilisation).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use tracecast_opmodel::{FitParams, Optimizer, PriceJob, PublicOptions, run_public, sweep, train_to_file};
use tracecast_predict::{TransformerJob, TransformerPrediction, price_transformer, priced_csv, write_price_outputs};

use super::predict::{NetworkArgs, half_type};
use crate::progress::Ui;

/// The per-operator model: an operator's time on any GPU from its work
/// (FLOPs, bytes, GEMM tiling) and the GPU's spec sheet. Time = roofline
/// time / utilisation; LightGBM learns the utilisation from measured
/// operators on many GPUs, so a GPU never trained on is priced from its
/// spec sheet alone. `predict --gpu` uses it to move a trace between GPUs
/// and batch sizes; a model trained on NeuSight's public data ships built in.
#[derive(Subcommand)]
pub enum OpsCommand {
    Train(TrainArgs),
    Bench(BenchArgs),
    Sweep(SweepArgs),
    Price(PriceArgs),
}

/// LightGBM settings shared by the subcommands.
#[derive(Args, Clone)]
pub struct FitArgs {
    /// Boosting rounds.
    #[arg(long, default_value_t = FitParams::default().num_iterations)]
    num_iterations: u32,
    /// Leaves per tree.
    #[arg(long, default_value_t = FitParams::default().num_leaves)]
    num_leaves: u32,
    /// Threads (0: every core).
    #[arg(long, default_value_t = 0)]
    threads: u32,
    /// LightGBM's random seed (it picks each tree's inputs). Fits with
    /// other seeds show how much of an error figure is the fit's chance.
    #[arg(long, default_value_t = FitParams::default().seed)]
    seed: u64,
}

impl FitArgs {
    fn params(&self) -> FitParams {
        FitParams {
            num_iterations: self.num_iterations,
            num_leaves: self.num_leaves,
            num_threads: self.threads,
            seed: self.seed,
            ..FitParams::default()
        }
    }
}

/// More measurements to train on.
#[derive(Args, Clone)]
pub struct ExtraArgs {
    /// Another directory laid out like ../shared/public whose NeuSight
    /// measurements are trained on too, e.g. bench/measured/h100-sxm5 (an
    /// H100 that ../shared/public lacks). Repeatable.
    #[arg(long = "extra", value_name = "DIR")]
    dirs: Vec<PathBuf>,
}

/// Fit an op model on a directory laid out like ../shared/public (its
/// `neusight/` per-op latencies, per-node graph latencies and spec sheets).
///
/// Example:
///   tracecast ops train --public ../shared/public --out opmodel.json
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct TrainArgs {
    /// Directory with `neusight/` (per_op/train, label/, device_configs/).
    #[arg(long)]
    public: PathBuf,
    #[command(flatten)]
    extra: ExtraArgs,
    /// Model file to write (JSON: the card and LightGBM's trees).
    #[arg(long)]
    out: PathBuf,
    /// Leave these GPUs' measurements out (NeuSight folder names, e.g. Tesla_T4).
    #[arg(long, value_delimiter = ',')]
    holdout: Vec<String>,
    #[command(flatten)]
    fit: FitArgs,
}

/// Train on one public-layout directory, predict another, write the
/// predictions, and score them where the evaluation directory still holds
/// measured latencies. The evaluation directory's latencies are never read
/// for predicting: only its shapes, graphs and spec sheets. ETS's files in
/// --train calibrate the ETS predictions (kernel-library factors per
/// operator for matrix work, held within twice the arithmetic intensities
/// they were learned on; a line per operator for streaming work;
/// per-operator and per-iteration host gaps).
///
/// OUT gets neusight_perop.csv (every row of eval's neusight/per_op/test),
/// neusight_e2e.csv (every label JSON under eval's neusight/label/<GPU>/),
/// ets.csv (every ETS file under eval's ets/datasets/) and report.md (the error
/// tables, each op kind's median predicted / measured per GPU, then every
/// label beside NeuSight's own prediction of it); where the time goes per
/// kind of operator and pass: neusight_e2e_by_kind.csv (labels whose graph
/// carries its GPU's per-node latencies) and ets_by_kind.csv (each ETS
/// file's kernels: the op model's time, calibrated, measured); and where
/// eval kept measurements, charts of predicted against measured time
/// (neusight_perop.svg by op kind, neusight_e2e.svg and ets.svg by GPU).
/// Columns: schemas/FORMATS.md.
///
/// Example (what bench/public.sh runs):
///   tracecast ops bench --train ../shared/public --eval /data/eval --out out
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct BenchArgs {
    /// A directory laid out like ../shared/public (`neusight/` and/or
    /// `ets/`): the only measurements the model is fitted and calibrated on.
    #[arg(long)]
    train: PathBuf,
    #[command(flatten)]
    extra: ExtraArgs,
    /// A directory of the same layout to predict: its shapes, graphs, model
    /// configs and spec sheets are read, its latencies only to score.
    #[arg(long)]
    eval: PathBuf,
    /// Where the prediction files and report.md are written (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Leave these GPUs' measurements out of training (NeuSight folder names, ETS folders, or `ets-batch:N`).
    #[arg(long, value_delimiter = ',')]
    holdout: Vec<String>,
    /// Predict only these GPUs of the evaluation directory (names as for --holdout).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Also save the fitted model here.
    #[arg(long)]
    save_model: Option<PathBuf>,
    /// `fp32`, NeuSight's; `bf16` / `fp16`: the evaluation directory's per-op
    /// rows ran on 16-bit tensors (bench/measured/h100-bf16), and only they
    /// are predicted.
    #[arg(long, value_parser = ["fp32", "fp16", "bf16"], default_value = "fp32")]
    precision: String,
    #[command(flatten)]
    fit: FitArgs,
}

/// Leave-one-GPU-out on one public-layout directory: for every GPU, fit
/// without its measurements, predict it from its spec sheet, score. Then
/// each ETS folder and ETS's largest batch held out, each model held out,
/// and last nothing held out: the per-op test shapes predicted with every
/// GPU trained on, NeuSight's own setting, beside its published errors.
///
/// Example:
///   tracecast ops sweep --public ../shared/public --out sweep
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct SweepArgs {
    /// A directory laid out like ../shared/public: each GPU's measurements
    /// in turn are left out of the fit and predicted from its spec sheet.
    #[arg(long)]
    public: PathBuf,
    #[command(flatten)]
    extra: ExtraArgs,
    /// Output directory: one folder of predictions per held-out GPU, sweep.md, per_configuration.md,
    /// by_kind.md, and charts of every held-out prediction against its measurement.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    fit: FitArgs,
}

/// Price a transformer from its Hugging Face configuration on one or more
/// GPUs, batch sizes and data-parallel GPU counts: the graph a forward
/// (and, with --mode train, backward) pass runs, built from the config
/// (gpt2 and its GPT-3 sizes, bert, opt, switch_transformers, llama,
/// mistral, qwen2; float32, eager attention, as NeuSight runs them; with
/// --tf32 on, matrix products on TF32 tensor cores; with --precision
/// bf16 or fp16, mixed precision), each node priced by
/// the op model;
/// in training, the optimizer step and, on several GPUs, the exposed ring
/// all-reduce of the gradients. No data loading or host time.
///
/// With --out, writes the planner's throughput table (throughput.csv, and
/// ElasticFlow's layout under elasticflow/): each global batch b x N run on
/// every --gpus count that divides it.
///
/// Example:
///   tracecast ops price --config ../shared/public/neusight/DLmodel_configs/gpt3_xl.json \
///       --gpu V100 --gpu H100 --batch-size 1,2,4 --seqlen 2048 --gpus 1,2,4,8 --out pred
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct PriceArgs {
    /// The model's Hugging Face config.json.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// GPU: a hardware profile's name or short name (H100, V100), or a
    /// profile / NeuSight spec-sheet file. Repeatable.
    #[arg(long, required = true)]
    gpu: Vec<String>,
    /// Batch sizes per GPU (sequences).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch_size: Vec<u32>,
    /// Tokens per sequence.
    #[arg(long)]
    seqlen: u32,
    /// `train`: forward, backward and the optimizer step; `inf`: forward only.
    #[arg(long, value_parser = ["train", "inf"], default_value = "train")]
    mode: String,
    /// The optimizer step of a training iteration, as PyTorch's default
    /// (`foreach`) implementation runs it: `adam` is AdamW, `sgd` SGD with
    /// momentum, `none` forward and backward only (what NeuSight's labels
    /// time).
    #[arg(long, value_parser = ["adam", "sgd", "none"], default_value = "adam")]
    optimizer: String,
    /// Float32 matrix products on TF32 tensor cores, where a GPU has them
    /// (NVIDIA Ampere and later): `on` as with
    /// `torch.backends.cuda.matmul.allow_tf32 = True` or Hugging Face's
    /// `--tf32`; `off`, PyTorch's default, prices strict float32.
    #[arg(long, value_parser = ["off", "on"], default_value = "off")]
    tf32: String,
    /// `fp32`; or `fp16` / `bf16`, mixed precision as `torch.autocast`
    /// runs Hugging Face's eager code: matrix products in 16 bits on tensor
    /// cores, on inputs cast from float32 (each cast a kernel of its own);
    /// softmax, norms and the residual stream in float32; weights,
    /// gradients and the optimizer step in float32 (the two price alike: on
    /// GPUs without bfloat16 tensor cores, V100 and T4, PyTorch emulates
    /// bfloat16, and a note says so).
    #[arg(long, value_parser = ["fp32", "fp16", "bf16"], default_value = "fp32")]
    precision: String,
    /// Data-parallel GPU counts.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    gpus: Vec<u32>,
    #[command(flatten)]
    network: NetworkArgs,
    /// GPU type name in the throughput table [default: each GPU's profile name], e.g. A100 to match a cluster spec.
    #[arg(long)]
    gpu_type: Option<String>,
    /// Write priced.csv and, in training, the throughput table here (created).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Op model [default: the built-in one].
    #[arg(long, value_name = "FILE")]
    op_model: Option<PathBuf>,
    /// Hardware profiles directory [default: the built-in catalog, fixtures/hardware].
    #[arg(long, value_name = "DIR")]
    hardware: Option<PathBuf>,
    /// `table` (markdown) or `csv`.
    #[arg(long, value_parser = ["table", "csv"], default_value = "table")]
    format: String,
}

/// The priced rows as a markdown table.
fn render_price(p: &TransformerPrediction) -> String {
    let price = &p.price;
    let mut out = format!(
        "{} ({}, {:.0} M parameters, {:.1} GB of model state a GPU), {}, {} tokens per sequence, {}\n\n\
         | GPU | batch/GPU | GPUs | forward ms | backward ms | optimizer ms | exposed all-reduce ms | iteration ms | samples/s | tokens/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        price.model,
        price.described,
        price.parameters / 1e6,
        price.model_state_bytes() / 1e9,
        match (price.training, price.optimizer) {
            (false, _) => "forward only".to_string(),
            (true, Optimizer::None) => "forward + backward".to_string(),
            (true, o) => format!("forward + backward + {o:?} step"),
        },
        price.seqlen,
        match (price.half.is_some(), price.tf32) {
            (true, _) =>
                "mixed precision under autocast (16-bit matrix math, float32 norms, softmax and residual stream)",
            (false, true) => "matrix products on TF32 where the GPU has it",
            (false, false) => "strict float32",
        }
    );
    for r in &p.rows {
        let q = &r.pass;
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |\n",
            q.gpu,
            q.batch,
            r.num_gpus,
            q.forward_ms,
            q.backward_ms,
            q.optimizer_ms,
            r.exposed_allreduce_ms,
            r.iteration_ms(),
            r.samples_per_s(),
            r.samples_per_s() * f64::from(price.seqlen)
        ));
    }
    out
}

pub fn run(command: OpsCommand, ui: &Ui) -> anyhow::Result<ExitCode> {
    match command {
        OpsCommand::Train(args) => {
            let mut roots: Vec<&Path> = vec![&args.public];
            roots.extend(args.extra.dirs.iter().map(PathBuf::as_path));
            let spinner = ui.spinner("fitting the op model");
            let trained = train_to_file(&roots, &args.holdout, &args.fit.params(), &args.out);
            spinner.finish_and_clear();
            let (model, collected) = trained?;
            for line in &model.card.trained_on {
                println!("trained on {line}");
            }
            println!("GPUs: {}", model.card.trained_gpus.join(", "));
            for s in collected.skipped.iter().take(10) {
                eprintln!("note: skipped {s}");
            }
            println!("wrote {}", args.out.display());
        }
        OpsCommand::Bench(args) => {
            let spinner = ui.spinner("fitting and predicting");
            let run = run_public(&PublicOptions {
                train: args.train.clone(),
                extra_train: args.extra.dirs.clone(),
                eval: args.eval.clone(),
                out: args.out.clone(),
                params: args.fit.params(),
                holdout: args.holdout.clone(),
                only: args.only.clone(),
                measure_speed: true,
                half: half_type(&args.precision),
            })?;
            spinner.finish_and_clear();
            if let Some(path) = &args.save_model {
                run.model.save(path)?;
            }
            println!(
                "fitted on {} rows in {:.1} s; predicted {} operators in {:.2} s ({:.0} ops/s)",
                run.model.card.rows,
                run.fit_seconds,
                run.evaluation.ops_predicted,
                run.evaluation.predict_seconds,
                run.evaluation.ops_predicted as f64 / run.evaluation.predict_seconds.max(1e-9)
            );
            if let Some(speed) = &run.speed {
                let rate = |s: f64| speed.operators as f64 / s.max(1e-9) / 1e6;
                println!(
                    "prediction speed: {} operators in one call in {:.2} s ({:.2} M ops/s) on the GPUs it trained on",
                    speed.operators,
                    speed.trained_seconds,
                    rate(speed.trained_seconds)
                );
                if let Some(unseen) = &speed.unseen {
                    println!(
                        "  and in {:.2} s ({:.2} M ops/s) on {}, which it never trained on",
                        unseen.seconds,
                        rate(unseen.seconds),
                        unseen.gpu
                    );
                    println!(
                        "  (there the floor priced {:.0}% of the training operators: the trees put them below their floor: for streaming work beyond the trained bandwidths, the utilisation at their edge; otherwise the least efficient trained GPU's)",
                        unseen.floored_share * 100.0
                    );
                }
            }
            print!("{}", run.report);
            for note in run.evaluation.notes.iter().take(20) {
                eprintln!("note: {note}");
            }
            println!("wrote {}:", args.out.display());
            for f in &run.evaluation.files {
                println!("  {}", f.display());
            }
        }
        OpsCommand::Price(args) => {
            args.network.check()?;
            if args.gpus.is_empty() || args.gpus.contains(&0) {
                anyhow::bail!("--gpus takes GPU counts of at least 1");
            }
            let optimizer = match args.optimizer.as_str() {
                "adam" => Optimizer::Adam,
                "sgd" => Optimizer::Sgd,
                _ => Optimizer::None,
            };
            let priced = price_transformer(&TransformerJob {
                price: PriceJob {
                    config: &args.config,
                    gpus: &args.gpu,
                    hardware_dir: args.hardware.as_deref(),
                    batch_sizes: &args.batch_size,
                    seqlen: args.seqlen,
                    training: args.mode == "train",
                    op_model: args.op_model.as_deref(),
                    optimizer,
                    tf32: args.tf32 == "on",
                    half: half_type(&args.precision),
                },
                scaling: args.network.scaling(args.gpus.clone()),
                gpu_type: args.gpu_type.as_deref(),
            })?;
            if args.format == "csv" {
                print!("{}", priced_csv(&priced)?);
            } else {
                print!("{}", render_price(&priced));
            }
            for note in &priced.notes {
                eprintln!("note: {note}");
            }
            if let Some(dir) = &args.out {
                let files = write_price_outputs(&priced, dir)?;
                eprintln!("wrote {}:", dir.display());
                for f in files {
                    eprintln!("  {}", f.display());
                }
                if priced.throughput.is_empty() {
                    if priced.price.training {
                        eprintln!("note: no throughput table: the model fits on none of the GPUs (notes above)");
                    } else {
                        eprintln!("note: no throughput table: it is for training (--mode train)");
                    }
                }
            }
            if args.format == "table" {
                println!("\nop model trained on: {}", priced.price.op_model_trained_on.join("; "));
            }
        }
        OpsCommand::Sweep(args) => {
            let bar = ui.spinner("leave-one-GPU-out");
            let result = sweep(&args.public, &args.extra.dirs, &args.out, &args.fit.params(), &|unit| {
                bar.set_message(format!("leave-one-GPU-out: holding out {unit}"));
            })?;
            bar.finish_and_clear();
            for (unit, seconds, ops) in &result.runs {
                println!("held out {unit}: fit {seconds:.1} s, {ops} operators predicted");
            }
            print!("{}", result.report);
            println!("wrote {}:", args.out.display());
            for f in &result.files {
                println!("  {}", f.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
