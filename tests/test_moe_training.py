"""Training the newer families: expert parallelism, the routed activations, the all-to-all traffic and the
FLOPs of a mixture of experts, and the options that go with them. Expected values are derived by hand in
each test from the published shapes (Mixtral-8x7B's config.json: hidden 4096, 32 layers, 32 heads / 8 KV
heads of 128, 8 experts of width 14336, top-2, vocabulary 32000); the measured peaks are in
tests/test_families_measured.py."""

import pytest

import memlib
from memlib import cost
from memlib.parallel.plan import plan
from memlib.cost.timing import all_to_all_bytes, dp_collectives, ep_all_to_all_bytes, flops_per_token, step_time
from memlib.training import estimate_training

H, L, E, K, IE, V = 4096, 32, 8, 2, 14336, 32000
ATTN = 2 * H * H + 2 * H * 1024  # q, o (4096 x 4096) and k, v (4096 x 1024)
EXPERT = 3 * H * IE  # gate, up, down
PER_LAYER_DENSE = ATTN + 2 * H + E * H  # attention, two norms, the router
TOTAL = L * (PER_LAYER_DENSE + E * EXPERT) + 2 * V * H + H  # + embedding, lm_head, final norm


def test_mixtral_counts_by_hand():
    m = memlib.get_model("mixtral-8x7b")
    assert m.num_params == TOTAL  # 46.7B
    assert m.num_active_params == TOTAL - L * (E - K) * EXPERT  # 12.9B: two experts per token
    assert round(TOTAL / 1e9, 1) == 46.7 and round(m.num_active_params / 1e9, 1) == 12.9


