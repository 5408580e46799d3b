"""Reading a learner's answer: numbers with units, figures quoted from a paragraph, option letters.

Text is parsed with regular expressions, never evaluated. What is accepted, by the unit an
exercise asks for (a plain number means that unit, or bytes for "bytes"):

  bytes, GB, GiB   "137.4 GB", "128 GiB", "1,044.6 GB", "137.4 gigabytes", "261 GB per GPU",
                   "~1 TB", 1.37e11 (a number)
  params           "5.4B", "40M params", "40 million parameters", "70亿", 5.4e9
  count            31, "31 GPUs", "31 V100s", "31 张卡"
  x                "57x", "57 times", "57倍"
  %                "98%", "98 percent", 98
  s                "22.3 s", "22 seconds", "0.4 min"
  bytes/param      16, "16 bytes", "16 bytes/param"
  FLOPs            "8.4e22 FLOPs", 8.4e22, "84 ZFLOP", "3640 petaflop/s-days" (an amount of work, not a rate)
  GPU-hours        "66k GPU-hours", "1.7M H100 hours", 65800
  days             "10.7 days", "257 hours", "1.5 weeks", "10.7 天", 10.7

Refused, with a message saying what to write: "137,4 GB" (a decimal comma: it is not silently
read as 1374), negative amounts, ambiguous units ("261 G"), a unit of the wrong kind (bytes to a
parameter count, a percentage to a size), numbers too large to be an answer (10**400).
"""

from __future__ import annotations

import math
import numbers
import re
import unicodedata
from dataclasses import dataclass

from memlib.learn.i18n import tr, trf

DECIMAL = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15}
BINARY = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50}
_BYTE_WORDS = {"byte": "b", "bytes": "b", "kilobyte": "kb", "kilobytes": "kb", "megabyte": "mb", "megabytes": "mb",
               "gigabyte": "gb", "gigabytes": "gb", "terabyte": "tb", "terabytes": "tb", "petabyte": "pb",
               "petabytes": "pb", "kibibyte": "kib", "kibibytes": "kib", "mebibyte": "mib", "mebibytes": "mib",
               "gibibyte": "gib", "gibibytes": "gib", "tebibyte": "tib", "tebibytes": "tib", "gbytes": "gb"}
COUNT_SUFFIX = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "millions": 1e6, "b": 1e9, "bn": 1e9,
                "billion": 1e9, "billions": 1e9, "t": 1e12, "trillion": 1e12, "万": 1e4, "亿": 1e8}
SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "秒": 1, "ms": 1e-3, "毫秒": 1e-3, "min": 60, "mins": 60,
           "minute": 60, "minutes": 60, "分钟": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
           "小时": 3600}
BYTE_UNITS = ("bytes", "GB", "GiB")
# amounts of work (FLOPs) may carry an SI prefix ("84 ZFLOP"); "/s" makes them a rate, refused by name
_FLOP_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18, "z": 1e21, "y": 1e24,
                "kilo": 1e3, "mega": 1e6, "giga": 1e9, "tera": 1e12, "peta": 1e15, "exa": 1e18, "zetta": 1e21,
                "yotta": 1e24}
PETAFLOP_DAY = 1e15 * 86400  # the scaling papers' unit (Kaplan et al. 2020; Brown et al. 2020, GPT-3)
_FLOP = re.compile(r"(?P<prefix>kilo|mega|giga|tera|peta|exa|zetta|yotta|[kmgtpezy])?\s*flops?"
                   r"(?P<rate>\s*/\s*s(?:ec)?|\s*per\s+second|ps)?")
