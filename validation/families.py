"""Measured training peaks of the newer model families (issue 10), for the estimator to model.

    /work/venvs/validate/bin/python -m validation.harness --families --list
    /work/venvs/validate/bin/python -m validation.harness --families --all --write   # results_families.json
    /work/venvs/validate/bin/python -m validation.harness --families --case fam-mixtral-bf16

Same reference loop and trackers as results.json (validation.measure.measure_case: two
AdamW steps under FakeTensorMode on a fake CPU device, step 2's peak, MemTracker's
per-phase breakdowns, the dispatch tracker as a cross-check). Each family keeps its
structure at small size: 4 layers (6 for Gemma 3, so one layer is global), hidden 512,
8 query heads of 64, 8 experts (top-2) of width 512 for the MoE models.

MoE routing. transformers 5.24 runs experts with `grouped_mm` by default (the
`experts_implementation` recorded per case): tokens are sorted by expert and every buffer
has tokens x top-k rows whatever the routing, so memory does not depend on which experts
the router picks and fake tensors follow it without help; the data-dependent `eager`
implementation (a loop over the experts that were hit, `nonzero`) is not used. Nothing
here forces a balanced routing, because nothing needs it.

Mixed precision and MoE. With fp32 expert weights under autocast ("bf16-mixed"), transformers'
grouped_mm path casts the input to the weights' fp32 (grouped_mm is not autocast-enabled) and
torch 2.13 refuses it: "Expected inputs of BF16 type but got mat_a.dtype=torch.float32"
(torch._meta_registrations._meta_grouped_mm_common). So the MoE cases here are "bf16" (weights
in bf16, as torchtitan's FSDP2 MixedPrecisionPolicy runs them); `error` records any case that
raises.

MLA's unequal head dims. MLA's value head is narrower than its query/key head, so CUDA's sdpa
runs the memory-efficient kernel (flash needs equal head dims) where fake CPU would fall back to
the fp32 math path and keep b x a x s x s probabilities; the reference loop runs the CUDA kernel
for them (recipes.cuda_sdpa_unequal_head_dims; other families are unaffected).

A LLaMA layer of the same widths (`fam-llama-baseline-bf16`) is measured too, so each
family's extra bytes over a LLaMA layer are a difference of two measurements. The phase-2 cases
(after the estimator's first model of each family) measure what the first 15 left unmeasured:
small vocabularies that move the peak into the layers, the auxiliary loss, recompute on MLA,
autocast on OLMo 2 and Phi-3, LoRA on Qwen3, Gemma 3 past its window.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import time
from pathlib import Path

RESULTS_PATH = Path(__file__).with_name("results_families.json")

_BASE = {"hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
         "intermediate_size": 1376, "num_hidden_layers": 4, "vocab_size": 32000, "max_position_embeddings": 8192,
         "tie_word_embeddings": False, "use_cache": False, "attention_dropout": 0.0, "initializer_range": 0.02}
_MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 512}


def _cfg(model_type: str, **fields) -> dict:
    return {"model_type": model_type, **copy.deepcopy(_BASE), **fields}


CONFIGS: dict[str, dict] = {
    "llama-baseline": _cfg("llama", hidden_act="silu", attention_bias=False, mlp_bias=False),
    "qwen3": _cfg("qwen3", hidden_act="silu"),
    "qwen3_moe": _cfg("qwen3_moe", hidden_act="silu", num_experts=8, **_MOE),
    "mixtral": _cfg("mixtral", hidden_act="silu", num_local_experts=8, num_experts_per_tok=2,
                    intermediate_size=512),
    # DeepseekV3Config.head_dim is the rope width (the rotary table's size), not a head's width
    "deepseek_v3": _cfg("deepseek_v3", hidden_act="silu", num_key_value_heads=8, head_dim=16, n_routed_experts=8,
                        n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=192, kv_lora_rank=128,
                        qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, n_group=1, topk_group=1,
                        **_MOE),
    "deepseek_v2": _cfg("deepseek_v2", hidden_act="silu", num_key_value_heads=8, head_dim=16, n_routed_experts=8,
                        n_shared_experts=2, first_k_dense_replace=1, q_lora_rank=None, kv_lora_rank=128,
                        qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, n_group=1, topk_group=1,
                        **_MOE),
    "gemma3_text": _cfg("gemma3_text", hidden_activation="gelu_pytorch_tanh", num_hidden_layers=6,
                        sliding_window=256, tie_word_embeddings=True),
    "gemma2": _cfg("gemma2", hidden_activation="gelu_pytorch_tanh", sliding_window=256,
                   tie_word_embeddings=True),
    "phi3": _cfg("phi3", hidden_act="silu", pad_token_id=0),
    "olmo2": _cfg("olmo2", hidden_act="silu"),
    "gpt_oss": _cfg("gpt_oss", num_local_experts=8, num_experts_per_tok=2, intermediate_size=512,
                    sliding_window=128),
    "llama4_text": _cfg("llama4_text", hidden_act="silu", num_local_experts=8, num_experts_per_tok=1,
                        intermediate_size=512, intermediate_size_mlp=1376, interleave_moe_layer_step=2,
                        attention_chunk_size=256),
}

# sdpa where transformers supports it; Gemma 2 (soft-capping) and gpt-oss (sinks) run eager.
_ATTENTION = {"gemma2": "eager", "gpt_oss": "eager"}


def _case(family: str, precision: str = "bf16", seq_len: int = 1024, micro_batch: int = 1, recompute="none",
          suffix: str = "", lora: dict | None = None, **config):
    name = (f"fam-{family.replace('_', '-')}" + ("-lora%d-%s" % (lora["r"], "".join(t[0] for t in lora["targets"]))
                                                  if lora else "")
            + f"-{precision}" + ("-recompute" if recompute != "none" else "")
            + (f"-mb{micro_batch}" if micro_batch != 1 else "") + suffix)
    case = {"name": name, "family": family, "config": {**copy.deepcopy(CONFIGS[family]), **config},
            "seq_len": seq_len, "micro_batch": micro_batch, "precision": precision, "recompute": recompute,
            "attention": _ATTENTION.get(family, "sdpa"), "optimizer": "adamw", "finetune": "full",
            "holdout": False}
    if lora:
        case.update(finetune="lora", lora={"dropout": 0.0, **lora})
    return case


FAMILY_CASES: list[dict] = [
    _case("llama-baseline"),
    _case("qwen3"),
    _case("qwen3", "bf16-mixed"),
    _case("qwen3_moe"),
    _case("mixtral"),
    _case("mixtral", recompute="full"),
    _case("deepseek_v3"),
    _case("deepseek_v3", micro_batch=2),
    _case("deepseek_v2"),
    _case("gemma3_text"),
    _case("gemma2"),
    _case("phi3"),
    _case("olmo2"),
    _case("gpt_oss"),
    _case("llama4_text"),
    # Phase 2 (the training estimator's terms): a 128- or 1,024-token vocabulary and longer sequences move the
    # peak from the loss into the decoder layers (MoE and MLA backward temporaries, the eager s x s tensors);
    # the router's auxiliary loss (output_router_logits); recompute and autocast on the new layers; LoRA on
    # a dense family; a sliding-window model beyond its window at 2,048 tokens.
    _case("mixtral", seq_len=4096, suffix="-s4096-v128", vocab_size=128),
    _case("qwen3_moe", suffix="-aux", output_router_logits=True, router_aux_loss_coef=0.001),
    _case("deepseek_v3", recompute="full"),
    _case("deepseek_v2", seq_len=4096, suffix="-s4096-v128", vocab_size=128),
    _case("gpt_oss", seq_len=2048, suffix="-s2048-v1k", vocab_size=1024),
    _case("llama4_text", seq_len=4096, suffix="-s4096-v128", vocab_size=128),
    _case("gemma3_text", seq_len=2048, suffix="-s2048"),
    _case("olmo2", "bf16-mixed"),
    _case("phi3", "bf16-mixed", recompute="full"),
    _case("qwen3", "bf16-mixed", lora={"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"]}),
]
_BY_NAME = {c["name"]: c for c in FAMILY_CASES}


def get_case(name: str) -> dict:
    if name not in _BY_NAME:
        raise SystemExit(f"unknown family case {name!r}; known: {', '.join(_BY_NAME)}")
    return copy.deepcopy(_BY_NAME[name])


def _implementations(case: dict) -> dict:
    """Which attention and experts implementation transformers picks for this config (meta build)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = dict(case["config"])
    c = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(c, attn_implementation=case["attention"])
    return {"attn_implementation": m.config._attn_implementation,
            "experts_implementation": getattr(m.config, "_experts_implementation", None),
            "param_count_meta": sum(p.numel() for p in m.parameters())}


