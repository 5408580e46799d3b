"""The mechanism pictures (memlib.learn.mechanisms): each data function's shapes, bytes and bubble against a
hand derivation written out here, and every draw function run under the Agg backend."""

from __future__ import annotations

from fractions import Fraction

import pytest

from memlib.learn import mechanisms as M
from memlib.parallel.pipeline import (bubble_fraction, bubble_time, dualpipe_bubble_time,
                                      peak_micro_batches_in_flight, zb_h1_bubble_time)
from memlib.training.layout import interleaved_chunks_in_flight

# Llama-2-7B's parameter count by hand (h = 4096, I = 11008, L = 32, V = 32000, untied head):
#   per layer: q, k, v, o 4 x 4096^2 = 67,108,864; gate, up, down 3 x 4096 x 11008 = 135,266,304; 2 norms 8,192
#   -> 202,383,360 x 32 = 6,476,267,520; embedding + head 2 x 32000 x 4096 = 262,144,000; final norm 4,096
N7B = 6_476_267_520 + 262_144_000 + 4_096
assert N7B == 6_738_415_616


# --- the ring all-reduce ------------------------------------------------------------------------------------------

def test_ring_all_reduce_step_by_step():
    from memlib.cost.timing import all_reduce_bytes
    ring = M.ring_all_reduce(4, 4 * 10**9)
    # 3 reduce-scatter steps then 3 all-gather steps; each rank sends one 1 GB chunk per step: 6 GB = 2 x 3/4 x 4 GB
    assert [st.phase for st in ring.steps] == ["reduce-scatter"] * 3 + ["all-gather"] * 3
    assert ring.bytes_sent_per_rank == 6 * 10**9 == all_reduce_bytes(4 * 10**9, 4)
    # step 1: rank r sends its chunk r to rank r + 1, which then holds 2 contributions of it
    assert ring.steps[0].sends == ((0, 1, 0), (1, 2, 1), (2, 3, 2), (3, 0, 3))
    assert ring.steps[0].counts[1][0] == 2 and ring.steps[0].counts[1][1] == 1
    # after the reduce-scatter rank r holds chunk (r + 1) mod 4 summed over all 4 GPUs, and only that one
    rs = ring.steps[2].counts
    for r in range(4):
        assert rs[r][(r + 1) % 4] == 4 and rs[r].count(4) == 1
    # after the all-gather every rank holds every chunk fully summed
    assert all(c == 4 for row in ring.steps[-1].counts for c in row)
    with pytest.raises(ValueError, match="at least 2"):
        M.ring_all_reduce(1)


# --- ZeRO / FSDP -----------------------------------------------------------------------------------------------

def _z(stage, dp=8):
    return M.zero_sharding("llama-2-7b", dp=dp, zero_stage=stage, seq_len=2048, micro_batch=1)


def test_zero1_shards_only_the_optimizer_states():
    pic = _z(1)
    assert pic.scheme == "ZeRO-1" and pic.moments == ("forward", "backward", "optimizer")
    for r in range(8):
        cell = pic.cell(r, "optimizer")
        # DeepSpeed's bf16-mixed Adam: fp32 master + m + v = 12 B/param, partitioned over 8: 12 N / 8
        assert cell.holding("optimizer").nbytes == 12 * N7B // 8 == 10_107_623_424
        assert cell.holding("optimizer").layout == "shard" and cell.holding("optimizer").parts == (r,)
        # bf16 working parameters stay whole on every rank: 2 N
        assert cell.holding("parameters").nbytes == 2 * N7B and cell.holding("parameters").parts == tuple(range(8))


def test_zero3_shards_parameters_and_gathers_one_module():
    pic = _z(3)
    fwd = pic.cell(5, "forward")
    assert fwd.holding("parameters").layout == "shard" and fwd.holding("parameters").parts == (5,)
    assert fwd.holding("parameters").nbytes == 2 * N7B // 8 == 1_684_603_904
    # At the loss the gathered module is the head: 32000 x 4096 bf16 = 262,144,000 B, on every rank whole
    g = fwd.holding("gathered_parameters")
    assert g.layout == "gathered" and g.parts == tuple(range(8)) and g.nbytes == 2 * 32000 * 4096
    assert pic.cell(5, "optimizer").holding("gathered_parameters").layout == "none"


