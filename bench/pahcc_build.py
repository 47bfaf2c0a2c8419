"""Benchmark a PaHCC build: glyphs rendered per second and peak memory.

Usage: python bench/pahcc_build.py [--size mini] [--image-size 64] [--writers 40]
Builds into a fresh temporary data_dir (so nothing is cached except the font-coverage table when
--keep-coverage is given) and prints wall time, images/s per phase total, peak RSS and the on-disk size.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="mini", help="'mini', 'full' or a number of classes")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--writers", type=int, default=40)
    p.add_argument("--data-dir", default=None, help="build here (default: a temporary folder, removed afterwards)")
    args = p.parse_args()
    size = int(args.size) if args.size.isdigit() else args.size

    from dganalysis.data.pahcc import build_pahcc

    tmp = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="pahcc-bench-"))
    try:
        t0 = time.perf_counter()
        ds = build_pahcc(size=size, image_size=args.image_size, writers=args.writers, data_dir=tmp, progress=False)
        wall = time.perf_counter() - t0
        n = sum(len(d) for d in ds)
        disk = sum(f.stat().st_size for f in tmp.rglob("*.npy"))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB → MiB
        print(f"PaHCC size={size} image_size={args.image_size} writers={args.writers}")
        for d in ds:
            print(f"  {d.name}: {len(d)} images")
        print(f"images: {n}  wall: {wall:.1f} s  ({n / wall:.0f} glyphs/s, incl. font coverage and saving)")
        print(f"peak RSS: {peak:.0f} MiB  arrays on disk: {disk / 2**20:.1f} MiB")
    finally:
        if not args.data_dir:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
