#!/usr/bin/env bash
# One device lease, one call: conformance and the bench on a real GPU (issue 13's device
# check). The device machine is bare and has no Rust, so the release binary is built here and
# carried with Vulkan's loader packages:
#
#   # here, once per checkout (the Vulkan and GL loader .debs the bare device machine lacks):
#   echo /.gl/ >> .git/info/exclude; echo /.devbin/ >> .git/info/exclude
#   mkdir -p .gl /tmp/amd64/partial; o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
#   apt-get $o update; (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
#   # here, each time:
#   cargo build --release --locked && mkdir -p .devbin && cp target/release/ninfer-wgpu .devbin/
#   # the call: run(command="tools/device-bench.sh", carry=[".gl", ".devbin"], timeout_s=540)
#
# Writes $OUT/devices.json, conformance.json, bench-4096x14336.json, bench-14336x4096.json and
# prints the summary lines; a device table is made from the bench files
# (docs/performance.md#on-a-real-gpu).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! .devbin/ninfer-wgpu devices | grep -qi vulkan; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
bin=.devbin/ninfer-wgpu
out=${OUT:-/tmp/device-bench}
mkdir -p "$out"
$bin devices --json > "$out/devices.json"
$bin devices
# Conformance first: a fast kernel that is wrong is not a result.
timeout 240 $bin conformance --adapter vulkan --json > "$out/conformance.json"
python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print(f\"conformance: {r['passed']} passed, {r['failed']} failed, {r['platform_deviations']} platform deviations\")" "$out/conformance.json"
for shape in 4096x14336 14336x4096; do
  timeout 240 $bin bench --adapter vulkan --shape "$shape" --columns 1,8 --ops matmul --json > "$out/bench-$shape.json"
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for f in sorted(out.glob("bench-*.json")):
    b = json.load(open(f))
    print(f"{f.name}: copy {b['copy_gb_per_s']:.0f} GB/s")
    for r in b["rows"]:
        print(f"  {r['format']:<22} J={r['columns']} {r['median_ms']:8.3f} ms {r['gb_per_s']:8.1f} GB/s {100 * r['copy_ratio']:5.1f}% of copy")
PY