def test_fsdp_full_shard_holds_fp32_shards_and_stage2_reshards_after_backward():
    pic = _z("FULL_SHARD")
    assert pic.scheme == "FSDP (FULL_SHARD)"
    opt = pic.cell(0, "optimizer")
    # FSDP2 bf16-mixed: fp32 sharded parameters 4 N / 8, AdamW m and v 8 N / 8
    assert opt.holding("parameters").nbytes == 4 * N7B // 8 == 3_369_207_808
    assert opt.holding("optimizer").nbytes == 8 * N7B // 8 == 6_738_415_616
    sgo = _z("SHARD_GRAD_OP")
    assert sgo.cell(0, "backward").holding("parameters").layout == "gathered"
    assert sgo.cell(0, "optimizer").holding("parameters").layout == "shard"


def test_zero_picture_is_the_estimate_and_ddp_holds_everything_whole():
    import memlib
    est = memlib.estimate_training("llama-2-7b", seq_len=2048, micro_batch=1, zero_stage=2, dp=4)
    pic = M.zero_sharding("llama-2-7b", dp=4, zero_stage=2, seq_len=2048, micro_batch=1)
    assert pic.peak_bytes == est.peak_bytes
    ddp = M.zero_sharding("llama-2-7b", dp=2, zero_stage=0, seq_len=2048, micro_batch=1)
    assert ddp.scheme == "DDP"
    assert all(h.layout in ("whole", "own", "none") for c in ddp.cells for h in c.holdings)


# --- pipeline schedules ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p, m", [(4, 8), (4, 4), (2, 6), (8, 16)])
def test_gpipe_and_1f1b_bubble_is_p_minus_1_over_m_plus_p_minus_1(p, m):
    # Each stage works m (t_f + t_b) = 3m and the last micro-batch's forward reaches the last stage after p - 1
    # forwards, its backward the first stage after p - 1 backwards: makespan (m + p - 1)(t_f + t_b)
    for sched in ("gpipe", "1f1b"):
        s = M.pipeline_schedule(sched, pp=p, micro_batches=m)
        assert s.makespan == pytest.approx(3 * (m + p - 1))
        assert s.bubble_fraction == pytest.approx((p - 1) / (m + p - 1))
        assert s.bubble_fraction == pytest.approx(float(bubble_fraction(p, m)))


def test_in_flight_gpipe_m_1f1b_p_minus_stage():
    # GPipe keeps every micro-batch until the backward starts; 1F1B stage s (0-based) keeps p - s
    assert M.pipeline_schedule("gpipe", pp=4, micro_batches=8).peak_in_flight == (8, 8, 8, 8)
    assert M.pipeline_schedule("1f1b", pp=4, micro_batches=8).peak_in_flight == (4, 3, 2, 1)
    assert M.pipeline_schedule("1f1b", pp=4, micro_batches=2).peak_in_flight == (2, 2, 2, 1)


def test_interleaved_bubble_shrinks_v_fold():
    # p = 4, m = 8, v = 2: bubble (p - 1) / (v m + p - 1) = 3 / 19; makespan 3m + 3(p - 1)/v = 24 + 4.5
    s = M.pipeline_schedule("interleaved", pp=4, micro_batches=8, vpp=2)
    assert s.makespan == pytest.approx(28.5)
    assert s.bubble_fraction == pytest.approx(3 / 19)
    assert bubble_fraction(4, 8, 2) == Fraction(3, 19)
    # chunk forwards in flight: Megatron's warm-up 2 (p - s - 1) + (v - 1) p, plus one: 11, 9, 7, 5
    assert s.peak_in_flight == (11, 9, 7, 5)
    assert s.peak_in_flight == tuple(interleaved_chunks_in_flight(4, 2, r, 8) for r in range(4))
    s4 = M.pipeline_schedule("interleaved", pp=4, micro_batches=4, vpp=4)
    assert s4.bubble_fraction == pytest.approx(3 / 19)  # v m = 16 again


