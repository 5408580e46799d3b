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
import re
from dataclasses import dataclass

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

    def __post_init__(self) -> None:
        if not isinstance(self.memory_bytes, int) or self.memory_bytes <= 0:
            raise ValueError(f"{self.name}: memory_bytes must be a positive int")
        if self.supports_bf16 != (self.bf16_tflops is not None):
            raise ValueError(f"{self.name}: bf16_tflops must be None exactly when bf16 is unsupported")

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
    def memory_bandwidth_gb_per_s(self) -> float:
        return self.memory_bandwidth_bytes_per_s / GB

    @property
    def interconnect_gb_per_s(self) -> float:
        """Interconnect bandwidth in GB/s, bidirectional total (vendor's figure)."""
        return self.interconnect_bytes_per_s / GB

    @property
    def host_link_bytes_per_s(self) -> int:
        """GPU<->CPU link, one direction (what offload traffic crosses); see HOST_LINK."""
        return HOST_LINK[self.name][1]

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
        lines = [
            f"{self.display_name} [{self.name}]",
            f"  memory:           {mem}",
            f"  bf16 support:     {'yes' if self.supports_bf16 else 'no'}",
            f"  fp16 tensor core: {tf(self.fp16_tflops)} (dense)",
            f"  bf16 tensor core: {tf(self.bf16_tflops)} (dense)",
            f"  memory bandwidth: {self.memory_bandwidth_gb_per_s:,.0f} GB/s",
            f"  interconnect:     {self.interconnect}, {self.interconnect_gb_per_s:,.0f} GB/s "
            f"per GPU (bidirectional)",
            f"  source:           {self.source}",
        ]
        return "\n".join(lines)


