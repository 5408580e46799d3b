"""Parameter counts of transformers' own model classes, for every catalog model and a set of
config variants, built on the meta device (no memory, no weights, no download).

    /work/venvs/validate/bin/python -m validation.param_counts            # print the table
    /work/venvs/validate/bin/python -m validation.param_counts --write    # rewrite param_counts.json

For each entry: the config dict, the transformers class built from it and
`sum(p.numel() for p in model.parameters())` (parameters() de-duplicates tied weights). The
ordinary tests (tests/test_param_counts.py, no torch) assert that memlib's count equals
each recorded one exactly.

Catalog models come from `memlib.models.hf_configs.HF_CONFIGS` (the published config.json) or, for
the older entries defined by their dimensions, from a config.json written out of the
memlib Model (llama, mistral, qwen2; GPT-3 as a GPT-2 config with GPT-3's dimensions).
Multimodal configs (gemma3, llama4) are built twice: their text model (what memlib
counts) and the whole multimodal class (recorded as `multimodal_param_count`, so the
left-out vision tower is a number). quantization_config is dropped before building: the
count is of the logical parameters, not of packed quantized storage.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import torch

from memlib.models.hf_configs import HF_CONFIGS
from memlib.models import CATALOG, Model

OUT = Path(__file__).with_name("param_counts.json")

# Small configs that exercise the branches the catalog does not (heads, biases, layer patterns).
VARIANTS: dict[str, dict] = {
    "llama-reward-model": {"architectures": ["LlamaForSequenceClassification"], "model_type": "llama",
                           "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 4,
                           "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 1},
    "llama-base-model-biases": {"architectures": ["LlamaModel"], "model_type": "llama", "hidden_size": 256,
                                "intermediate_size": 688, "num_attention_heads": 4, "num_hidden_layers": 2,
                                "vocab_size": 1000, "attention_bias": True, "mlp_bias": True},
    "mistral-head-dim": {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 320,
                         "head_dim": 128, "intermediate_size": 640, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1000,
                         "sliding_window": None},
    "qwen2-tied-classifier": {"architectures": ["Qwen2ForSequenceClassification"], "model_type": "qwen2",
                              "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
                              "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1000,
                              "tie_word_embeddings": True, "id2label": {"0": "bad", "1": "ok", "2": "good"}},
    "qwen3-base-model": {"architectures": ["Qwen3Model"], "model_type": "qwen3", "hidden_size": 256,
                         "head_dim": 96, "intermediate_size": 512, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1000,
                         "attention_bias": True},
    "qwen3-moe-sparse-step": {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                              "hidden_size": 256, "head_dim": 64, "intermediate_size": 512,
                              "moe_intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
                              "num_hidden_layers": 4, "num_experts": 6, "num_experts_per_tok": 2,
                              "decoder_sparse_step": 2, "mlp_only_layers": [3], "vocab_size": 1000},
    "mixtral-sliding-tied": {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 256,
                             "intermediate_size": 384, "num_attention_heads": 4, "num_key_value_heads": 2,
                             "num_hidden_layers": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
                             "vocab_size": 1000, "sliding_window": 64, "tie_word_embeddings": True},
    "gemma2-small": {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 256,
                     "head_dim": 64, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "num_hidden_layers": 3, "vocab_size": 1000, "sliding_window": 32},
    "gemma3-text-untied-bias": {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
                                "hidden_size": 256, "head_dim": 64, "intermediate_size": 512,
                                "num_attention_heads": 4, "num_key_value_heads": 1, "num_hidden_layers": 7,
                                "vocab_size": 1000, "tie_word_embeddings": False, "attention_bias": True,
                                "sliding_window": 32},
    "phi3-sliding": {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 256,
                     "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 4,
                     "num_hidden_layers": 2, "vocab_size": 1000, "sliding_window": 63, "pad_token_id": 0},
    "deepseek-v2-lite-like": {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
                              "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
                              "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 3,
                              "n_routed_experts": 8, "n_shared_experts": 2, "num_experts_per_tok": 2,
                              "first_k_dense_replace": 1, "q_lora_rank": None, "kv_lora_rank": 64,
                              "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
                              "vocab_size": 1000, "n_group": 1, "topk_group": 1},
    "deepseek-v3-attention-bias": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                                   "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
                                   "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 3,
                                   "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
                                   "first_k_dense_replace": 2, "q_lora_rank": 96, "kv_lora_rank": 64,
                                   "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 24,
                                   "attention_bias": True, "vocab_size": 1000, "n_group": 2, "topk_group": 1},
    "llama4-text-moe-layers": {"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text",
                               "hidden_size": 256, "head_dim": 64, "intermediate_size": 128,
                               "intermediate_size_mlp": 384, "num_attention_heads": 4, "num_key_value_heads": 2,
                               "num_hidden_layers": 5, "num_local_experts": 4, "num_experts_per_tok": 1,
                               "moe_layers": [0, 3], "vocab_size": 1000},
    "gpt-oss-small": {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 256,
                      "head_dim": 64, "intermediate_size": 192, "num_attention_heads": 4, "num_key_value_heads": 2,
                      "num_hidden_layers": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
                      "vocab_size": 1000},
    "olmo2-bias": {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 256,
                   "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "num_hidden_layers": 2, "vocab_size": 1000, "attention_bias": True},
}


def legacy_config(m: Model) -> dict:
    """A config.json for a catalog Model defined by its dimensions (the pre-config.json entries)."""
    if m.model_type == "gpt":  # GPT-3's dense shape in GPT-2's class (learned positions, LayerNorm, biases, tied)
        return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": m.hidden_size,
                "n_layer": m.num_layers, "n_head": m.num_heads, "n_inner": m.intermediate_size,
                "n_positions": m.max_position_embeddings, "vocab_size": m.vocab_size, "tie_word_embeddings": True}
    prefix = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2"}[m.model_type]
    cfg = {"architectures": [prefix + "ForCausalLM"], "model_type": m.model_type, "hidden_size": m.hidden_size,
           "intermediate_size": m.intermediate_size, "num_attention_heads": m.num_heads,
           "num_key_value_heads": m.num_kv_heads, "num_hidden_layers": m.num_layers, "vocab_size": m.vocab_size,
           "max_position_embeddings": m.max_position_embeddings, "tie_word_embeddings": m.tie_word_embeddings}
    if m.model_type == "llama":
        cfg["attention_bias"] = m.o_bias
    if m.model_type == "mistral":
        cfg["sliding_window"] = m.sliding_window or None
    return cfg


def _auto_class(arch: str):
    import transformers
    if arch.endswith("ForSequenceClassification"):
        return transformers.AutoModelForSequenceClassification
    if arch.endswith("ForCausalLM") or arch.endswith("LMHeadModel"):
        return transformers.AutoModelForCausalLM
    if arch.endswith("Model"):
        return transformers.AutoModel
    raise ValueError(arch)


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def build_count(cfg: dict) -> dict:
    """transformers' parameter count for a config dict (text model for multimodal configs)."""
    import transformers
    from transformers import AutoConfig

    cfg = {k: v for k, v in cfg.items() if k != "quantization_config"}
    arch = cfg["architectures"][0]
    out: dict = {}
    with torch.device("meta"):
        if arch.endswith("ForConditionalGeneration"):
            full_cfg = AutoConfig.for_model(**{k: v for k, v in cfg.items() if k != "architectures"})
            full = getattr(transformers, arch)(full_cfg)
            out["multimodal_class"] = arch
            out["multimodal_param_count"] = _count(full)
            del full
            text = full_cfg.text_config
            model = transformers.AutoModelForCausalLM.from_config(text)
        else:
            c = AutoConfig.for_model(**{k: v for k, v in cfg.items() if k != "architectures"})
            model = _auto_class(arch).from_config(c)
    out["class"] = type(model).__name__
    out["param_count"] = _count(model)
    return out


