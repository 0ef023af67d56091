//! Synthetic Kineto traces, clearly labelled as such (`traceName` starts
//! with `synthetic:`). They are structurally faithful — every category,
//! flows, correlation and External ids, steps, multi-rank distributedInfo,
//! collective metadata — so they exercise the parser and make large inputs
//! for benchmarks. They are never evidence about real GPU timings.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The trace format generation to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `Operator`/`Runtime`/`Kernel`, `external id`, string tids, epoch µs integers.
    K2021,
    /// `cpu_op`/`cuda_runtime`/`kernel`, kernels' External id = correlation.
    K2022,
    /// `baseTimeNanoseconds` with relative float µs timestamps.
    K2024,
}

impl std::str::FromStr for Era {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "2021" => Ok(Era::K2021),
            "2022" => Ok(Era::K2022),
            "2024" => Ok(Era::K2024),
            other => Err(format!("unknown era `{other}`: use 2021, 2022 or 2024")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SynthSpec {
    pub name: String,
    pub era: Era,
    pub gpu: String,
    pub sm_count: u32,
    pub ranks: u32,
    pub steps: u32,
    /// Layers per step; each runs forward and backward operators.
    pub layers: u32,
    pub batch_size: u32,
    pub seed: u64,
    /// Top-level list instead of an object (the oldest traces).
    pub bare_list: bool,
    /// Adds an environment-dump key with a fake secret, to test it is never stored.
    pub env_dump: bool,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            name: "mlp".into(),
            era: Era::K2024,
            gpu: "NVIDIA A100-SXM4-80GB".into(),
            sm_count: 108,
            ranks: 1,
            steps: 3,
            layers: 4,
            batch_size: 32,
            seed: 1,
            bare_list: false,
            env_dump: false,
        }
    }
}

/// The fake secret `env_dump` writes; tests assert it never reaches the lake.
pub const FAKE_SECRET: &str = "synthetic-fake-secret-7f3a";

/// splitmix64: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
}

/// What was generated, for tests to compare with what the parser reads.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SynthStats {
    pub steps: u64,
    pub kernels: u64,
    pub comm_kernels: u64,
    pub launches: u64,
    pub ops: u64,
    /// Kernel time per family name, summed (ns).
    pub kernel_ns_by_family: Vec<(String, u64)>,
    /// Each step's duration (ns).
    pub step_dur_ns: Vec<u64>,
}

const FAMILIES: [(&str, &str); 5] = [
    ("gemm", "ampere_sgemm_128x64_tn"),
    (
        "elementwise",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    ),
    (
        "norm",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
    ),
    (
        "softmax",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    ),
    (
        "reduction",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
    ),
];
const COMM_KERNEL: &str = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

struct Writer<'s> {
    spec: &'s SynthSpec,
    out: String,
    first: bool,
    base_ns: i64,
    pid: u64,
    tid: u64,
}

impl Writer<'_> {
    fn ts(&self, ns: i64) -> String {
        match self.spec.era {
            Era::K2024 => format!("{:.3}", (ns - self.base_ns) as f64 / 1000.0),
            _ => (ns / 1000).to_string(),
        }
    }
    fn dur(&self, ns: i64) -> String {
        match self.spec.era {
            Era::K2024 => format!("{:.3}", ns as f64 / 1000.0),
            _ => (ns / 1000).to_string(),
        }
    }
    fn cat(&self, modern: &'static str) -> &'static str {
        if self.spec.era != Era::K2021 {
            return modern;
        }
        match modern {
            "cpu_op" | "user_annotation" => "Operator",
            "cuda_runtime" => "Runtime",
            "kernel" => "Kernel",
            "gpu_memcpy" => "Memcpy",
            "ac2g" => "async",
            other => other,
        }
    }
    fn ext_key(&self) -> &'static str {
        if self.spec.era == Era::K2021 {
            "external id"
        } else {
            "External id"
        }
    }
    fn cpu_tid(&self) -> String {
        if self.spec.era == Era::K2021 {
            format!("\"{}\"", self.tid)
        } else {
            self.tid.to_string()
        }
    }
    fn gpu_tid(&self, stream: u32) -> String {
        if self.spec.era == Era::K2021 {
            format!("\"stream {stream}\"")
        } else {
            stream.to_string()
        }
    }
    fn event(&mut self, body: &str) {
        if !self.first {
            self.out.push_str(",\n");
        }
        self.first = false;
        self.out.push('{');
        self.out.push_str(body);
        self.out.push('}');
    }
    /// A CUDA runtime call on the CPU thread, correlated to its GPU work by `corr`.
    fn runtime_call(&mut self, name: &str, start: i64, dur: i64, corr: u64) {
        let body = format!(
            "\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{name}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {corr}, \"{}\": {corr}}}",
            self.cat("cuda_runtime"),
            self.pid,
            self.cpu_tid(),
            self.ts(start),
            self.dur(dur),
            self.ext_key()
        );
        self.event(&body);
    }
    fn cpu_span(&mut self, cat: &'static str, name: &str, start: i64, dur: i64, ext: u64, args: &str) {
        let body = format!(
            "\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}{}}}",
            self.cat(cat),
            name,
            self.pid,
            self.cpu_tid(),
            self.ts(start),
            self.dur(dur),
            ext,
            args
        );
        self.event(&body);
    }
}

