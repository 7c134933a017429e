#!/usr/bin/env bash
# A model's GGUF at speed beside llama.cpp on the same driver and file (README's speed table):
# in each round, the adapter's buffer-copy bandwidth, then ours (`generate --greedy --json`: a
# prompt, then 32 generated tokens), then llama.cpp's `llama-bench -ngl 99` with its Vulkan
# backend at the same prompt length (`-p N -n 0`) and generating 32 tokens after as many
# (`-p 0 -n 32 -d N`: the depth ours generates at), one after another, so each ratio compares
# runs a minute apart. Prints every round, then a table of medians. tools/prompts/short.txt is
# about 125 tokens, long.txt about 990.
#
#   ../shared/tools/llamacpp-peer.sh build                          # once, ~15 min
#   cmake --build /tmp/llamacpp-peer/build -j2 --target llama-bench # its llama-bench, ~5 min more
#   cargo build --release --locked
#   tools/model-speed.sh MODEL.gguf tools/prompts/short.txt [ROUNDS]   # default 3 rounds
#
# The physical limit: the bytes of weights one generated token reads (every block's products
# and the output head, from `inspect --json`) at the copy bandwidth of the same round.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$(realpath "$1")
prompt=$(realpath "$2")
rounds=${3:-3}
bin=${BIN:-target/release/ninfer-wgpu}
bench=${LLAMA_BENCH:-${PEER_DIR:-/tmp/llamacpp-peer}/build/bin/llama-bench}
[ -x "$bench" ] || { echo "no llama-bench at $bench (see the header)" >&2; exit 2; }
# One Vulkan driver only, so that ours (`--adapter vulkan`) and llama.cpp's device 0 are the same
# one: lavapipe unless ICD names another driver's manifest.
export VK_ICD_FILENAMES=${ICD:-$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)}
adapter=vulkan
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tokens=$("$bin" tokenize "$model" --text-file "$prompt" | wc -w)
"$bin" inspect "$model" --json > "$tmp/inspect.json" 2>/dev/null
for r in $(seq "$rounds"); do
  "$bin" bench --adapter "$adapter" --formats gguf_q8_0 --shape 32x32 --ops matmul --profile a32 --json \
    > "$tmp/copy.$r.json" 2>/dev/null
  "$bin" generate "$model" --adapter "$adapter" --prompt-file "$prompt" -n 32 --greedy --json \
    > "$tmp/ours.$r.json" 2>/dev/null
  GGML_VK_VISIBLE_DEVICES=0 "$bench" -m "$model" -ngl 99 -p "$tokens" -n 0 -r 1 -o csv \
    > "$tmp/peer.$r.csv" 2>/dev/null
  GGML_VK_VISIBLE_DEVICES=0 "$bench" -m "$model" -ngl 99 -p 0 -n 32 -d "$tokens" -r 1 -o csv \
    > "$tmp/peer-gen.$r.csv" 2>/dev/null
done
python3 - "$tmp" "$rounds" "$tokens" <<'PY'
import csv, json, statistics, sys
tmp, rounds, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
products = ("attn_q.", "attn_k.", "attn_v.", "attn_output.", "ffn_gate.", "ffn_up.", "ffn_down.")
tensors = {t["id"]: t["bytes"] for t in json.load(open(f"{tmp}/inspect.json"))["tensors"]}
head = tensors.get("output.weight", tensors["token_embd.weight"])
per_token = sum(b for n, b in tensors.items() if n.startswith("blk.") and any(p in n for p in products)) + head
rows = []
for r in range(1, rounds + 1):
    copy = json.load(open(f"{tmp}/copy.{r}.json"))["copy_gb_per_s"]
    ours = json.load(open(f"{tmp}/ours.{r}.json"))
    peer = {("prompt" if int(x["n_prompt"]) else "gen"): float(x["avg_ts"])
            for f in ("peer", "peer-gen") for x in csv.DictReader(open(f"{tmp}/{f}.{r}.csv"))}
    row = (copy, ours["prompt_tokens_per_s"], peer["prompt"], ours["generation_tokens_per_s"], peer["gen"])
    rows.append(row)
    print(f"round {r}: copy {row[0]:.2f} GB/s; prompt ours {row[1]:.2f} llama.cpp {row[2]:.2f}; "
          f"generation ours {row[3]:.2f} llama.cpp {row[4]:.2f} tokens/s")
med = [statistics.median(c) for c in zip(*rows)]
limit = med[0] * 1e9 / per_token
print()
print(f"| {tokens}-token prompt, 32 generated after it, median of {rounds} | ours tokens/s | llama.cpp Vulkan tokens/s | ratio |")
print("|---|---|---|---|")
print(f"| prompt processing | {med[1]:.1f} | {med[2]:.1f} | {med[1] / med[2]:.2f}× |")
print(f"| generation | {med[3]:.2f} | {med[4]:.2f} | {med[3] / med[4]:.2f}× |")
print()
print(f"Generation reads {per_token / 1e6:.1f} MB of weights per token; at the copy bandwidth "
      f"({med[0]:.2f} GB/s) that is a limit of {limit:.1f} tokens/s: ours is {med[3] / limit:.1%} of it.")
PY
