//! The per-operator model: time = roofline time / utilisation, with LightGBM
//! learning ln(1 / utilisation) = ln(measured / roofline) from measurements
//! on many GPUs. The roofline carries a prediction to a GPU the model never
//! saw; the learned part only says how far below peak this kind of work,
//! at this size and tiling, runs.

use std::borrow::Cow;
use std::path::Path;
use std::time::Instant;

use lightgbm3::{Booster, Dataset};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::OpModelError;
use crate::features::{INPUT_NAMES, INPUTS_VERSION, Timing, inputs};
use crate::forest::Forest;
use crate::gpu::GpuSpec;
use crate::tensor_cores;
use crate::work::OpWork;

mod unseen;

/// `format` of an op-model file.
pub const MODEL_FORMAT: &str = "tracecast.opmodel";
/// Version of the op-model file format (schemas/FORMATS.md, "Op model").
/// 2: the trained GPUs' spec figures (`trained_specs`), for the guards on
/// GPUs it never trained on (`OpModel::predict_us`).
pub const MODEL_VERSION: u32 = 2;

/// Every how many samples one is repeated with a partial spec sheet.
const PARTIAL_SPEC_EVERY: usize = 4;

/// Pairs priced together: the trees walk a block of rows each
/// (`Forest::predict_rows`), and blocks go to rayon's threads.
const BLOCK: usize = 512;

/// One measured operator: its work, the GPU (an index into the GPU list) and its time.
#[derive(Clone, Debug)]
pub struct Sample {
    pub work: OpWork,
    pub gpu: usize,
    pub measured_us: f64,
    /// Relative weight in the fit (1 for most rows).
    pub weight: f32,
    pub timing: Timing,
}

/// LightGBM settings of the fit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FitParams {
    pub num_iterations: u32,
    pub learning_rate: f64,
    pub num_leaves: u32,
    pub min_data_in_leaf: u32,
    pub feature_fraction: f64,
    pub lambda_l2: f64,
    /// 0: all cores.
    pub num_threads: u32,
    pub seed: u64,
}

impl Default for FitParams {
    fn default() -> Self {
        FitParams {
            num_iterations: 100,
            learning_rate: 0.2,
            num_leaves: 63,
            min_data_in_leaf: 20,
            feature_fraction: 0.9,
            lambda_l2: 1.0,
            num_threads: 0,
            seed: 7,
        }
    }
}

impl FitParams {
    fn lightgbm(&self) -> serde_json::Value {
        let mut p = serde_json::json!({
            "objective": "regression",
            "num_iterations": self.num_iterations,
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "feature_fraction": self.feature_fraction,
            "lambda_l2": self.lambda_l2,
            "seed": self.seed,
            "deterministic": true,
            "force_row_wise": true,
            "verbosity": -1,
        });
        if self.num_threads > 0 {
            p["num_threads"] = self.num_threads.into();
        }
        p
    }
}

/// What a model file says about itself besides the trees.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelCard {
    pub format: String,
    pub format_version: u32,
    pub inputs_version: u32,
    pub inputs: Vec<String>,
    /// GPUs whose measurements it was fitted on.
    pub trained_gpus: Vec<String>,
    /// Their spec figures, one per distinct set: a GPU with other figures
    /// is priced with the floor and the ridge guard (`OpModel::predict_us`).
    pub trained_specs: Vec<GpuSpec>,
    /// Where the measurements came from, one line each.
    pub trained_on: Vec<String>,
    pub rows: usize,
    pub params: FitParams,
    pub tracecast_version: String,
    /// Where the model is known to be weak, one line each.
    #[serde(default)]
    pub known_limits: Vec<String>,
}

