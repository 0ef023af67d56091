use std::path::Path;

use super::*;
use crate::work::OpKind;

fn config(json: &str) -> ModelConfig {
    ModelConfig::parse("test", json, Path::new("test.json")).unwrap()
}

/// FLOPs of the graph's matrix products, forward only.
fn gemm_flops(graph: &ModelGraph) -> f64 {
    graph
        .works(false)
        .iter()
        .filter(|(w, _)| w.kind == OpKind::Gemm)
        .map(|(w, times)| w.flops * times)
        .sum()
}

const GPT2_SMALL: &str = r#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
    "vocab_size": 50257, "activation_function": "gelu_new", "n_inner": null}"#;

/// A GPT-2 forward pass does 24·t·d² per layer in its four projections and
/// 4·b·s²·d in attention, plus the vocabulary projection.
#[test]
fn gpt2_matrix_work_is_the_textbook_count() {
    let m = config(GPT2_SMALL);
    let (b, s, d, l, v) = (4.0, 1024.0, 768.0, 12.0, 50257.0);
    let t = b * s;
    let expected = l * (24.0 * t * d * d + 4.0 * b * s * s * d) + 2.0 * t * d * v;
    let got = gemm_flops(&m.graph(b, s, false));
    assert!((got / expected - 1.0).abs() < 1e-9, "{got} vs {expected}");
}

/// A label's layer count replaces the configuration's: the layers' work
/// scales with it, the embeddings and the head stay.
#[test]
fn a_layer_count_rebuilds_the_stack() {
    let (b, s, d, v) = (4.0, 1024.0, 768.0, 50257.0);
    let t = b * s;
    let per_layer = 24.0 * t * d * d + 4.0 * b * s * s * d;
    let head = 2.0 * t * d * v;
    let six = config(GPT2_SMALL).with_layers(6.0);
    assert_eq!(six.describe(), "gpt2, 6 layers, hidden 768");
    let got = gemm_flops(&six.graph(b, s, false));
    assert!((got / (6.0 * per_layer + head) - 1.0).abs() < 1e-9);
}

/// Training adds every backward but the additions', copies' and creations';
/// a GEMM's backward is twice its forward.
#[test]
fn training_adds_backward_work() {
    let m = config(GPT2_SMALL);
    let g = m.graph(2.0, 512.0, true);
    let forward: f64 = g.works(false).iter().map(|(w, n)| w.flops * n).sum();
    let gemm_fw = gemm_flops(&g);
    let all: f64 = g.works(true).iter().map(|(w, n)| w.flops * n).sum();
    assert!(all >= forward + 2.0 * gemm_fw * (1.0 - 1e-9));
    // Dropout does work in training only.
    let dropouts = |training: bool| {
        m.graph(2.0, 512.0, training)
            .nodes
            .iter()
            .filter(|(n, _)| n.target == "Dropout" && n.work.kind != OpKind::NoWork)
            .count()
    };
    assert_eq!(dropouts(false), 0);
    assert!(dropouts(true) > 0);
}