# -- sources -------------------------------------------------------------------------------
_V100 = (
    "NVIDIA V100 Tensor Core GPU datasheet (Jan 2020), SXM2 column: 125 TFLOPS tensor, "
    "900 GB/s, NVLink 300 GB/s; https://images.nvidia.com/content/technologies/volta/pdf/"
    "volta-v100-datasheet-update-us-1165301-r5.pdf"
)
_A100 = (
    "NVIDIA A100 Tensor Core GPU datasheet (r4), SXM columns: BF16/FP16 tensor 312 TFLOPS "
    "(624 with sparsity), 40GB HBM2 1,555 GB/s, 80GB HBM2e 2,039 GB/s, NVLink 600 GB/s; "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
_H100 = (
    "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: BF16/FP16 tensor 1,979 TFLOPS "
    "with sparsity (989 dense, H100 architecture whitepaper: 989.4), 3.35 TB/s, NVLink "
    "900 GB/s; https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
)
_H200 = (
    "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: 141GB HBM3e, 4.8 TB/s, "
    "BF16/FP16 tensor 1,979 TFLOPS with sparsity (989 dense, same GH100 compute as H100), "
    "NVLink 900 GB/s; https://www.nvidia.com/en-us/data-center/h200/"
)
_GA102 = (
    "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0, Table 9 / Appendix A-C "
    "(peak FP16/BF16 tensor TFLOPS with FP32 accumulate, dense); "
    "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
)
_ADA = (
    "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A (GeForce RTX 4090: peak "
    "FP16/BF16 tensor TFLOPS with FP32 accumulate 165.2 dense / 330.4 sparse, 1,008 GB/s); "
    "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/"
    "nvidia-ada-gpu-architecture.pdf"
)
_SMI = (
    "nvidia-smi memory.total as recorded in public logs "
    "(e.g. modal-labs/modal-client PR #2797 for H100/A100/A10/L4/T4)"
)

_CATALOG: tuple[GPU, ...] = (
    GPU(
        name="v100-16gb",
        display_name="NVIDIA V100 SXM2 16GB",
        memory_bytes=16 * GiB,
        supports_bf16=False,
        fp16_tflops=125.0,
        bf16_tflops=None,
        memory_bandwidth_bytes_per_s=900 * GB,
        interconnect="NVLink 2",
        interconnect_bytes_per_s=300 * GB,
        source=_V100,
        reported_total_mib=16160,  # torch.cuda.get_device_properties: total_memory=16160MB
    ),
    GPU(
        name="v100-32gb",
        display_name="NVIDIA V100 SXM2 32GB",
        memory_bytes=32 * GiB,
        supports_bf16=False,
        fp16_tflops=125.0,
        bf16_tflops=None,
        memory_bandwidth_bytes_per_s=900 * GB,
        interconnect="NVLink 2",
        interconnect_bytes_per_s=300 * GB,
        source=_V100,
        reported_total_mib=32510,  # nvidia-smi on V100-SXM2-32GB: "32510MiB"
    ),
    GPU(
        name="a100-40gb",
        display_name="NVIDIA A100 SXM4 40GB",
        memory_bytes=40 * GiB,
        supports_bf16=True,
        fp16_tflops=312.0,
        bf16_tflops=312.0,
        memory_bandwidth_bytes_per_s=1555 * GB,
        interconnect="NVLink 3",
        interconnect_bytes_per_s=600 * GB,
        source=_A100,
        reported_total_mib=40960,
    ),
    GPU(
        name="a100-80gb",
        display_name="NVIDIA A100 SXM4 80GB",
        memory_bytes=80 * GiB,
        supports_bf16=True,
        fp16_tflops=312.0,
        bf16_tflops=312.0,
        memory_bandwidth_bytes_per_s=2039 * GB,
        interconnect="NVLink 3",
        interconnect_bytes_per_s=600 * GB,
        source=_A100,
        reported_total_mib=81920,
    ),
    GPU(
        name="h100-80gb",
        display_name="NVIDIA H100 SXM5 80GB",
        memory_bytes=80 * GiB,
        supports_bf16=True,
        fp16_tflops=989.4,
        bf16_tflops=989.4,
        memory_bandwidth_bytes_per_s=3350 * GB,
        interconnect="NVLink 4",
        interconnect_bytes_per_s=900 * GB,
        source=_H100,
        reported_total_mib=81559,
    ),
    GPU(
        name="h200",
        display_name="NVIDIA H200 SXM 141GB",
        # 141 GiB, not 141e9 bytes: the device reports 143771 MiB (140.4 GiB), which is
        # more than 141e9 bytes (131.3 GiB) could hold. See the module docstring.
        memory_bytes=141 * GiB,
        supports_bf16=True,
        fp16_tflops=989.4,
        bf16_tflops=989.4,
        memory_bandwidth_bytes_per_s=4800 * GB,
        interconnect="NVLink 4",
        interconnect_bytes_per_s=900 * GB,
        source=_H200,
        reported_total_mib=143771,  # nvidia-smi on H200 SXM: "143771MiB"
    ),
    GPU(
        name="rtx-3080-12gb",
        display_name="NVIDIA GeForce RTX 3080 12GB",
        memory_bytes=12 * GiB,
        supports_bf16=True,
        # Not in the whitepaper (launched 2022); derived the way the whitepaper's RTX 3080
        # figure (59.5) is: 280 tensor cores * 1.71 GHz boost * 128 FLOP/clk (GeForce,
        # FP32 accumulate) = 61.3 TFLOP/s.
        fp16_tflops=61.3,
        bf16_tflops=61.3,
        memory_bandwidth_bytes_per_s=912 * GB,  # 384-bit GDDR6X at 19 Gbps
        interconnect="PCIe 4.0 x16",
        interconnect_bytes_per_s=64 * GB,
        source=_GA102 + "; RTX 3080 12GB: 8960 CUDA cores, 1.71 GHz boost, 912 GB/s (NVIDIA spec page)",
    ),
    GPU(
        name="rtx-3090",
        display_name="NVIDIA GeForce RTX 3090 24GB",
        memory_bytes=24 * GiB,
        supports_bf16=True,
        fp16_tflops=71.0,  # 142 with FP16 accumulate; 71 with FP32 accumulate (dense)
        bf16_tflops=71.0,
        memory_bandwidth_bytes_per_s=936 * GB,
        interconnect="PCIe 4.0 x16",  # an NVLink bridge (112.5 GB/s) exists for pairs
        interconnect_bytes_per_s=64 * GB,
        source=_GA102,
    ),
    GPU(
        name="rtx-4090",
        display_name="NVIDIA GeForce RTX 4090 24GB",
        memory_bytes=24 * GiB,
        supports_bf16=True,
        fp16_tflops=165.2,  # 330.3 with FP16 accumulate
        bf16_tflops=165.2,
        memory_bandwidth_bytes_per_s=1008 * GB,
        interconnect="PCIe 4.0 x16",  # no NVLink on Ada GeForce
        interconnect_bytes_per_s=64 * GB,
        source=_ADA,
    ),
    GPU(
        name="a10",
        display_name="NVIDIA A10 24GB",
        memory_bytes=24 * GiB,
        supports_bf16=True,
        fp16_tflops=125.0,
        bf16_tflops=125.0,
        memory_bandwidth_bytes_per_s=600 * GB,
        interconnect="PCIe 4.0 x16",
        interconnect_bytes_per_s=64 * GB,
        source=(
            "NVIDIA A10 Tensor Core GPU datasheet: BF16/FP16 tensor 125 TFLOPS (250 with "
            "sparsity), 24GB GDDR6, 600 GB/s, PCIe Gen4 64 GB/s; "
            "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"
        ),
        reported_total_mib=23028,
    ),
    GPU(
        name="l4",
        display_name="NVIDIA L4 24GB",
        memory_bytes=24 * GiB,
        supports_bf16=True,
        fp16_tflops=121.0,  # datasheet prints 242 "with sparsity"
        bf16_tflops=121.0,
        memory_bandwidth_bytes_per_s=300 * GB,
        interconnect="PCIe 4.0 x16",
        interconnect_bytes_per_s=64 * GB,
        source=(
            "NVIDIA L4 Tensor Core GPU datasheet: BF16/FP16 tensor 242 TFLOPS with sparsity "
            "(121 dense), 24GB GDDR6, 300 GB/s, PCIe Gen4 x16 64 GB/s; "
            "https://www.nvidia.com/en-us/data-center/l4/"
        ),
        reported_total_mib=23034,
    ),
    GPU(
        name="t4",
        display_name="NVIDIA T4 16GB",
        memory_bytes=16 * GiB,
        supports_bf16=False,
        fp16_tflops=65.0,  # "Mixed Precision (FP16/FP32) 65 TFLOPS"
        bf16_tflops=None,
        memory_bandwidth_bytes_per_s=320 * GB,
        interconnect="PCIe 3.0 x16",
        interconnect_bytes_per_s=32 * GB,
        source=(
            "NVIDIA T4 Tensor Core GPU datasheet: FP16/FP32 mixed precision 65 TFLOPS, "
            "16GB GDDR6, 320+ GB/s, PCIe Gen3 x16 32 GB/s; "
            "https://www.nvidia.com/en-us/data-center/tesla-t4/"
        ),
        reported_total_mib=15360,
    ),
    GPU(
        name="rtx-a6000",
        display_name="NVIDIA RTX A6000 48GB",
        memory_bytes=48 * GiB,
        supports_bf16=True,
        fp16_tflops=154.8,  # whitepaper Appendix C; datasheet's 309.7 is with sparsity
        bf16_tflops=154.8,
        memory_bandwidth_bytes_per_s=768 * GB,
        interconnect="PCIe 4.0 x16",  # an NVLink bridge (112.5 GB/s) exists for pairs
        interconnect_bytes_per_s=64 * GB,
        source=_GA102 + "; RTX A6000 datasheet: 48GB GDDR6, 768 GB/s, tensor 309.7 TFLOPS with sparsity",
    ),
    GPU(
        name="a40",
        display_name="NVIDIA A40 48GB",
        memory_bytes=48 * GiB,
        supports_bf16=True,
        fp16_tflops=149.7,
        bf16_tflops=149.7,
        memory_bandwidth_bytes_per_s=696 * GB,
        interconnect="PCIe 4.0 x16",  # an NVLink bridge (112.5 GB/s) exists for pairs
        interconnect_bytes_per_s=64 * GB,
        source=(
            _GA102 + "; NVIDIA A40 datasheet: 48GB GDDR6, 696 GB/s, BF16/FP16 tensor 149.7 "
            "TFLOPS (299.4 with sparsity), PCIe Gen4 64 GB/s"
        ),
    ),
)

_BY_NAME: dict[str, GPU] = {g.name: g for g in _CATALOG}

# Extra accepted spellings, already normalised (see _normalise). Ambiguous short names
# resolve to the variant the interview seeds mean: "v100" is the 32GB part, "a100" the
# 80GB part.
_ALIASES: dict[str, str] = {
    "v100": "v100-32gb",
    "v100-16": "v100-16gb",
    "v100-32": "v100-32gb",
    "a100": "a100-80gb",
    "a100-40": "a100-40gb",
    "a100-80": "a100-80gb",
    "h100": "h100-80gb",
    "h100-80": "h100-80gb",
    "h200-141gb": "h200",
    "h200-141": "h200",
    "3080-12gb": "rtx-3080-12gb",
    "rtx3080-12gb": "rtx-3080-12gb",
    "3090": "rtx-3090",
    "rtx3090": "rtx-3090",
    "rtx-3090-24gb": "rtx-3090",
    "4090": "rtx-4090",
    "rtx4090": "rtx-4090",
    "rtx-4090-24gb": "rtx-4090",
    "a10-24gb": "a10",
    "l4-24gb": "l4",
    "t4-16gb": "t4",
    "a6000": "rtx-a6000",
    "rtx-a6000-48gb": "rtx-a6000",
    "a6000-48gb": "rtx-a6000",
    "a40-48gb": "a40",
}


def _normalise(name: str) -> str:
    s = name.strip().lower()
    s = re.sub(r"[\s_/]+", "-", s)
    s = re.sub(r"^(nvidia-)?(tesla-|geforce-)?", "", s)
    # Our data-centre entries are the SXM boards; accept the form factor in the name.
    s = re.sub(r"-sxm\d?(?=-|$)", "", s)
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


# Host link of each part, one direction, nominal: PCIe 3.0 x16 = 16 GB/s, 4.0 x16 = 32 GB/s,
# 5.0 x16 = 64 GB/s (PCI-SIG base specifications; 128b/130b encoding makes usable ~1.5% less).
# SXM modules reach the host through PCIe too: V100 SXM2 gen 3, A100 SXM4 gen 4, H100/H200 SXM5
# gen 5 (NVIDIA DGX-1/A100/H100 system guides); T4 is gen 3; the RTX 3080/3090/4090, A10,
# A40, RTX A6000 and L4 are gen 4.
_PCIE3, _PCIE4, _PCIE5 = ("PCIe 3.0 x16", 16 * GB), ("PCIe 4.0 x16", 32 * GB), ("PCIe 5.0 x16", 64 * GB)
HOST_LINK: dict[str, tuple[str, int]] = {
    "v100-16gb": _PCIE3, "v100-32gb": _PCIE3, "t4": _PCIE3,
    "a100-40gb": _PCIE4, "a100-80gb": _PCIE4, "rtx-3080-12gb": _PCIE4, "rtx-3090": _PCIE4, "rtx-4090": _PCIE4,
    "a10": _PCIE4, "l4": _PCIE4, "rtx-a6000": _PCIE4, "a40": _PCIE4,
    "h100-80gb": _PCIE5, "h200": _PCIE5,
}
