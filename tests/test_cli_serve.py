"""`memlib serve`: per-GPU breakdown, verdict, KV bytes per token, largest batch and context."""

import json

import pytest

from memlib.cli import main


def test_serve_70b_on_two_a100(capsys):
    rc = main(["serve", "llama-2-70b", "--gpu", "a100-80gb", "--count", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    # 70B parameters x 2 bytes / 2 GPUs ~ 69 GB per GPU: fits in 80 GiB
    assert "fits on a100-80gb" in out and "does not fit" not in out
    assert "per GPU" in out and "GB" in out and "GiB" in out
    # 2 (K, V) x 80 layers x (8 KV heads / 2 GPUs) x 128 x 2 bytes
    assert f"{2 * 80 * 4 * 128 * 2:,} bytes per token" in out
    assert "Largest batch at context 4,096:" in out
    assert "Largest context at batch 1:" in out


def test_serve_does_not_fit(capsys):
    rc = main(["serve", "llama-2-70b", "--gpu", "t4"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "does not fit on t4" in out
    assert "Largest batch at context 4,096: 0 (" in out


def test_serve_json(capsys):
    rc = main(["serve", "llama-3-8b", "--gpu", "h100-80gb", "--batch", "4", "--context-len", "8192",
               "--weights", "int4-awq", "--kv-cache", "fp8", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert d["verdict"]["fits"] is True
    assert d["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 1
    assert d["max_batch"] >= 4 and d["max_context"] == 8192
    assert d["peak_bytes"] == sum(d["breakdown"].values())


@pytest.mark.parametrize("argv, message", [
    (["serve", "llama-2-70b", "--count", "3"], "tp 3 does not divide"),
    (["serve", "llama-2-70b", "--batch", "0"], "batch must be >= 1"),
    (["serve", "llama-2-70b", "--context-len", "-5"], "context_len must be >= 1"),
    (["serve", "llama-2-7"], "unknown model"),
    (["serve", "llama-2-7b", "--gpu", "a100-90gb"], "Unknown GPU"),
    (["serve"], "exactly one"),
])
def test_serve_bad_input_one_line_exit_2(capsys, argv, message):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_serve_unknown_format_is_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["serve", "llama-2-7b", "--weights", "int3"])
    assert e.value.code == 2
    assert "int4-gptq" in capsys.readouterr().err


def test_other_subcommands_still_work(capsys):
    assert main(["models"]) == 0
    assert main(["gpus"]) == 0
    assert main(["estimate", "llama-7b", "--seq-len", "512", "--gpu", "a100-80gb"]) == 0
    assert "Peak" in capsys.readouterr().out
