# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -user_expressions
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
# # Mock interview · 模拟面试
#
# One interview question per run: most draws are scenarios with a setup you have not seen (a model,
# GPUs and lengths drawn from memlib's catalogs: can it train, how many chats, how long, MoE, int4),
# the rest are the exercise notebooks' open questions. Think for 30 seconds, then answer as you would
# aloud. You mark it yourself against a rubric and a model answer, both computed by memlib (nothing
# is graded by keywords); the interviewer then asks a follow-up on the first point you missed, graded
# by `check`. Run the cells in order; change the seed (or drop it) for another question.

# %%
from memlib.learn.grading import check, hint, solution
from memlib.learn import interview

# %% [markdown]
# ## 1. The question

# %%
q = interview.draw(seed=3)  # drop the seed for a new draw
q

# %% [markdown]
# ## 2. Thirty seconds to think

# %%
interview.timer(30)

# %% [markdown]
# ## 3. Your answer, as you would say it
#
# Write it the way you would speak: the verdict first, then the two or three figures behind it.

# %%
my_answer = """
"""

# %% [markdown]
# ## 4. Mark yourself against the rubric and a model answer

# %%
from IPython.display import Markdown

Markdown(interview.assess(q, my_answer))

# %%
marks = []  # one True/False per rubric point, in order
interview.mark(q, marks) if marks else "mark each rubric point above, then run this cell again"

# %% [markdown]
# ## 5. The follow-up
#
# A graded question on the first rubric point you marked as missed (all covered: the last point, with
# a new setup). Answer it with `check(f.id, answer)`; `hint(f.id)` and `solution(f.id)` work as in the
# exercises.

# %%
f = interview.follow_up(q)
f

# %%
# check(f.id, "your answer")