_PF_DAYS = re.compile(r"(?:pf|pflops?|petaflops?)(?:\s*/\s*s)?[-\s·]*days?|pfs[-\s·]*days?")
_HOUR_SCALE = {"": 1.0, "k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "millions": 1e6}
_GPU_NAME = re.compile(r"[a-z]+\d+[a-z]*|gpus?")  # one word: "h100", "a100s", "gpu" (matched word by word)
_HOUR_WORDS = ("hours", "hour", "hrs", "hr", "h")
DAYS = {"": 1.0, "d": 1.0, "day": 1.0, "days": 1.0, "天": 1.0, "h": 1 / 24, "hr": 1 / 24, "hrs": 1 / 24,
        "hour": 1 / 24, "hours": 1 / 24, "小时": 1 / 24, "w": 7.0, "wk": 7.0, "week": 7.0, "weeks": 7.0, "周": 7.0}
_PLAIN_SCALE = {"bytes": 1, "GB": 10**9, "GiB": 2**30}

_APPROX = r"(?:~|≈|about|approx\.?|approximately|around|roughly|circa|ca\.|约|大约|大概)?"
# a leading "per GPU" in Chinese ("每卡约 261 GB"): it does not change the figure
_LEADING = r"(?i:每卡|每张卡|每个gpu|每gpu|每块卡|单卡)?"
# a power of ten written out: "8.1×10^22", "8.1 x 10**22", "8.1*10^22" (read as 8.1e22)
_TIMES_TEN = r"\s*[x×*·]\s*10\s*(?:\^|\*\*)\s*[-+]?\d{1,4}"
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d(?:_?\d)*)(?:\.\d*)?|\.\d+"
_QUANTITY = re.compile(rf"^{_LEADING}\s*{_APPROX}\s*(?P<sign>[-+]?)\s*(?P<num>{_NUMBER})"
                       rf"(?P<exp>[eE][-+]?\d{{1,4}}|{_TIMES_TEN})?\s*(?P<rest>.*?)$", re.S)
# what may follow the unit without changing the figure: "per GPU", "in total", "每卡" ...
# a verdict after the figure ("119 GB, does not fit", "约119GB，放不下"): the figure is read as it is; an exercise
# that asks whether it fits (Numeric.fits) compares the verdict too (stated_fit)
_NO_FIT = (r"(?:so\s+|and\s+|which\s+|that\s+)?(?:it\s+)?(?:does\s*n[o']?t|does\s+not|won'?t|will\s+not|would\s+not|"
           r"can\s*n[o']?t|cannot)\s+fit(?:\s+(?:on\s+)?(?:one|an?|the|each)\s+(?:gpu|card))?|"
           r"(?:so\s+|and\s+)?(?:it\s+)?(?:will\s+)?oom|not\s+fitting|放不下|装不下|不够|塞不下|会\s*oom")
_FITS = (r"(?:so\s+|and\s+|which\s+|that\s+)?(?:it\s+)?(?:fits|will\s+fit|does\s+fit|would\s+fit)"
         r"(?:\s+(?:on\s+)?(?:one|an?|the|each)\s+(?:gpu|card))?|放得下|装得下|能放下|够用|够")
_VERDICTS = f"{_NO_FIT}|{_FITS}"
_NO_FIT_RE = re.compile(rf"(?:^|[\s,;:，；：、(（]){_NO_FIT}(?:$|[\s.!。！)）])", re.I)
_FITS_RE = re.compile(rf"(?:^|[\s,;:，；：、(（]){_FITS}(?:$|[\s.!。！)）])", re.I)
# a trailing qualifier, bare or set off by a comma or parentheses ("14 GB (per GPU)", "14GB（每张卡）" after NFKC)
_QUALIFIER = re.compile(r"\s*[,;]?\s*\(?\s*(?:(?:per|/|a|each|every|for\s+each|for\s+one|on\s+each|on\s+one)\s*(?:gpu|card|device|"
                        r"rank|process|worker|node|sequence|layer)s?|/\s*(?:卡|张卡|块卡)|each|in\s+total|total|overall|altogether|"
                        r"combined|左右|上下|大约|约|"
                        r"together|of\s+(?:memory|ram|host\s+ram|cpu\s+ram|vram|gpu\s+memory|hbm)|on\s+the\s+host|"
                        r"每卡|每张卡|每个gpu|总共|总计|合计|一共|" + _VERDICTS + r")\s*\)?\s*[.!。！]?\s*$")
_PARAM_WORD = r"(?:params?|parameters?|weights|参数|个参数)"
# what a count may be a count of: GPUs ("31 V100s", "8 cards") or served sequences ("32 chats", notebook 04)
_GPU_WORD = re.compile(r"^(?:(?:张|块|台|个)?\s*(?:nvidia\s+)?(?:[a-z]+\s?\d{2,4}[a-z]*|gpu|card|device)s?"
                       r"(?:\s+\d+\s*gi?b)?|"
                       r"(?:chat|sequence|request|user|conversation)s?(?:\s+at\s+once)?|个对话|张卡?|块卡?|"
                       r"个|台|张gpu)$")
