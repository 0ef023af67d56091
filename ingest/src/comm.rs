//! Communication kernels: by collective metadata where the trace has it
//! (newer NCCL kernels carry `Collective name`), else by name families.

use std::borrow::Cow;

use crate::json::RawEvent;
use crate::model::CommInfo;

/// Collective metadata wins; else the name decides; `None` for compute kernels.
pub fn classify(name: &str, event: &mut RawEvent<'_>) -> Option<CommInfo> {
    let args = event.args.as_mut();
    if let Some(args) = args
        && let Some(collective) = args.collective_name.take()
    {
        return Some(CommInfo {
            collective: normalise(&collective).unwrap_or("other"),
            by_metadata: true,
            in_msg_nelems: args.in_msg_nelems,
            out_msg_nelems: args.out_msg_nelems,
            dtype: args.dtype.take().map(Cow::into_owned),
            group_size: args.group_size,
            process_group_name: args.process_group_name.take().map(Cow::into_owned),
            process_group_ranks: args.process_group_ranks.take().map(Cow::into_owned),
        });
    }
    is_communication_name(name).then(|| CommInfo {
        collective: normalise(name).unwrap_or("other"),
        ..CommInfo::default()
    })
}

/// Name families seen in real traces: NCCL/RCCL (`ncclKernel_*`,
/// `ncclDevKernel_*`), NVLS/symmetric-memory all-reduce (`multimem_all_reduce`,
/// `one_shot_all_reduce`), vLLM custom all-reduce (`cross_device_reduce`), and
/// expert-parallel dispatch/combine kernels (DeepEP `intranode::`/`internode::`)
/// that carry no "nccl" in their names.
pub fn is_communication_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    const FAMILIES: [&str; 14] = [
        "nccl",
        "rccl",
        "multimem_all_reduce",
        "one_shot_all_reduce",
        "two_shot_all_reduce",
        "cross_device_reduce",
        "deep_ep",
        "intranode::dispatch",
        "intranode::combine",
        "internode::dispatch",
        "internode::combine",
        "internode_ll::dispatch",
        "internode_ll::combine",
        "all_to_all",
    ];
    FAMILIES.iter().any(|f| lower.contains(f))
        || lower.contains("allreduce")
        || lower.contains("allgather")
        || lower.contains("reducescatter")
        || lower.contains("alltoall")
        || lower.contains("sendrecv")
}

/// Maps a collective's name (metadata like `allreduce`, or a kernel name like
/// `ncclDevKernel_AllGather_RING_LL`) to the normalised collective.
pub fn normalise(text: &str) -> Option<&'static str> {
    let lower: String = text.to_ascii_lowercase().chars().filter(|c| *c != '_').collect();
    let table: [(&[&str], &'static str); 7] = [
        (&["allreduce", "crossdevicereduce"], "all_reduce"),
        (&["allgather"], "all_gather"),
        (&["reducescatter"], "reduce_scatter"),
        (&["alltoall", "dispatch", "combine"], "all_to_all"),
        (&["broadcast", "bcast"], "broadcast"),
        (&["sendrecv", "send", "recv"], "send_recv"),
        (&["reduce"], "reduce"),
    ];
    table
        .iter()
        .find(|(needles, _)| needles.iter().any(|n| lower.contains(n)))
        .map(|(_, name)| *name)
}

/// Bytes per element for the dtype spellings in collective metadata.
pub fn dtype_bytes(dtype: &str) -> Option<i64> {
    let lower = dtype.to_ascii_lowercase();
    Some(match lower.as_str() {
        "double" | "float64" | "long" | "int64" | "uint64" | "complexfloat" => 8,
        "float" | "float32" | "int" | "int32" | "uint32" => 4,
        "half" | "float16" | "bfloat16" | "short" | "int16" => 2,
        "byte" | "char" | "bool" | "int8" | "uint8" => 1,
        s if s.starts_with("float8") => 1,
        _ => return None,
    })
}

/// `message_bytes` for the comms table.
pub fn message_bytes(info: &CommInfo) -> Option<i64> {
    let elems = info.in_msg_nelems?;
    let size = dtype_bytes(info.dtype.as_deref().unwrap_or(""))?;
    elems.checked_mul(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_classify() {
        for (name, want) in [
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                "all_reduce",
            ),
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "all_gather",
            ),
            ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(...)", "reduce_scatter"),
            ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(...)", "send_recv"),
            ("ncclDevKernel_Broadcast_RING_LL(...)", "broadcast"),
            ("void deep_ep::intranode::dispatch<8, 768>(...)", "all_to_all"),
            ("void multimem_all_reduce_kernel<float>(...)", "all_reduce"),
            ("void vllm::cross_device_reduce_1stage<half, 8>(...)", "all_reduce"),
        ] {
            assert!(is_communication_name(name), "{name}");
            assert_eq!(normalise(name), Some(want), "{name}");
        }
        assert!(!is_communication_name(
            "void at::native::vectorized_elementwise_kernel<4>(...)"
        ));
        assert!(!is_communication_name("ampere_sgemm_128x64_tn"));
    }

    #[test]
    fn metadata_names() {
        assert_eq!(normalise("allreduce"), Some("all_reduce"));
        assert_eq!(normalise("_allgather_base"), Some("all_gather"));
        assert_eq!(normalise("all_to_allv"), Some("all_to_all"));
        assert_eq!(dtype_bytes("BFloat16"), Some(2));
    }
}
