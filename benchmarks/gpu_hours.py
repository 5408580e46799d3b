"""Published GPU-hours of pretraining runs against memlib.cost (validation/published_gpu_hours.json).

    python benchmarks/gpu_hours.py

Prints, per run: the published GPU-hours, memlib's (6ND + attention FLOPs, no recompute, at the MFU the source
reports or implies), the signed error (memlib - published) / published, the MFU used and the
MFU the published hours imply. Rows without a published MFU show only the implied one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memlib import cost  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "validation" / "published_gpu_hours.json"


def main() -> int:
    data = json.loads(DATA.read_text())
    print(f"{'run':16s} {'GPU':10s} {'tokens':>7s} {'FLOPs':>9s} {'published':>10s} {'memlib':>10s} {'error':>7s} "
          f"{'MFU used':>8s} {'implied':>7s}  asserted")
    for r in cost.reproduce_published(data):
        mine = f"{r['memlib_gpu_hours'] / 1e6:9.3f}M" if r["memlib_gpu_hours"] else f"{'-':>10s}"
        err = f"{r['error']:+7.1%}" if r["error"] is not None else f"{'-':>7s}"
        mfu = f"{r['mfu']:8.1%}" if r["mfu"] is not None else f"{'-':>8s}"
        print(f"{r['id']:16s} {r['gpu']:10s} {r['tokens'] / 1e12:6.1f}T {r['flops']:9.2e} "
              f"{r['published_gpu_hours'] / 1e6:9.3f}M {mine} {err} {mfu} {r['implied_mfu']:7.1%}  "
              f"{'yes' if r['asserted'] else 'no'}")
    print(f"\nasserted rows must be within {data['max_error']:.0%} (tests/test_cost.py); MFU sources:")
    for r in cost.reproduce_published(data):
        print(f"  {r['id']}: {r['mfu_source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
