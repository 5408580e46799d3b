# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · Exercises: debugging an out-of-memory error
#
# Companion to `notebooks/11_debugging_oom.ipynb`: a tensor at the allocator's 10 MiB boundary, a
# replay of the caching allocator with and without expandable segments, two published OOM messages
# read (what lives outside PyTorch; fragmentation or too big), the jump at the first optimizer step,
# what an eval loop without `no_grad` keeps, rank 0's extra contexts, the reserved peak to budget for,
# the "everything is rounded to 2 MB" error, the segment size in code, and a debugging plan. Each exercise says its difficulty (warm-up · interview · stretch) and about how
# long it takes.
# `check("11.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"20 MiB"`, `"3.5 GiB"`; a plain number means the unit the question names).
# `hint("11.k")` shows the concept, then the formula, then the first step. The open question is
# self-assessed: `check` shows a rubric and a model answer, `mark` records your marks. Progress is
# saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/11_debugging_oom_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 11.1 · One tensor at the 10 MiB boundary

# %%
show("11.1")

# %%
# BEGIN SOLUTION
nbytes = 8 * 2048 * 320 * 2  # bf16: 10,485,760 B, exactly 10 MiB: not below kMinLargeAlloc
answer = f"{-(-nbytes // 2**21) * 2} MiB"  # its own segment, rounded up to 2 MiB
# END SOLUTION
check("11.1", answer)
# hint("11.1")  # stuck? each call shows one more hint; solution("11.1") shows the worked answer

# %% tags=["solution"]
solution("11.1")

# %% [markdown]
# ## 11.2 · Reserved after a freed block is reused

# %%
show("11.2")

# %%
# BEGIN SOLUTION
# 60 MiB takes the cached 100 MiB block (40 MiB left, > 1 MiB: split); the next 60 MiB needs a new segment
answer = f"{100 + 60} MiB"
# END SOLUTION
check("11.2", answer)
# hint("11.2")

# %% [markdown]
# ## 11.3 · The same requests with expandable segments

# %%
show("11.3")

# %%
# BEGIN SOLUTION
pages = 100 // 20 + -(-(60 - 40) // 20)  # 5 pages, then 40 MiB free at the end + one more 20 MiB page
answer = f"{pages * 20} MiB"
# END SOLUTION
check("11.3", answer)
# hint("11.3")

# %% tags=["solution"]
solution("11.3")

# %% [markdown]
# ## 11.4 · What the process holds outside PyTorch

# %%
show("11.4")

# %%
# BEGIN SOLUTION
reserved = 13.73 + 736.86 / 1024  # GiB: allocated (private pools included) + reserved but unallocated
answer = f"{15.25 - reserved:.2f} GiB"  # what this process has in use, minus the allocator's part
# END SOLUTION
check("11.4", answer)
# hint("11.4")

# %% [markdown]
# ## 11.5 · Fragmentation or too big?

# %%
show("11.5")

# %%
# BEGIN SOLUTION
answer = ("b", 1)  # 12.73 + 9.35 = 22.08 GiB < 22.78 GiB: no packing of the cache could place it
# END SOLUTION
check("11.5", answer)
# hint("11.5")

# %% tags=["solution"]
solution("11.5")

# %% [markdown]
# ## 11.6 · The jump at the first optimizer step

# %%
show("11.6")

# %%
# BEGIN SOLUTION
from memlib.training.leaks import first_step_before_optimizer_bytes  # noqa: E402

est = memlib.estimate_training("qwen2.5-7b", seq_len=1024)  # mixed-precision AdamW, foreach: memlib's defaults
answer = f"{(est.peak_bytes - first_step_before_optimizer_bytes(est)) / 2**30:.1f} GiB"
# END SOLUTION
check("11.6", answer)
# hint("11.6")

# %% [markdown]
# ## 11.7 · An eval loop without no_grad

# %%
show("11.7")

# %%
# BEGIN SOLUTION
from memlib.training.leaks import kept_graph_bytes  # noqa: E402