PLACEHOLDERS = re.compile(r"^\s*(\.\.\.|…|todo|tbd|\?+|your (answer|reasoning|text)( here)?\.?|)\s*$", re.I)
MAX_TEXT = 80


class Malformed(ValueError):
    """An answer the grader cannot read; the message says what it expected."""


@dataclass(frozen=True)
class Quantity:
    value: float  # in the exercise's base unit (bytes, parameters, percent, seconds, ...)
    number: float  # the number as written
    token: str  # the unit as written, normalised ("gb", "gib", "" when none)
    decimals: int = 0  # digits after the decimal point, as written (a typed number: 0)
    sig: int = 0  # significant figures as written ("110" 2, "1.0" 2, "107.81" 5); 0 when unknown

    @property
    def plain(self) -> bool:
        return self.token == ""


def unanswered(answer) -> bool:
    """None, ..., "" and "your answer here" mean the learner has not answered yet."""
    if answer is None or answer is Ellipsis:
        return True
    if isinstance(answer, str):
        return bool(PLACEHOLDERS.match(answer))
    if isinstance(answer, (tuple, list)):
        return len(answer) == 0 or all(unanswered(a) for a in answer)
    return False


UNITS_EXAMPLE_KEYS = ("bytes", "GB", "GiB", "params", "count", "x", "bytes/param", "%", "s", "FLOPs", "GPU-hours",
                      "days", "USD")


def example(unit: str) -> str:
    # the format with figures that answer no exercise (tests/test_grading_fairness.py tries each one against all)
    return {"bytes": tr('"987.6 GB" or "919.8 GiB"'), "GB": tr('"987.6 GB" or 987.6 (GB)'),
            "GiB": tr('"919.8 GiB" or 919.8 (GiB)'), "params": tr('"9.87B" or 9.87e9'), "count": "999",
            "x": tr('"98.7x" or 98.7'), "bytes/param": "987", "%": tr('"98.7%" or 98.7'), "s": tr('"98.7 s" or 98.7'),
            "FLOPs": tr('"9.87e25 FLOPs" or 9.87e25'), "GPU-hours": tr('"987k GPU-hours" or 987000'),
            "days": tr('"987 days" or 987'), "USD": tr('"$98.70" or 98.7')}.get(unit, "999")


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\u2212", "-").replace("−", "-")
    return re.sub(r"\s+", " ", text).strip()


def _to_float(number) -> float:
    try:
        value = float(number)
    except OverflowError:
        raise Malformed(tr("that number is far too large to be an answer here")) from None
    except Exception:  # a number-like object whose __float__ raises
        raise Malformed(tr("could not read that answer as a number")) from None
    if not math.isfinite(value):
        raise Malformed(trf("{number} is not a finite number", number=repr(number)))
    return value


def parse_quantity(answer, unit: str) -> Quantity:
    """Read a number (int, float or text such as "123 GB") in an exercise's `unit`; Malformed if unreadable."""
    if isinstance(answer, bool) or not isinstance(answer, (numbers.Real, str)):
        raise Malformed(trf("expected a number or a string such as {example}, got {type}", example=example(unit),
                            type=type(answer).__name__))
    if isinstance(answer, str):
        text = _normalise(answer)
        if unit == "USD":  # "$0.53", "US$0.53", "USD 0.53": the currency before the figure
            text = re.sub(r"^(?:us\$|\$|usd\s*)", "", text, flags=re.IGNORECASE)
        if len(text) > MAX_TEXT:
            raise Malformed(trf("give one figure, for example {example}", example=example(unit)))
        m = _QUANTITY.match(text)
        if not m:
            raise Malformed(trf("could not read {answer} as one number with a unit; write it like {example}",
                                answer=repr(answer), example=example(unit)))
        rest = m.group("rest").lower().strip()
        if re.match(r"^,\d", rest) or re.match(r"^\d", rest):
            raise Malformed(trf("{answer}: write decimals with a point (137.4, not 137,4); a comma may only "
                                "group thousands (1,044.6)", answer=repr(answer)))
        exp = re.sub(r"^[^-+\d]*?10\s*(?:\^|\*\*)\s*", "e", m.group("exp") or "")
        number = _to_float(m.group("num").replace(",", "").replace("_", "") + exp)
        if m.group("sign") == "-":
            raise Malformed(trf("{answer} is negative; an amount of memory, parameters or time is positive",
                                answer=repr(answer)))
        token = _unit_token(rest)
        decimals = len(m.group("num").split(".")[1]) if "." in m.group("num") and not m.group("exp") else 0
        sig = significant_figures(m.group("num"))
    else:
        number, token, decimals = _to_float(answer), "", 0
        sig = significant_figures(str(answer) if isinstance(answer, numbers.Integral)
                                  else repr(float(number)).removesuffix(".0"))  # repr(110.0): the whole number 110
        if number < 0:
            raise Malformed(trf("{answer} is negative; an amount of memory, parameters or time is positive",
                                answer=repr(answer)))
    value = _scale(number, token, unit)
    if not math.isfinite(value):
        raise Malformed(tr("that number is far too large to be an answer here"))
    return Quantity(value, number, token, decimals, sig)


