"""Practice kinds for notebook 10 (communication), registered in practice.KINDS["10"] (issue 38): a ring
all-reduce's bytes per GPU, the data-parallel roofline over a link, and a pipeline's bubble. Setups drawn from
memlib's catalogs; every expected value is computed by memlib when asked for."""

from __future__ import annotations

import random

from memlib.cost.collectives import NETWORK_LINKS, bytes_sent, comm_roofline, link_bytes_per_s
from memlib.learn.exercises.kinds import Numeric, Slip
from memlib.learn.exercises.practice import DENSE, _hints, _q
from memlib.learn.i18n import msg
from memlib.models import get_model
from memlib.parallel.pipeline import bubble_fraction
from memlib.units import fmt_bytes

_GPUS = ("a100-80gb", "h100-80gb", "h200", "b200")


def _all_reduce(qid: str, rng: random.Random) -> Numeric:
    m, n, width = rng.choice(DENSE), rng.choice((4, 8, 16, 32, 64, 256)), rng.choice((2, 4))
    grads = lambda: width * get_model(m).num_params  # noqa: E731
    value = lambda: float(bytes_sent("all-reduce", grads(), n))  # noqa: E731
    dtype = "bf16" if width == 2 else "fp32"
    return _q(qid, msg("All-reduce of {model}'s gradients over {n} GPUs", model=m, n=n),
              msg("The **{dtype}** gradients of **{model}** are all-reduced with a ring over **{n} GPUs**. How many GB "
                  "does each GPU send?", dtype=dtype, model=m, n=n), value, "GB",
              lambda: msg("2 x ({n} - 1) / {n2} x {grads} = **{bytes}** (`memlib.cost.collectives.bytes_sent`).", n=n,
                          n2=n, grads=fmt_bytes(grads()), bytes=fmt_bytes(value())),
              _hints("An all-reduce is a reduce-scatter then an all-gather; each sends (n - 1)/n of the tensor.",
                     "bytes = 2 (n - 1) / n x bytes per gradient x N",
                     msg("Take N from get_model({model_repr}).num_params.", model_repr=repr(m))),
              "ring all-reduce 2(n-1)/n B (Patarasuk & Yuan 2009; memlib.cost.collectives.bytes_sent)",
              (Slip("once", lambda: value() / 2, "that is a reduce-scatter alone; the all-gather sends as much again"),))


def _dp_roofline(qid: str, rng: random.Random) -> Numeric:
    m, g, n = rng.choice(DENSE), rng.choice(_GPUS), rng.choice((16, 32, 64, 128))
    link = rng.choice(tuple(NETWORK_LINKS))
    beta = link_bytes_per_s(link)
    value = lambda: float(comm_roofline(m, g, "dp", n, bytes_per_s=beta).critical_tokens)  # noqa: E731
    return _q(qid, msg("DDP of {model} over {link}", model=m, link=link),
              msg("**{model}** trains with DDP (bf16 gradients, one all-reduce per step) over **{n} x {gpu}** joined "
                  "by **{link}** per GPU. At the dense bf16 peak, with FLOPs per token 6N + 12·L·H·Q·T at 4,096 tokens "
                  "(`memlib.cost.timing.flops_per_token`), how many tokens must each GPU compute per step for the "
                  "compute to last as long as the all-reduce?", model=m, n=n, gpu=g, link=link), value, "count",
              lambda: msg("**{tokens} tokens** per GPU per step (`memlib.cost.collectives.comm_roofline`).",
                          tokens=f"{value():,.0f}"),
              _hints("The gradients' traffic is fixed per step; the compute grows with the tokens.",
                     "tokens = [2(n-1)/n x 2N / beta] x peak / FLOPs per token",
                     msg("{link} carries {rate} GB/s each way: start with the all-reduce's seconds.", link=link,
                         rate=f"{beta / 1e9:g}")),
              "the data-parallel roofline (memlib.cost.collectives.comm_roofline)",
              (Slip("bits as bytes", lambda: value() / 8, "a link's Gb/s are bits: divide by 8 for bytes"),))


def _bubble(qid: str, rng: random.Random) -> Numeric:
    p, v = rng.choice((4, 8, 16)), rng.choice((1, 1, 2, 4))
    m = p * rng.choice((1, 2, 4, 8))
    value = lambda: 100 * float(bubble_fraction(p, m, v))  # noqa: E731
    what = "1F1B" if v == 1 else msg("interleaved 1F1B with {v} model chunks per GPU", v=v)
    return _q(qid, msg("Bubble of a {p}-stage pipeline", p=p),
              msg("A **{p}-stage** pipeline runs **{what}** with **{m}** micro-batches per step. What percentage of the "
                  "step is bubble?", p=p, what=what, m=m), value, "%",
              lambda: msg("({p} - 1) / ({v} x {m} + {p2} - 1) = **{share}%** (`memlib.parallel.pipeline.bubble_fraction`).",
                          p=p, v=v, m=m, p2=p, share=f"{value():.1f}"),
              _hints("The bubble is the pipeline's fill and drain; interleaving shortens each by v.",
                     "share = (p - 1) / (v m + p - 1)", "Count the fill steps: p - 1."),
              "pipeline bubble (Narayanan et al. 2021, Sec. 2.2; memlib.parallel.pipeline.bubble_fraction)",
              (Slip("over the busy time", lambda: 100 * (p - 1) / (v * m),
                    "(p - 1)/(v m) is the bubble over the busy time; as a share of the step add the bubble below"),))


KINDS_10 = (_all_reduce, _dp_roofline, _bubble)