/// What the op model cannot know from its data, written into every card.
const KNOWN_LIMITS: [&str; 6] = [
    "FP32 only: every measurement is float32 with TF32 off; tensor-core work is priced as float32 work sped up by the tensor cores' peak over FP32's to a measured power: TF32 (predict --tf32, ops price --tf32) 0.567 for convolutions (ResNet-50 on one H100, 3.11x for a 7.39x peak ratio), 0.656 for matrix products (A100s, 3.92x for 8x; bench/tf32.sh); 16-bit (--precision, 16-bit traces and ETS files): a convolution with channels in multiples of 8 on a GPU with TF32 gains TF32's speed-up times the 16-bit/TF32 peak ratio plus two passes over its bytes for NCHW/NHWC transposes (ResNet-50, -101 and VGG-16 under autocast on an H100, bench/corpus), other convolutions 0.43 (isolated ones with odd channels on an H100; the power-limited T4 realises 0.214, so its float16 convolutions are priced fast), and 0.94 for matrix products, 0.59 for products with a dimension that is not a multiple of 8 (in a trace, by the launching operator's shapes: the feature table's product_alignment), never above 80% of the 16-bit roofline (44% unaligned), the launch (the price of the least work of the operator's kind) not sped up (isolated bfloat16 operators on an H100, bench/half_h100.sh: batched products 17.4%, linear 19.9%, convolutions 43.6% MAPE; the smallest are still priced fast, because NeuSight's harness spends about 20 µs of host time on each call); ops price --precision runs autocast's casts (as element-wise kernels) and float32 softmax and norms: Hugging Face's configurations under autocast on an H100 within -4.6% to +9.7% where the GPU is busy, and host-bound small batches are not modelled (bench/half_h100.sh); BERT-large training is priced within 23% of Lambda's measurements on eight GPUs with TF32, slow on the GeForce RTX 3090 and 4090 and fast on the 150 W A10, and up to 44% slow against Lambda's fused fp16 implementation (bench/lambda.sh)",
    "a GPU's own efficiency is not in its spec sheet: leave-one-GPU-out error on NeuSight's labels is 11-13% on average (the fit's random seed moves it), 20-30% on the V100 (which runs closer to its peaks than any other GPU here) and 11-14% on the T4 and P4 (whose power limits throttle them); on a GPU it never trained on, work that streams memory is priced, where the GPU's bandwidth is beyond every trained GPU's (or below), no less efficient than on the trained GPU at that edge, and other work no less efficient than on the least efficient trained GPU",
    "power-limited cards (T4, P4, and by extension L4) run GEMMs at 32-56% of their spec peak, and more slowly in long randomized sweeps than in a model's run; nothing in a NeuSight spec sheet states the power limit",
    "of the NVIDIA GPUs with 128 FP32 lanes per SM (GA10x, Ada, Hopper) it has seen only those its trained GPUs list (NeuSight's are all 64-lane parts; the shipped model adds an H100 SXM5 measured by bench/gpu/measure_public.py); on the others GEMM utilisation is extrapolated",
    "GPUs whose ridge point is above every trained GPU's (the L4: about 100 FLOP per byte, against at most 38) have no measurements to learn from: their GEMMs and convolutions are priced by compute with the ridge brought into the trained range, or by streaming their bytes, whichever is slower (ResNet-50's FP32 training trace: 1.26x faster on the L4 than on the T4, bench/whatif.sh), an estimate no L4 measurement has checked",
    "operators are priced alone: overlap between kernels, launch gaps and host time are the window model's and the trace's",
];

#[derive(Serialize, Deserialize)]
struct ModelFile {
    #[serde(flatten)]
    card: ModelCard,
    /// LightGBM's text model.
    booster: String,
}

pub struct OpModel {
    pub card: ModelCard,
    /// LightGBM's text model, as fitted and as saved.
    booster_text: String,
    /// Its trees, walked in Rust for prediction (LightGBM itself only fits).
    forest: Forest,
}

/// The trees of LightGBM's text model; `origin` names the model in errors.
fn forest_of(booster_text: &str, origin: &Path) -> Result<Forest, OpModelError> {
    let bad = |reason: String| OpModelError::Model {
        path: origin.to_path_buf(),
        reason,
    };
    let forest = Forest::parse(booster_text).map_err(bad)?;
    if forest.max_feature().is_some_and(|f| f >= INPUT_NAMES.len()) {
        return Err(bad(format!(
            "its trees read more than the {} inputs",
            INPUT_NAMES.len()
        )));
    }
    Ok(forest)
}

/// LightGBM sets OpenMP's process-wide thread count from each fit's
/// `num_threads`, and two fits at once in one process can crash (its
/// documentation of `num_threads`; seen as a rare SIGSEGV in this crate's
/// parallel tests): fits take turns.
static FIT_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A fitted ratio below 0 would mean work faster than the roofline: the
/// output is clamped to utilisation 1.
fn decode(raw: f64, roof_us: f64) -> f64 {
    roof_us * raw.max(0.0).exp()
}

