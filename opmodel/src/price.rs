//! A transformer's forward (and backward) pass on any GPU from its Hugging
//! Face configuration, priced node by node by the op model:
//! `tracecast ops price`.

use std::collections::BTreeMap;
use std::path::Path;

use tracecast_schemas::hardware::{HardwareProfile, catalog_or_builtin, lookup_gpu};

use crate::OpModelError;
use crate::architectures::ModelConfig;
use crate::autocast;
use crate::features::Timing;
use crate::gpu::GpuSpec;
use crate::model::OpModel;
use crate::shipped::shipped_model;
use crate::work::{EwFunc, HalfType, OpWork, Pass, Tf32Path, bfloat16_emulated_note};

/// What to price: one model configuration at each batch size on each GPU.
#[derive(Clone, Copy)]
pub struct PriceJob<'a> {
    /// A Hugging Face `config.json` (gpt2, bert, opt, switch_transformers).
    pub config: &'a Path,
    /// `--gpu` arguments: a name, a short name (`H100`), or a profile or
    /// NeuSight spec-sheet file.
    pub gpus: &'a [String],
    /// Hardware profiles to resolve names in (the built-in ones when `None`).
    pub hardware_dir: Option<&'a Path>,
    pub batch_sizes: &'a [u32],
    pub seqlen: u32,
    /// Forward and backward (as NeuSight times training), else forward only.
    pub training: bool,
    /// An op-model file (the built-in model when `None`).
    pub op_model: Option<&'a Path>,
    /// The optimizer step each training iteration ends with.
    pub optimizer: Optimizer,
    /// Float32 matrix products on TF32 tensor cores where a GPU has them
    /// (`torch.backends.cuda.matmul.allow_tf32 = True`, or Hugging Face's
    /// `--tf32`); PyTorch's default is off, so a transformer runs in strict
    /// float32.
    pub tf32: bool,
    /// Mixed precision (`torch.autocast` to float16 or bfloat16): the
    /// activations and the matrix math in 16 bits, on 16-bit tensor cores
    /// where a GPU has them; the weights, their gradients and the
    /// optimizer step stay float32. `None`: float32.
    pub half: Option<HalfType>,
}

/// The optimizer step of a training iteration, as PyTorch's default
/// (`foreach`) implementation runs it: one multi-tensor pass over the
/// parameters and their state per arithmetic step, memory-bound, priced
/// by the op model as one element-wise operation over all their bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimizer {
    /// No step (NeuSight's labels time forward and backward only).
    None,
    /// SGD with momentum: scale the momentum, add the gradient, add it to
    /// the parameter: 32 bytes a parameter.
    Sgd,
    /// AdamW: decay the parameter, the two moments' updates (three passes),
    /// the denominator's square root, scale and epsilon, and the update:
    /// 80 bytes a parameter. On an H100, BERT-large's and GPT-2 Large's
    /// steps took 9.8 and 22.6 ms of kernels (`bench/gpu/autocast_kernels.sql`),
    /// 73 bytes a parameter at 2.5 TB/s; one fused pass would move 28.
    Adam,
}

impl Optimizer {
    /// Bytes of state the optimizer keeps per float32 parameter.
    pub fn state_bytes_per_parameter(self) -> f64 {
        match self {
            Optimizer::None => 0.0,
            Optimizer::Sgd => 4.0,
            Optimizer::Adam => 8.0,
        }
    }

    /// The step's work over `parameters` float32 parameters, if any.
    pub fn work(self, parameters: f64) -> Option<OpWork> {
        // Float32 values moved a parameter, summed over the passes.
        let (values, tensors_read) = match self {
            Optimizer::None => return None,
            Optimizer::Sgd => (8.0, 3.0),
            Optimizer::Adam => (20.0, 4.0),
        };
        let mut work = OpWork::elementwise(EwFunc::Other, parameters, tensors_read);
        work.bytes = 4.0 * parameters * values;
        Some(work)
    }
}

/// One (GPU, batch) priced.
#[derive(Clone, Debug)]
pub struct PricedPass {
    pub gpu: String,
    pub batch: u32,
    pub forward_ms: f64,
    /// 0 for inference.
    pub backward_ms: f64,
    /// The optimizer step; 0 for inference or without one.
    pub optimizer_ms: f64,
    /// Milliseconds by operator kind (`gemm`, `elementwise`, ...), both passes.
    pub by_kind: BTreeMap<&'static str, f64>,
}

impl PricedPass {
    /// Forward and backward: what NeuSight's labels time.
    pub fn pass_ms(&self) -> f64 {
        self.forward_ms + self.backward_ms
    }

    /// The whole iteration on one GPU: the pass and the optimizer step.
    pub fn total_ms(&self) -> f64 {
        self.pass_ms() + self.optimizer_ms
    }
}