def stated_fit(answer) -> bool | None:
    """The verdict an answer states after its figure: False ("does not fit", "OOM", "放不下"), True ("fits",
    "放得下"), None (no verdict, or a number without text)."""
    if not isinstance(answer, str):
        return None
    text = _normalise(answer).lower()
    if _NO_FIT_RE.search(text):
        return False
    return True if _FITS_RE.search(text) else None


def significant_figures(digits: str) -> int:
    """Significant figures of a number as written: "110" 2, "1.0" 2, "0.050" 2, "107.81" 5, "8.1e+22" 2.

    Trailing zeros of a whole number are not significant (the learner rounded to them); after a
    decimal point they are. Linear-time string handling, no regular expression backtracking."""
    text = digits.lower().replace(",", "").replace("_", "").lstrip("+-")
    mantissa = text.split("e")[0]
    if "." in mantissa:
        return max(len(mantissa.replace(".", "").lstrip("0")), 1)
    return max(len(mantissa.lstrip("0").rstrip("0")), 1)


# bytes per weight in any spelling: B or byte(s), "/" or "per", p, param(s), parameter(s), w or weight(s)
_BYTES_PER_WEIGHT = re.compile(r"(?:b|bytes?)(?:\s*/\s*|\s+per\s+|\s+a\s+)(?:p|params?|parameters?|w|weights?)")
_BIT_WORDS = ("bits", "bit", "bits per weight", "bit per weight", "bits/weight", "bits per param", "bits/param",
              "bits per parameter", "bit/param", "比特", "位")


def _unit_token(rest: str) -> str:
    while True:  # strip trailing qualifiers ("per GPU", "in total", ...), which do not change the figure
        stripped = _QUALIFIER.sub("", rest).strip()
        if stripped == rest:
            break
        rest = stripped
    rest = rest.rstrip(".").strip()
    if rest in ("percent", "per cent", "pct"):
        return "%"
    return _BYTE_WORDS.get(rest, rest)


def _scale_bytes(number: float, token: str, unit: str) -> float:
    """A byte answer's scale: decimal or binary units, the unit's own for a plain number."""
    if token in DECIMAL:
        return number * DECIMAL[token]
    if token in BINARY:
        return number * BINARY[token]
    if token == "":
        return number * _PLAIN_SCALE[unit]
    if token in ("g", "gi", "m", "k", "t", "gig", "gigs"):
        raise Malformed(trf("the unit {token} is ambiguous: write GB (1e9 bytes) or GiB (2**30 bytes)", token=repr(token)))
    if re.fullmatch(rf"(?:[kmbt]|thousand|million|billion|bn)?\s*{_PARAM_WORD}?", token):
        raise Malformed(trf("this asks for bytes, not a number of parameters; write it like {example}",
                           example=example(unit)))
    raise Malformed(trf("unknown unit {token}; use B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (of 1024)",
                       token=repr(token)))


