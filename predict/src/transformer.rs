//! A transformer from its Hugging Face configuration on GPUs, per-GPU batch
//! sizes and data-parallel GPU counts: the op model's forward, backward and
//! optimizer step (`tracecast_opmodel::price_model`) plus the ring
//! all-reduce of its gradients (`scaling`), and the planner's throughput
//! table from those figures.

use std::collections::{BTreeMap, BTreeSet};

use tracecast_opmodel::{ModelPrice, Optimizer, PriceJob, PricedPass, price_model};
use tracecast_schemas::hardware::HardwareProfile;

use crate::scaling::Interconnect;
use crate::{PredictError, ScalingOptions, ThroughputRow};

/// What to price: the op model's job, on each of `scaling.gpu_counts`.
pub struct TransformerJob<'a> {
    pub price: PriceJob<'a>,
    pub scaling: ScalingOptions,
    /// GPU type in the throughput table [default: each GPU's profile name].
    pub gpu_type: Option<&'a str>,
}

/// One GPU, per-GPU batch and GPU count.
#[derive(Clone, Debug)]
pub struct TransformerRow {
    /// One GPU's forward, backward and optimizer step at the per-GPU batch.
    pub pass: PricedPass,
    pub num_gpus: u32,
    /// The gradients' ring all-reduce, and the part the backward pass does not hide.
    pub allreduce_ms: f64,
    pub exposed_allreduce_ms: f64,
}

impl TransformerRow {
    pub fn iteration_ms(&self) -> f64 {
        self.pass.total_ms() + self.exposed_allreduce_ms
    }

    /// Sequences per second over all the GPUs.
    pub fn samples_per_s(&self) -> f64 {
        f64::from(self.pass.batch) * f64::from(self.num_gpus) * 1e3 / self.iteration_ms()
    }
}

pub struct TransformerPrediction {
    /// Every priced pass, one GPU each (the per-GPU batches the table needs included).
    pub price: ModelPrice,
    /// The asked batches on every GPU count, GPUs in the order asked.
    pub rows: Vec<TransformerRow>,
    /// The planner's table (training only): global batches b x N, each on
    /// every count that divides it.
    pub throughput: Vec<ThroughputRow>,
    /// What could not be priced, and why.
    pub notes: Vec<String>,
}

