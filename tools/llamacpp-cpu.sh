#!/usr/bin/env bash
# The outside reference for the model checks (tests/gemma/): llama.cpp's CPU backend, built
# from the llama.cpp that the PyPI sdist of llama-cpp-python vendors (as
# ../shared/tools/llamacpp-peer.sh builds its Vulkan kernels), and tools/llama-logits.c, a small
# driver of libllama, compiled against it.
#
#   tools/llamacpp-cpu.sh            # builds once (about 5 min on 2 cores); prints the driver's path
#
# Cached under $LLAMACPP_CPU_DIR (default ~/.cache/ninfer-wgpu/llamacpp-cpu). Nothing of llama.cpp
# goes into the repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${LLAMACPP_CPU_DIR:-$HOME/.cache/ninfer-wgpu/llamacpp-cpu}
driver="$dir/llama-logits"
# ggml's x86-64-v3 baseline (SSE4.2, AVX, AVX2, BMI2, FMA, F16C) rather than -march=native: the
# same kernels on every CI machine, and none of AVX-512 or AMX, whose AMX products crash on CPUs
# that have it. The driver also loads without extra buffer types (docs/judging.md#a-models-logits).
flags=(-DGGML_VULKAN=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF
  -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
# A cache built with other flags (an older script's -march=native) is rebuilt, not reused.
stamp="${flags[*]}"
if [ -x "$driver" ] && [ "$driver" -nt "$here/llama-logits.c" ] && [ "$(cat "$dir/build.flags" 2>/dev/null)" = "$stamp" ]; then
  echo "$driver"; exit 0
fi
mkdir -p "$dir"; cd "$dir"
command -v cmake >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null; }
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore scikit-build-core >&2
ls llama_cpp_python-*.tar.gz >/dev/null 2>&1 ||
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-build-isolation --no-binary :all: llama-cpp-python -d . >&2
[ -d src ] || { mkdir src; tar xzf llama_cpp_python-*.tar.gz -C src --strip-components=1; }
rm -f build.flags "$driver"
cmake -S src/vendor/llama.cpp -B build "${flags[@]}" >/dev/null
cmake --build build -j2 --target llama >/dev/null
gcc -O2 -o "$driver" "$here/llama-logits.c" -I src/vendor/llama.cpp/include -I src/vendor/llama.cpp/ggml/include \
  -L build/bin -lllama -Wl,-rpath,"$dir/build/bin" -lm
echo "$stamp" > build.flags
echo "$driver"
