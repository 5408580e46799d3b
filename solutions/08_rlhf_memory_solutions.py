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
# # 08 · Exercises: RLHF memory
#
# Companion to `notebooks/08_rlhf_memory.ipynb`: PPO's four models (two trained at 16 bytes per parameter,
# two frozen at 2), the rollout engine's share of the card and the sequences its pool holds, colocated phases
# with and without sleep mode, GRPO against PPO, DPO's policy and reference, and the fewest GPUs for a PPO run. Each exercise says its
# difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("08.k", answer)` grades an answer against a value memlib computes now; numbers may carry units
# (`"987.6 GB"`, `"919.8 GiB"`; a plain number means the unit the question names). `hint("08.k")` shows the
# concept, then the formula, then the first step. The open question is self-assessed: `check` shows a
# rubric and a model answer, `mark` records your marks. Progress is saved in `.memlib_progress.json`
# beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/08_rlhf_memory_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 08.1 · PPO's four models for Qwen3-8B

# %%
show("08.1")

# %%
# BEGIN SOLUTION
n = memlib.get_model("qwen3-8b").num_params
answer = f"{(2 * 16 + 2 * 2) * n / 1e9:.1f} GB"  # actor, critic 16 B/param; reference, reward 2 B/param
# END SOLUTION
check("08.1", answer)
# hint("08.1")

# %% tags=["solution"]
solution("08.1")

# %% [markdown]
# ## 08.2 · GRPO's rollout: how many sequences at once?

# %%
show("08.2")

# %%
# BEGIN SOLUTION
pool_tokens = memlib.training.rlhf.rollout_pool("llama-3.1-8b", "a100-80gb", "vllm", 0.5).token_slots  # the log line
group = 512 + 8 * 1536                      # the prompt once, eight responses: slots of one group
answer = pool_tokens * 8 // group           # sequences decoded at once
# END SOLUTION
check("08.2", answer)
# hint("08.2")

# %% tags=["solution"]
solution("08.2")

# %% [markdown]
# ## 08.3 · Qwen2.5-7B PPO on 2 GPUs with a hybrid engine

# %%
show("08.3")

# %%
# BEGIN SOLUTION
e = memlib.estimate_rlhf("qwen2.5-7b", "ppo", gpus=2, prompt_len=1024, response_len=1024, gpu="a100-80gb",
                         gpu_memory_utilization=0.5)
answer = f"{max(e.phases.values()) / 1e9:.2f} GB"  # asleep: the largest phase
# END SOLUTION
check("08.3", answer)
# hint("08.3")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** With sleep mode each phase holds only what it runs; here training the actor (16 B/param over 2 GPUs plus
# its activations) outweighs the engine's share of the card (half of it), so it sets the peak.
# <!-- END SOLUTION -->

# %% tags=["solution"]
solution("08.3")

# %% [markdown]
# ## 08.4 · GRPO or PPO: which needs more memory?

# %%
show("08.4")

# %%
# BEGIN SOLUTION
answer = ("a", 1)  # resident: the critic's states; the engine's share does not grow with G
# END SOLUTION
check("08.4", answer)
# hint("08.4")

# %% tags=["solution"]
solution("08.4")

# %% [markdown]
# ## 08.5 · DPO on a 13B: "two models, 416 GB"

# %%
show("08.5")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-2-13b").num_params
answer = (["208GB"], f"{(16 + 2) * n / 1e9:.0f} GB")  # the reference is frozen: 2 B/param
# END SOLUTION
check("08.5", answer)
# hint("08.5")

# %% tags=["solution"]
solution("08.5")

# %% [markdown]
# ## 08.6 · What is true of RLHF memory?

# %%
show("08.6")

# %%
# BEGIN SOLUTION
answer = "a, c"  # the peak is one phase asleep; the share is fixed, so longer sequences mean fewer at once
# END SOLUTION
check("08.6", answer)
# hint("08.6")

# %% tags=["solution"]
solution("08.6")

# %% [markdown]
# ## 08.7 · PPO on a 13B with every role resident

# %%
show("08.7")

# %%
# BEGIN SOLUTION
e = memlib.estimate_rlhf("llama-2-13b", "ppo", gpus=8, offload_idle=False, prompt_len=1024, response_len=1024,
                         gpu="a100-80gb", gpu_memory_utilization=0.5)
verdict = "fits" if memlib.fits(e, "a100-80gb").fits else "does not fit"
answer = f"{e.peak_bytes / 1e9:.1f} GB, {verdict}"  # the engine's share is on every GPU, unsharded
# END SOLUTION
check("08.7", answer)
# hint("08.7")

# %% tags=["solution"]
solution("08.7")

# %% [markdown]
# ## 08.8 · Colocated or separate for a 70B PPO run?

# %%
show("08.8")

# %%
# BEGIN SOLUTION
n_col = memlib.min_rlhf_gpus("llama-3-70b", "a100-80gb", rollout_tp=4, prompt_len=1024, response_len=1024)
answer = f"""
Actor and critic train at 16 bytes per parameter (about 1.1 TB each for a 70B), the reference and the
reward model are frozen bf16 weights (about 140 GB each). Each vLLM engine reserves a share of every card
(gpu_memory_utilization): at half an A100 80GB the weights need tensor parallelism of 4 to fit inside it, and
the KV pool left sets how many sequences decode at once. Colocated with sleep mode the peak is one phase:
memlib fits it on {n_col} A100 80GB (memlib.min_rlhf_gpus), but generation and training take turns. Separate
groups as in OpenRLHF's 70B script: actor + reference on 8 GPUs (ZeRO-3, Adam offloaded), critic + reward on 8,
8 vLLM engines of tp 2 on 16: 32 GPUs, generation can overlap training, and the weights are broadcast after
each step. Offloaded Adam states need about 12 bytes per trained parameter of host RAM, so I check the nodes'
RAM too.
"""
# END SOLUTION
check("08.8", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("08.8", marks)

# %% [markdown]
# ## 08.9 · The rollout's KV cache with a shared prompt

# %%
show("08.9")


# %%
# BEGIN SOLUTION
def rollout_kv_bytes(layers, kv_heads, head_dim, prompts, group_size, prompt_len, response_len):
    """bf16 K and V of every KV head in every layer; each group caches its prompt once and its G responses."""
    per_token = 2 * layers * kv_heads * head_dim * 2
    return per_token * prompts * (prompt_len + group_size * response_len)
# END SOLUTION


check("08.9", rollout_kv_bytes)
# hint("08.9")

# %% [markdown]
# ## 08.10 · Weight sync: a 70B actor to 4 engines of tensor parallel 8

# %%
show("08.10")

# %%
# BEGIN SOLUTION
w = 2 * memlib.get_model("llama-3-70b").num_params  # bf16: every engine GPU receives the whole tensor
answer = f"{w / (400e9 / 8):.2f} s"  # one pipelined broadcast, each link carries W once at 50 GB/s
# END SOLUTION
check("08.10", answer)
# hint("08.10")

# %% tags=["solution"]
solution("08.10")

# %% [markdown]
# ## 08.11 · Which models does DAPO keep on the GPU?

# %%
show("08.11")

# %%
# BEGIN SOLUTION
answer = "b, d"  # no KL term: no reference; a verifier reward: no reward model; group baseline: no critic
# END SOLUTION
check("08.11", answer)
# hint("08.11")

# %% tags=["solution"]
solution("08.11")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("08")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("08")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, algorithms, lengths, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("08", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