/// Prices `job`; see the module's doc.
pub fn price_transformer(job: &TransformerJob<'_>) -> Result<TransformerPrediction, PredictError> {
    if job.gpu_type.is_some() && job.price.gpus.len() > 1 {
        return Err(PredictError::Input {
            path: job.price.config.to_path_buf(),
            reason: format!(
                "one GPU type name for {} GPUs would merge their throughput rows: price one GPU per --gpu-type",
                job.price.gpus.len()
            ),
        });
    }
    let counts: Vec<u32> = if job.scaling.gpu_counts.is_empty() {
        vec![1]
    } else {
        job.scaling.gpu_counts.clone()
    };
    // The table runs each global batch b x N on every count M that divides
    // it, at b x N / M sequences per GPU: price those batches too.
    let mut batches: BTreeSet<u32> = job.price.batch_sizes.iter().copied().collect();
    if job.price.training {
        for global in global_batches(job.price.batch_sizes, &counts) {
            batches.extend(
                counts
                    .iter()
                    .filter(|&&m| global % u64::from(m) == 0)
                    .map(|&m| (global / u64::from(m)) as u32),
            );
        }
    }
    let batches: Vec<u32> = batches.into_iter().collect();
    let price = price_model(&PriceJob {
        batch_sizes: &batches,
        ..job.price
    })?;
    let gradient_bytes = 4.0 * price.parameters;
    let mut notes = price.notes.clone();
    let mut rows = Vec::new();
    let mut throughput = Vec::new();
    for (g, profile) in price.gpus.iter().enumerate() {
        let pass_of: BTreeMap<u32, &PricedPass> = batches
            .iter()
            .enumerate()
            .map(|(b, &batch)| (batch, price.pass(b, g)))
            .collect();
        let name = profile.name.clone();
        let net = Interconnect::from_profile(
            profile,
            job.scaling.network_gbs,
            job.scaling.gpus_per_node,
            job.scaling.latency_s,
        );
        let scaled = |batch: u32, n: u32| -> Option<TransformerRow> {
            let pass = pass_of[&batch];
            let (allreduce, exposed) = match (n, net) {
                // Inference replicas share no gradients.
                _ if !job.price.training => (0.0, 0.0),
                (1, _) => (0.0, 0.0),
                (_, Some(net)) => {
                    let (a, e) = net.exposed_s(gradient_bytes, n, pass.backward_ms / 1e3, job.scaling.overlap);
                    (a * 1e3, e * 1e3)
                }
                (_, None) => return None,
            };
            Some(TransformerRow {
                pass: pass.clone(),
                num_gpus: n,
                allreduce_ms: allreduce,
                exposed_allreduce_ms: exposed,
            })
        };
        let fits = match does_not_fit(&price, profile) {
            Some(note) => {
                notes.push(format!("{note}; the throughput table has no rows for it"));
                false
            }
            None => true,
        };
        if job.price.training && net.is_none() && counts.iter().any(|&n| n > 1) {
            notes.push(format!(
                "{name}: no multi-GPU figures: its profile gives no GPU link or PCIe bandwidth (give a hardware profile that does)"
            ));
        }
        for &batch in job.price.batch_sizes {
            rows.extend(counts.iter().filter_map(|&n| scaled(batch, n)));
        }
        // A planner must not schedule a model where it cannot be held.
        if !job.price.training || !fits {
            continue;
        }
        let gpu_type = job.gpu_type.map_or(name.clone(), str::to_string);
        for global in global_batches(job.price.batch_sizes, &counts) {
            for &m in counts.iter().filter(|&&m| global % u64::from(m) == 0) {
                if let Some(row) = scaled((global / u64::from(m)) as u32, m) {
                    throughput.push(ThroughputRow {
                        job_type: price.model.clone(),
                        gpu_type: gpu_type.clone(),
                        global_batch: global,
                        num_gpus: m,
                        iters_per_s: 1e3 / row.iteration_ms(),
                    });
                }
            }
        }
    }
    Ok(TransformerPrediction {
        price,
        rows,
        throughput,
        notes,
    })
}

/// Why `profile` cannot hold the model at all, where its memory is known
/// and smaller than the model's state: the rows are still priced (the
/// compute is what it is), but no batch runs there as asked.
fn does_not_fit(price: &ModelPrice, profile: &HardwareProfile) -> Option<String> {
    let memory_gb = gpu_memory_gb(profile)?;
    let state_gb = price.model_state_bytes() / 1e9;
    if state_gb <= memory_gb {
        return None;
    }
    let what = match (price.training, price.optimizer) {
        (false, _) => "float32 weights".to_string(),
        (true, Optimizer::None) => "float32 weights and gradients".to_string(),
        (true, o) => format!("float32 weights, gradients and {o:?} state"),
    };
    Some(format!(
        "{}: does not fit: {}'s {what} take {state_gb:.1} GB a GPU (activations come on top), the GPU has {memory_gb:.0} GB; \
         data parallelism replicates them, so more GPUs do not help",
        profile.name, price.model
    ))
}

/// The GPU's memory in GB, where its profile or spec sheet gives it.
pub(crate) fn gpu_memory_gb(profile: &HardwareProfile) -> Option<f64> {
    profile.memory.size_gb.as_ref().map(|m| m.value)
}

/// Global batches b x N of the asked per-GPU batches on the asked counts.
fn global_batches(batches: &[u32], counts: &[u32]) -> BTreeSet<u64> {
    batches
        .iter()
        .flat_map(|&b| counts.iter().map(move |&n| u64::from(b) * u64::from(n)))
        .collect()
}
