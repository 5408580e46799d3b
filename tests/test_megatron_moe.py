"""Megatron-Core's MoE layers under layout='megatron' (activations.megatron_moe_block) against Megatron-LM's Mixtral
release tests (validation/published.jsonl rows megatron-ci-mixtral-*: golden values on H100 and A100, the last
rank's memory), and Estimate.stage_peak_bytes, which those rows compare. Expected values are the published bytes or
hand derivations from Megatron-LM's source (NVIDIA/Megatron-LM@d98e8a64), written out below."""

from __future__ import annotations

import pytest

import memlib
from benchmark_support import load

bench = load("published")
ROWS = {r["id"]: r for r in bench.load_rows() if r["id"].startswith("megatron-ci-mixtral-")}


def _estimate(row, **over):
    kw = {**row["memlib"]["kwargs"], **over}
    kw["model"] = bench.resolve_model(kw["model"])
    return memlib.estimate_training(**kw)


def test_six_mixtral_rows_on_the_last_stage():
    assert len(ROWS) == 6
    assert all(r["pipeline_stage"] == "last" and r["memlib"]["kwargs"]["layout"] == "megatron" for r in ROWS.values())


@pytest.mark.parametrize("rid", sorted(ROWS))
def test_mixtral_rows_within_their_band(rid):
    """docs/validation.md (Engine layouts) states the Mixtral rows between 8% low and 2% high: memlib assumes
    balanced routing, while the logged running maximum includes the busiest GPU's uneven load."""
    r = bench.evaluate(ROWS[rid])
    assert r.status == "ok"
    est = _estimate(ROWS[rid])
    assert r.peak_bytes == est.stage_peak_bytes("last") < est.peak_bytes  # the first stage keeps pp micro-batches
    assert -0.08 <= r.error <= 0.02, f"{rid}: {r.error:+.2%}"


def test_mixtral_8x22b_last_stage_states_by_hand():
    """The last of pp = 8 stages holds layers 49-55 and the output layer, tp = 2, ep = 8 (one expert per GPU, split
    over the expert tensor-parallel group of tp = 2), h = 6144, 48 heads of 128, 8 query groups, f = 16384, V = 32000:
      attention 2 h^2 + 2 h 1024 = 88,080,384 / tp = 44,040,192; norms 2h = 12,288 and router 8h = 49,152 (whole)
      expert 3 h f = 301,989,888 / tp = 150,994,944;  final norm 6144, output layer h V / tp = 98,304,000
      dense: 7 (44,040,192 + 12,288 + 49,152) + 6144 + 98,304,000 = 407,021,568 at 6 + 12/dp = 7.5 B (dp = 8)
      experts: 7 x 150,994,944 = 1,056,964,608 at 6 + 12/(dp/ep) = 18 B (each expert on one GPU of its group)
      = 3,052,661,760 + 19,025,362,944 = 22,078,024,704 bytes.
    The logged allocated bytes after the step are 23,002,929,152 (H100) and 22,284,783,616 (A100)."""
    dense = 7 * (44_040_192 + 12_288 + 49_152) + 6144 + 98_304_000
    experts = 7 * 150_994_944
    assert dense == 407_021_568 and experts == 1_056_964_608
    by_hand = dense * 15 // 2 + experts * 18
    assert by_hand == 22_078_024_704
    est = _estimate(ROWS["megatron-ci-mixtral-8x22b-tp2-pp8-ep8-h100"])
    step = [m for m in est.moments if m.name == "optimizer" and m.where.startswith(est.stage_names[-1])][0]
    assert step.parts["parameters"] + step.parts["gradients"] + step.parts["optimizer"] == by_hand
    for measured in (23_002_929_152, 22_284_783_616):
        assert -0.05 < by_hand / measured - 1 < 0