def entries() -> dict[str, tuple[str, dict]]:
    """name -> (kind, config dict) for every catalog model and every variant."""
    out = {}
    for name, m in CATALOG.items():
        out[name] = ("catalog", HF_CONFIGS[name]["config"] if name in HF_CONFIGS else legacy_config(m))
    for name, cfg in VARIANTS.items():
        out[name] = ("variant", cfg)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.param_counts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help=f"rewrite {OUT.name}")
    ap.add_argument("--only", action="append", default=[], help="one entry (repeatable)")
    args = ap.parse_args(argv)
    import transformers

    rows, failed = {}, 0
    for name, (kind, cfg) in entries().items():
        if args.only and name not in args.only:
            continue
        rec = build_count(cfg)
        mine = CATALOG[name].num_params if kind == "catalog" else Model.from_hf_config(cfg, name=name).num_params
        ok = mine == rec["param_count"]
        failed += not ok
        extra = (f"  (multimodal {rec['multimodal_class']}: {rec['multimodal_param_count']:,})"
                 if "multimodal_param_count" in rec else "")
        print(f"{name:28s} {rec['class']:34s} transformers {rec['param_count']:>17,}  memlib {mine:>17,}  "
              f"{'equal' if ok else 'DIFFERENT'}{extra}", flush=True)
        rows[name] = {"kind": kind, "config": cfg, **rec}
    if args.write:
        if args.only:
            print("--write needs the full set (no --only)")
            return 2
        data = {"metadata": {"torch": torch.__version__, "transformers": transformers.__version__,
                             "python": platform.python_version(), "device": "meta",
                             "count": "sum(p.numel() for p in model.parameters())"},
                "models": rows}
        OUT.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {OUT}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
