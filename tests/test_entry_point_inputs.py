"""Odd input at the entry points outside the two option tables (issue 43's held-out probe classes).

Each class below was found by a mutation probe over every public function (an int, a dict or a list where a model
name goes; a bool, a numeric string, nan, inf or None where a number goes; "false" where a bool goes; a list where a
name goes): before the fix it gave an AttributeError from deep inside, an "unhashable type", a bare comparison error
or a silently wrong number. Each test asks for a ValueError naming the argument, and checks the right answer next to
it with a figure derived by hand in the test.
"""

from __future__ import annotations

import math

import pytest

from memlib import get_model
from memlib.cli import main as cli_main
from memlib.cost import collectives, conventions, timing, weight_sync
from memlib.hardware import fit
from memlib.learn import classroom, interview, mechanisms, oom, scenarios
from memlib.models import llama_like as ll
from memlib.parallel import pipeline
from memlib.serving import engines, inference, kv_compression, quantization
from memlib.training import rlhf
from memlib.units import fmt_bytes

LLAMA2_7B = "llama-2-7b"  # 32 layers, 32 heads of 128 (MHA): Touvron et al. 2023, Table 1 / its config.json


def _raises(words, fn, *args, **kwargs):
    with pytest.raises(ValueError) as e:
        fn(*args, **kwargs)
    msg = str(e.value)
    for w in words:
        assert w in msg, msg
    for bad in ("unhashable", "not supported between", "object has no attribute"):
        assert bad not in msg, msg
    return msg


# --- a model argument that is not a model ---------------------------------------------------------------------
def test_kv_helpers_take_a_name_or_a_model_and_refuse_the_rest():
    # by hand: 2 (K and V) x 32 layers x 32 kv heads x 128 head_dim x 2 bytes (bf16) = 524,288 B per token;
    # 4,096 tokens of one sequence: 524,288 x 4,096 = 2,147,483,648 B
    m = get_model(LLAMA2_7B)
    assert inference.kv_bytes_per_token(LLAMA2_7B) == 2 * 32 * 32 * 128 * 2 == 524_288
    assert inference.kv_cache_bytes(LLAMA2_7B, 1, 4096) == inference.kv_cache_bytes(m, 1, 4096) == 2_147_483_648
    for fn, args in ((inference.kv_cache_bytes, (1, 4096)), (inference.kv_bytes_per_token, ()),
                     (inference.kv_layer_bytes_per_token, ()), (inference.kv_tokens_kept, (4096,)),
                     (kv_compression.kivi_cache_bytes, (8192,))):
        for bad in (7, None, ["llama-2-7b"], {"hidden_size": 4096}):
            _raises(["model", "catalog model name or a memlib.Model"], fn, bad, *args)
    assert "from_hf_config" in _raises(["model"], inference.kv_cache_bytes, {"hidden_size": 4096}, 1, 4096)


def test_fix_ladder_refuses_a_wrong_model_instead_of_an_empty_ladder():
    _raises(["model"], oom.fix_ladder, 7, "a100-40gb")
    _raises(["GPU"], oom.fix_ladder, LLAMA2_7B, "h10O")


# --- counts and sizes: bools, strings, nan, inf, negatives -------------------------------------------------------
def test_kv_cache_counts_are_checked_not_multiplied():
    for bad, word in ((-1, ">= 1"), (True, "integer"), (8.5, "integer"), ("8", "integer"), (math.nan, "integer")):
        _raises(["batch", word], inference.kv_cache_bytes, LLAMA2_7B, bad, 4096)
        _raises(["context_len", word], inference.kv_cache_bytes, LLAMA2_7B, 1, bad)
    _raises(["context_len"], inference.kv_tokens_kept, "mistral-7b", -1)
    # mistral-7b: every layer slides over 4,096 tokens (its config.json sliding_window), so 8,192 keep 4,096 each
    assert inference.kv_tokens_kept("mistral-7b", 8192) == [("sliding_attention", 32, 4096)]


def test_ring_collective_byte_helpers_check_their_numbers():
    # ring all-reduce of 1 GB over 8 GPUs: 2 (n - 1) / n x B = 2 x 7/8 x 1e9 = 1.75e9 B sent per GPU
    assert timing.all_reduce_bytes(1e9, 8) == pytest.approx(1.75e9)
    assert timing.all_gather_bytes(1e9, 8) == pytest.approx(0.875e9)
    for fn in (timing.all_reduce_bytes, timing.reduce_scatter_bytes, timing.all_gather_bytes, timing.all_to_all_bytes):
        _raises(["n"], fn, 1e9, True)
        _raises(["n"], fn, 1e9, "8")
        _raises(["n"], fn, 1e9, 8.5)
        _raises(["nbytes"], fn, math.nan, 8)
        _raises(["nbytes"], fn, -1.0, 8)
    _raises(["nbytes"], collectives.bytes_sent, "all-reduce", None, 8)  # was 0.0
    _raises(["nbytes"], collectives.collective_seconds, "all-reduce", None, 8, 1e11)


