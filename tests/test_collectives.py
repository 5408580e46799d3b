"""The alpha-beta costs of collectives and the communication roofline (memlib.cost.collectives), against hand
derivations written out here."""

from __future__ import annotations

import pytest

from memlib.cost.collectives import (NETWORK_LINKS, bus_bandwidth, bytes_sent, collective_seconds, collective_steps,
                                     comm_roofline, half_bandwidth_bytes, link_bytes_per_s)

# Llama-3-8B by hand: h 4096, I 14336, L 32, 8 KV heads of 128, V 128256, untied head.
#   per layer: q, o 2 x 4096^2 = 33,554,432; k, v 2 x 4096 x 1024 = 8,388,608; gate/up/down 3 x 4096 x 14336
#   = 176,160,768; two norms 8,192 -> 218,112,000 x 32 = 6,979,584,000; embedding + head 2 x 128256 x 4096 =
#   1,050,673,152; final norm 4,096
N8B = 6_979_584_000 + 1_050_673_152 + 4_096
H100_BF16 = 989.4e12  # NVIDIA H100 SXM datasheet, dense bf16
NVLINK4 = 450e9  # 900 GB/s bidirectional


def test_ring_and_tree_alpha_beta():
    # 1 GB over 8 GPUs on NVLink 4 with alpha = 5 us: ring 2 x 7 steps x 5 us + 2 x 7/8 x 1 GB / 450 GB/s
    assert collective_steps("all-reduce", 8) == 14
    assert collective_seconds("all-reduce", 1e9, 8, NVLINK4, 5e-6) == pytest.approx(14 * 5e-6 + 1.75e9 / 450e9)
    # tree: 2 log2(8) = 6 steps, about 2 B on the wire
    assert collective_seconds("all-reduce", 1e9, 8, NVLINK4, 5e-6, "tree") == pytest.approx(6 * 5e-6 + 2e9 / 450e9)
    # small message, many GPUs: the tree wins (1 MB over 512 GPUs, alpha 10 us, 50 GB/s)
    ring = collective_seconds("all-reduce", 1e6, 512, 50e9, 10e-6)
    tree = collective_seconds("all-reduce", 1e6, 512, 50e9, 10e-6, "tree")
    assert ring == pytest.approx(1022 * 10e-6 + 2 * 511 / 512 * 1e6 / 50e9) and tree < ring / 10
    # reduce-scatter + all-gather = all-reduce
    rs_ag = collective_seconds("reduce-scatter", 1e9, 8, NVLINK4, 5e-6) + \
        collective_seconds("all-gather", 1e9, 8, NVLINK4, 5e-6)
    assert rs_ag == pytest.approx(collective_seconds("all-reduce", 1e9, 8, NVLINK4, 5e-6))
    assert bytes_sent("all-to-all", 8e6, 8) == 7e6


def test_bus_bandwidth_and_half_size():
    # nccl-tests: all-reduce algbw 100 GB/s on 8 GPUs is busbw 100 x 2 x 7/8 = 175 GB/s
    assert bus_bandwidth(100e9, "all-reduce", 8) == pytest.approx(175e9)
    assert bus_bandwidth(100e9, "all-gather", 8) == pytest.approx(87.5e9)
    # ring all-reduce n_1/2 = n alpha beta: 8 x 5 us x 450 GB/s = 18 MB
    assert half_bandwidth_bytes("all-reduce", 8, NVLINK4, 5e-6) == pytest.approx(18e6)


def test_links():
    assert link_bytes_per_s("10GbE") == 1.25e9 and link_bytes_per_s("IB NDR") == 50e9
    assert link_bytes_per_s("h100-80gb") == NVLINK4
    assert set(NETWORK_LINKS) >= {"10GbE", "100GbE", "IB HDR", "IB NDR"}
    with pytest.raises(ValueError, match="unknown link"):
        link_bytes_per_s("carrier pigeon")


def _fpt(n, L=32, H=32, Q=128, T=4096):
    return 6 * n + 12 * L * H * Q * T  # PaLM App. B


def test_dp_roofline_by_hand():
    # DDP over 8 H100s: bf16 gradients all-reduced, 2 x 7/8 x 2 N bytes per step; compute tokens x fpt / peak.
    # Equal at T = (3.5 N / 450e9) x 989.4e12 / fpt
    r = comm_roofline("llama-3-8b", "h100-80gb", "dp", 8)
    expect = 3.5 * N8B / NVLINK4 * H100_BF16 / _fpt(N8B)
    assert r.critical_tokens == pytest.approx(expect)
    assert 1000 < expect < 1200  # pencil: 3.5 x 2200 / 6.8 ~ 1.1k tokens
    assert r.comm_bound(0.5 * expect) and not r.comm_bound(2 * expect)
    # over 10 GbE the same step needs 360x the tokens (450 / 1.25)
    slow = comm_roofline("llama-3-8b", "h100-80gb", "dp", 8, bytes_per_s=link_bytes_per_s("10GbE"))
    assert slow.critical_tokens == pytest.approx(expect * 360)


def test_fsdp_is_one_and_a_half_dp():
    # two all-gathers of 2N and one reduce-scatter of 2N, each 7/8: 3 x 7/8 x 2N = 1.5 x DDP's 2 x 7/8 x 2N
    dp = comm_roofline("llama-3-8b", "h100-80gb", "dp", 8)
    fsdp = comm_roofline("llama-3-8b", "h100-80gb", "fsdp", 8)
    assert fsdp.comm_bytes_per_step == pytest.approx(1.5 * dp.comm_bytes_per_step)
    assert fsdp.critical_tokens == pytest.approx(1.5 * dp.critical_tokens)


def test_tp_and_ep_ratios_do_not_depend_on_the_batch():
    # TP over 8 on NVLink: per token 32 layers x 4 all-reduces x 2 x 7/8 x 2 h bytes; compute fpt / 8
    r = comm_roofline("llama-3-8b", "h100-80gb", "tp", 8)
    comm = 32 * 4 * 2 * 7 / 8 * 2 * 4096 / NVLINK4
    comp = _fpt(N8B) / 8 / H100_BF16
    assert r.critical_tokens is None and r.comm_to_compute == pytest.approx(comm / comp)
    assert r.ratio(1) == pytest.approx(r.ratio(1e6))
    # across nodes (400 Gb/s) the same TP is communication-bound: 9x slower link
    assert comm_roofline("llama-3-8b", "h100-80gb", "tp", 8, bytes_per_s=50e9).comm_to_compute > 1
    # EP: Mixtral 8x7B, 32 MoE layers, top-2, h 4096: 4 all-to-alls of 2 x 2 x 4096 bytes, 7/8 sent
    ep = comm_roofline("mixtral-8x7b", "h100-80gb", "ep", 8)
    import memlib
    m = memlib.get_model("mixtral-8x7b")
    fpt = 6 * m.num_active_params + 12 * 32 * 32 * 128 * 4096
    assert ep.comm_to_compute == pytest.approx((32 * 4 * 7 / 8 * 2 * 2 * 4096 / NVLINK4) / (fpt / H100_BF16))


def test_bad_input():
    with pytest.raises(ValueError, match="dense"):
        comm_roofline("llama-3-8b", "h100-80gb", "ep", 8)
    with pytest.raises(ValueError, match="at least 2"):
        comm_roofline("llama-3-8b", "h100-80gb", "dp", 1)
    with pytest.raises(ValueError, match="tree"):
        collective_steps("all-gather", 8, "tree")
    with pytest.raises(ValueError, match="alpha_s"):
        collective_seconds("all-reduce", 1e6, 8, 1e9, alpha_s=-1)
