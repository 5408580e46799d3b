"""Hardware: the GPU catalog, whether an estimate fits a card, and PyTorch's caching allocator."""

from memlib.hardware.allocator import AllocatorConfig, CachingAllocator, Reserved, reserved_bytes  # noqa: F401