impl OpModel {
    /// Fit on measured samples. `gpus` are the GPUs the samples' indices name.
    pub fn fit(
        samples: &[Sample],
        gpus: &[GpuSpec],
        params: &FitParams,
        trained_on: Vec<String>,
    ) -> Result<OpModel, OpModelError> {
        if samples.is_empty() {
            return Err(OpModelError::NothingToFit);
        }
        let started = Instant::now();
        let width = INPUT_NAMES.len();
        let mut x = Vec::with_capacity(samples.len() * width * 5 / 4);
        let mut y = Vec::with_capacity(samples.len());
        let mut w = Vec::with_capacity(samples.len());
        // Datasheets do not always state the SM count or the L2 (H200,
        // B200), and a kernel in a trace has a GEMM's FLOPs and bytes but
        // not its shape: every few samples are repeated without them, so the
        // model learns what to do when they are missing instead of guessing.
        let partial: Vec<GpuSpec> = gpus
            .iter()
            .map(|g| GpuSpec {
                sm_count: f64::NAN,
                l2_bytes: 0.0,
                ..g.clone()
            })
            .collect();
        for (i, s) in samples.iter().enumerate() {
            // The variants change neither FLOPs, bytes nor peak rates: one roofline.
            let (row, roof) = inputs(&s.work, &gpus[s.gpu], s.timing);
            let target = (s.measured_us.max(1e-6) / roof).ln() as f32;
            let mut rows = vec![row];
            if i % PARTIAL_SPEC_EVERY == 0 {
                rows.push(inputs(&s.work, &partial[s.gpu], s.timing).0);
                if s.work.gemm.is_some() {
                    rows.push(inputs(&OpWork { gemm: None, ..s.work }, &gpus[s.gpu], s.timing).0);
                }
            }
            for row in rows {
                x.extend_from_slice(&row);
                y.push(target);
                w.push(s.weight);
            }
        }
        debug_assert_eq!(x.len(), y.len() * width);
        let booster_text = {
            let _turn = FIT_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut dataset = Dataset::from_slice(&x, &y, width as i32, true)?;
            dataset.set_feature_names(&INPUT_NAMES.map(String::from))?;
            dataset.set_weights(&w)?;
            Booster::train(dataset, &params.lightgbm())?.save_string()?
        };
        let forest = forest_of(&booster_text, Path::new("<fitted op model>"))?;
        let mut trained_gpus: Vec<String> = samples.iter().map(|s| gpus[s.gpu].name.clone()).collect();
        trained_gpus.sort();
        trained_gpus.dedup();
        let mut trained_specs: Vec<GpuSpec> = Vec::new();
        for s in samples {
            let g = &gpus[s.gpu];
            if !trained_specs.iter().any(|t| t.same_figures(g)) {
                trained_specs.push(g.clone());
            }
        }
        trained_specs.sort_by(|a, b| a.name.cmp(&b.name));
        tracing::info!(
            rows = samples.len(),
            seconds = started.elapsed().as_secs_f64(),
            "fitted the op model"
        );
        Ok(OpModel {
            card: ModelCard {
                format: MODEL_FORMAT.into(),
                format_version: MODEL_VERSION,
                inputs_version: INPUTS_VERSION,
                inputs: INPUT_NAMES.map(String::from).to_vec(),
                trained_gpus,
                trained_specs,
                trained_on,
                rows: samples.len(),
                params: params.clone(),
                tracecast_version: env!("CARGO_PKG_VERSION").into(),
                known_limits: KNOWN_LIMITS.map(String::from).to_vec(),
            },
            booster_text,
            forest,
        })
    }