/// Generates rank `rank` of the job described by `spec` as Kineto JSON.
pub fn generate(spec: &SynthSpec, rank: u32, out: &mut impl Write) -> io::Result<SynthStats> {
    let mut rng = Rng(spec.seed.wrapping_mul(1000).wrapping_add(rank as u64));
    let base_ns: i64 = 1_700_000_000_000_000_000 + (spec.seed as i64 % 1000) * 1_000_000_000;
    let mut w = Writer {
        spec,
        out: String::with_capacity(1 << 20),
        first: true,
        base_ns,
        pid: 4000 + rank as u64,
        tid: 4000 + rank as u64,
    };
    let mut stats = SynthStats::default();
    let mut family_ns = vec![0u64; FAMILIES.len()];
    let comm = spec.ranks > 1;

    // Metadata events, as the profiler writes them.
    let meta = format!(
        "\"name\": \"process_name\", \"ph\": \"M\", \"ts\": {}, \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": \"python\"}}",
        w.ts(base_ns),
        w.pid
    );
    w.event(&meta);

    let (mut cpu, mut gpu) = (base_ns + 1_000_000, base_ns);
    let (mut correlation, mut ext) = (1000u64, 1u64);
    for step in 0..spec.steps {
        let step_start = cpu;
        let step_ext = ext;
        ext += 1;
        cpu += 5_000;
        // Input batch copy.
        let copy_ns = 20_000 + rng.range(0, 5_000) as i64;
        let corr = correlation;
        correlation += 1;
        w.runtime_call("cudaMemcpyAsync", cpu, 8_000, corr);
        stats.launches += 1;
        gpu = gpu.max(cpu + 3_000);
        let copy = format!(
            "\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", \"pid\": 0, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"device\": 0, \"stream\": 7, \"correlation\": {corr}, \"bytes\": {}}}",
            w.cat("gpu_memcpy"),
            w.gpu_tid(7),
            w.ts(gpu),
            w.dur(copy_ns),
            spec.batch_size as u64 * 3 * 224 * 224 * 4
        );
        w.event(&copy);
        gpu += copy_ns;
        cpu += 10_000;

        for phase in ["forward", "backward"] {
            for layer in 0..spec.layers {
                let op_start = cpu;
                let op_ext = ext;
                ext += 1;
                let kernels = 1 + rng.range(0, 3) as usize;
                let mut t = op_start + 2_000;
                for _ in 0..kernels {
                    let fam = rng.range(0, FAMILIES.len() as u64) as usize;
                    let corr = correlation;
                    correlation += 1;
                    let launch_dur = 4_000 + rng.range(0, 3_000) as i64;
                    let launch = format!(
                        "\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"cudaLaunchKernel\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"cbid\": 211, \"correlation\": {corr}, \"{}\": {}}}",
                        w.cat("cuda_runtime"),
                        w.pid,
                        w.cpu_tid(),
                        w.ts(t),
                        w.dur(launch_dur),
                        w.ext_key(),
                        if spec.era == Era::K2021 { op_ext } else { corr }
                    );
                    w.event(&launch);
                    let flow = format!(
                        "\"ph\": \"s\", \"id\": {corr}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"{}\", \"name\": \"launch\"",
                        w.pid,
                        w.cpu_tid(),
                        w.ts(t),
                        w.cat("ac2g")
                    );
                    w.event(&flow);
                    stats.launches += 1;
                    let k_start = gpu.max(t + 5_000);
                    let k_dur = 5_000 + rng.range(0, 60_000) as i64 * (1 + (fam == 0) as i64 * 3);
                    let grid = rng.range(1, 4096);
                    let kernel = format!(
                        "\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": 0, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {corr}, \"{}\": {}, \"registers per thread\": {}, \"shared memory\": {}, \"blocks per SM\": {:.6}, \"warps per SM\": {:.6}, \"grid\": [{grid}, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": {}}}",
                        w.cat("kernel"),
                        FAMILIES[fam].1,
                        w.gpu_tid(7),
                        w.ts(k_start),
                        w.dur(k_dur),
                        w.ext_key(),
                        if spec.era == Era::K2021 { op_ext } else { corr },
                        rng.range(16, 128),
                        rng.range(0, 4) * 8192,
                        grid as f64 / spec.sm_count as f64,
                        grid as f64 * 8.0 / spec.sm_count as f64,
                        rng.range(10, 100)
                    );
                    w.event(&kernel);
                    let flow = format!(
                        "\"ph\": \"f\", \"id\": {corr}, \"pid\": 0, \"tid\": {}, \"ts\": {}, \"cat\": \"{}\", \"name\": \"launch\", \"bp\": \"e\"",
                        w.gpu_tid(7),
                        w.ts(k_start),
                        w.cat("ac2g")
                    );
                    w.event(&flow);
                    // The trace stores µs; count what a reader will see.
                    family_ns[fam] += (k_dur / 1000 * 1000) as u64 * (spec.era != Era::K2024) as u64
                        + k_dur as u64 * (spec.era == Era::K2024) as u64;
                    stats.kernels += 1;
                    gpu = k_start + k_dur;
                    t += launch_dur + 1_000;
                }
                let op_dur = t - op_start + 1_000;
                // Spans are written when they end; readers sort events by time.
                let dims = format!(
                    ", \"Input Dims\": [[{}, 1024], [1024, 1024]], \"Input type\": [\"float\", \"float\"]",
                    spec.batch_size
                );
                let name = if phase == "forward" { "aten::addmm" } else { "aten::mm" };
                w.cpu_span("cpu_op", name, op_start, op_dur, op_ext, &dims);
                stats.ops += 1;
                cpu = op_start + op_dur + 2_000 + layer as i64;
            }
        }
        if comm {
            let corr = correlation;
            correlation += 1;
            let elems = 1_048_576 * spec.layers as u64;
            w.runtime_call("cudaLaunchKernel", cpu, 6_000, corr);
            stats.launches += 1;
            let k_start = gpu.max(cpu + 5_000);
            let k_dur = 200_000 + rng.range(0, 50_000) as i64;
            let kernel = format!(
                "\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{COMM_KERNEL}\", \"pid\": 0, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"device\": 0, \"stream\": 20, \"correlation\": {corr}, \"Collective name\": \"allreduce\", \"In msg nelems\": {elems}, \"Out msg nelems\": {elems}, \"Group size\": {}, \"dtype\": \"Float\", \"Process Group Name\": \"0\", \"Process Group Ranks\": \"{:?}\"}}",
                w.cat("kernel"),
                w.gpu_tid(20),
                w.ts(k_start),
                w.dur(k_dur),
                spec.ranks,
                (0..spec.ranks).collect::<Vec<_>>()
            );
            w.event(&kernel);
            stats.kernels += 1;
            stats.comm_kernels += 1;
            gpu = k_start + k_dur;
            cpu += 10_000;
        }
        // The step ends when the CPU has synchronised with the GPU.
        let step_end = cpu.max(gpu) + 10_000;
        let step_dur = step_end - step_start;
        let step_name = format!("ProfilerStep#{}", step + 1);
        w.cpu_span("user_annotation", &step_name, step_start, step_dur, step_ext, "");
        let read_dur = match spec.era {
            Era::K2024 => step_dur,
            _ => step_dur / 1000 * 1000,
        };
        stats.step_dur_ns.push(read_dur as u64);
        stats.steps += 1;
        stats.ops += 1;
        cpu = step_end + 1_000;
    }
    stats.kernel_ns_by_family = FAMILIES
        .iter()
        .zip(family_ns)
        .map(|((f, _), ns)| (f.to_string(), ns))
        .collect();

    // Head and tail of the file.
    let mut head = String::new();
    if spec.bare_list {
        head.push_str("[\n");
    } else {
        head.push_str("{\n  \"schemaVersion\": 1,\n");
        let _ = writeln!(
            head,
            "  \"deviceProperties\": [{{\"id\": 0, \"name\": \"{}\", \"totalGlobalMem\": 85899345920, \"computeMajor\": 8, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048, \"regsPerBlock\": 65536, \"warpSize\": 32, \"sharedMemPerBlock\": 49152, \"numSms\": {}, \"regsPerMultiprocessor\": 65536, \"sharedMemPerMultiprocessor\": 167936}}],",
            spec.gpu, spec.sm_count
        );
        if spec.ranks > 1 {
            let _ = writeln!(
                head,
                "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {}}},",
                spec.ranks
            );
        }
        if spec.era == Era::K2024 {
            let _ = writeln!(
                head,
                "  \"baseTimeNanoseconds\": {base_ns},\n  \"displayTimeUnit\": \"ms\","
            );
        }
        if spec.env_dump {
            let _ = writeln!(
                head,
                "  \"job_environment\": {{\"HOME\": \"/home/synthetic\", \"API_TOKEN\": \"{FAKE_SECRET}\"}},"
            );
        }
        let _ = writeln!(head, "  \"traceName\": \"synthetic:{}:rank{rank}\",", spec.name);
        head.push_str("  \"traceEvents\": [\n");
    }
    out.write_all(head.as_bytes())?;
    out.write_all(w.out.as_bytes())?;
    out.write_all(if spec.bare_list { b"\n]\n" } else { b"\n  ]\n}\n" })?;
    Ok(stats)
}