def test_required_bytes_checks_peak_context_and_headroom():
    # 10 GB peak + 0 context + 5 % headroom: 1e10 + 0.05 x 1e10 = 10,500,000,000 B
    assert fit.required_bytes(10**10, 0, 0.05) == 10_500_000_000
    _raises(["peak_bytes"], fit.required_bytes, -1)
    _raises(["peak_bytes"], fit.required_bytes, math.inf)
    _raises(["cuda_context_bytes"], fit.required_bytes, 10**10, "1")
    _raises(["allocator_headroom"], fit.required_bytes, 10**10, 0, math.nan)
    _raises(["allocator_headroom"], fit.required_bytes, 10**10, 0, [0.05])


def test_paged_tokens_and_offload_traffic_check_counts():
    assert engines.paged_tokens(17, "vllm") == 32  # two 16-token blocks
    assert engines.paged_tokens(17, "sglang") == 17  # page size 1
    _raises(["tokens"], engines.paged_tokens, -1, "vllm")
    _raises(["tokens"], engines.paged_tokens, 8.5, "vllm")
    # ZeRO-Offload traffic of k = 2 micro-batches: (2 + 2(k-1) + 2(k-2) + 4 + 2) x numel = 10 x 10 = 100
    assert timing.zero_offload_traffic_bytes(10, 2) == 100
    _raises(["micro_batches"], timing.zero_offload_traffic_bytes, 10, True)
    _raises(["partition_numel"], timing.zero_offload_traffic_bytes, "10", 2)


def test_published_mfu_and_utilisation_refuse_non_numbers():
    # 1e10 FLOP/token x 1e12 tokens over 1e5 GPU-hours of an H100 at 989.4 dense bf16 TFLOP/s:
    # 1e22 / (1e5 x 3600 x 989.4e12) = 0.028075...
    assert conventions.implied_mfu(1e10, 1e12, 1e5, "h100-80gb") == pytest.approx(1e22 / (1e5 * 3600 * 989.4e12))
    for bad in (True, "1e10", math.inf, None, [1e10]):
        _raises(["flops_per_token"], conventions.implied_mfu, bad, 1e12, 1e5, "h100-80gb")
    _raises(["precision"], conventions.implied_mfu, 1e10, 1e12, 1e5, "h100-80gb", "int4")
    _raises(["model_flops"], timing.utilisation, math.nan, 1e15, mfu=0.4)
    _raises(["hardware_flops"], timing.utilisation, 1e15, "1e15", mfu=0.4)


def test_weight_sync_checks_train_parallelism_and_latency():
    _raises(["train_tp"], weight_sync.weight_sync, LLAMA2_7B, link="IB NDR", train_tp=True)
    _raises(["train_pp"], weight_sync.weight_sync, LLAMA2_7B, link="IB NDR", train_pp="2")
    _raises(["alpha_s"], weight_sync.weight_sync, LLAMA2_7B, link="IB NDR", alpha_s=math.nan)
    _raises(["alpha_s"], weight_sync.weight_sync, LLAMA2_7B, link="IB NDR", alpha_s=None)


def test_llama_like_shapes_check_head_dim_and_size():
    _raises(["head_dim"], ll.llama_like, 4096, 32, head_dim=0)  # was ZeroDivisionError
    _raises(["head_dim"], ll.llama_like, 4096, 32, head_dim=True)
    _raises(["name"], ll.llama_like, 4096, 32, name=["x"])
    for bad in (math.inf, "7e9", True, None, -1.0):
        _raises(["num_params"], ll.llama_like_of_size, bad)


def test_format_helpers_refuse_values_they_would_print_wrongly():
    assert fmt_bytes(1e9) == "1.00 GB (0.93 GiB)"  # 1e9 / 2**30 = 0.931 GiB
    assert fmt_bytes(-1e9) == "-1.00 GB (-0.93 GiB)"  # a saving may be negative
    for bad in (math.nan, math.inf, "1e9", None, True):
        _raises(["n_bytes"], fmt_bytes, bad)
    _raises(["digits"], fmt_bytes, 1e9, "8")
    _raises(["digits"], fmt_bytes, 1e9, 2.5)