def main_families(args) -> int:
    from validation.measure import _summary_line, _versions, measure_case

    if args.list:
        for c in FAMILY_CASES:
            print(c["name"])
        return 0
    names = [c["name"] for c in FAMILY_CASES] if args.all else args.case
    if not names:
        print("give --all or --case NAME (see --families --list)")
        return 2
    results = []
    for n in names:
        case = get_case(n)
        t0 = time.time()
        try:
            m = measure_case(case, "cpu", use_memtracker=not args.no_memtracker)
        except Exception as e:  # recorded, not hidden: a family the loop cannot train is a finding
            print(f"{n}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            results.append({"name": n, "family": case["family"], "inputs": case,
                            "error": f"{type(e).__name__}: {str(e)[:500]}"})
            continue
        m["implementations"] = _implementations(case)
        print(_summary_line(n, m) + f"  [{time.time() - t0:.1f}s]", flush=True)
        results.append({"name": n, "family": case["family"], "inputs": case, "measured": m})
    if args.write:
        meta = {**_versions(), "fake_device": "cpu",
                "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "tracker": "MemTracker (primary) and the harness's dispatch tracker, as in results.json",
                "peak": "second training step, bytes of live tensor storages",
                "routing": "experts_implementation grouped_mm: buffers of tokens x top-k rows, "
                           "independent of the routing; no routing was forced",
                "unequal_head_dims": "sdpa with a narrower value head (MLA) runs "
                                     "aten._scaled_dot_product_efficient_attention, CUDA's kernel for it "
                                     "(recipes.cuda_sdpa_unequal_head_dims)"}
        old = json.loads(RESULTS_PATH.read_text()) if RESULTS_PATH.exists() and not args.all else None
        keep = [c for c in (old or {}).get("cases", []) if c["name"] not in set(names)]
        order = {c["name"]: i for i, c in enumerate(FAMILY_CASES)}
        data = {"metadata": meta, "cases": sorted(keep + results, key=lambda c: order.get(c["name"], 1e9))}
        RESULTS_PATH.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {RESULTS_PATH}")
    return 0