/// How `write_job` stores the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Json,
    Gzip,
    /// One `.tar.gz` holding every rank.
    TarGz,
}

/// Writes every rank of the job into `dir`; returns the files and per-rank stats.
pub fn write_job(spec: &SynthSpec, dir: &Path, packing: Packing) -> io::Result<(Vec<PathBuf>, Vec<SynthStats>)> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let mut stats = Vec::new();
    let mut tar = (packing == Packing::TarGz).then(|| {
        let path = dir.join(format!("synthetic-{}.tar.gz", spec.name));
        (
            path.clone(),
            std::fs::File::create(&path)
                .map(|f| tar::Builder::new(flate2::write::GzEncoder::new(f, flate2::Compression::fast()))),
        )
    });
    for rank in 0..spec.ranks {
        let mut buf = Vec::new();
        stats.push(generate(spec, rank, &mut buf)?);
        let name = format!("synthetic-{}-rank{rank}.pt.trace.json", spec.name);
        match (&mut tar, packing) {
            (Some((_, builder)), _) => {
                let builder = builder.as_mut().map_err(|e| io::Error::new(e.kind(), e.to_string()))?;
                let mut header = tar::Header::new_gnu();
                header.set_size(buf.len() as u64);
                header.set_mode(0o644);
                header.set_cksum();
                builder.append_data(&mut header, &name, buf.as_slice())?;
            }
            (None, Packing::Gzip) => {
                let path = dir.join(format!("{name}.gz"));
                let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&path)?, flate2::Compression::fast());
                enc.write_all(&buf)?;
                enc.finish()?;
                files.push(path);
            }
            _ => {
                let path = dir.join(&name);
                std::fs::write(&path, &buf)?;
                files.push(path);
            }
        }
    }
    if let Some((path, builder)) = tar {
        builder?.into_inner()?.finish()?;
        files.push(path);
    }
    Ok((files, stats))
}
