"""GPU catalog: capacity, tensor-core throughput, memory bandwidth and interconnect.

Capacity convention (see design.md): ``memory_bytes`` is the capacity *as the vendor
means it*. NVIDIA's "GB" on GPU memory is binary: a "V100 32GB" has 32 * 2**30 bytes,
an "A100 80GB" 80 * 2**30. The driver shows this: nvidia-smi reports an A100 80GB as
81920 MiB (exactly 80 GiB) and an A100 40GB as 40960 MiB. Newer parts report slightly
less than nominal because the driver reserves some memory, and GDDR6 data-centre cards
with ECC enabled (T4, A10, L4) lose 1/16 of it to ECC (a T4 reports 15360 MiB of 16 GiB).
``reported_total_mib`` keeps that observed figure where we have a public record of it.

The H200 is the awkward one. Its datasheet says "141GB". Read as decimal that would be
141e9 bytes = 131.3 GiB = 134,472 MiB, *less* than what the device reports
(nvidia-smi: 143771 MiB = 140.4 GiB). Read as binary, 141 GiB = 144,384 MiB, which is the
reported total plus a small driver reservation, the same pattern as the H100
(80 GiB nominal, 81559 MiB reported). So the H200 is stored as 141 * 2**30 bytes.

Throughput convention: ``fp16_tflops`` / ``bf16_tflops`` are *dense* tensor-core peak
TFLOP/s (datasheets often print the 2:4-sparsity figure, twice as large, with an
asterisk) with FP32 accumulation, which is what mixed-precision training and PyTorch's
fp16/bf16 matmuls use. On GeForce cards FP32 accumulation runs at half the FP16-
accumulate rate; the FP32-accumulate figure is the one stored. ``None`` where the
tensor cores do not support the format (bf16 before Ampere).

Interconnect convention: ``interconnect_bytes_per_s`` is the per-GPU figure as the
vendor quotes it, i.e. the *bidirectional* total (NVLink 4: 900 GB/s = 450 GB/s each
way; PCIe 4.0 x16: "64 GB/s" = 32 GB/s each way). Use
``interconnect_bytes_per_s_per_direction`` for one-way transfer time estimates.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, fields
from importlib import resources

from memlib._checks import positive_float, show


__all__ = ["GPU", "get_gpu", "list_gpus"]

GiB = 2**30
GB = 10**9


@dataclass(frozen=True)
class GPU:
    """One GPU model. Sizes in bytes (int), rates in bytes/s (int) or TFLOP/s (float)."""

    name: str  #: canonical catalog key, lower-case with hyphens, e.g. "v100-32gb"
    display_name: str  #: e.g. "NVIDIA V100 SXM2 32GB"
    memory_bytes: int  #: capacity as the vendor means it (see module docstring)
    supports_bf16: bool  #: tensor cores (and PyTorch autocast) support bfloat16
    fp16_tflops: float | None  #: dense fp16 tensor-core peak, FP32 accumulate
    bf16_tflops: float | None  #: dense bf16 tensor-core peak; None if unsupported
    memory_bandwidth_bytes_per_s: int  #: peak DRAM/HBM bandwidth, decimal (1 GB/s = 1e9 B/s)
    interconnect: str  #: GPU-to-GPU link, e.g. "NVLink 4" or "PCIe 4.0 x16"
    interconnect_bytes_per_s: int  #: per GPU, bidirectional total as the vendor quotes it
    source: str  #: datasheet / whitepaper the figures come from
    reported_total_mib: int | None = None  #: nvidia-smi memory.total where publicly recorded
    fp8_tflops: float | None = None  #: dense fp8 tensor-core peak; None where the tensor cores have no fp8
    int8_tops: float | None = None  #: dense int8 tensor-core peak (TOPS); None where not supported
    torch_total_mib: int | None = None  #: torch.cuda.get_device_properties(i).total_memory / 2**20
    torch_total_source: str = ""  #: where torch_total_mib comes from ("estimated: ..." when no record)
    compute_capability: str | None = None  #: CUDA compute capability "major.minor" (sm_80 = "8.0"); None: not CUDA

    def __post_init__(self) -> None:
        if not isinstance(self.memory_bytes, int) or self.memory_bytes <= 0:
            raise ValueError(f"{self.name}: memory_bytes must be a positive int")
        if self.supports_bf16 != (self.bf16_tflops is not None):
            raise ValueError(f"{self.name}: bf16_tflops must be None exactly when bf16 is unsupported")
        # a card reports at most its capacity; a replace() of memory_bytes that keeps a catalog entry's
        # reported totals would otherwise size every fit by the old card (issue 23, user-defined GPUs)
        for field_name in ("reported_total_mib", "torch_total_mib"):
            mib = getattr(self, field_name)
            if mib is not None and mib * 2**20 > self.memory_bytes:
                raise ValueError(f"{self.name}: {field_name} ({mib:,} MiB) is more than memory_bytes "
                                 f"({self.memory_bytes / 2**20:,.0f} MiB); a GPU reports at most its capacity. If you "
                                 f"changed memory_bytes, also set {field_name}=None (or what your card reports)")

    # -- units -------------------------------------------------------------------------
    @property
    def memory_gb(self) -> float:
        """Capacity in GB (1e9 bytes)."""
        return self.memory_bytes / GB

    @property
    def memory_gib(self) -> float:
        """Capacity in GiB (2**30 bytes)."""
        return self.memory_bytes / GiB

    @property
    def reported_total_bytes(self) -> int | None:
        """What nvidia-smi reports as total memory, in bytes (None if not recorded)."""
        return None if self.reported_total_mib is None else self.reported_total_mib * 2**20

    @property
    def torch_total_bytes(self) -> int | None:
        """What torch.cuda.get_device_properties(i).total_memory reports, in bytes (None if not recorded).

        Torch prints it as 'total_memory=81089MB' meaning MiB; it is below nvidia-smi's
        memory.total (H100 SXM: 81,089 vs 81,559 MiB): the driver keeps the difference."""
        return None if self.torch_total_mib is None else self.torch_total_mib * 2**20

    @property
    def memory_bandwidth_gb_per_s(self) -> float:
        return self.memory_bandwidth_bytes_per_s / GB

    @property
    def interconnect_gb_per_s(self) -> float:
        """Interconnect bandwidth in GB/s, bidirectional total (vendor's figure)."""
        return self.interconnect_bytes_per_s / GB

    @property
    def host_link_bytes_per_s(self) -> int:
        """GPU<->CPU link, one direction (what offload traffic crosses); see HOST_LINK and _host_link."""
        return _host_link(self)[1]

    @property
    def sm(self) -> tuple[int, int] | None:
        """The compute capability as (major, minor), comparable: bf16 tensor cores need (8, 0) or newer, fp8
        ones (8, 9) or newer (units table of memlib/hardware/data/gpus.json). None for a GPU without CUDA."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def interconnect_bytes_per_s_per_direction(self) -> int:
        return self.interconnect_bytes_per_s // 2

    # -- display -----------------------------------------------------------------------
    def __str__(self) -> str:
        return f"{self.display_name} ({self.memory_gib:.2f} GiB = {self.memory_gb:.2f} GB)"

    def describe(self) -> str:
        """Multi-line human-readable summary; capacity shown as bytes, GB and GiB."""

        def tf(x: float | None) -> str:
            return "not supported" if x is None else f"{x:g} TFLOP/s"

        mem = (
            f"{self.memory_bytes:,} bytes = {self.memory_gb:.2f} GB (1e9) = "
            f"{self.memory_gib:.2f} GiB (2**30)"
        )
        if self.reported_total_mib is not None:
            mem += (
                f"; nvidia-smi reports {self.reported_total_mib:,} MiB = "
                f"{self.reported_total_bytes / GiB:.2f} GiB"
            )
        if self.torch_total_mib is not None:
            mem += f"; torch reports {self.torch_total_mib:,} MiB ({self.torch_total_source})"
        lines = [
            f"{self.display_name} [{self.name}]",
            f"  memory:           {mem}",
            *([f"  compute capab.:   {self.compute_capability} (sm_{self.compute_capability.replace('.', '')})"]
              if self.compute_capability else []),
            f"  bf16 support:     {'yes' if self.supports_bf16 else 'no'}",
            f"  fp16 tensor core: {tf(self.fp16_tflops)} (dense)",
            f"  bf16 tensor core: {tf(self.bf16_tflops)} (dense)",
            *([f"  fp8 tensor core:  {self.fp8_tflops:g} TFLOP/s (dense)"] if self.fp8_tflops else []),
            *([f"  int8 tensor core: {self.int8_tops:g} TOPS (dense)"] if self.int8_tops else []),
            f"  memory bandwidth: {self.memory_bandwidth_gb_per_s:,.0f} GB/s",
            f"  interconnect:     {self.interconnect}, {self.interconnect_gb_per_s:,.0f} GB/s "
            f"per GPU (bidirectional)",
            f"  source:           {self.source}",
        ]
        return "\n".join(lines)


# -- the catalog: memlib/hardware/data/gpus.json ------------------------------------------------
# One record per GPU, with its source; units are in the field names (memory_gib, *_gb_per_s, *_tflops,
# *_mib) and spelled out in the file's "units" table; tests/test_catalog_schema.py checks every record.
# torch_total_mib is what torch.cuda.get_device_properties(i).total_memory reports, in MiB -- the
# smallest public record that names the card, on the card's default ECC setting. torch prints it
# floored to MiB ("total_memory=81050MB", torch/csrc/cuda/Module.cpp); OOM messages print the same
# cudaMemGetInfo total rounded to 0.01 GiB ("79.15 GiB total capacity", c10/cuda/
# CUDACachingAllocator.cpp format_size), stored as the nearest MiB. Each torch_total_source starts
# with "exact:", "rounded:" (rounded from X GiB) or "estimated:" (the arithmetic written out).
# Aliases are already normalised (see _normalise); ambiguous short names resolve to the variant the
# interview seeds mean: "v100" is the 32GB part, "a100" the 80GB part.
_DATA = "gpus.json"


def _read_catalog() -> dict:
    """The parsed data file (memlib/hardware/data/gpus.json), shipped inside the package."""
    return json.loads(resources.files("memlib.hardware").joinpath("data", _DATA).read_text(encoding="utf-8"))


def _gpu_from_record(rec: dict) -> GPU:
    """One data record -> GPU, converting the file's units (GiB, GB/s) to the class's bytes and bytes/s."""
    return GPU(
        name=rec["name"],
        display_name=rec["display_name"],
        memory_bytes=rec["memory_gib"] * GiB,
        supports_bf16=rec["supports_bf16"],
        fp16_tflops=rec["fp16_tflops"],
        bf16_tflops=rec["bf16_tflops"],
        memory_bandwidth_bytes_per_s=rec["memory_bandwidth_gb_per_s"] * GB,
        interconnect=rec["interconnect"],
        interconnect_bytes_per_s=rec["interconnect_gb_per_s"] * GB,
        source=rec["source"],
        reported_total_mib=rec.get("reported_total_mib"),
        fp8_tflops=rec.get("fp8_tflops"),
        int8_tops=rec.get("int8_tops"),
        torch_total_mib=rec.get("torch_total_mib"),
        torch_total_source=rec.get("torch_total_source", ""),
        compute_capability=rec.get("compute_capability"),
    )


_RAW = _read_catalog()
_CATALOG: tuple[GPU, ...] = tuple(_gpu_from_record(r) for r in _RAW["gpus"])
_BY_NAME: dict[str, GPU] = {g.name: g for g in _CATALOG}
# Extra accepted spellings, already normalised (see _normalise), each record's "aliases".
_ALIASES: dict[str, str] = {a: r["name"] for r in _RAW["gpus"] for a in r.get("aliases", ())}


def _normalise(name: str) -> str:
    s = name.strip().lower()
    s = re.sub(r"[\s_/]+", "-", s)
    s = re.sub(r"^(nvidia-)?(tesla-|geforce-)?", "", s)
    # Our data-centre entries are the SXM boards; accept the form factor in the name.
    s = re.sub(r"-sxm\d?(?=-|$)", "", s)
    if not re.match(r"a10g(-|$)", s):  # the A10G is a name, not "A10 GB"
        s = re.sub(r"(\d)g(?=-|$)", r"\1gb", s)  # "32g" -> "32gb"
    s = re.sub(r"-+", "-", s).strip("-")
    return s


def get_gpu(name: str) -> GPU:
    """Look up a GPU by catalog name or alias, case-insensitively.

    >>> get_gpu("V100 32GB").memory_bytes == 32 * 2**30
    True

    A ``GPU`` instance is returned unchanged, so callers may accept either.
    Raises ``ValueError`` for unknown names (listing close matches and every accepted
    name) and for non-string input.
    """
    if isinstance(name, GPU):
        return name
    if not isinstance(name, str):
        raise ValueError(f"GPU name must be a string, got {type(name).__name__}: {name!r}")
    key = _normalise(name)
    key = _ALIASES.get(key, key)
    if key in _BY_NAME:
        return _BY_NAME[key]
    candidates = sorted(set(_BY_NAME) | set(_ALIASES))
    close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.5)
    close_canonical = list(dict.fromkeys(_ALIASES.get(c, c) for c in close))
    hint = f" Did you mean: {', '.join(close_canonical)}?" if close_canonical else ""
    raise ValueError(
        f"Unknown GPU {name!r}.{hint} Accepted names: {', '.join(_BY_NAME)} "
        f"(aliases: {', '.join(sorted(_ALIASES))})."
    )


def list_gpus() -> list[GPU]:
    """All catalog entries, in catalog order (oldest data-centre parts first)."""
    return list(_CATALOG)


# What a process can use of the card: torch's total; the CUDA context takes its share before any tensor.
DEFAULT_CUDA_CONTEXT_BYTES = 512 * 2**20


def usable_bytes(gpu: GPU) -> int:
    """What torch.cuda.get_device_properties().total_memory reports (the "total capacity" of
    PyTorch's out-of-memory message; sourced per card in memlib.hardware.gpus), else nvidia-smi's total,
    else the nominal capacity."""
    return gpu.torch_total_bytes or gpu.reported_total_bytes or gpu.memory_bytes


# Host link of each part, one direction, nominal: each record's "host_link" names a row of the data
# file's "host_links" table (PCIe 3.0 x16 = 16 GB/s, 4.0 x16 = 32 GB/s, 5.0 x16 = 64 GB/s, PCI-SIG base
# specifications; a GB200's GPU reaches its Grace CPU over NVLink-C2C, 450 GB/s each way), with sources.
HOST_LINK: dict[str, tuple[str, int]] = {
    r["name"]: (r["host_link"], _RAW["host_links"][r["host_link"]]["gb_per_s_per_direction"] * GB)
    for r in _RAW["gpus"]
}


_NAMING_FIELDS = ("name", "display_name", "source", "torch_total_source")


def _host_link(gpu: GPU) -> tuple[str, int]:
    """HOST_LINK of the GPU's name; for a user-defined GPU (e.g. dataclasses.replace of a catalog entry
    under a new name), that of the catalog entry it equals in every figure; else a clear error."""
    if gpu.name in HOST_LINK:
        return HOST_LINK[gpu.name]
    figures = [f.name for f in fields(GPU) if f.name not in (*_NAMING_FIELDS, "compute_capability")]  # may be unset
    for known in _CATALOG:
        if all(getattr(known, f) == getattr(gpu, f) for f in figures) and known.name in HOST_LINK:
            return HOST_LINK[known.name]
    raise ValueError(f"GPU {gpu.name!r} is not in the catalog and matches no catalog entry's figures, so its "
                     "host link (PCIe generation) is unknown; offload timing needs it: build it with "
                     "dataclasses.replace of the catalog GPU it is (same figures) or add it to HOST_LINK")


# --- throughput a GPU and its links offer: what the serving and training times and the cost of a run use --
# Upper bounds that only catch typos (a rate in bits, a TFLOP/s figure in FLOP/s): a B200 is
# ~2.3e3 dense bf16 TFLOP/s and NVLink 5 moves 9e11 B/s; nothing here is within 1000x of them.
MAX_PEAK_TFLOPS = 1e6


PRECISIONS = ("bf16", "fp16")  # the dense tensor peak the MFU is a fraction of


def peak_flops(gpu, precision: str = "bf16", peak_tflops: float | None = None) -> float:
    """Dense 16-bit tensor peak of one GPU in FLOP/s (the catalog's, or peak_tflops)."""
    if peak_tflops is not None:
        return positive_float("peak_tflops", peak_tflops, maximum=MAX_PEAK_TFLOPS, unit=" TFLOP/s") * 1e12
    g = get_gpu(gpu)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)} (the tensor peak the MFU refers to), "
                         f"got {show(precision)}; for another format pass peak_tflops=")
    tflops = g.bf16_tflops if precision == "bf16" else g.fp16_tflops
    if tflops is None:
        raise ValueError(f"{g.name} has no bf16 tensor cores; use precision='fp16' or pass peak_tflops=")
    return tflops * 1e12