    /// Predicted time in µs of each (work, GPU) pair, timed as `timing` says.
    ///
    /// A GPU whose figures the model never trained on is priced in two
    /// guarded steps, because trees extrapolate flat from the edge of their
    /// inputs and such a GPU may lie beyond them (Hopper's peak rate and
    /// bandwidth, the L4's ridge point):
    /// - the floor (`floored`): work that streams memory, on a GPU beyond
    ///   the trained bandwidths, no less efficient than on the trained GPU
    ///   at their edge; other work no less efficient than on the least
    ///   efficient trained GPU;
    /// - the ridge (`within_trained_ridge`): a matrix product that is
    ///   memory-bound only because the GPU's ridge point is above every
    ///   trained GPU's is priced as the larger of its time on the same GPU
    ///   with its ridge brought down to the trained maximum and the time to
    ///   stream its bytes, where that is faster.
    ///
    /// Matrix work on tensor cores (TF32 where allowed and present, 16-bit
    /// work on GPUs with 16-bit tensor cores) is priced as its float32 twin
    /// sped up (`tensor_cores`): no training data ran on tensor cores.
    pub fn predict_us(&self, pairs: &[(OpWork, &GpuSpec)], timing: Timing) -> Result<Vec<f64>, OpModelError> {
        let twin = |(work, gpu): &(OpWork, &GpuSpec)| tensor_cores::needs_float32_pricing(work, gpu);
        // The trees price float32 work; a copy only where some pair is not.
        let as_f32: Cow<'_, [(OpWork, &GpuSpec)]> = if pairs.iter().any(twin) {
            Cow::Owned(
                pairs
                    .iter()
                    .map(|(work, gpu)| (tensor_cores::as_float32(work), *gpu))
                    .collect(),
            )
        } else {
            Cow::Borrowed(pairs)
        };
        let mut priced = self.price_float32(&as_f32, timing);
        // What 16-bit tensor cores do not shorten: launching the kernels,
        // priced as the same operator on the least work (`tensor_cores::launch_twin`).
        let (sped_up, launches): (Vec<usize>, Vec<(OpWork, &GpuSpec)>) = pairs
            .iter()
            .enumerate()
            .filter_map(|(i, (work, gpu))| tensor_cores::launch_twin(work, gpu).map(|twin| (i, (twin, *gpu))))
            .unzip();
        let mut launch_us = vec![0.0; pairs.len()];
        for (&i, t) in sped_up.iter().zip(self.price_float32(&launches, timing)) {
            launch_us[i] = t;
        }
        for (i, (pair, t)) in pairs.iter().zip(priced.iter_mut()).enumerate() {
            if twin(pair) {
                *t = tensor_cores::from_float32_price(&pair.0, pair.1, *t, launch_us[i]);
            }
        }
        Ok(priced)
    }

    /// Prices float32 pairs, a block of them per rayon task.
    fn price_float32(&self, pairs: &[(OpWork, &GpuSpec)], timing: Timing) -> Vec<f64> {
        let mut priced = vec![0.0; pairs.len()];
        priced
            .par_chunks_mut(BLOCK)
            .zip(pairs.par_chunks(BLOCK))
            .for_each(|(priced, pairs)| self.price_block(pairs, timing, priced));
        priced
    }

    /// Prices one block of float32 pairs into `priced`.
    fn price_block(&self, pairs: &[(OpWork, &GpuSpec)], timing: Timing, priced: &mut [f64]) {
        let (trained, unseen): (Vec<usize>, Vec<usize>) =
            (0..pairs.len()).partition(|&i| self.knows_figures_of(pairs[i].1));
        let on = |indices: &[usize]| -> Vec<(&OpWork, &GpuSpec)> {
            indices.iter().map(|&i| (&pairs[i].0, pairs[i].1)).collect()
        };
        for (&i, (t, _)) in trained.iter().zip(self.trees_us(&on(&trained), timing)) {
            priced[i] = t;
        }
        let unseen_pairs = on(&unseen);
        let mut floored = self.floored(&unseen_pairs, timing);
        self.within_trained_ridge(&unseen_pairs, timing, &mut floored);
        for (&i, t) in unseen.iter().zip(floored) {
            priced[i] = t;
        }
    }

    /// Whether `gpu`'s figures are a trained GPU's, so that the trees alone
    /// price it (no guard): a trained GPU may come back under another name.
    pub(crate) fn knows_figures_of(&self, gpu: &GpuSpec) -> bool {
        let specs = &self.card.trained_specs;
        specs.is_empty() || specs.iter().any(|s| s.same_figures(gpu))
    }

    /// The trees' time of each (work, GPU) pair in µs, unguarded, and its roofline time.
    fn trees_us(&self, pairs: &[(&OpWork, &GpuSpec)], timing: Timing) -> Vec<(f64, f64)> {
        let (rows, roofs): (Vec<_>, Vec<f64>) = pairs.iter().map(|(work, gpu)| inputs(work, gpu, timing)).unzip();
        let scores = self.forest.predict_rows(&rows);
        scores
            .into_iter()
            .zip(roofs)
            .map(|(score, roof)| (decode(score, roof), roof))
            .collect()
    }

    /// The lowest utilisation of `work` on the trained GPUs.
    #[cfg(test)]
    fn lowest_utilisation(&self, work: &OpWork, timing: Timing) -> f64 {
        let on: Vec<(&OpWork, &GpuSpec)> = self.card.trained_specs.iter().map(|g| (work, g)).collect();
        self.trees_us(&on, timing)
            .into_iter()
            .map(|(t, roof)| roof / t)
            .fold(f64::INFINITY, f64::min)
    }

    pub fn to_json(&self) -> Result<String, OpModelError> {
        let file = ModelFile {
            card: self.card.clone(),
            booster: self.booster_text.clone(),
        };
        Ok(serde_json::to_string(&file).expect("a model file serialises"))
    }

    pub fn save(&self, path: &Path) -> Result<(), OpModelError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| OpModelError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(path, self.to_json()?).map_err(|source| OpModelError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Parse a model file's text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &Path) -> Result<OpModel, OpModelError> {
        let bad = |reason: String| OpModelError::Model {
            path: origin.to_path_buf(),
            reason,
        };
        let file: ModelFile = serde_json::from_str(text).map_err(|e| bad(format!("not an op-model file: {e}")))?;
        let card = file.card;
        if card.format != MODEL_FORMAT {
            return Err(bad(format!("format is `{}`, expected `{MODEL_FORMAT}`", card.format)));
        }
        if card.format_version != MODEL_VERSION || card.inputs_version != INPUTS_VERSION {
            return Err(bad(format!(
                "format {} with inputs {}: this build reads format {MODEL_VERSION} with inputs {INPUTS_VERSION}; \
                 retrain it with `tracecast ops train`",
                card.format_version, card.inputs_version
            )));
        }
        let forest = forest_of(&file.booster, origin)?;
        Ok(OpModel {
            card,
            booster_text: file.booster,
            forest,
        })
    }

    pub fn load(path: &Path) -> Result<OpModel, OpModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| OpModelError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        OpModel::from_json(&text, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::EwFunc;
    use crate::work::Tf32Path;

    fn gpu(name: &str, tflops: f64, gbs: f64, sms: f64) -> GpuSpec {
        GpuSpec {
            name: name.into(),
            peak_fp32_flops: tflops * 1e12,
            peak_fp32_matrix_flops: None,
            peak_half_flops: None,
            peak_tf32_flops: None,
            peak_fp64_flops: None,
            bandwidth: gbs * 1e9,
            sm_count: sms,
            l2_bytes: 6.0 * 1024.0 * 1024.0,
        }
    }

    /// A workload-timed sample of `work` on GPU `g` running at `utilisation`.
    fn at_utilisation(work: OpWork, g: usize, spec: &GpuSpec, utilisation: f64) -> Sample {
        Sample {
            work,
            gpu: g,
            measured_us: spec.roofline_us(&work) / utilisation,
            weight: 1.0,
            timing: Timing::Workload,
        }
    }

    /// An element-wise and a linear operator at 199 sizes on every GPU of
    /// `gpus`, GPU `g` running them at `utilisation(g)`.
    fn streaming_and_matrix_samples(gpus: &[GpuSpec], utilisation: impl Fn(usize) -> f64) -> Vec<Sample> {
        let mut samples = Vec::new();
        for i in 1..200 {
            let s = f64::from(i) * 32.0;
            for work in [
                OpWork::elementwise(EwFunc::Gelu, s * 4096.0, 1.0),
                OpWork::linear(2.0, s, 1024.0, 512.0),
            ] {
                for (g, spec) in gpus.iter().enumerate() {
                    samples.push(at_utilisation(work, g, spec, utilisation(g)));
                }
            }
        }
        samples
    }

    /// A small single-threaded fit of `iterations` trees.
    fn fit_small(samples: &[Sample], gpus: &[GpuSpec], iterations: u32) -> OpModel {
        let params = FitParams {
            num_iterations: iterations,
            min_data_in_leaf: 3,
            num_threads: 1,
            ..FitParams::default()
        };
        OpModel::fit(samples, gpus, &params, vec![]).unwrap()
    }

    /// On a GPU it never trained on, no operator runs below the lowest
    /// utilisation a trained GPU reaches on it; a trained GPU under another
    /// name is priced as itself.
    #[test]
    fn a_new_gpu_is_no_less_efficient_than_the_least_efficient_trained_one() {
        // Two slow GPUs, each faster than a third, efficient one in one
        // figure: trees that add up the two figures' effects price a GPU
        // faster in both below either slow one.
        let gpus = [
            gpu("fast memory", 8.0, 900.0, 40.0),
            gpu("fast compute", 14.0, 320.0, 40.0),
            gpu("efficient", 8.0, 320.0, 40.0),
        ];
        let samples = streaming_and_matrix_samples(&gpus, |g| if g == 2 { 0.9 } else { 0.3 });
        let model = fit_small(&samples, &gpus, 20);
        assert_eq!(model.card.trained_specs.len(), 3);
        let renamed = GpuSpec {
            name: "slow, as a trace names it".into(),
            ..gpus[0].clone()
        };
        let new = gpu("new", 14.0, 900.0, 40.0);
        let mut bound = 0;
        for sample in samples.iter().filter(|s| s.gpu == 0) {
            let w = sample.work;
            let t = model
                .predict_us(&[(w, &gpus[0]), (w, &renamed), (w, &new)], Timing::Workload)
                .unwrap();
            assert_eq!(t[0], t[1]);
            let lowest = model.lowest_utilisation(&w, Timing::Workload);
            let utilisation = new.roofline_us(&w) / t[2];
            assert!(utilisation >= lowest * (1.0 - 1e-12), "{utilisation} < {lowest}");
            if model.trees_us(&[(&w, &new)], Timing::Workload)[0].0 > t[2] * (1.0 + 1e-9) {
                bound += 1;
            }
        }
        assert!(bound > 0, "the floor never bound: the test does not exercise it");
        // The share the floor sets, as `ops bench` reports it: where it
        // bound on the new GPU, and nowhere on a trained one.
        let works: Vec<OpWork> = samples.iter().filter(|s| s.gpu == 0).map(|s| s.work).collect();
        let share = |g: &GpuSpec| {
            let pairs: Vec<(OpWork, &GpuSpec)> = works.iter().map(|w| (*w, g)).collect();
            model.floored_share(&pairs, Timing::Workload)
        };
        let expected = bound as f64 / works.len() as f64;
        assert!(
            (share(&new) - expected).abs() <= 1.0 / works.len() as f64,
            "{} vs {expected}",
            share(&new)
        );
        assert_eq!(share(&renamed), 0.0);
    }

    /// On a GPU whose bandwidth is beyond every trained GPU's, work that
    /// streams memory runs at least as efficiently as on the trained GPU
    /// with the highest bandwidth, even where another figure (here the SM
    /// count) leads the trees to a less efficient trained GPU. Inside the
    /// trained bandwidths there is no such edge.
    #[test]
    fn new_streaming_work_beyond_the_trained_bandwidths_is_as_efficient_as_at_their_edge() {
        let gpus = [
            gpu("many SMs, slow", 8.0, 300.0, 80.0),
            gpu("few SMs, narrow", 8.0, 200.0, 40.0),
            gpu("few SMs, wide", 8.0, 1500.0, 40.0),
        ];
        let samples = streaming_and_matrix_samples(&gpus, |g| if g == 0 { 0.3 } else { 0.9 });
        let model = fit_small(&samples, &gpus, 20);
        let new = gpu("new", 8.0, 1800.0, 80.0);
        assert_eq!(
            model.bandwidth_edge(&new).map(|g| g.name.as_str()),
            Some("few SMs, wide")
        );
        let narrow = gpu("new, narrow", 8.0, 100.0, 80.0);
        assert_eq!(
            model.bandwidth_edge(&narrow).map(|g| g.name.as_str()),
            Some("few SMs, narrow")
        );
        assert!(model.bandwidth_edge(&gpu("inside", 8.0, 900.0, 80.0)).is_none());
        let mut bound = 0;
        for sample in samples.iter().filter(|s| s.gpu == 2 && s.work.kind.streams_memory()) {
            let w = sample.work;
            let t = model.predict_us(&[(w, &new)], Timing::Workload).unwrap()[0];
            let (edge_t, edge_roof) = model.trees_us(&[(&w, &gpus[2])], Timing::Workload)[0];
            let utilisation = new.roofline_us(&w) / t;
            assert!(
                utilisation >= edge_roof / edge_t * (1.0 - 1e-12),
                "{utilisation} < {}",
                edge_roof / edge_t
            );
            if model.trees_us(&[(&w, &new)], Timing::Workload)[0].0 > t * (1.0 + 1e-9) {
                bound += 1;
            }
        }
        assert!(bound > 0, "the floor never bound: the test does not exercise it");
    }

    /// Tensor-core work (TF32 here, 16-bit alike but for its launch) is
    /// its float32 twin's price sped up by the realised peak ratio, never
    /// below its own roofline; a GPU without TF32 prices it as float32.
    #[test]
    fn tf32_work_is_float32_work_sped_up_by_the_realised_peak_ratio() {
        let gpus = [gpu("a", 8.0, 320.0, 40.0), gpu("b", 14.0, 900.0, 80.0)];
        let mut samples = Vec::new();
        for i in 1..120 {
            let s = 16.0 * f64::from(i);
            for (g, spec) in gpus.iter().enumerate() {
                samples.push(at_utilisation(OpWork::linear(1.0, s, s, s), g, spec, 0.7));
            }
        }
        let model = fit_small(&samples, &gpus, 20);
        let tensor = GpuSpec {
            name: "with TF32 at 4x FP32".into(),
            peak_tf32_flops: Some(4.0 * 14e12),
            ..gpus[1].clone()
        };
        let speedup = 4f64.powf(tensor_cores::TF32_MATRIX_PRODUCT_EXPONENT);
        for i in [10.0, 60.0, 110.0] {
            let f32_work = OpWork::linear(1.0, 16.0 * i, 16.0 * i, 16.0 * i);
            let tf32_work = OpWork {
                tf32: Tf32Path::MatrixProduct,
                ..f32_work
            };
            let t = model
                .predict_us(
                    &[(f32_work, &tensor), (tf32_work, &tensor), (tf32_work, &gpus[1])],
                    Timing::Workload,
                )
                .unwrap();
            // No launch left unsped: TF32's exponent holds its launches.
            assert!(tensor_cores::launch_twin(&tf32_work, &tensor).is_none());
            let expected = (t[0] / speedup).max(tensor.roofline_us(&tf32_work));
            assert!((t[1] - expected).abs() <= 1e-9 * expected, "{} vs {expected}", t[1]);
            assert!(t[1] < t[0], "TF32 {} not faster than float32 {}", t[1], t[0]);
            assert_eq!(t[2], t[0], "no TF32 on the trained GPU: priced as float32");
        }
    }

    /// A GEMM that is memory-bound only because a new GPU's ridge point is
    /// above every trained GPU's is priced by compute on that GPU with its
    /// ridge brought into range, or by streaming its bytes, whichever is
    /// slower; never faster than its roofline.
    #[test]
    fn a_gpu_beyond_the_trained_ridge_prices_matrix_work_by_compute_or_streaming() {
        // Trained GEMMs run at 0.8 of peak where compute-bound and 0.15 of
        // the bandwidth where memory-bound (small, badly tiled); copies at 0.85.
        let gpus = [gpu("ridge 25", 8.0, 320.0, 40.0), gpu("ridge 16", 14.0, 900.0, 80.0)];
        let mut samples = Vec::new();
        for i in 1..120 {
            let s = 8.0 * f64::from(i);
            for (g, spec) in gpus.iter().enumerate() {
                let gemm = OpWork::linear(1.0, s, s, s);
                let (c, m) = spec.compute_memory_us(&gemm);
                let copy = OpWork::copy(s * s * 64.0);
                for (work, utilisation) in [(gemm, if c >= m { 0.8 } else { 0.15 }), (copy, 0.85)] {
                    samples.push(at_utilisation(work, g, spec, utilisation));
                }
            }
        }
        let model = fit_small(&samples, &gpus, 40);
        // Four times the first GPU's peak at its bandwidth: ridge 100.
        let wide = gpu("wide", 32.0, 320.0, 40.0);
        let within = gpu("wide, ridge 25", 32.0, 1280.0, 40.0);
        let mut moved = 0;
        for i in 20..75 {
            let s = 8.0 * f64::from(i);
            let w = OpWork::linear(1.0, s, s, s);
            let (c, m) = wide.compute_memory_us(&w);
            assert!(c < m, "memory-bound on the wide GPU");
            let t = model.predict_us(&[(w, &wide)], Timing::Workload).unwrap()[0];
            let by_compute = model.floored(&[(&w, &within)], Timing::Workload)[0];
            let streamed = model.floored(&[(&OpWork::copy(w.bytes / 8.0), &wide)], Timing::Workload)[0];
            assert!(
                t <= by_compute.max(streamed) * (1.0 + 1e-9),
                "{t} above {by_compute} and {streamed}"
            );
            assert!(t >= m * (1.0 - 1e-9), "{t} faster than the roofline {m}");
            if model.floored(&[(&w, &wide)], Timing::Workload)[0] > t * (1.0 + 1e-9) {
                moved += 1;
            }
        }
        assert!(
            moved > 0,
            "the ridge never moved a price: the test does not exercise it"
        );
        let copy = OpWork::copy(1e6);
        assert!(model.spec_within_trained_ridge(&copy, &wide).is_none());
    }

    /// The Rust walk of the trees gives LightGBM's own raw scores, missing
    /// inputs (partial spec sheets, GEMMs without shapes) included.
    #[test]
    fn the_forest_scores_as_lightgbm_does() {
        let gpus = [
            gpu("a", 8.0, 320.0, 40.0),
            gpu("b", 14.0, 900.0, 80.0),
            gpu("c", 19.5, 1555.0, 108.0),
        ];
        let mut works = Vec::new();
        for i in 1..40 {
            let s = f64::from(i) * 64.0;
            works.push(OpWork::bmm(4.0, s, 2.0 * s, s + 32.0));
            works.push(OpWork::linear(2.0, s, 1024.0, s * 3.0));
            works.push(OpWork::elementwise(EwFunc::Gelu, s * 4096.0, 1.0));
            works.push(OpWork::layer_norm(s * 1024.0, 1024.0));
        }
        let samples: Vec<Sample> = works
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let g = &gpus[i % 3];
                let roof = (w.flops / g.peak_fp32_flops).max(w.bytes / g.bandwidth) * 1e6;
                Sample {
                    work: *w,
                    gpu: i % 3,
                    measured_us: roof * (1.5 + (i % 7) as f64 / 3.0) + 5.0,
                    weight: 1.0,
                    timing: if i % 2 == 0 { Timing::Sweep } else { Timing::Workload },
                }
            })
            .collect();
        let params = FitParams {
            num_iterations: 30,
            min_data_in_leaf: 3,
            num_threads: 1,
            ..FitParams::default()
        };
        let model = OpModel::fit(&samples, &gpus, &params, vec![]).unwrap();
        let partial = GpuSpec {
            sm_count: f64::NAN,
            l2_bytes: 0.0,
            ..gpu("d", 30.0, 2000.0, 0.0)
        };
        let mut rows = Vec::new();
        for w in &works {
            for g in gpus.iter().chain([&partial]) {
                rows.push(inputs(w, g, Timing::Workload).0);
                rows.push(inputs(&OpWork { gemm: None, ..*w }, g, Timing::Sweep).0);
            }
        }
        let flat: Vec<f64> = rows.iter().flatten().copied().collect();
        let lightgbm = {
            let _turn = super::FIT_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let booster = Booster::from_string(&model.booster_text).unwrap();
            booster.predict(&flat, INPUT_NAMES.len() as i32, true).unwrap()
        };
        for (row, expected) in rows.iter().zip(lightgbm) {
            let ours = model.forest.predict(row);
            assert!(
                (ours - expected).abs() <= 1e-9 * expected.abs().max(1.0),
                "{ours} vs {expected}"
            );
        }
    }
}