def test_zb_h1_cuts_the_bubble_to_a_third_with_1f1b_memory():
    # t_f = t_b = t_w = 1: 1F1B's bubble (p - 1)(t_f + t_b + t_w) = 9 becomes (p - 1)(t_f + t_b - t_w) = 3
    s = M.pipeline_schedule("zb-h1", pp=4, micro_batches=8, t_b=1, t_w=1)
    assert s.makespan - s.busy == pytest.approx(3) == zb_h1_bubble_time(4, 1, 1, 1)
    assert s.bubble_fraction == pytest.approx(3 / 27)
    assert max(s.peak_in_flight) == 4 == peak_micro_batches_in_flight("zb-h1", 4, 8)
    # a W half as long as F: (p - 1)(1 + 1 - 0.5) = 4.5 for p = 4
    half = M.pipeline_schedule("zb-h1", pp=4, micro_batches=8, t_b=1, t_w=0.5)
    assert half.makespan - half.busy == pytest.approx(4.5)


def test_closed_forms_by_hand():
    assert bubble_time(4, 1, 2) == 9 and bubble_time(4, 1, 2, vpp=3) == 3
    # DeepSeek-V3 Table 2 with F = B = W = 1, F&B = 2 (the overlapped pair): (8/2 - 1)(2 + 1 - 3) = 0
    assert dualpipe_bubble_time(8, 2, 1, 1) == 0
    assert dualpipe_bubble_time(8, 2, 2, 0.5) == pytest.approx(3 * 2.5)
    with pytest.raises(ValueError, match="even"):
        dualpipe_bubble_time(5, 2, 1, 1)


def test_pipeline_activation_bytes_come_from_the_layer_ledger():
    import memlib
    s = M.pipeline_schedule("1f1b", pp=4, micro_batches=8, model="llama-2-7b", seq_len=2048, micro_batch=1)
    est = memlib.estimate_training("llama-2-7b", seq_len=2048, micro_batch=1, pp=4, grad_accum=8)
    assert s.activation_bytes_per_chunk == 8 * est.layer.total  # 32 layers / 4 stages
    assert s.peak_activation_bytes[0] == 4 * 8 * est.layer.total


def test_pipeline_bad_input():
    with pytest.raises(ValueError, match="multiple of pp"):
        M.pipeline_schedule("interleaved", pp=4, micro_batches=6, vpp=2)
    with pytest.raises(ValueError, match="vpp >= 2"):
        M.pipeline_schedule("interleaved", pp=4, micro_batches=8)
    with pytest.raises(ValueError, match="zb-h1"):
        M.pipeline_schedule("1f1b", t_w=1)
    with pytest.raises(ValueError, match="schedule"):
        M.pipeline_schedule("dualpipe")


# --- tensor parallelism --------------------------------------------------------------------------------------

def test_tp_column_then_row_split_llama2_7b():
    pic = M.tensor_parallel_layer("llama-2-7b", tp=4, tokens=4096)
    # q_proj is 4096 x 4096 (out x in): column split -> 1024 rows of the 32 heads' 8 per rank
    assert pic.step("attention", "q_proj").shape == (1024, 4096)
    assert pic.step("attention", "o_proj").shape == (4096, 1024)  # row split: its input features
    # gate/up: 11008 outputs / 4 = 2752 per rank; down: 2752 inputs
    assert pic.step("mlp", "gate_proj").shape == (2752, 4096)
    assert pic.step("mlp", "down_proj").shape == (4096, 2752)
    assert pic.step("mlp", "SiLU(gate) x up").shape == (4096, 2752)
    # one all-reduce per block of 4096 x 4096 bf16 = 32 MiB; a ring sends 2 (t - 1)/t of it: 48 MiB per rank
    ar = pic.step("mlp", "all-reduce")
    assert ar.nbytes == 2 * 3 * (4096 * 4096 * 2) // 4 == 48 * 2**20


def test_tp_sequence_parallel_same_bytes_as_the_all_reduce():
    pic = M.tensor_parallel_layer("llama-3-8b", tp=4, tokens=4096, sequence_parallel=True)
    # GQA: 8 KV heads of 128 -> 2 per rank: k_proj 256 x 4096
    assert pic.step("attention", "k_proj").shape == (256, 4096)
    rs, ag = pic.step("mlp", "reduce-scatter"), pic.step("mlp", "all-gather")
    # each sends (t - 1)/t of the 32 MiB output: 24 MiB; together the all-reduce's 48 MiB
    assert rs.nbytes == ag.nbytes == 24 * 2**20
    assert pic.step("mlp", "output (sequence shard)").shape == (1024, 4096)
    with pytest.raises(ValueError, match="must divide"):
        M.tensor_parallel_layer("llama-3-8b", tp=3)