/// A dropout with probability 0 launches nothing (OPT's attention dropout);
/// a bad probability is refused, naming the key.
#[test]
fn dropouts_follow_the_configured_probability() {
    let opt = |extra: &str| {
        format!(
            r#"{{"model_type": "opt", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 1,
                "ffn_dim": 2048, "vocab_size": 1000{extra}}}"#
        )
    };
    let attention_dropouts = |json: &str| {
        config(json)
            .graph(2.0, 128.0, true)
            .nodes
            .iter()
            .filter(|(n, _)| n.target == "Dropout" && n.output_shape == [16.0, 128.0, 128.0])
            .count()
    };
    assert_eq!(attention_dropouts(&opt("")), 0);
    assert_eq!(attention_dropouts(&opt(r#", "attention_dropout": 0.1"#)), 1);
    let no_dropout = config(&opt(r#", "dropout": 0.0"#)).graph(2.0, 128.0, true);
    assert!(!no_dropout.nodes.iter().any(|(n, _)| n.target == "Dropout"));
    let bad = ModelConfig::parse("bad", &opt(r#", "dropout": 1.5"#), Path::new("bad.json")).unwrap_err();
    assert!(bad.to_string().contains("`dropout` is 1.5"), "{bad}");
}

#[test]
fn bert_heads_follow_the_mode() {
    let m = config(
        r#"{"model_type": "bert", "hidden_size": 1024, "num_attention_heads": 16,
            "num_hidden_layers": 24, "intermediate_size": 4096, "vocab_size": 30522, "hidden_act": "gelu"}"#,
    );
    let vocab_head = |training: bool| {
        m.graph(2.0, 512.0, training)
            .nodes
            .iter()
            .any(|(n, _)| n.output_shape.last() == Some(&30522.0))
    };
    // Pre-training predicts the vocabulary; sequence classification two labels.
    assert!(vocab_head(true));
    assert!(!vocab_head(false));
}

#[test]
fn opt_projects_embeddings_only_where_their_width_differs() {
    let narrow = r#"{"model_type": "opt", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 1,
        "ffn_dim": 2048, "word_embed_proj_dim": 2048, "vocab_size": 50272}"#;
    let linears = |json: &str| {
        config(json)
            .graph(1.0, 128.0, false)
            .nodes
            .iter()
            .filter(|(n, _)| n.target == "Linear")
            .count()
    };
    // Per layer q, k, v, out, fc1, fc2; the head; and with a projection, two more.
    assert_eq!(linears(narrow), 6 + 1 + 2);
    assert_eq!(linears(&narrow.replace("2048, \"vocab", "512, \"vocab")), 6 + 1);
}

const SWITCH: &str = r#"{"model_type": "switch_transformers", "d_model": 1024, "d_kv": 128, "d_ff": 16384,
    "num_heads": 32, "num_layers": 24, "num_decoder_layers": 24, "num_experts": 4, "expert_capacity": 64,
    "encoder_sparse_step": 2, "decoder_sparse_step": 2, "vocab_size": 32128, "dense_act_fn": "relu",
    "is_gated_act": false}"#;

#[test]
fn switch_places_sparse_layers_as_hugging_face_does() {
    assert_eq!(switch::Switch::sparse_layers(24.0, 2.0), 12.0);
    assert_eq!(switch::Switch::sparse_layers(24.0, 1.0), 24.0);
    assert_eq!(switch::Switch::sparse_layers(24.0, 0.0), 0.0);
    assert_eq!(switch::Switch::sparse_layers(3.0, 4.0), 1.0);
}

/// NeuSight's dispatch runs each expert on `batch x capacity` rows: past
/// the capacity, a longer sequence adds no expert work, while the dense
/// layers' work grows with it.
#[test]
fn switch_expert_work_stops_growing_at_the_capacity() {
    let m = config(SWITCH);
    let expert_flops = |seq: f64| -> f64 {
        m.graph(2.0, seq, false)
            .nodes
            .iter()
            .filter(|(n, _)| n.target == "Linear" && n.input_shapes[0][0] == 2.0 * 64.0)
            .map(|(n, times)| n.work.flops * times)
            .sum()
    };
    assert!(expert_flops(512.0) > 0.0);
    assert_eq!(expert_flops(512.0), expert_flops(2048.0));
    let all = |seq: f64| gemm_flops(&m.graph(2.0, seq, false));
    assert!(all(2048.0) > 3.0 * all(512.0));
}

#[test]
fn bad_configurations_name_the_field() {
    let err = ModelConfig::parse("m", r#"{"model_type": "gpt2", "n_embd": 768}"#, Path::new("m.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("m.json") && err.contains("n_head"), "{err}");
    let err = ModelConfig::parse("m", r#"{"model_type": "mamba"}"#, Path::new("m.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`mamba`"), "{err}");
    let err = ModelConfig::parse(
        "m",
        r#"{"model_type": "llama", "hidden_size": 4096}"#,
        Path::new("m.json"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("num_attention_heads"), "{err}");
    let err = ModelConfig::parse("m", r#"{"model_type": "gpt2", "n_embd": -3}"#, Path::new("m.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("n_embd"), "{err}");
}

/// Parameter counts as Hugging Face reports them for the public checkpoints
/// of these sizes: GPT-2 small 124,439,808; BERT-Large's encoder and pooler
/// 335,141,888 (plus the two-label classifier); OPT-1.3B 1,315,758,080.
#[test]
fn parameter_counts_match_the_published_models() {
    assert_eq!(config(GPT2_SMALL).parameters(true), 124_439_808.0);
    let bert = config(
        r#"{"model_type": "bert", "hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24,
            "intermediate_size": 4096, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2}"#,
    );
    assert_eq!(bert.parameters(false), 335_141_888.0 + 2.0 * 1024.0 + 2.0);
    let opt = config(
        r#"{"model_type": "opt", "hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 24,
            "ffn_dim": 8192, "word_embed_proj_dim": 2048, "vocab_size": 50272, "max_position_embeddings": 2048}"#,
    );
    assert_eq!(opt.parameters(true), 1_315_758_080.0);
    // Four experts per sparse layer hold most of a Switch model's weights.
    let switch = config(SWITCH);
    let dense_only = config(&SWITCH.replace("\"num_experts\": 4", "\"num_experts\": 1"));
    assert!(switch.parameters(true) > 1.5 * dense_only.parameters(true));
}

const LLAMA2_7B: &str = r#"{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32000,
    "hidden_act": "silu", "tie_word_embeddings": false}"#;

const LLAMA3_8B: &str = r#"{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "hidden_act": "silu", "tie_word_embeddings": false}"#;

/// Hugging Face's counts for the public checkpoints: Llama-2-7B
/// 6,738,415,616; Llama-3-8B 8,030,261,248 (grouped-query attention);
/// Qwen2-0.5B 494,032,768 (biased query, key and value, tied head).
#[test]
fn llama_parameter_counts_match_the_published_models() {
    assert_eq!(config(LLAMA2_7B).parameters(true), 6_738_415_616.0);
    assert_eq!(config(LLAMA3_8B).parameters(true), 8_030_261_248.0);
    let qwen = config(
        r#"{"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
            "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true}"#,
    );
    assert_eq!(qwen.parameters(true), 494_032_768.0);
}

/// A Llama forward pass does 2·t per weight in its projections (queries and
/// outputs d², keys and values d·kv·dh each, three MLP matrices d·f), 4·b·s²·h·dh
/// in attention, plus the vocabulary projection and the rotary tables'
/// small product; fewer key-value heads cut only the key and value
/// projections.
#[test]
fn llama_matrix_work_is_the_textbook_count() {
    let (b, s, d, l, f) = (2.0, 1024.0, 4096.0, 32.0, 14336.0);
    let t = b * s;
    let expected = |kv: f64, v: f64| {
        let rotary = 2.0 * b * 64.0 * s;
        l * (2.0 * t * (2.0 * d * d + 2.0 * d * kv * 128.0 + 3.0 * d * f) + 4.0 * b * s * s * d)
            + 2.0 * t * d * v
            + rotary
    };
    let got = gemm_flops(&config(LLAMA3_8B).graph(b, s, false));
    assert!((got / expected(8.0, 128256.0) - 1.0).abs() < 1e-9, "{got}");
    let mha = config(&LLAMA3_8B.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 32"));
    let got = gemm_flops(&mha.graph(b, s, false));
    assert!((got / expected(32.0, 128256.0) - 1.0).abs() < 1e-9, "{got}");
}