ev = memlib.estimate_training("llama-3-8b", seq_len=1024, micro_batch=8, finetune="lora")
answer = f"{kept_graph_bytes(ev) / 2**30:.1f} GiB"  # the forward's saved tensors, autocast copies and logits
# END SOLUTION
check("11.7", answer)
# hint("11.7")

# %% tags=["solution"]
solution("11.7")

# %% [markdown]
# ## 11.8 · Rank 0's extra contexts

# %%
show("11.8")

# %%
# BEGIN SOLUTION
answer = f"{(8 - 1) * 600} MiB"  # the seven other ranks' contexts; rank 0's own is on every GPU's list
# END SOLUTION
check("11.8", answer)
# hint("11.8")

# %% [markdown]
# ## 11.9 · The reserved peak to budget for

# %%
show("11.9")

# %%
# BEGIN SOLUTION
from memlib.hardware.allocator import reserved_bytes  # noqa: E402

est9 = memlib.estimate_training("mistral-7b", seq_len=4096, micro_batch=1, finetune="lora", recompute="full")
answer = f"{reserved_bytes(est9).reserved_bytes / 2**30:.2f} GiB"  # peak + 0.5 x the step's transient bytes
# END SOLUTION
check("11.9", answer)
# hint("11.9")

# %% tags=["solution"]
solution("11.9")

# %% [markdown]
# ## 11.10 · "Everything is rounded up to 2 MB"

# %%
show("11.10")

# %%
# BEGIN SOLUTION
blocks_per_segment = 2 * 2**20 // 1024  # each 1,000-byte tensor gets a 1,024-byte block: 2,048 per 2 MiB segment
segments = -(-5000 // blocks_per_segment)  # 5,000 blocks: two full segments and part of a third
answer = (["2MB", "4MB"], f"{segments * 2} MiB")
# END SOLUTION
check("11.10", answer)
# hint("11.10")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** The 2 MiB is the small pool's *segment*, shared by up to 2,048 blocks of 1 KiB; a block is
# rounded only to 512 bytes. A 3 MB tensor is a 1-10 MiB request: a block of its own size (rounded to
# 512 B) in a 20 MiB segment that the next such requests share, not "4 MB".
# <!-- END SOLUTION -->

# %% [markdown]
# ## 11.11 · The allocator's segment size

# %%
show("11.11")


# %%
# BEGIN SOLUTION
def segment_for(nbytes):
    """The segment the caching allocator cudaMallocs for a request of `nbytes` bytes (default settings)."""
    rounded = max(512, -(-nbytes // 512) * 512)  # round_size: multiples of 512 bytes
    if rounded <= 2**20:
        return 2**21  # small pool: 2 MiB segments
    if rounded < 10 * 2**20:
        return 20 * 2**20  # 1-10 MiB: a 20 MiB segment to share
    return -(-rounded // 2**21) * 2**21  # its own size, rounded up to 2 MiB
# END SOLUTION


check("11.11", segment_for)
# hint("11.11")

# %% tags=["solution"]
solution("11.11")

# %% [markdown]
# ## 11.12 · Your colleague's run OOMs after two hours

# %%
show("11.12")

# %%
# BEGIN SOLUTION
answer = """
First read the message: if the request is smaller than free plus 'reserved but unallocated', the memory is
there in pieces (fragmentation); if larger, the step is too big. A crash after hours on a length that ran
before points at fragmentation from the unbucketed loader. I would record a memory snapshot with
_record_memory_history around the failing steps and open it in memory_viz to see which segments are split
and whether any tensor band grows step after step. Logging the loss tensor after backward costs only a
512-byte block per step, but anything kept without backward, like an eval loop without no_grad, keeps a
whole graph. Fixes in order: expandable_segments:True, or bucket/sort batches by length, or pad to one
length; if the step itself is too big, gradient accumulation with a smaller micro-batch, checkpointing,
a chunked loss, then sharding.
"""
# END SOLUTION
check("11.12", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("11.12", marks)

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("11")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("11")` draws a new question of this notebook's kinds with a fresh setup (a tensor's
# segment, the reserved peak of a LoRA step); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("11", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
