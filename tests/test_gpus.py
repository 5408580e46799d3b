"""GPU catalog: known datasheet values, units, aliases and errors."""

import dataclasses
import re

import pytest

import memlib
from memlib.hardware.gpus import GPU, get_gpu, list_gpus

GiB = 2**30


# --- capacities: NVIDIA's "GB" on GPU memory is GiB (design.md) --------------------------
@pytest.mark.parametrize(
    "name, nominal_gib",
    [
        ("v100-16gb", 16),
        ("v100-32gb", 32),
        ("a100-40gb", 40),
        ("a100-80gb", 80),
        ("h100-80gb", 80),
        ("h200", 141),
        ("rtx-3080-12gb", 12),
        ("rtx-3090", 24),
        ("rtx-4090", 24),
        ("a10", 24),
        ("l4", 24),
        ("t4", 16),
        ("rtx-a6000", 48),
        ("a40", 48),
    ],
)
def test_capacity_is_vendor_gib(name, nominal_gib):
    gpu = get_gpu(name)
    assert isinstance(gpu.memory_bytes, int)
    assert gpu.memory_bytes == nominal_gib * GiB
    assert gpu.memory_gib == nominal_gib


def test_v100_32gb_exact_bytes():
    # V100 datasheet "32GB HBM2"; driver reports 32510 MiB of 32768 MiB nominal.
    assert get_gpu("v100-32gb").memory_bytes == 34_359_738_368


def test_gb_and_gib_both_offered():
    gpu = get_gpu("a100-80gb")
    assert gpu.memory_gib == 80.0
    assert gpu.memory_gb == pytest.approx(85.899345920)


def test_a100_reported_total_is_exactly_nominal():
    # nvidia-smi reports A100 80GB as 81920 MiB (modal-labs/modal-client PR #2797).
    gpu = get_gpu("a100-80gb")
    assert gpu.reported_total_bytes == gpu.memory_bytes


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda g: g.name)
def test_reported_total_never_exceeds_nominal_by_much(gpu):
    # The driver reserves some memory, so the reported total is at most nominal. GDDR6
    # data-centre cards (T4, A10, L4) with ECC on lose 1/16 to ECC: T4 reports 15360 MiB.
    if gpu.reported_total_bytes is not None:
        assert 0.93 * gpu.memory_bytes <= gpu.reported_total_bytes <= gpu.memory_bytes


def test_h200_is_141_gib_not_141e9():
    # nvidia-smi on H200: 143771 MiB. 141e9 bytes would be less than the device reports.
    gpu = get_gpu("h200")
    assert gpu.reported_total_bytes > 141e9
    assert gpu.memory_bytes == 141 * GiB


# --- bandwidth and throughput from datasheets ---------------------------------------------
def test_a100_80gb_bandwidth():
    # A100 datasheet (r4), A100 80GB SXM: 2,039 GB/s
    assert get_gpu("a100-80gb").memory_bandwidth_bytes_per_s == 2_039_000_000_000
    assert get_gpu("a100-80gb").memory_bandwidth_gb_per_s == 2039


def test_a100_40gb_bandwidth():
    # A100 datasheet, A100 40GB SXM: 1,555 GB/s
    assert get_gpu("a100-40gb").memory_bandwidth_gb_per_s == 1555


def test_h100_sxm_bf16_dense():
    # H100 datasheet: BF16 tensor 1,979 TFLOPS *with sparsity*; dense is half (989.4 in
    # the Hopper architecture whitepaper).
    gpu = get_gpu("h100")
    assert gpu.bf16_tflops == pytest.approx(989, abs=1)
    assert gpu.memory_bandwidth_gb_per_s == 3350
    assert gpu.interconnect_gb_per_s == 900


def test_h200_bandwidth():
    # H200 datasheet: 4.8 TB/s
    assert get_gpu("h200").memory_bandwidth_bytes_per_s == 4_800_000_000_000


def test_v100_has_no_bf16():
    # V100 datasheet: 125 TFLOPS tensor (fp16); Volta tensor cores have no bf16.
    for name in ("v100-16gb", "v100-32gb"):
        gpu = get_gpu(name)
        assert gpu.supports_bf16 is False
        assert gpu.bf16_tflops is None
        assert gpu.fp16_tflops == 125
        assert gpu.interconnect_gb_per_s == 300  # NVLink 2, SXM2


def test_t4_has_no_bf16():
    # T4 datasheet: mixed precision 65 TFLOPS; Turing has no bf16.
    gpu = get_gpu("t4")
    assert gpu.bf16_tflops is None and gpu.fp16_tflops == 65


def test_geforce_uses_fp32_accumulate_dense_figure():
    # GA102 whitepaper: RTX 3090 FP16 tensor with FP32 accumulate 71 (dense).
    # Ada whitepaper: RTX 4090 FP16/BF16 tensor with FP32 accumulate 165.2 (dense).
    assert get_gpu("rtx-3090").bf16_tflops == pytest.approx(71)
    assert get_gpu("rtx-4090").bf16_tflops == pytest.approx(165.2)