# Links between GPUs, one direction, nominal line rate (bits / 8); sources in each row. Within a node the GPU
# catalog's interconnect (GPU.interconnect_bytes_per_s_per_direction: NVLink 4 450 GB/s, PCIe 4.0 x16 32 GB/s).
NETWORK_LINKS: dict[str, tuple[float, str]] = {
    "10GbE": (10e9 / 8, "IEEE 802.3ae-2002 (10 Gb/s Ethernet)"),
    "25GbE": (25e9 / 8, "IEEE 802.3by-2016 (25 Gb/s Ethernet)"),
    "100GbE": (100e9 / 8, "IEEE 802.3ba-2010 (100 Gb/s Ethernet)"),
    "400GbE": (400e9 / 8, "IEEE 802.3bs-2017 (400 Gb/s Ethernet)"),
    "IB HDR": (200e9 / 8, "InfiniBand HDR, 200 Gb/s per port (NVIDIA ConnectX-6 datasheet); one per GPU in a "
                          "DGX A100 (8 x 200 Gb/s compute ports, DGX A100 user guide)"),
    "IB NDR": (400e9 / 8, "InfiniBand NDR, 400 Gb/s per port (NVIDIA ConnectX-7 datasheet); one per GPU in a "
                          "DGX H100 (8 x 400 Gb/s, DGX H100 user guide)"),
}


def link_bytes_per_s(link: str) -> float:
    """One direction's bytes/s of a network link in NETWORK_LINKS ("10GbE", "IB NDR", ...), or of a GPU's own
    interconnect when `link` names a catalog GPU ("h100-80gb": NVLink 4, 450 GB/s each way)."""
    if not isinstance(link, str):
        raise ValueError(f"link must be a name: one of {sorted(NETWORK_LINKS)} or a catalog GPU name, got "
                         f"{show(link)} ({type(link).__name__})")
    if link in NETWORK_LINKS:
        return NETWORK_LINKS[link][0]
    try:
        return float(get_gpu(link).interconnect_bytes_per_s_per_direction)
    except ValueError:
        raise ValueError(f"unknown link {link!r}: one of {sorted(NETWORK_LINKS)} or a catalog GPU name "
                         "(its NVLink/PCIe interconnect)") from None
