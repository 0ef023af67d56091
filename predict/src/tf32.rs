//! PyTorch's TF32 switches in a what-if: which float32 matrix work runs on
//! TF32 tensor cores, in the recorded run and in the asked one.

use tracecast_opmodel::{OpKind, Tf32Path};
use tracecast_schemas::features::stable_code;

/// Which float32 matrix work of the asked run may run on TF32 tensor
/// cores, on GPUs that have them (NVIDIA Ampere and later).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tf32 {
    /// The recorded run's switches where it ran on a GPU with TF32 and its
    /// kernels say which (TF32 kernels: on; none: off), else PyTorch's
    /// defaults.
    #[default]
    Auto,
    /// PyTorch's defaults: convolutions yes (`cudnn.allow_tf32`), matrix
    /// products no (`cuda.matmul.allow_tf32`).
    PyTorchDefault,
    /// Both switches on.
    On,
    /// Strict float32 everywhere.
    Off,
}

/// Operators whose kernels cuDNN runs, so that `cudnn.allow_tf32` governs
/// all of them, the GEMM-named ones (a weight gradient run as a CUTLASS or
/// cuBLAS-style GEMM) included.
const CUDNN_CONVOLUTIONS: [&str; 11] = [
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose",
    "aten::convolution_backward",
    "aten::cudnn_convolution_backward",
    "aten::cudnn_convolution_backward_input",
    "aten::cudnn_convolution_backward_weight",
    "aten::cudnn_convolution_transpose_backward",
    "aten::_convolution",
    "aten::convolution",
    "aten::conv2d",
    "aten::conv1d",
];

impl Tf32 {
    /// How a note names these switches.
    pub fn describe(self) -> &'static str {
        match self {
            Tf32::Auto => "as recorded",
            Tf32::PyTorchDefault => "PyTorch's defaults (convolutions on TF32)",
            Tf32::On => "on",
            Tf32::Off => "off (strict float32)",
        }
    }

    /// The `op_code`s of `CUDNN_CONVOLUTIONS`.
    pub(crate) fn convolution_codes() -> Vec<i32> {
        CUDNN_CONVOLUTIONS.iter().map(|n| stable_code(n)).collect()
    }

    /// Whether kernels of `kind` run on TF32 under these switches, and as
    /// whose: `convolution` says the launching operator is a cuDNN
    /// convolution, whose switch covers every kernel it launches.
    pub(crate) fn path(self, kind: OpKind, convolution: bool) -> Tf32Path {
        match (self, Tf32Path::of(kind, convolution)) {
            (Tf32::On, path) | (Tf32::Auto | Tf32::PyTorchDefault, path @ Tf32Path::Convolution) => path,
            _ => Tf32Path::Off,
        }
    }

    /// The switches of one trace's (recorded, asked) runs. The recorded
    /// run's are read off its kernels (`used_tf32`) where it ran on a GPU
    /// with TF32 and the lake says; otherwise they are taken to be the
    /// asked ones.
    pub(crate) fn per_trace(self, used_tf32: Option<bool>, recorded_has_tf32: bool) -> (Tf32, Tf32) {
        let read = used_tf32
            .filter(|_| recorded_has_tf32)
            .map(|used| if used { Tf32::On } else { Tf32::Off });
        let asked = match (self, read) {
            (Tf32::Auto, Some(recorded)) => recorded,
            (Tf32::Auto, None) => Tf32::PyTorchDefault,
            (asked, _) => asked,
        };
        (read.unwrap_or(asked), asked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PyTorch's defaults allow TF32 for convolutions, GEMM-named kernels
    /// that cuDNN runs for one included, and not for matrix products.
    #[test]
    fn tf32_modes_follow_pytorchs_switches() {
        use Tf32Path::{Convolution, MatrixProduct, Off};
        let (conv, gemm, ew) = (OpKind::Conv, OpKind::Gemm, OpKind::Elementwise);
        let default = Tf32::PyTorchDefault;
        assert_eq!(default.path(conv, true), Convolution);
        assert_eq!(default.path(gemm, true), Convolution, "a GEMM-named kernel cuDNN runs");
        assert_eq!(default.path(gemm, false), Off);
        assert_eq!(Tf32::Auto.path(conv, false), Convolution);
        assert_eq!(Tf32::Auto.path(ew, true), Off);
        assert_eq!(Tf32::On.path(conv, false), Convolution);
        assert_eq!(Tf32::On.path(gemm, false), MatrixProduct);
        assert_eq!(Tf32::On.path(gemm, true), Convolution);
        assert_eq!(Tf32::On.path(ew, false), Off);
        assert_eq!(Tf32::Off.path(conv, true), Off);
        assert_eq!(Tf32::Off.path(gemm, true), Off);
        let weight_gradient = stable_code("aten::convolution_backward");
        assert!(CUDNN_CONVOLUTIONS.iter().any(|n| stable_code(n) == weight_gradient));
    }

    /// `auto` asks for what the recorded run did where its GPU had TF32 and
    /// its kernels say; an explicit choice sets the asked run only.
    #[test]
    fn tf32_auto_keeps_the_recorded_runs_switches() {
        use Tf32::*;
        assert_eq!(Auto.per_trace(Some(false), true), (Off, Off));
        assert_eq!(Auto.per_trace(Some(true), true), (On, On));
        assert_eq!(Auto.per_trace(Some(false), false), (PyTorchDefault, PyTorchDefault));
        assert_eq!(Auto.per_trace(None, true), (PyTorchDefault, PyTorchDefault));
        assert_eq!(PyTorchDefault.per_trace(Some(false), true), (Off, PyTorchDefault));
        assert_eq!(Off.per_trace(Some(true), true), (On, Off));
        assert_eq!(On.per_trace(None, true), (On, On));
    }
}
