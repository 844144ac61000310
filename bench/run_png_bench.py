#!/usr/bin/python3
"""PNG encoding benchmark (a script, not a test). Run via bench/run_png_bench.sh [--repeat N] [--sweep].

Encodes the benchmark's overlays (bench/make_photos.py's ~24 photos of 0.3-2 MP, drawn as
vitattn draws them) with OpenCV's imencode at its default (level 1, RLE strategy), at an
explicit level 1, and with vitattn's encoder, alternating them in rounds (vitattn_png_bench);
prints the medians and each encoder's ratios to imencode's default (throughput and bytes).
Throughput is per CPU second of the one encoding thread; the
wall-clock figure is printed too (on a busy machine it counts the other jobs).
Helper from env VITATTN_PNG_BENCH (default build/release/vitattn_png_bench).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    bench = os.environ.get("VITATTN_PNG_BENCH", os.path.join(HERE, "..", "build", "release", "vitattn_png_bench"))
    if not os.access(bench, os.X_OK):
        sys.exit(f"run_png_bench: {bench} missing (cmake --preset release && "
                 "cmake --build --preset release --target vitattn_png_bench)")
    with tempfile.TemporaryDirectory(prefix="vitattn-png-bench-") as photos:
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_photos.py"), photos], check=True,
                       stdout=sys.stderr)
        out = subprocess.run([bench, *sys.argv[1:], photos], check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    head, rows = lines[0], {r["encoder"]: r for r in lines[1:]}
    base = rows["imencode default"]
    print(f"{head['images']} overlays, {head['megapixels']:.1f} MP, median of {head['repeat']} rounds")
    print(f"{'encoder':28} {'MP/s (CPU)':>10} {'MP/s (wall)':>11} {'bytes':>10} {'speed vs default':>17} "
          f"{'size vs default':>16}")
    for name, r in rows.items():
        print(f"{name:28} {r['mp_per_cpu_s']:10.1f} {r['mp_per_s']:11.1f} {r['bytes']:10d} "
              f"{r['mp_per_cpu_s'] / base['mp_per_cpu_s']:16.2f}x {r['bytes'] / base['bytes']:15.3f}x")
    ours = rows["vitattn"]
    speed, size = ours["mp_per_cpu_s"] / base["mp_per_cpu_s"], ours["bytes"] / base["bytes"]
    print(f"vitattn / imencode default: {speed:.2f}x throughput (CPU), {size:.3f}x size")


if __name__ == "__main__":
    main()