def _scale(number: float, token: str, unit: str) -> float:
    kind = {"bytes": "bytes", "GB": "bytes", "GiB": "bytes"}.get(unit, unit)
    if token == "%" and unit == "x":  # "shrinks by 98%": the grader turns it into a factor
        return number
    if token == "%" and unit != "%":
        raise Malformed(trf("this asks for {what}, not a percentage; write it like {example}", what=_what(unit),
                            example=example(unit)))
    if kind == "bytes":
        return _scale_bytes(number, token, unit)
    if unit == "params":
        m = re.fullmatch(rf"(?P<suffix>[a-z]+|万|亿)?\s*(?P<word>{_PARAM_WORD})?", token)
        suffix = (m.group("suffix") or "") if m else None
        if m and suffix in ("params", "param", "parameters", "parameter", "weights"):
            return number
        if m and (suffix == "" or suffix in COUNT_SUFFIX):
            return number * (COUNT_SUFFIX[suffix] if suffix else 1)
        if token in DECIMAL or token in BINARY or token in _BYTE_WORDS.values():
            raise Malformed(trf("this asks for a number of parameters, not bytes; write it like {example}",
                               example=example(unit)))
        raise Malformed(trf("unknown suffix {token}; use K, M, B (billion) or T, e.g. {example}", token=repr(token),
                           example=example(unit)))
    if unit == "count":
        if token == "" or _GPU_WORD.match(token):
            if token in DECIMAL or token in BINARY:
                raise Malformed(trf("this asks for a number of GPUs (or of sequences), not bytes; write it like {example}",
                                   example=example(unit)))
            return number
        raise Malformed(trf("this asks for a whole number of GPUs (or of sequences); write it like {example}",
                           example=example(unit)))
    if unit == "s":
        if token == "":
            return number
        if token in SECONDS:
            return number * SECONDS[token]
        raise Malformed(trf("unknown time unit {token}; write seconds, e.g. {example}", token=repr(token),
                           example=example(unit)))
    if unit == "FLOPs":
        return number * _flops_scale(token)
    if unit == "GPU-hours":
        if "day" in token or "天" in token:
            raise Malformed(trf("this asks for GPU-hours (GPUs x hours of each), not days; write it like {example}",
                               example=example(unit)))
        scale = _gpu_hours_scale(token)
        if scale is None:
            raise Malformed(trf("unknown unit {token}; write GPU-hours, e.g. {example}", token=repr(token[:30]),
                               example=example(unit)))
        return number * scale
    if unit == "days":
        if "gpu" in token:
            raise Malformed(trf("this asks for wall-clock days, not GPU-hours; write it like {example}",
                               example=example(unit)))
        if token in DAYS:
            return number * DAYS[token]
        raise Malformed(trf("unknown time unit {token}; write days, e.g. {example}", token=repr(token),
                           example=example(unit)))
    if unit == "USD":  # "0.53 dollars", "0.53 USD per million tokens", "0.53 美元"
        if _USD_TOKEN.fullmatch(token):
            return number
        raise Malformed(trf("unexpected unit {token}; write dollars, e.g. {example}", token=repr(token[:30]),
                           example=example(unit)))
    allowed = {"x": ("", "x", "×", "times", "fold", "-fold", "倍", "x smaller", "x less", "times smaller", "times fewer",
                     "x fewer", "times less", "fold fewer", "fold smaller", "times as few"),
               "%": ("", "%"),
               "bytes/param": ("", "b", "b/param", "bytes/param", "byte/param", "b/p", "bytes per param",
                               "bytes per parameter", "byte per parameter", "bytes/parameter", "bytes per weight",
                               "byte per weight", "bytes/weight", "b/weight", "字节", "字节/参数")}.get(unit, ("",))
    if unit == "bytes/param" and token in _BIT_WORDS:  # "3.3 bits" (per weight): a chapter speaks bits per weight
        return number / 8
    if unit == "bytes/param" and _BYTES_PER_WEIGHT.fullmatch(token):  # "0.412 B per weight", "2 bytes / weight"
        return number
    if token not in allowed:
        raise Malformed(trf("unexpected unit {token}; write a plain number, e.g. {example}", token=repr(token),
                           example=example(unit)))
    return number


_USD_TOKEN = re.compile(r"(?:usd|us dollars?|dollars?|美元|\$)?\s*(?:(?:per|/|每)\s*(?:1\s*m|m|million|mtok|百万).*)?",
                        re.IGNORECASE)


def _gpu_hours_scale(token: str) -> float | None:
    """Hours per unit of "66k GPU-hours", "1.7M H100 hours", "426 GPU小时"; None if unreadable.

    Read word by word (split once, then one bounded match per word): linear in the text, so an
    adversarial string cannot make it backtrack."""
    text = token.replace("小时", " hours").replace("卡时", " gpu hours")
    words = [w for w in re.split(r"[-\s·]+", text) if w]
    if words and words[0] in _HOUR_SCALE:
        scale = _HOUR_SCALE[words.pop(0)]
    elif words and words[0][:1] in ("k", "m") and _GPU_NAME.fullmatch(words[0][1:] or "-"):  # "kgpu"
        scale, words[0] = _HOUR_SCALE[words[0][0]], words[0][1:]
    else:
        scale = 1.0
    if words and words[-1] in _HOUR_WORDS:
        words.pop()
    if len(words) > 4 or not all(_GPU_NAME.fullmatch(w) for w in words):
        return None
    return scale