def test_mixtral_moe_layer_ledger_by_hand():
    """One Mixtral-8x7B layer under Megatron-Core, tp = 2 with sequence parallelism, 4096 tokens (2048 per GPU
    outside the tensor-parallel region), h = 4096, q = 4096, kv = 1024, 32 heads, E = 8, k = 2, I = 14336; per GPU:
      attention: norm input 2h x 2048 = 16,777,216, fp32 1/rms 4 x 2048 = 8192, norm output 16,777,216,
                 q, k, v 2 (q + 2 kv) x 4096 / 2 = 25,165,824, output 2q x 4096 / 2 = 16,777,216,
                 fp32 log-sum-exp 4 x 32 x 4096 / 2 = 262,144                                   = 75,767,808
      MoE:       norm input 16,777,216 + 1/rms 8192 + norm output 16,777,216 (kept by the router),
                 top-k indices 8 k x 2048 = 32,768, top-k softmax 4 k x 2048 = 16,384, the aux loss's softmax
                 4 E x 2048 = 65,536, the dispatcher's probabilities and map 3 E x 2048 = 49,152, the permute's
                 indices 8 (k + E) x 2048 = 163,840;
                 S = 8192 rows per GPU (2048 tokens x k from each of the ep GPUs' shares, all-gathered over tp = 2):
                 input 2 h S = 67,108,864, probabilities 2 S = 16,384, fc1 output 2 x 2I/2 x S = 234,881,024,
                 fc2 input 2 x I/2 x S = 117,440,512                                            = 453,337,088
      one layer = 529,104,896 bytes."""
    attention = 3 * 16_777_216 + 8192 + 25_165_824 + 262_144
    moe = (2 * 16_777_216 + 8192 + 32_768 + 16_384 + 65_536 + 49_152 + 163_840
           + 67_108_864 + 16_384 + 234_881_024 + 117_440_512)
    assert (attention, moe) == (75_767_808, 453_337_088)
    est = _estimate(ROWS["megatron-ci-mixtral-8x7b-a2a-tp2-pp4-ep4-h100"])
    assert est.counts["layer_activation_bytes"] == attention + moe
    assert not any(name.startswith(("moe.experts.gate_up", "moe.experts.silu", "mlp_norm.x_fp32"))
                   for name, _, _ in est.layer.items)  # transformers' ledger is not used


def test_moe_loss_is_vocabulary_parallel():
    """The output layer's logits V/tp per token: the 16-bit logits and their fp32 copy at the loss, 6 bytes each,
    4096 x 256000 / 2 x 6 = 3,145,728,000 bytes on the last stage (terms.vocab_parallel_cross_entropy_bytes); no
    transformers-style fp32 log-softmax and no router-logit aux loss kept in the output."""
    est = _estimate(ROWS["megatron-ci-mixtral-8x7b-a2a-tp2-pp4-ep4-h100"])
    last = [m for m in est.moments if m.where.startswith(est.stage_names[-1]) and "at the loss" in m.where][0]
    assert last.parts["logits_and_loss"] == 4096 * 256000 // 2 * 6


def test_stage_peak_bytes():
    est = _estimate(ROWS["megatron-ci-mixtral-8x22b-tp2-pp8-ep8-h100"])
    assert est.stage_names[0].startswith("pipeline stage 1 of 8") and est.stage_names[-1].startswith("pipeline stage 8")
    assert est.stage_peak_bytes("first") == est.peak_bytes == est.stage_peak_bytes(est.stage_names[0])
    assert est.stage_peak_bytes("last") < est.peak_bytes
    assert est.stage_peak_bytes("last", first_iteration=True) < est.stage_peak_bytes("last")
    assert est.to_dict()["stage_peaks"][est.stage_names[-1]] == est.stage_peak_bytes("last")
    with pytest.raises(ValueError, match="unknown stage"):
        est.stage_peak_bytes("middle")
    one = memlib.estimate_training("llama-2-7b", seq_len=1024)
    assert one.stage_names == [] and one.stage_peak_bytes() == one.peak_bytes
    assert one.stage_peak_bytes(first_iteration=True) == one.first_iteration_peak_bytes


def test_expert_tensor_parallelism_states_by_hand():
    """The tp 2, etp 1 run (mixtral_8x7b_tp1pp4ep8vpp8_release): Megatron folds ep x etp = 8 GPUs out of tp x dp = 16,
    so each GPU holds one whole expert per layer and the experts' data-parallel group is dp tp / (ep etp) = 2. Its
    last GPU holds 8 one-layer chunks and the output layer, h = 4096, kv 1024, I = 14336, V = 32000:
      attention (2 h^2 + 2 h 1024) / tp = 20,971,520, norms 2h = 8192, router 8h = 32,768 per layer;
      dense: 8 x 21,012,480 + 4096 + h V / tp = 65,536,000 -> 233,639,936 at 6 + 12/8 = 7.5 B
      experts: 8 x 3 h I = 8 x 176,160,768 = 1,409,286,144 at 6 + 12/2 = 12 B
      = 1,752,299,520 + 16,911,433,728 = 18,663,733,248 bytes (logged after the step: 19,743,387,648 on H100)."""
    dense = 8 * (20_971_520 + 8192 + 32_768) + 4096 + 65_536_000
    experts = 8 * 3 * 4096 * 14336
    assert (dense, experts) == (233_639_936, 1_409_286_144)
    by_hand = dense * 15 // 2 + experts * 12
    assert by_hand == 18_663_733_248
    row = ROWS["megatron-ci-mixtral-8x7b-tp2-etp1-pp4-vpp8-ep8-h100"]
    est = _estimate(row)
    assert est.setup.expert_tp == 1 and est.setup.expert_dp == 2
    step = [m for m in est.moments if m.name == "optimizer" and m.where.startswith(est.stage_names[-1])][0]
    assert step.parts["parameters"] + step.parts["gradients"] + step.parts["optimizer"] == by_hand
    assert -0.06 < by_hand / 19_743_387_648 - 1 < 0