def test_l4_dense_is_half_the_sparse_datasheet_figure():
    # L4 datasheet: FP16/BF16 tensor 242 TFLOPS with sparsity.
    assert get_gpu("l4").bf16_tflops == pytest.approx(242 / 2)


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda g: g.name)
def test_catalog_entries_are_consistent(gpu):
    assert gpu.name == gpu.name.lower() and " " not in gpu.name
    assert get_gpu(gpu.name) is gpu
    assert gpu.supports_bf16 == (gpu.bf16_tflops is not None)
    assert gpu.fp16_tflops is not None and gpu.fp16_tflops > 0
    assert isinstance(gpu.memory_bandwidth_bytes_per_s, int)
    assert isinstance(gpu.interconnect_bytes_per_s, int)
    assert gpu.interconnect_bytes_per_s_per_direction * 2 == gpu.interconnect_bytes_per_s
    assert gpu.interconnect.startswith(("NVLink", "PCIe", "AMD Infinity Fabric"))
    assert gpu.source
    # SXM parts use NVLink; PCIe cards use PCIe or a two-card NVLink bridge
    if "SXM" in gpu.display_name:
        assert gpu.interconnect.startswith("NVLink")
    if gpu.interconnect.startswith("PCIe"):
        assert "SXM" not in gpu.display_name


def test_gpu_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_gpu("t4").memory_bytes = 1


def test_gpu_rejects_inconsistent_bf16():
    with pytest.raises(ValueError):
        dataclasses.replace(get_gpu("t4"), bf16_tflops=10.0)


def test_str_and_describe_show_gb_and_gib():
    gpu = get_gpu("v100-32gb")
    assert "32.00 GiB" in str(gpu) and "34.36 GB" in str(gpu)
    text = gpu.describe()
    assert "34,359,738,368 bytes" in text
    assert "34.36 GB" in text and "32.00 GiB" in text
    assert "not supported" in text  # bf16


def test_list_gpus():
    gpus = list_gpus()
    names = [g.name for g in gpus]
    assert len(names) == len(set(names))
    for required in ["v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb", "h100-80gb", "h200",
                     "rtx-3080-12gb", "rtx-3090", "rtx-4090", "a10", "l4", "t4"]:
        assert required in names
    assert all(isinstance(g, GPU) for g in gpus)
    gpus.clear()  # a copy: mutating it does not touch the catalog
    assert list_gpus()


def test_exported_from_package():
    assert memlib.get_gpu is get_gpu
    assert memlib.GPU is GPU


# --- aliases and errors ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("v100", "v100-32gb"),
        ("V100", "v100-32gb"),
        ("v100-32g", "v100-32gb"),
        ("V100 32GB", "v100-32gb"),
        ("Tesla V100-SXM2-32GB", "v100-32gb"),
        ("v100-16g", "v100-16gb"),
        ("A100 80GB", "a100-80gb"),
        ("a100_40gb", "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("h100", "h100-80gb"),
        ("H100 SXM", "h100-80gb"),
        ("H200", "h200"),
        ("RTX 3090", "rtx-3090"),
        ("4090", "rtx-4090"),
        ("GeForce RTX 4090", "rtx-4090"),
        ("RTX 3080 12GB", "rtx-3080-12gb"),
        ("  t4  ", "t4"),
        ("A6000", "rtx-a6000"),
    ],
)
def test_aliases(alias, canonical):
    assert get_gpu(alias).name == canonical


def test_gpu_instance_passes_through():
    gpu = get_gpu("l4")
    assert get_gpu(gpu) is gpu


def test_unknown_name_lists_close_matches_and_all_names():
    with pytest.raises(ValueError) as exc:
        get_gpu("a100-60gb")
    msg = str(exc.value)
    assert "a100-60gb" in msg
    assert "Did you mean" in msg and "a100-80gb" in msg
    for gpu in list_gpus():
        assert gpu.name in msg


def test_unknown_name_without_close_match():
    with pytest.raises(ValueError, match="Accepted names"):
        get_gpu("tpu-v5e")


@pytest.mark.parametrize("bad", [None, 32, 3.5, b"v100", ["v100"]])
def test_non_string_is_value_error(bad):
    with pytest.raises(ValueError, match="string"):
        get_gpu(bad)