/// Every (GPU, batch) of a job, GPUs in the order asked.
#[derive(Clone, Debug)]
pub struct ModelPrice {
    pub model: String,
    /// The architecture and layer count, for the report's heading.
    pub described: String,
    pub seqlen: u32,
    pub training: bool,
    /// Whether its matrix products were priced on TF32 tensor cores.
    pub tf32: bool,
    /// Whether it was priced in mixed precision (`PriceJob::half`).
    pub half: Option<HalfType>,
    /// What the price cannot show, one line each (a bfloat16 run on a GPU
    /// that emulates bfloat16).
    pub notes: Vec<String>,
    /// Trainable parameters of the model as run.
    pub parameters: f64,
    pub optimizer: Optimizer,
    /// What the op model was trained on, one line each.
    pub op_model_trained_on: Vec<String>,
    /// The GPUs as resolved, in the order asked (their interconnects price
    /// data-parallel runs).
    pub gpus: Vec<HardwareProfile>,
    /// Batch by batch in the order asked, each on every GPU in turn.
    pub passes: Vec<PricedPass>,
}

impl ModelPrice {
    /// Bytes every GPU holds for the model whatever the batch: float32
    /// weights, and in training their gradients and the optimizer's state
    /// (data parallelism replicates all three). Activations come on top.
    pub fn model_state_bytes(&self) -> f64 {
        let per_parameter = if self.training {
            4.0 + 4.0 + self.optimizer.state_bytes_per_parameter()
        } else {
            4.0
        };
        self.parameters * per_parameter
    }

    /// The pass of the `g`-th GPU at the `b`-th batch size.
    pub fn pass(&self, b: usize, g: usize) -> &PricedPass {
        &self.passes[b * self.gpus.len() + g]
    }
}

/// Prices `job`: builds the model's graph at each batch size and prices
/// its nodes on each GPU.
pub fn price_model(job: &PriceJob<'_>) -> Result<ModelPrice, OpModelError> {
    if job.gpus.is_empty() || job.batch_sizes.is_empty() || job.batch_sizes.contains(&0) || job.seqlen == 0 {
        return Err(OpModelError::Parse {
            path: job.config.to_path_buf(),
            reason: "a price needs at least one GPU, batch sizes of at least 1 and a sequence length of at least 1"
                .into(),
        });
    }
    let config = ModelConfig::read(job.config)?;
    let model = match job.op_model {
        Some(path) => OpModel::load(path)?,
        None => shipped_model()?,
    };
    let catalog = catalog_or_builtin(job.hardware_dir)?;
    let profiles: Vec<HardwareProfile> = job
        .gpus
        .iter()
        .map(|query| lookup_gpu(&catalog, query))
        .collect::<Result<_, _>>()?;
    let specs: Vec<GpuSpec> = profiles.iter().map(GpuSpec::from_profile).collect::<Result<_, _>>()?;
    let parameters = config.parameters(job.training);
    let optimizer = if job.training { job.optimizer } else { Optimizer::None };
    let step = optimizer.work(parameters);
    let mut passes = Vec::new();
    for &batch in job.batch_sizes {
        let graph = config.graph(f64::from(batch), f64::from(job.seqlen), job.training);
        let works = if job.half.is_some() {
            autocast::works(&graph, job.training)
        } else {
            let mut works = graph.works(job.training);
            for (work, _) in &mut works {
                work.tf32 = if job.tf32 {
                    Tf32Path::of(work.kind, false)
                } else {
                    Tf32Path::Off
                };
            }
            works
        };
        for (profile, spec) in profiles.iter().zip(&specs) {
            let mut priced = price_pass(&model, &works, &profile.name, spec, batch)?;
            if let Some(step) = step {
                priced.optimizer_ms = model.predict_us(&[(step, spec)], Timing::Workload)?[0] / 1e3;
            }
            passes.push(priced);
        }
    }
    Ok(ModelPrice {
        model: config.name.clone(),
        described: config.describe(),
        seqlen: job.seqlen,
        training: job.training,
        tf32: job.tf32,
        half: job.half,
        notes: match job.half {
            Some(HalfType::BFloat16) => profiles.iter().filter_map(bfloat16_emulated_note).collect(),
            _ => Vec::new(),
        },
        parameters,
        optimizer,
        op_model_trained_on: model.card.trained_on.clone(),
        gpus: profiles,
        passes,
    })
}

fn price_pass(
    model: &OpModel,
    works: &[(OpWork, f64)],
    gpu: &str,
    spec: &GpuSpec,
    batch: u32,
) -> Result<PricedPass, OpModelError> {
    let pairs: Vec<(OpWork, &GpuSpec)> = works.iter().map(|(w, _)| (*w, spec)).collect();
    let us = model.predict_us(&pairs, Timing::Workload)?;
    let mut priced = PricedPass {
        gpu: gpu.to_string(),
        batch,
        forward_ms: 0.0,
        backward_ms: 0.0,
        optimizer_ms: 0.0,
        by_kind: BTreeMap::new(),
    };
    for ((work, times), t) in works.iter().zip(us) {
        let ms = t * times / 1e3;
        match work.pass {
            Pass::Forward => priced.forward_ms += ms,
            Pass::Backward => priced.backward_ms += ms,
        }
        *priced.by_kind.entry(work.kind.name()).or_default() += ms;
    }
    Ok(priced)
}
