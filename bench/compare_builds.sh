#!/usr/bin/env bash
# Two builds of vitattn on the same work, in one run (a script, not a test):
#   bench/compare_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [--runs N]
# Each build dir holds `vitattn` and `vitattn_forward_bench` (a release build). Measures, with
# hyperfine, alternating the two builds run by run (so machine load hits both alike):
#   batch    vitattn -j 2 over 24 photo-like images (seeded model: decode, attention, PNG)
#   forward  vitattn_forward_bench, a random ViT-S/16 at 224, 5 forwards per process, 2 threads
# and prints medians of wall time and of CPU time (user + sys), and new/old ratios: below 1 is
# faster. Used for issue 9's "no slower than before the redesign".
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR [--runs N]" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2"); shift 2
runs=7
[ "${1:-}" = "--runs" ] && runs=$2
for b in "$old" "$new"; do
  for exe in vitattn vitattn_forward_bench; do
    [ -x "$b/$exe" ] || { echo "compare_builds: $b/$exe missing (cmake --build --preset release --target $exe)" >&2; exit 2; }
  done
done
command -v hyperfine >/dev/null || { echo "compare_builds: hyperfine missing (apt-get install -y hyperfine)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work/photos" <<'EOF'
import sys, pathlib, numpy as np, cv2
out = pathlib.Path(sys.argv[1]); out.mkdir()
rng = np.random.default_rng(0)
for i in range(24):  # 640x480 .. 1600x1200: photo sizes, smooth content with edges
    h, w = [(480, 640), (768, 1024), (1200, 1600)][i % 3]
    base = cv2.resize(rng.integers(0, 255, (12, 16, 3), np.uint8), (w, h), interpolation=cv2.INTER_CUBIC)
    cv2.rectangle(base, (w // 4, h // 4), (w // 2, h // 2), (240, 240, 240), -1)
    cv2.imwrite(str(out / f"p{i:02d}.jpg"), base, [cv2.IMWRITE_JPEG_QUALITY, 90])
EOF
/usr/bin/python3 "$here/make_vit.py" "$work" --models vit_s16 >/dev/null
[ -f "$work/vit_s16.safetensors" ] || { echo "compare_builds: bench/make_vit.py did not make the ViT-S/16" >&2; exit 2; }

hyperfine --runs "$runs" --warmup 1 --export-json "$work/batch.json" \
  --prepare "rm -rf $work/out_old $work/out_new" \
  -n old "$old/vitattn -q -j 2 $work/photos -o $work/out_old" \
  -n new "$new/vitattn -q -j 2 $work/photos -o $work/out_new" >/dev/null
hyperfine --runs "$runs" --warmup 1 --export-json "$work/forward.json" \
  -n old "$old/vitattn_forward_bench --model $work/vit_s16.safetensors --threads 2 --repeat 5" \
  -n new "$new/vitattn_forward_bench --model $work/vit_s16.safetensors --threads 2 --repeat 5" >/dev/null

/usr/bin/python3 - "$work" "$old" "$new" <<'EOF'
import json, statistics, sys
work, old, new = sys.argv[1:]
print(f"old: {old}\nnew: {new}")
print(f"{'work':8} {'build':5} {'wall median s':>14} {'cpu median s':>13}")
for name in ("batch", "forward"):
    res = {r["command"]: r for r in json.load(open(f"{work}/{name}.json"))["results"]}
    med = {}
    for who in ("old", "new"):
        r = res[who]
        wall = statistics.median(r["times"])
        cpu = statistics.median(u + s for u, s in zip(r["user"], r["system"])) if "user" in r and isinstance(r["user"], list) else r["user"] + r["system"]
        med[who] = (wall, cpu)
        print(f"{name:8} {who:5} {wall:14.3f} {cpu:13.3f}")
    print(f"{name:8} new/old: wall {med['new'][0] / med['old'][0]:.3f}, cpu {med['new'][1] / med['old'][1]:.3f}")
EOF