# --- what torch reports as total memory (torch_total_mib) -----------------------------------
# Each record's source starts with its kind and quotes the figure it rests on; these tests parse
# the quote, so the MiB figure and its source cannot drift apart.
MiB = 2**20
_EXACT_QUOTE = re.compile(r"total_memory=(\d+)MB|(\d+) ?MiB\)|(\d+) MBytes \((\d+) bytes\)")
_ROUNDED_QUOTE = re.compile(r"\(rounded from (\d+\.\d+) GiB\)")
_ESTIMATE = re.compile(r"(\d+) - (\d+) = (\d+)")


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda g: g.name)
def test_torch_total_recorded_below_nominal(gpu):
    # torch never sees more than the vendor's nominal memory, nor more than nvidia-smi's total.
    assert isinstance(gpu.torch_total_mib, int) and gpu.torch_total_mib > 0
    assert gpu.torch_total_bytes <= gpu.memory_bytes
    if gpu.reported_total_mib is not None:
        assert gpu.torch_total_mib <= gpu.reported_total_mib
    # The driver keeps back far less than 10% (ECC-on GDDR6 cards lose 1/16 = 6.25% plus a little).
    assert gpu.torch_total_bytes >= 0.90 * gpu.memory_bytes
    assert gpu.torch_total_source.strip()


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda g: g.name)
def test_torch_total_matches_the_quoted_record(gpu):
    src = gpu.torch_total_source
    kind = src.split(":", 1)[0]
    assert kind in ("exact", "rounded", "estimated"), src
    if kind == "exact":
        m = _EXACT_QUOTE.search(src)
        assert m, f"{gpu.name}: no MiB figure quoted in {src!r}"
        if m.group(4):  # deviceQuery prints both MiB and the exact byte count
            assert int(m.group(4)) // MiB == int(m.group(3))
        quoted = int(next(g for g in m.groups() if g))
        assert gpu.torch_total_mib == quoted
    elif kind == "rounded":
        m = _ROUNDED_QUOTE.search(src)
        assert m, f"{gpu.name}: no '(rounded from X GiB)' in {src!r}"
        gib = float(m.group(1))
        assert gpu.torch_total_mib == round(gib * 1024)
        # and the stored MiB prints back as the quoted 2-or-3-decimal GiB figure
        decimals = len(m.group(1).split(".")[1])
        assert f"{gpu.torch_total_mib / 1024:.{decimals}f}" == m.group(1)
    else:
        a, b, c = map(int, _ESTIMATE.search(src).groups())
        assert a - b == c == gpu.torch_total_mib


@pytest.mark.parametrize(
    "name, quote",
    [
        ("h200", "total_memory=143156MB"),  # ai-bot-pro/achatbot, torch print on Modal's H200
        ("mi300x", "total_memory=196592MB"),  # ROCm/ROCm #4203, torch 2.6 on ROCm 6.2.4
        ("v100-16gb", "total_memory=16160MB"),  # ultralytics/yolov5 tutorial.ipynb on Colab
        ("a100-80gb", "A100-SXM4-80GB, 81051MiB)"),  # ultralytics/ultralytics #22877
    ],
)
def test_exact_torch_records(name, quote):
    gpu = get_gpu(name)
    assert gpu.torch_total_source.startswith("exact:")
    assert quote in gpu.torch_total_source
    assert gpu.torch_total_mib == int(re.search(r"(\d+)(MB|MiB\))$", quote).group(1))


def test_a100_80gb_torch_total_is_the_7915_gib_of_the_oom_message():
    # PyTorch's OOM message on a current-driver A100 80GB: "79.15 GiB total capacity".
    assert f"{get_gpu('a100-80gb').torch_total_bytes / GiB:.2f}" == "79.15"


def test_estimates_reuse_the_gap_measured_on_the_sibling_part():
    # GB200: nvidia-smi total less the gap torch sees below nvidia-smi on the B200.
    b200, gb200 = get_gpu("b200"), get_gpu("gb200")
    assert gb200.torch_total_mib == gb200.reported_total_mib - (b200.reported_total_mib - b200.torch_total_mib)
    # MI325X: 256 GiB less what ROCm keeps back on the MI300X.
    mi300x, mi325x = get_gpu("mi300x"), get_gpu("mi325x")
    assert mi325x.torch_total_mib == mi325x.memory_bytes // MiB - (mi300x.memory_bytes // MiB - mi300x.torch_total_mib)


def test_describe_shows_torch_total():
    text = get_gpu("h200").describe()
    assert "torch reports 143,156 MiB" in text


def test_hand_built_gpu_without_compute_capability_keeps_its_host_link():
    # compute_capability is optional (None: unknown or not CUDA); a GPU built by hand with an A100 80GB's
    # figures and no compute capability still crosses the A100's PCIe 4.0 x16: 16 GT/s x 16 lanes = 32 GB/s
    a100 = get_gpu("a100-80gb")
    kw = {f.name: getattr(a100, f.name) for f in dataclasses.fields(a100) if f.name != "compute_capability"}
    mine = dataclasses.replace(a100, **{**kw, "name": "my-a100", "compute_capability": None})
    assert mine.sm is None and a100.sm == (8, 0)
    assert mine.host_link_bytes_per_s == 32 * 10**9
