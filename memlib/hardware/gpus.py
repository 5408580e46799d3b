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
from dataclasses import dataclass, fields

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

# torch_total_mib: what torch.cuda.get_device_properties(i).total_memory reports, in MiB -- the
# smallest public record that names the card, on the card's default ECC setting. torch prints it
# floored to MiB ("total_memory=81050MB", torch/csrc/cuda/Module.cpp); OOM messages print the same
# cudaMemGetInfo total rounded to 0.01 GiB ("79.15 GiB total capacity", c10/cuda/
# CUDACachingAllocator.cpp format_size), stored here as the nearest MiB. Newer drivers keep back a
# few tens of MiB more, so each source names the record and what else was seen. Sources start with
# "exact:", "rounded:" (rounded from X GiB) or "estimated:" (the arithmetic written out).

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
        torch_total_mib=16160,
        torch_total_source=(
            "exact: ultralytics/yolov5 tutorial.ipynb at 17ac94b (Colab, torch 1.7.0): "
            "\"_CudaDeviceProperties(name='Tesla V100-SXM2-16GB', major=7, minor=0, total_memory=16160MB, "
            '...)"; same as nvidia-smi on Volta'
        ),
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
        torch_total_mib=32502,
        torch_total_source=(
            "rounded: liucongg/ChatGLM-Finetuning issue #73 (V100 32GB): 'GPU 0; 31.74 GiB total "
            "capacity' (rounded from 31.74 GiB); 2 agree (haotian-liu/LLaVA #812); 31.75 GiB on older "
            "drivers (deepspeedai/DeepSpeed #3312)"
        ),
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
        int8_tops=624.0,
        torch_total_mib=40339,
        torch_total_source=(
            "exact: bottlerocket-os/bottlerocket PR #3873, deviceQuery on NVIDIA A100-SXM4-40GB, driver "
            "12.2: '40339 MBytes (42298834944 bytes)' (totalGlobalMem, the field torch reads); older "
            "drivers: 39.59 GiB (raoyongming/DenseCLIP #52)"
        ),
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
        int8_tops=624.0,
        torch_total_mib=81051,
        torch_total_source=(
            "exact: ultralytics/ultralytics issue #22877 (torch 2.9.1, CUDA 12.8): 'CUDA:0 (NVIDIA "
            "A100-SXM4-80GB, 81051MiB)' (Ultralytics prints total_memory / 2**20); older drivers: "
            "79.25-79.35 GiB (levihsu/OOTDiffusion #235)"
        ),
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
        fp8_tflops=1978.9,
        int8_tops=1978.9,
        torch_total_mib=81009,
        torch_total_source=(
            "rounded: vllm-project/vllm issue #27508 (nvidia-smi there: NVIDIA H100 80GB HBM3, driver "
            "535.247.01): 'GPU 0 has a total capacity of 79.11 GiB' (rounded from 79.11 GiB); other "
            "drivers print up to total_memory=81090MB"
        ),
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
        fp8_tflops=1978.9,
        int8_tops=1978.9,
        torch_total_mib=143156,
        torch_total_source=(
            "exact: ai-bot-pro/achatbot deploy/modal/src/llm/vllm/vlm/skywork_r1v.py at 859e216: "
            "\"_CudaDeviceProperties(name='NVIDIA H200', major=9, minor=0, total_memory=143156MB, ...)\"; 2 "
            "agree (stas00/ml-engineering debug/pytorch.md: 139.80 GiB)"
        ),
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
        torch_total_mib=12117,
        torch_total_source=(
            "exact: henryzhuhr/deep-object-detect-track scripts/export-yolov5.sh at 628c4b1: 'CUDA:0 "
            "(NVIDIA GeForce RTX 3080, 12117MiB)' (YOLOv5 prints total_memory / 2**20; over 10 GiB, so "
            "the 12GB board); Linux"
        ),
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
        int8_tops=284.0,
        reported_total_mib=24576,  # nvidia-smi: 'NVIDIA GeForce RTX 3090 | 24576 MiB' (noonghunna/club-3090 #445)
        torch_total_mib=24154,
        torch_total_source=(
            "rounded: jafermarq/project-big-yes README.md, Unsloth banner 'NVIDIA GeForce RTX 3090 ... "
            "Max memory: 23.588 GB' (GiB, torch 2.7.0) (rounded from 23.588 GiB); older drivers up to "
            "24268 MiB"
        ),
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
        fp8_tflops=165.2,  # FP32 accumulate, like bf16 (330.3 with FP16 accumulate)
        int8_tops=660.6,
        reported_total_mib=24564,  # nvidia-smi: 'NVIDIA GeForce RTX 4090 ... 24564MiB' (RLinf/RLinf #255)
        torch_total_mib=24177,
        torch_total_source=(
            "rounded: pinokiofactory/flux-webui issue #11 (RTX 4090): 'GPU 0 has a total capacity of "
            "23.61 GiB' (rounded from 23.61 GiB); 3 agree within 40 MiB (unslothai/unsloth PR #2039: "
            "23.621 GiB); Linux, Windows shows ~23.99 GiB"
        ),
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
        int8_tops=250.0,
        torch_total_mib=22518,
        torch_total_source=(
            "rounded: zai-org/CogVLM issue #236 (Lambda Labs A10): 'GPU 0 has a total capacty of 21.99 "
            "GiB' (rounded from 21.99 GiB); ECC on, the default; ECC off gives 23.70 GiB "
            "(tatsu-lab/stanford_alpaca #76)"
        ),
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
        fp8_tflops=242.0,
        int8_tops=242.0,
        torch_total_mib=22559,
        torch_total_source=(
            "rounded: ArcInstitute/evo2 issue #190 (L4): 'GPU 0 has a total capacity of 22.03 GiB' "
            "(rounded from 22.03 GiB); ECC on; older (Colab) drivers: 22.161 GiB (unslothai/notebooks)"
        ),
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
        int8_tops=130.0,
        torch_total_mib=14913,
        torch_total_source=(
            "rounded: unslothai/notebooks nb/Gemma4_(E2B)-Text.ipynb at bdda2ef: 'GPU = Tesla T4. Max "
            "memory = 14.563 GB.' (round(total_memory / 1024**3, 3)) (rounded from 14.563 GiB); 2 agree "
            "(Zheng-Chong/CatVTON #133: 14.56 GiB); ECC on"
        ),
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
        int8_tops=309.7,
        torch_total_mib=48670,
        torch_total_source=(
            "exact: ultralytics/ultralytics issue #19084 (torch 2.3, CUDA 12.4): 'CUDA:0 (NVIDIA RTX "
            "A6000, 48670MiB)'; ECC off, the factory setting (ECC on: about 44.43 GiB)"
        ),
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
        int8_tops=299.3,
        torch_total_mib=45599,
        torch_total_source=(
            "estimated: the L40S's record (Wan-Video/Wan2.1 #205, 44.53 GiB), the same 48 GB GDDR6 with ECC "
            "on by default: 45599 - 0 = 45599 MiB; an Unsloth banner in a script whose repository the search "
            "index does not name shows 44.549 GiB (45618 MiB) on an A40, 19 MiB more"
        ),
    ),
    # --- added for issue 10 -------------------------------------------------------------
    GPU(
        name="l40s",
        display_name="NVIDIA L40S 48GB",
        memory_bytes=48 * GiB,
        supports_bf16=True,
        fp16_tflops=362.05,
        bf16_tflops=362.05,
        memory_bandwidth_bytes_per_s=864 * GB,
        interconnect="PCIe 4.0 x16",  # no NVLink
        interconnect_bytes_per_s=64 * GB,
        source=(
            "NVIDIA L40S datasheet: 48GB GDDR6 with ECC, 864 GB/s, BF16/FP16 tensor 362.05 | 733 "
            "TFLOPS (dense | sparse), FP8 733 | 1,466, INT8 733 | 1,466 TOPS, PCIe Gen4 x16 64 GB/s; "
            "https://www.nvidia.com/en-us/data-center/l40s/"
        ),
        reported_total_mib=46068,  # nvidia-smi: "NVIDIA L40S, 46068 MiB" (ECC keeps 1/16)
        fp8_tflops=733.0,
        int8_tops=733.0,
        torch_total_mib=45599,
        torch_total_source=(
            "rounded: Wan-Video/Wan2.1 issue #205 (L40S 48GB): 'GPU 0 has a total capacity of 44.53 GiB' "
            "(rounded from 44.53 GiB); ECC on (nvidia-smi 46068 MiB)"
        ),
    ),
    GPU(
        name="h100-pcie",
        display_name="NVIDIA H100 PCIe 80GB",
        memory_bytes=80 * GiB,
        supports_bf16=True,
        fp16_tflops=756.0,
        bf16_tflops=756.0,
        memory_bandwidth_bytes_per_s=2000 * GB,
        interconnect="NVLink bridge (pairs)",
        interconnect_bytes_per_s=600 * GB,
        source=(
            "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column: 80GB HBM2e, 2TB/s, BF16/FP16 "
            "tensor 1,513 TFLOPS with sparsity (756 dense), FP8 and INT8 3,026 with sparsity, NVLink "
            "bridge 600 GB/s, PCIe Gen5 128 GB/s; "
            "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
        ),
        reported_total_mib=81559,  # nvidia-smi: "NVIDIA H100 PCIe, 81559 MiB"
        fp8_tflops=1513.0,
        int8_tops=1513.0,
        torch_total_mib=81009,
        torch_total_source=(
            "estimated: the H100 SXM's record (vllm-project/vllm #27508, 79.11 GiB), the same 80 GB of HBM: "
            "81009 - 0 = 81009 MiB; a torch print of an H100 PCIe in a snippet whose repository the search "
            "index does not name shows total_memory=81008MB"
        ),
    ),
    GPU(
        name="h100-nvl",
        display_name="NVIDIA H100 NVL 94GB",
        memory_bytes=94 * GiB,
        supports_bf16=True,
        fp16_tflops=835.5,
        bf16_tflops=835.5,
        memory_bandwidth_bytes_per_s=3900 * GB,
        interconnect="NVLink bridge (pairs)",
        interconnect_bytes_per_s=600 * GB,
        source=(
            "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column: 94GB HBM3, 3.9TB/s, BF16/FP16 "
            "tensor 1,671 TFLOPS with sparsity (835.5 dense), FP8 and INT8 3,341 with sparsity, NVLink "
            "600 GB/s, PCIe Gen5 128 GB/s; "
            "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
        ),
        reported_total_mib=95830,  # nvidia-smi: "NVIDIA H100 NVL, 95830 MiB"
        fp8_tflops=1670.5,
        int8_tops=1670.5,
        torch_total_mib=95232,
        torch_total_source=(
            "rounded: ali-vilab/VACE issue #56 (H100 NVL 94GB on RunPod): 'GPU 0 has a total capacity of "
            "93.00 GiB' (rounded from 93.00 GiB)"
        ),
    ),
    GPU(
        name="h20",
        display_name="NVIDIA H20 SXM 96GB",
        memory_bytes=96 * GiB,
        supports_bf16=True,
        fp16_tflops=148.0,
        bf16_tflops=148.0,
        memory_bandwidth_bytes_per_s=4000 * GB,
        interconnect="NVLink 4",
        interconnect_bytes_per_s=900 * GB,
        source=(
            "NVIDIA H20 (HGX H20) specification as published by NVIDIA's server partners: 96GB HBM3, "
            "4.0 TB/s, FP16/BF16 tensor 148 TFLOPS, FP8 and INT8 296 (dense), NVLink 900 GB/s, PCIe "
            "Gen5 x16; no public NVIDIA datasheet"
        ),
        reported_total_mib=97871,  # nvidia-smi: "NVIDIA H20, 97871 MiB"
        fp8_tflops=296.0,
        int8_tops=296.0,
        torch_total_mib=97280,
        torch_total_source=(
            "rounded: modelscope/DiffSynth-Studio issue #1238 (H20 96G): 'has a total capacity of 95.00 "
            "GiB' (rounded from 95.00 GiB); 2 agree (a print of total_memory=97285MB)"
        ),
    ),
    GPU(
        name="a10g",
        display_name="NVIDIA A10G 24GB (AWS G5)",
        memory_bytes=24 * GiB,
        supports_bf16=True,
        fp16_tflops=70.0,
        bf16_tflops=70.0,
        memory_bandwidth_bytes_per_s=600 * GB,
        interconnect="PCIe 4.0 x16",
        interconnect_bytes_per_s=64 * GB,
        source=(
            "AWS-only variant of the A10; NVIDIA publishes no datasheet. 24GB GDDR6, 600 GB/s, "
            "tensor 70 TFLOPS FP16/BF16 dense (the A10: 125): Baseten, 'NVIDIA A10 vs A10G for ML "
            "model inference', spec table; https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-"
            "inference/"
        ),
        reported_total_mib=23028,  # nvidia-smi: "NVIDIA A10G, 23028 MiB" (ECC keeps 1/16)
        int8_tops=140.0,  # derived: Ampere's int8 tensor rate is twice its fp16 rate
        torch_total_mib=22513,
        torch_total_source=(
            "exact: ultralytics/ultralytics issue #7673 (AWS, CUDA 12.1): 'CUDA:0 (NVIDIA A10G, "
            "22513MiB)'; ECC on; older drivers up to 22723 MiB (ultralytics/ultralytics #5359)"
        ),
    ),
    GPU(
        name="b200",
        display_name="NVIDIA B200 SXM 180GB (HGX)",
        memory_bytes=180 * GiB,
        supports_bf16=True,
        fp16_tflops=2250.0,
        bf16_tflops=2250.0,
        memory_bandwidth_bytes_per_s=8000 * GB,
        interconnect="NVLink 5",
        interconnect_bytes_per_s=1800 * GB,
        source=(
            "NVIDIA HGX B200 specification (8 GPUs): 1,440GB HBM3e total (180GB each), 64 TB/s "
            "(8 TB/s each), FP16/BF16 tensor 36 PFLOPS and FP8 72 PFLOPS with sparsity (per GPU "
            "2.25 and 4.5 PFLOPS dense), NVLink 5 1.8 TB/s per GPU; https://www.nvidia.com/en-us/"
            "data-center/hgx/"
        ),
        reported_total_mib=183359,  # nvidia-smi: "NVIDIA B200, 183359 MiB"
        fp8_tflops=4500.0,
        int8_tops=4500.0,
        torch_total_mib=182630,
        torch_total_source=(
            "rounded: stas00/ml-engineering debug/pytorch.md (B200): 'GPU 0 has a total capacity of "
            "178.35 GiB' (rounded from 178.35 GiB); 3 agree (ai-bot-pro/achatbot: total_memory=182642MB; "
            "sgl-project/sglang #25225: 178.4 GiB)"
        ),
    ),
    GPU(
        name="gb200",
        display_name="NVIDIA GB200 (one Blackwell GPU of a Grace Blackwell superchip) 186GB",
        memory_bytes=186 * GiB,
        supports_bf16=True,
        fp16_tflops=2500.0,
        bf16_tflops=2500.0,
        memory_bandwidth_bytes_per_s=8000 * GB,
        interconnect="NVLink 5",
        interconnect_bytes_per_s=1800 * GB,
        source=(
            "NVIDIA GB200 NVL72 specification (72 GPUs): 13.4 TB HBM3e (186GB each), 576 TB/s (8 TB/s "
            "each), FP16/BF16 tensor 360 PFLOPS and FP8 720 PFLOPS with sparsity (per GPU 2.5 and 5 "
            "PFLOPS dense), NVLink 5 1.8 TB/s per GPU, NVLink-C2C to Grace 900 GB/s; "
            "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
        ),
        reported_total_mib=189471,  # nvidia-smi: "NVIDIA GB200, 189471 MiB"
        fp8_tflops=5000.0,
        int8_tops=5000.0,
        torch_total_mib=189471 - 729,
        torch_total_source=(
            "estimated: nvidia-smi's 189471 MiB less the 729 MiB torch sees below nvidia-smi on the B200 "
            "(183359 - 182630): 189471 - 729 = 188742; no public torch record found"
        ),
    ),
    GPU(
        name="mi300x",
        display_name="AMD Instinct MI300X 192GB",
        memory_bytes=192 * GiB,
        supports_bf16=True,
        fp16_tflops=1307.4,
        bf16_tflops=1307.4,
        memory_bandwidth_bytes_per_s=5300 * GB,
        interconnect="AMD Infinity Fabric",
        interconnect_bytes_per_s=896 * GB,
        source=(
            "AMD Instinct MI300X data sheet: 192GB HBM3, 5.3 TB/s, FP16/BF16 1,307.4 TFLOPS dense "
            "(2,614.9 with sparsity), FP8 2,614.9, INT8 2,614.9 TOPS dense, Infinity Fabric 896 GB/s "
            "peak aggregate (7 links x 128 GB/s), PCIe Gen5 x16 128 GB/s; "
            "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
        ),
        fp8_tflops=2614.9,
        int8_tops=2614.9,
        torch_total_mib=196592,
        torch_total_source=(
            "exact: ROCm/ROCm issue #4203 (torch 2.6, ROCm 6.2.4): \"_CudaDeviceProperties(name='AMD "
            "Instinct MI300X', ..., total_memory=196592MB, ...)\"; 2 agree"
        ),
    ),
    GPU(
        name="mi325x",
        display_name="AMD Instinct MI325X 256GB",
        memory_bytes=256 * GiB,
        supports_bf16=True,
        fp16_tflops=1307.4,
        bf16_tflops=1307.4,
        memory_bandwidth_bytes_per_s=6000 * GB,
        interconnect="AMD Infinity Fabric",
        interconnect_bytes_per_s=896 * GB,
        source=(
            "AMD Instinct MI325X data sheet: 256GB HBM3E, 6 TB/s, FP16/BF16 1,307.4 TFLOPS dense, FP8 "
            "2,614.9, INT8 2,614.9 TOPS dense (the MI300X's compute), Infinity Fabric 896 GB/s, PCIe "
            "Gen5 x16; https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"
        ),
        fp8_tflops=2614.9,
        int8_tops=2614.9,
        torch_total_mib=262144 - 16,
        torch_total_source=(
            "estimated: 256 GiB = 262144 MiB less the 16 MiB ROCm keeps on the MI300X (196608 - 196592): "
            "262144 - 16 = 262128; no public torch record found"
        ),
    ),
    GPU(
        name="rtx-5090",
        display_name="NVIDIA GeForce RTX 5090 32GB",
        memory_bytes=32 * GiB,
        supports_bf16=True,
        fp16_tflops=209.5,  # FP32 accumulate (419 with FP16 accumulate)
        bf16_tflops=209.5,
        memory_bandwidth_bytes_per_s=1792 * GB,
        interconnect="PCIe 5.0 x16",  # no NVLink on GeForce Blackwell
        interconnect_bytes_per_s=128 * GB,
        source=(
            "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix (GeForce RTX 5090: 32GB GDDR7, "
            "1,792 GB/s, FP16/BF16 tensor with FP32 accumulate 209.5 dense / 419 sparse, FP8 with FP32 "
            "accumulate 419 dense, INT8 838 TOPS dense), PCIe Gen5 x16; "
            "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-"
            "architecture.pdf"
        ),
        reported_total_mib=32607,  # nvidia-smi: "NVIDIA GeForce RTX 5090, 32607 MiB"
        fp8_tflops=419.0,
        int8_tops=838.0,
        torch_total_mib=32113,
        torch_total_source=(
            "rounded: TrajectoryCrafter/TrajectoryCrafter issue #20 (RTX 5090): 'GPU 0 has a total "
            "capacity of 31.36 GiB' (rounded from 31.36 GiB); 3 agree within 7 MiB "
            "(ultralytics/ultralytics PR #19833: 32120MiB)"
        ),
    ),
    GPU(
        name="rtx-6000-ada",
        display_name="NVIDIA RTX 6000 Ada Generation 48GB",
        memory_bytes=48 * GiB,
        supports_bf16=True,
        fp16_tflops=364.2,
        bf16_tflops=364.2,
        memory_bandwidth_bytes_per_s=960 * GB,
        interconnect="PCIe 4.0 x16",  # no NVLink
        interconnect_bytes_per_s=64 * GB,
        source=(
            _ADA + "; NVIDIA RTX 6000 Ada datasheet: 48GB GDDR6 with ECC, 960 GB/s, tensor 1,457 TFLOPS "
            "FP8 with sparsity (FP16/BF16 with FP32 accumulate 364.2 dense, FP8 728.5 dense, INT8 "
            "728.5 TOPS dense), PCIe Gen4 x16"
        ),
        reported_total_mib=49140,  # nvidia-smi: "NVIDIA RTX 6000 Ada Generation, 49140 MiB" (ECC off)
        fp8_tflops=728.5,
        int8_tops=728.5,
        torch_total_mib=45496,
        torch_total_source=(
            "rounded: DINGYANB/MTVCrafter #21, an RTX 6000 Ada Generation with ECC on, the lower (safer) of its "
            "two modes (rounded from 44.43 GiB); with ECC off a torch print whose repository the search index "
            "does not name shows 48622 MiB"
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
    "l40s-48gb": "l40s",
    "h100-pcie-80gb": "h100-pcie",
    "h100-nvl-94gb": "h100-nvl",
    "h20-96gb": "h20",
    "a10g-24gb": "a10g",
    "b200-180gb": "b200",
    "gb200-186gb": "gb200",
    "mi300x-192gb": "mi300x",
    "instinct-mi300x": "mi300x",
    "amd-instinct-mi300x": "mi300x",
    "mi325x-256gb": "mi325x",
    "instinct-mi325x": "mi325x",
    "amd-instinct-mi325x": "mi325x",
    "5090": "rtx-5090",
    "rtx5090": "rtx-5090",
    "rtx-5090-32gb": "rtx-5090",
    "rtx-6000-ada-generation": "rtx-6000-ada",
    "6000-ada": "rtx-6000-ada",
    "rtx6000-ada": "rtx-6000-ada",
}


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


# Host link of each part, one direction, nominal: PCIe 3.0 x16 = 16 GB/s, 4.0 x16 = 32 GB/s,
# 5.0 x16 = 64 GB/s (PCI-SIG base specifications; 128b/130b encoding makes usable ~1.5% less).
# SXM modules reach the host through PCIe too: V100 SXM2 gen 3, A100 SXM4 gen 4, H100/H200 SXM5
# gen 5 (NVIDIA DGX-1/A100/H100 system guides); T4 is gen 3; the RTX 3080/3090/4090, A10,
# A40, RTX A6000 and L4 are gen 4; so are the L40S, RTX 6000 Ada and A10G (datasheets; AWS G5). The
# H100 PCIe/NVL, H20, B200, MI300X, MI325X and RTX 5090 are gen 5 (datasheets in their sources). A
# GB200's GPU reaches its Grace CPU over NVLink-C2C: 900 GB/s bidirectional, 450 GB/s each way.
_PCIE3, _PCIE4, _PCIE5 = ("PCIe 3.0 x16", 16 * GB), ("PCIe 4.0 x16", 32 * GB), ("PCIe 5.0 x16", 64 * GB)
HOST_LINK: dict[str, tuple[str, int]] = {
    "v100-16gb": _PCIE3, "v100-32gb": _PCIE3, "t4": _PCIE3,
    "a100-40gb": _PCIE4, "a100-80gb": _PCIE4, "rtx-3080-12gb": _PCIE4, "rtx-3090": _PCIE4, "rtx-4090": _PCIE4,
    "a10": _PCIE4, "l4": _PCIE4, "rtx-a6000": _PCIE4, "a40": _PCIE4,
    "h100-80gb": _PCIE5, "h200": _PCIE5,
    "l40s": _PCIE4, "rtx-6000-ada": _PCIE4, "a10g": _PCIE4,
    "h100-pcie": _PCIE5, "h100-nvl": _PCIE5, "h20": _PCIE5, "b200": _PCIE5, "mi300x": _PCIE5, "mi325x": _PCIE5,
    "rtx-5090": _PCIE5, "gb200": ("NVLink-C2C", 450 * GB),
}


_NAMING_FIELDS = ("name", "display_name", "source", "torch_total_source")


def _host_link(gpu: GPU) -> tuple[str, int]:
    """HOST_LINK of the GPU's name; for a user-defined GPU (e.g. dataclasses.replace of a catalog entry
    under a new name), that of the catalog entry it equals in every figure; else a clear error."""
    if gpu.name in HOST_LINK:
        return HOST_LINK[gpu.name]
    figures = [f.name for f in fields(GPU) if f.name not in _NAMING_FIELDS]
    for known in _CATALOG:
        if all(getattr(known, f) == getattr(gpu, f) for f in figures) and known.name in HOST_LINK:
            return HOST_LINK[known.name]
    raise ValueError(f"GPU {gpu.name!r} is not in the catalog and matches no catalog entry's figures, so its "
                     "host link (PCIe generation) is unknown; offload timing needs it: build it with "
                     "dataclasses.replace of the catalog GPU it is (same figures) or add it to HOST_LINK")