def test_expert_tensor_parallelism_rows_and_widths():
    """With etp = 1 under tp = 2 each GPU routes its 2048 sequence-parallel tokens and nothing is gathered after
    the all-to-all: S = 4096 x 2 x 1 / 2 = 4096 rows, each with the expert's whole width: input 2 h S = 33,554,432,
    fc1's output 2 x 2I x S = 234,881,024, fc2's input 2 x I x S = 117,440,512 bytes per GPU. With etp = tp = 2:
    S = 8192 rows at half the width: input 67,108,864, the same fc1 and fc2 bytes."""
    row = ROWS["megatron-ci-mixtral-8x7b-tp2-etp1-pp4-vpp8-ep8-h100"]
    for etp, rows, input_bytes in ((1, 4096, 33_554_432), (2, 8192, 67_108_864)):
        est = _estimate(row, etp=etp, ep=4 if etp == 2 else 8)
        items = {name: n for name, n, _ in est.layer.items}
        assert est.to_dict()["routed_rows"] == rows and est.to_dict()["etp"] == etp
        assert items["moe.experts.input"] == input_bytes  # est.layer: one GPU's bytes
        assert items["moe.experts.fc1_out"] == 234_881_024 and items["moe.experts.fc2_in"] == 117_440_512


def test_expert_tensor_parallelism_is_checked():
    kw = dict(seq_len=4096, tp=2, dp=4, ep=8, etp=1, sequence_parallel=True)
    assert memlib.estimate_training("mixtral-8x7b", layout="megatron", zero_stage=1, **kw).setup.expert_dp == 1
    with pytest.raises(ValueError, match="layout='megatron'"):
        memlib.estimate_training("mixtral-8x7b", **kw)
    with pytest.raises(ValueError, match="must divide"):
        memlib.estimate_training("mixtral-8x7b", layout="megatron", zero_stage=1, **dict(kw, dp=2))
    with pytest.raises(ValueError, match="etp"):
        memlib.estimate_training("llama-2-7b", layout="megatron", tp=2, dp=2, etp=1)
    with pytest.raises(ValueError, match="etp"):
        memlib.estimate_training("mixtral-8x7b", layout="megatron", tp=2, dp=4, ep=4, etp=0)
    with pytest.raises(ValueError, match="Mixtral-style"):  # attention sinks: transformers' ledger, no etp there
        memlib.estimate_training("gpt-oss-20b", layout="megatron", tp=2, dp=8, ep=8, etp=1)
    # Qwen3-MoE's per-head q/k norms are Megatron's --qk-layernorm: its MoE block, etp allowed
    assert memlib.estimate_training("qwen3-30b-a3b", layout="megatron", tp=2, dp=8, ep=8, etp=1).setup.etp == 1


def test_cli_prints_the_last_stage_and_takes_etp(capsys):
    from memlib.cli import main
    args = ["estimate", "mixtral-8x7b", "--layout", "megatron", "--zero-stage", "1", "--tp", "2", "--pp", "4",
            "--dp", "8", "--ep", "8", "--etp", "1", "--sequence-parallel", "--seq-len", "4096", "--grad-accum", "32"]
    assert main(args) == 0
    out = capsys.readouterr().out
    est = memlib.estimate_training("mixtral-8x7b", layout="megatron", zero_stage=1, tp=2, pp=4, dp=8, ep=8, etp=1,
                                   sequence_parallel=True, seq_len=4096, grad_accum=32)
    line = next(x for x in out.splitlines() if x.startswith("last stage"))
    assert f"{est.stage_peak_bytes('last') / 1e9:,.2f}" in line and "etp" in out