# --- context parallelism ------------------------------------------------------------------------------------

def test_zigzag_balances_causal_work():
    # s = 8192, cp = 4: 8 chunks of c = 1024. Rank i holds chunks i and 7 - i: c^2 (i + 7 - i) below the diagonal
    # plus two diagonal blocks c (c + 1) / 2 each = 7 x 1024^2 + 1024 x 1025 = 8,389,632 pairs on every rank
    z = M.context_parallel_balance(8192, 4)
    assert z.owner == (0, 1, 2, 3, 3, 2, 1, 0)
    assert z.work == (8_389_632,) * 4 and z.imbalance == 1
    # contiguous: rank i holds chunks 2i, 2i + 1: c^2 (4i + 1) + c (c + 1); rank 3: 13 x 1024^2 + 1024 x 1025
    c = M.context_parallel_balance(8192, 4, zigzag=False)
    assert c.work[3] == 13 * 1024**2 + 1024 * 1025 == 14_681_088
    assert c.work[0] == 1024**2 + 1024 * 1025
    assert sum(c.work) == sum(z.work) == 8192 * 8193 // 2  # every causal pair once
    with pytest.raises(ValueError, match="divisible by 2 x cp"):
        M.context_parallel_balance(8190, 4)


def test_ulysses_swaps_sequence_for_heads():
    u = M.ulysses_shapes("llama-3-8b", 8192, 4)
    assert u.before == (2048, 32, 128) and u.inside == (8192, 8, 128)
    # q, k, v, o per rank: (2 x 4096 + 2 x 1024) x 2048 tokens x 2 B = 41,943,040 B; an all-to-all sends 3/4 of it,
    # twice (forward and backward): 62,914,560 B
    assert u.bytes_sent_per_layer == 2 * 41_943_040 * 3 / 4 == 62_914_560


# --- paged KV ---------------------------------------------------------------------------------------------------

def test_paged_kv_table_shares_only_full_prefix_blocks():
    # Llama-3-8B K and V: 2 x 8 heads x 128 x 32 layers x 2 B = 131,072 B per token; a 16-token block 2 MiB
    t = M.paged_kv_table("llama-3-8b", [100, 130, 70], shared_prefix=70)
    assert t.bytes_per_block == 16 * 131_072
    # prefix 70 tokens: 4 full blocks shared (the 5th, 6 tokens, is not); 100 -> 7 blocks, 130 -> 9, 70 -> 5
    assert t.shared_blocks == 4
    assert [len(r) for r in t.table] == [7, 9, 5]
    assert t.blocks_without_sharing == 21 and t.physical_blocks == 4 + 3 + 5 + 1 == 13
    assert all(r[:4] == (0, 1, 2, 3) for r in t.table)
    assert t.ref_counts()[0] == 3 and t.saved_bytes == 8 * 16 * 131_072
    with pytest.raises(ValueError, match="shortest"):
        M.paged_kv_table("llama-3-8b", [10, 20], shared_prefix=15)


# --- drawing ------------------------------------------------------------------------------------------------------

def test_draw_functions_run_under_agg():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    M.draw_ring_all_reduce(M.ring_all_reduce(4, 10**9))
    M.draw_zero_sharding(_z(3, dp=4))
    M.draw_pipeline_schedule(M.pipeline_schedule("interleaved", pp=2, micro_batches=4, vpp=2))
    M.draw_pipeline_schedule(M.pipeline_schedule("zb-h1", pp=4, micro_batches=8, t_b=1, t_w=1, model="llama-2-7b",
                                                 seq_len=1024, micro_batch=1))
    M.draw_tensor_parallel_layer(M.tensor_parallel_layer("llama-3-8b", tp=2, sequence_parallel=True))
    M.draw_context_parallel_balance([M.context_parallel_balance(4096, 2, zigzag=False),
                                     M.context_parallel_balance(4096, 2)])
    M.draw_paged_kv_table(M.paged_kv_table("llama-3-8b", [40, 50], shared_prefix=32))
    plt.close("all")


def test_data_functions_do_not_import_matplotlib():
    import subprocess
    import sys
    code = ("import sys; from memlib.learn import mechanisms as M; M.pipeline_schedule(); "
            "M.context_parallel_balance(1024, 2); M.tensor_parallel_layer('llama-3-8b', 2); "
            "assert 'matplotlib' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