@pytest.mark.parametrize("ep", [1, 2, 4, 8])
def test_expert_parallel_holds_num_experts_over_ep(ep):
    # DDP over 8 GPUs (no ZeRO), bf16 everywhere: each GPU holds the dense part and E / ep experts per layer
    est = estimate_training("mixtral-8x7b", seq_len=512, precision="bf16", dp=8, ep=ep)
    local = TOTAL - L * (E - E // ep) * EXPERT
    assert est.counts["trainable"] == local
    assert est.counts["param_bytes"] == 2 * local and est.counts["grad_bytes"] == 2 * local
    assert est.counts["optimizer_bytes"] == 2 * 2 * local  # AdamW's exp_avg and exp_avg_sq in bf16
    assert est.counts["expert_params"] == L * E // ep * EXPERT


def test_zero_shards_the_experts_over_dp_over_ep():
    # ZeRO-3 over dp=16 with ep=4: 2 of 8 experts per GPU, each sharded over the 16 / 4 = 4 GPUs holding it; the
    # dense part over all 16. Per GPU: dense/16 + (experts/4)/4 = the whole model / 16, as without ep.
    dense = TOTAL - L * E * EXPERT
    local_experts = L * (E // 4) * EXPERT
    est = estimate_training("mixtral-8x7b", seq_len=512, precision="bf16", zero_stage=3, dp=16, ep=4)
    assert est.counts["param_bytes"] == 2 * dense // 16 + 2 * local_experts // 4
    # DeepSpeed's layout: fp32 master + two fp32 AdamW states, 12 bytes per parameter, sharded the same way
    assert est.counts["optimizer_bytes"] == pytest.approx(12 * (dense / 16 + local_experts / 4), rel=1e-9)
    assert est.counts["param_bytes"] == pytest.approx(2 * TOTAL / 16, rel=1e-9)
    # ZeRO-1 (states sharded, parameters and gradients not): ep cuts the parameters to the local experts
    z1 = estimate_training("mixtral-8x7b", seq_len=512, precision="bf16", zero_stage=1, dp=16, ep=4)
    assert z1.counts["param_bytes"] == 2 * (dense + local_experts)


def test_routed_activations_scale_with_top_k_not_experts():
    base = memlib.get_model("mixtral-8x7b").with_(num_layers=2)
    def routed(model):
        est = estimate_training(model, seq_len=1024, precision="bf16")
        return dict((t.name, t.nbytes) for t in est.terms)["routed_expert_activations"]
    one = routed(base)
    assert routed(base.with_(num_experts=64)) == one  # 8x the experts, same tokens x top-k rows
    more_k = routed(base.with_(num_experts_per_tok=4))
    # every routed row: the gathered input and down output (h), gate_up (2I), SiLU and product (I) in bf16,
    # 3 int64 indices and an fp32 routing weight; x 2 layers; twice the rows with top-4
    rows = 1024 * 2
    per_row = 2 * (2 * H + 4 * IE) + 3 * 8 + 4
    assert one == 2 * rows * per_row and more_k == 2 * one


def test_capacity_factor_sizes_the_expert_buffers():
    est = estimate_training("mixtral-8x7b", seq_len=1000, precision="bf16", capacity_factor=1.25)
    # GShard: each of the 8 experts takes ceil(1.25 x 1000 x 2 / 8) = 313 rows: 2,504 rows in all
    assert est.counts["routed_rows"] == 8 * 313
    dropless = estimate_training("mixtral-8x7b", seq_len=1000, precision="bf16")
    assert dropless.counts["routed_rows"] == 1000 * 2
    routed = lambda e: dict((t.name, t.nbytes) for t in e.terms)["routed_expert_activations"]  # noqa: E731
    assert routed(est) * 2000 == pytest.approx(routed(dropless) * 2504, rel=1e-3)  # the buffers scale with the rows


def test_all_to_all_traffic_by_hand():
    # 32 MoE layers x 4 all-to-alls (dispatch + combine, forward and backward) x 4 micro-batches, each of
    # 4096 tokens x top-2 x 4096 x 2 bytes, of which each of 8 GPUs sends 7/8
    est = estimate_training("mixtral-8x7b", seq_len=4096, precision="bf16-mixed", zero_stage=3, dp=16, ep=8,
                            grad_accum=4)
    buffer = 4096 * 2 * H * 2
    assert ep_all_to_all_bytes(est) == pytest.approx(7 / 8 * buffer * 4 * 32 * 4)
    assert all_to_all_bytes(buffer, 8) == 7 / 8 * buffer and all_to_all_bytes(buffer, 1) == 0
    full = estimate_training("mixtral-8x7b", seq_len=4096, precision="bf16-mixed", zero_stage=3, dp=16, ep=8,
                             grad_accum=4, recompute="full")
    assert ep_all_to_all_bytes(full) == pytest.approx(6 / 4 * ep_all_to_all_bytes(est))  # the forward's again
    t = step_time(est, "h100-80gb")
    # 8 GPUs of an expert-parallel group are one node: NVLink
    assert t.ep_comm_bytes == int(ep_all_to_all_bytes(est))
    assert t.ep_comm_s == pytest.approx(t.ep_comm_bytes / memlib.get_gpu("h100-80gb").interconnect_bytes_per_s_per_direction)
    assert t.step_s == pytest.approx(t.compute_s + t.dp_exposed_s + t.tp_comm_s + t.pp_comm_s + t.offload_s
                                     + t.nvme_s + t.cpu_optimizer_s + t.ep_comm_s)
    assert ep_all_to_all_bytes(estimate_training("mixtral-8x7b", seq_len=4096, dp=16)) == 0  # ep = 1


def test_expert_gradients_reduced_over_dp_over_ep():
    # DDP, AMP (fp32 gradients): the dense gradients all-reduced over 16 GPUs, the 2 local experts' over the 4
    # GPUs holding the same experts: 2(n-1)/n x bytes each
    est = estimate_training("mixtral-8x7b", seq_len=512, dp=16, ep=4)
    dense, experts = TOTAL - L * E * EXPERT, L * 2 * EXPERT
    scheme, (allreduce,) = dp_collectives(est)
    assert scheme == "DDP"
    assert allreduce.bytes_per_gpu == pytest.approx(2 * 15 / 16 * 4 * dense + 2 * 3 / 4 * 4 * experts)


def test_flops_use_the_active_parameters():
    m = memlib.get_model("mixtral-8x7b")
    active = TOTAL - L * (E - K) * EXPERT
    assert flops_per_token(m, 4096) == 6 * active + 12 * L * 32 * 128 * 4096  # PaLM's 6N + 12LHQT, N active
    assert cost.training_flops(m, 10**12, seq_len=4096) == pytest.approx(
        flops_per_token(m, 4096) * 10**12)


def test_plan_lays_out_experts():
    r = plan("mixtral-8x7b", "h100-80gb", 16, allow_offload=False)
    eps = {p.settings.get("ep", 1) for p in r.feasible}
    assert {1, 2, 4, 8} <= eps and "ep=8" in " ".join(p.describe() for p in r.feasible)
    assert all(p.settings["dp"] % p.settings.get("ep", 1) == 0 for p in r.feasible)
    dense = plan("llama-2-13b", "h100-80gb", 16, allow_offload=False)
    assert all("ep" not in p.settings for p in dense.feasible)


def test_sliding_window_mask_only_past_the_window():
    # Mistral-7B v0.1: every layer a 4,096-token window; transformers builds the mask once s >= window
    short = estimate_training("mistral-7b", seq_len=2048, precision="bf16")
    long = estimate_training("mistral-7b", seq_len=4096, precision="bf16")
    assert not any(n == "sdpa.mask" for n, _, _ in short.layer.items)
    mask = dict((n, v) for n, v, _ in long.layer.items)["sdpa.mask"]
    assert mask == 2 * 4096 * 4096  # (1, 1, s, s) in bf16, each layer's own copy
    assert dict((n, v) for n, v, _ in long.layer.items)["sdpa.k"] == 2 * 4096 * 4096  # K repeated to 32 heads


def test_deepseek_v3_full_fine_tuning_is_estimated():
    # once refused (it was counted as dense); bf16 weights, gradients and AdamW states alone: 8 bytes x 671B
    est = estimate_training("deepseek-v3", seq_len=4096, precision="bf16", zero_stage=3, dp=256, ep=8)
    n = memlib.get_model("deepseek-v3").num_params
    assert est.counts["param_bytes"] * 256 == pytest.approx(2 * n, rel=1e-6)
    assert any(t.name == "mla_activations" for t in est.terms)
    assert "MLA" in est.explain() and "MoE layer" in est.explain()


@pytest.mark.parametrize("model, kw, msg", [
    ("mixtral-8x7b", dict(dp=8, ep=3), "ep=3 must divide mixtral-8x7b's 8 experts"),
    ("mixtral-8x7b", dict(dp=2, ep=4), "ep=4 must divide dp=2"),
    ("llama-7b", dict(dp=2, ep=2), "ep=2: expert parallelism needs a mixture-of-experts model"),
    ("llama-7b", dict(capacity_factor=1.0), "capacity_factor=1.0 does not apply here"),
    ("llama-7b", dict(router_aux_loss=False), "router_aux_loss=False does not apply here"),
    ("mixtral-8x7b", dict(capacity_factor=0), "capacity_factor must be a finite number > 0"),
    ("mixtral-8x7b", dict(router_aux_loss="yes"), "router_aux_loss must be True or False"),
    ("mixtral-8x7b", dict(finetune="lora"), "LoRA/QLoRA estimates are modelled for models with LLaMA's"),
    ("deepseek-v3", dict(finetune="qlora"), "MLA projections|routed experts"),
    ("phi-4", dict(finetune="lora"), "fused projections and peft has no default target_modules"),
    ("qwen3-8b", dict(recompute="selective"), "recompute='selective'.*LLaMA layer"),
])
def test_bad_moe_and_family_options(model, kw, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_training(model, seq_len=512, **kw)


def test_sequence_classification_head_is_refused_for_training():
    cfg = {"model_type": "llama", "architectures": ["LlamaForSequenceClassification"], "num_labels": 1,
           "hidden_size": 512, "intermediate_size": 1376, "num_attention_heads": 8, "num_hidden_layers": 2,
           "vocab_size": 32000}
    with pytest.raises(ValueError, match="causal-LM head"):
        estimate_training(memlib.Model.from_hf_config(cfg), seq_len=512)


def test_eager_only_families_say_so():
    est = estimate_training("gpt-oss-20b", seq_len=1024, precision="bf16")
    assert est.setup.attention == "eager" and any("attention sinks" in n for n in est.notes)


def test_cli_estimate_moe_flags(capsys):
    from memlib.cli import main
    assert main(["estimate", "mixtral-8x7b", "--seq-len", "1024", "--dp", "8", "--ep", "8", "--zero-stage", "3",
                 "--capacity-factor", "1.25", "--no-router-aux-loss", "--json"]) == 0
    import json
    d = json.loads(capsys.readouterr().out)
    assert (d["ep"], d["capacity_factor"], d["router_aux_loss"]) == (8, 1.25, False)
    assert d["routed_rows"] == 8 * -(-int(1.25 * 1024 * 2) // 8)
    assert main(["estimate", "llama-7b", "--ep", "2", "--dp", "2"]) == 2
    assert "expert parallelism needs a mixture-of-experts model" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b", "llama-4-scout",
                                   "gemma-3-27b", "phi-4"])
def test_playground_trains_every_new_family(model):
    pytest.importorskip("ipywidgets")
    from memlib.learn.playgrounds import Playground
    p = Playground(model=model, gpu="h100-80gb", count=8, zero="ZeRO-3")
    assert "fit" in p.verdict.value and p.estimate.setup.model.name == model  # an estimate, not an error
    p.controls["method"].value = "LoRA"
    if memlib.get_model(model).is_llama_layer or model in ("gemma-3-27b", "phi-4"):  # phi-4: fused LoRA (issue 42)
        assert p.estimate.setup.finetune == "lora"
    else:  # said on the page, not raised
        assert "LoRA/QLoRA estimates are modelled" in p.verdict.value