def _flops_scale(token: str) -> float:
    """FLOPs per unit of an amount of work as written: "" or "FLOPs" 1, "ZFLOP" 1e21, "PF-days" 8.64e19."""
    if token == "":
        return 1.0
    if _PF_DAYS.fullmatch(token):
        return PETAFLOP_DAY
    m = _FLOP.fullmatch(token)
    if m and m.group("rate"):
        raise Malformed(trf("{token} is a rate (FLOP per second); this asks for an amount of work in FLOPs, "
                            "e.g. {example}", token=repr(token), example=example("FLOPs")))
    if m:
        return _FLOP_PREFIX[m.group("prefix") or ""]
    raise Malformed(trf("unknown unit {token}; write FLOPs, e.g. {example}", token=repr(token), example=example("FLOPs")))


def _what(unit: str) -> str:
    return {"bytes": tr("a size"), "GB": tr("a size"), "GiB": tr("a size"), "params": tr("a number of parameters"),
            "count": tr("a number of GPUs"), "x": tr("a factor"), "s": tr("a time"),
            "bytes/param": tr("bytes per parameter"), "FLOPs": tr("an amount of work in FLOPs"), "GPU-hours": "GPU-hours",
            "days": tr("a wall-clock time in days"), "USD": tr("an amount in dollars")}.get(unit, tr("a number"))


def number_in(text) -> float | None:
    """The first unsigned number in a quoted figure ("780GB" -> 780, "ZeRO-2" -> 2); None if there is none."""
    if isinstance(text, numbers.Real) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:
            return None
        return abs(value) if math.isfinite(value) else None
    m = re.search(r"\d[\d,_]*(?:\.\d+)?", _normalise(str(text)[:200]))
    if not m:
        return None
    return float(m.group(0).replace(",", "").replace("_", ""))


_CHOICE = re.compile(r"^[(\[]?([a-z])[)\]]?(?:[,;/ ]*[(\[]?(\d)[)\]]?)?$")  # on text without spaces: linear


def parse_choice(answer, keys: tuple[str, ...], reasons: tuple[str, ...]) -> tuple[str, str]:
    """(option key, reason key or "") from "e", "E, 3", ("e", 3), ["e", "3"]."""
    # the format, never a sample pick (a sample pick would be right for some exercise)
    fmt = (trf("answer with a pair: an option letter ({keys}) and a reason number ({reasons})", keys="/".join(keys),
               reasons="/".join(reasons)) if reasons else trf("answer with one option letter ({keys})", keys="/".join(keys)))
    if isinstance(answer, (tuple, list)):
        if not 1 <= len(answer) <= 2 or any(isinstance(a, (tuple, list, dict, set)) for a in answer):
            raise Malformed(fmt)
        key = _normalise(_text(answer[0])).strip("()").lower()
        reason = _normalise(_text(answer[1])).strip("()") if len(answer) > 1 else ""
    elif isinstance(answer, str):
        text = re.sub(r"\s+", "", _normalise(answer).lower())[:MAX_TEXT]  # full-width "（c）", "c，3" too
        m = _CHOICE.match(text)
        if not m:
            raise Malformed(fmt)
        key, reason = m.group(1).lower(), m.group(2) or ""
    else:
        raise Malformed(fmt)
    if key not in keys:
        raise Malformed(trf("{key} is not an option; choose one of {keys}", key=repr(key[:10]), keys=", ".join(keys)))
    if reasons and reason and reason not in reasons:
        raise Malformed(trf("{reason} is not a reason; choose one of {reasons}", reason=repr(reason[:10]),
                                 reasons=", ".join(reasons)))
    if not reasons and reason:
        raise Malformed(fmt)
    return key, reason