def test_quantization_bits_check_every_argument_they_take():
    # mxfp4: 4-bit elements + one 8-bit E8M0 scale per 32: 4 + 8/32 = 4.25 bits
    assert quantization.scaled_format_bits("mxfp4") == 4.25
    _raises(["numel"], quantization.scaled_format_bits, "mxfp4", numel=-1)
    _raises(["in_features"], quantization.scaled_format_bits, "mxfp4", in_features="4096")
    # int4, group 128, fp16 scale: 4 + 16/128 = 4.125 bits; scale_scale_bits is checked even when unused
    assert quantization.bits_per_weight(4, 128) == 4.125
    _raises(["scale_scale_bits"], quantization.bits_per_weight, 4, 128, scale_scale_bits="8")


# --- names: lists, sets, dicts where a name goes ------------------------------------------------------------------
def test_name_arguments_refuse_lists_with_the_accepted_names():
    _raises(["link"], collectives.link_bytes_per_s, ["IB NDR"])
    _raises(["link"], weight_sync.weight_sync, LLAMA2_7B, link={"IB NDR"})
    _raises(["kv_cache_v"], inference.kv_cache_bytes, LLAMA2_7B, 1, 4096, kv_cache_v=["q8_0"])
    _raises(["kv_cache_v"], inference.kv_bytes_per_token, LLAMA2_7B, kv_cache_v="")
    _raises(["schedule"], pipeline.peak_micro_batches_in_flight, ["1f1b"], 4, 8)
    _raises(["optimizer"], conventions.optimizer_step_hbm_bytes, 10**9, ["adamw"])
    _raises(["topic"], scenarios.build, ["04"], 1)
    _raises(["seed"], scenarios.build, "04", 8.5)


# --- an error that names the argument the user passed ------------------------------------------------------------
def test_rollout_pool_fraction_error_names_fraction():
    msg = _raises(["fraction"], rlhf.rollout_pool, LLAMA2_7B, fraction=True)
    assert "gpu_memory_utilization" in msg  # and says what it is in vLLM's words


def test_cli_errors_name_the_flag_given(capsys, tmp_path):
    assert cli_main(["serve", LLAMA2_7B, "--count", "0"]) == 2
    assert "--count" in capsys.readouterr().err
    assert cli_main(["quiz", "--topic", "01", "--seed", "1", "--interview", "-1"]) == 2
    assert "interview must be" in capsys.readouterr().err
    assert cli_main(["quiz", "--topic", "01", "--seed", "1", "--out", str(tmp_path / "q.pdf")]) == 2
    assert ".pdf" in capsys.readouterr().err and not (tmp_path / "q.pdf").exists()
    _raises(["interview"], classroom.handout, "01", 1, interview=None)


def test_learn_helpers_read_flags_and_times_strictly():
    _raises(["block"], interview.timer, 1, block="false")
    _raises(["t_w"], mechanisms.pipeline_schedule, t_w=None)


# --- unit slips the API can detect ---------------------------------------------------------------------------------
def test_a_rate_under_one_megabyte_per_second_is_a_unit_slip():
    from memlib.cost import checkpointing
    from memlib.parallel.plan import plan
    # 1 GB over a 400 Gb/s link meant as 400: 2 x 7/8 x 1e9 B / 400 B/s would be 4.4e6 s; refused with the fix
    msg = _raises(["bytes_per_s", "400e9", "50e9"], collectives.collective_seconds, "all-reduce", 1e9, 8, 400)
    assert "Gb/s" in msg
    _raises(["storage_bytes_per_s", "2e9"], checkpointing.checkpoint_write_s, 1e12, 2)
    _raises(["bytes_per_s"], weight_sync.weight_sync, LLAMA2_7B, bytes_per_s=50)
    _raises(["host_bytes_per_node", "GiB"], plan, LLAMA2_7B, "h100-80gb", 8, host_bytes_per_node=512)
    # the real rates still give the hand-derived answers: 1 TB at 2 GB/s = 500 s; 1 GB ring all-reduce over 8 GPUs
    # at 50 GB/s: 1.75e9 B / 50e9 B/s = 0.035 s
    assert checkpointing.checkpoint_write_s(1e12, 2e9) == pytest.approx(500.0)
    assert collectives.collective_seconds("all-reduce", 1e9, 8, 50e9) == pytest.approx(0.035)
