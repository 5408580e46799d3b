# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Mock interview · 模拟面试
#
# One question drawn from every topic of the collection, 30 seconds to think, then your answer
# as you would say it aloud. You mark it yourself against a rubric and a model answer (nothing
# is graded by keywords), and the interviewer asks one follow-up with a fresh setup, graded by
# `check`. Run the cells in order; change the seed (or drop it) for another question.

# %%
from memlib.grading import check, hint, solution
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
# A question of the same topic with a setup you have not seen: answer it with `check(f.id, answer)`
# (`hint(f.id)` and `solution(f.id)` as in the exercises).

# %%
f = interview.follow_up(q)
f

# %%
# check(f.id, "your answer")