def plain(answer, depth: int = 0):
    """The answer in built-in types (int, float, str, tuple, list, frozenset, dict), read once.

    A learner's object whose __float__, __int__ or __str__ raises (or a numpy scalar) is read here,
    so no grader meets it: Malformed("could not read that answer ...") instead of a crash."""
    if depth > 20:
        raise Malformed(tr("it is nested too deeply"))
    if answer is None or answer is Ellipsis or type(answer) in (bool, int, float, str):
        return answer
    try:
        if isinstance(answer, bool):
            return bool(answer)
        if isinstance(answer, numbers.Integral):
            return int(answer)
        if isinstance(answer, numbers.Real):
            return float(answer)
        if isinstance(answer, str):
            return str.__str__(answer)[:]
        if isinstance(answer, (tuple, list)):
            if len(answer) > 100:
                raise Malformed(tr("it holds too many parts"))
            items = [plain(a, depth + 1) for a in answer]
            return tuple(items) if isinstance(answer, tuple) else items
        if isinstance(answer, (set, frozenset)):
            return frozenset(plain(a, depth + 1) for a in list(answer)[:101])
        if isinstance(answer, dict):
            return {plain(k, depth + 1): plain(v, depth + 1) for k, v in list(answer.items())[:20]}
    except Malformed:
        raise
    except OverflowError:
        raise Malformed(tr("that number is far too large to be an answer here")) from None
    except Exception:
        raise Malformed(tr("could not read that answer: its value cannot be read as a number or as text")) from None
    return answer  # a function (implement exercises) or another object: each grader says what it expects


def _text(value) -> str:
    """str() of a part of an answer; Malformed (not a crash) when its __str__ raises."""
    try:
        text = str(value)
    except Exception:
        raise Malformed(tr("could not read that answer: one of its parts cannot be turned into text")) from None
    if not isinstance(text, str):
        raise Malformed(tr("could not read that answer: one of its parts cannot be turned into text"))
    return text[:4 * MAX_TEXT]


def parse_selection(answer, keys: tuple[str, ...]) -> frozenset:
    """The set of option keys from "a, c", "a c", "(a)(c)", "ac", ["a", "c"], {"a", "c"}, "none" or "all"."""
    fmt = trf('list every option that applies, e.g. "{first}, {last}" (or "none")', first=keys[0], last=keys[-1])
    if isinstance(answer, str):
        text = _normalise(answer).lower()
        if text in ("none", "nothing", "no option", "-", "∅", "无"):
            return frozenset()
        if text in ("all", "all of them", "everything", "全部"):
            return frozenset(keys)
        if len(text) > 4 * MAX_TEXT:
            raise Malformed(fmt)
        # split once on separators (also "、", "和", "及", "与" and "and"): linear, no backtracking
        items = [t for t in re.split(r"[\s,;/&+()\[\]、和及与]+", text) if t and t != "and"]
        if not all(t.isascii() and t.isalpha() for t in items):
            raise Malformed(fmt)
        if len(items) == 1 and len(items[0]) > 1 and set(items[0]) <= set(keys):
            items = list(items[0])  # "ac"
        if len(items) == 1 and len(items[0]) > 1 and set(items[0]) <= set(keys):
            items = list(items[0])  # "ac"
    elif isinstance(answer, (tuple, list, set, frozenset)):
        if any(not isinstance(a, str) for a in answer):
            raise Malformed(fmt)
        items = [_normalise(a).strip("()").lower() for a in answer]
    else:
        raise Malformed(fmt)
    unknown = [i for i in items if i not in keys]
    if unknown:
        raise Malformed(trf("{key} is not an option; choose among {keys}", key=repr(unknown[0][:10]), keys=", ".join(keys)))
    return frozenset(items)


def parse_marks(marks, n: int) -> tuple[bool, ...]:
    """Self-assessment marks: one True/False (or 1/0, "y"/"n") per rubric point, in order."""
    fmt = trf("mark each of the {n} rubric points in order, e.g. [True, False, ...] (True: your answer covers it), "
              'or a string like "{example}"', n=n, example="yn" * (n // 2) + "y" * (n % 2))
    if isinstance(marks, str):
        text = re.sub(r"[\s,;]", "", marks.lower())
        if not re.fullmatch(r"[yn10✓✗x]*", text):
            raise Malformed(fmt)
        values = tuple(c in "y1✓" for c in text)
    elif isinstance(marks, (tuple, list)):
        if any(not isinstance(v, (bool, int)) or (not isinstance(v, bool) and v not in (0, 1)) for v in marks):
            raise Malformed(fmt)
        values = tuple(bool(v) for v in marks)
    else:
        raise Malformed(fmt)
    if len(values) != n:
        raise Malformed(trf("you gave {count} marks for {n} rubric points; ", count=len(values), n=n) + fmt)
    return values
