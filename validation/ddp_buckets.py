"""torch DistributedDataParallel's gradient buckets, measured on real CPU tensors.

DDP (gradient_as_bucket_view=False, torch's default) keeps a flat all-reduce bucket copy of every gradient
from the moment it wraps the model; memlib counts it as terms.ddp_bucket_bytes. This runs a small LLaMA
(transformers' LlamaForCausalLM, real CPU tensors, gloo with world size 1: the buckets are built and
all-reduced as on any world size) for one step of AdamW three ways: unwrapped, DDP, DDP with
gradient_as_bucket_view=True, and records each peak from torch's MemTracker. The model is small so that
real tensors run in seconds; the bucket copy scales with the parameter count alone.

    python -m validation.ddp_buckets            # print
    python -m validation.ddp_buckets --write    # validation/results_ddp.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1024, "max_position_embeddings": 512,
          "tie_word_embeddings": False, "rms_norm_eps": 1e-5}
SEQ_LEN, MICRO_BATCH = 128, 2
OUT = Path(__file__).with_name("results_ddp.json")


def _peak(precision: str, wrap: str) -> int:
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.nn.parallel import DistributedDataParallel as DDP
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "model_type"}, attn_implementation="sdpa",
                      use_cache=False)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16 if precision == "bf16" else torch.float32)
    ids = torch.randint(0, CONFIG["vocab_size"], (MICRO_BATCH, SEQ_LEN))
    mt = MemTracker()
    mt.track_external(model)
    with mt:
        net = model if wrap == "none" else DDP(model, gradient_as_bucket_view=(wrap == "ddp-bucket-view"))
        opt = torch.optim.AdamW(net.parameters(), lr=1e-4, foreach=False)
        with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = net(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    snap = mt.get_tracker_snapshot("peak")
    return int(sum(v.get("Total", 0) for v in snap.values()))


def measure() -> dict:
    import torch
    import torch.distributed as dist
    import transformers

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        cases = []
        for precision in ("bf16", "bf16-mixed"):
            peaks = {w: _peak(precision, w) for w in ("none", "ddp", "ddp-bucket-view")}
            cases.append({"name": f"ddp-tiny-llama-{precision}", "precision": precision, "peaks": peaks})
            print(f"{precision:<11} unwrapped {peaks['none']:>12,} B   DDP {peaks['ddp']:>12,} B "
                  f"(+{peaks['ddp'] - peaks['none']:,})   bucket view {peaks['ddp-bucket-view']:>12,} B "
                  f"(+{peaks['ddp-bucket-view'] - peaks['none']:,})")
    finally:
        dist.destroy_process_group()
    return {"metadata": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "device": "cpu (real tensors)", "tracker": "torch.distributed._tools.mem_tracker.MemTracker",
                         "optimizer": "AdamW(foreach=False)", "world_size": 1},
            "config": CONFIG, "seq_len": SEQ_LEN, "micro_batch": MICRO_BATCH, "cases": cases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    data = measure()
    if ap.parse_args().write:
        OUT.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
