#!/usr/bin/env python3
"""Writes fuzz/seeds/model/tiny-gemma3.gguf: a gemma3 model of one block, width 8, two query heads
over one key head of length 4, 32 positions, and a SentencePiece vocabulary of control tokens,
the 256 byte tokens and a few pieces, so the `model` fuzz target starts from a file whose
configuration and tokenizer both read. Weights are f32, scaled so that activations and logits
are of order one (norm gains near 1, matrices ~ N(0, 4/K)): every nonlinearity shows in the
logits, which tests/gpu/model.rs compares with the exact reference. Needs llama.cpp's `gguf`
package. Usage: tools/make-model-seed.py [OUT]

`--gqa` writes fuzz/seeds/model/tiny-gemma3-gqa.gguf instead: ten query heads over two key heads
of length 8, so a KV head serves a group of five (the attention kernel takes a group four query
heads at a time: a full four and a remainder of one), and two blocks, the first local and the
second global, over 600 positions (the kernel's softmax runs in chunks of 512).
Usage: tools/make-model-seed.py --gqa [OUT]

`--arch ARCH` writes fuzz/seeds/model/tiny-ARCH.gguf, a tiny model of another architecture with
the same vocabulary, each exercising what its architecture adds (tests/gpu/model.rs runs each
against the exact reference, tests/gemma/archs.rs against llama.cpp's forward of the same file):
  llama   two blocks, adjacent RoPE pairs, SiLU, its own output head, Llama 3.1's frequency
          factors (`rope_freqs.weight`) and linear RoPE scaling by 2, head length from the width
  qwen2   q, k and v biases, four query heads over two key heads, a tied head
  qwen3   query and key norms, a head of 8 over a width of 8 (longer than width / heads)
  gemma   GELU, the embedding's scale, a tied head, as many key heads as query heads
  gemma2  sandwich norms, a window of 4 on the first block of two, attention and final
          soft-caps of 2 and 3 (small, so that tanh bends every score and logit)
Usage: tools/make-model-seed.py --arch ARCH [OUT]
"""
import os
import sys

import numpy as np
from gguf import GGUFWriter, TokenType

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]
gqa = "--gqa" in args
args = [a for a in args if a != "--gqa"]
arch = "gemma3"
if "--arch" in args:
    at = args.index("--arch")
    arch = args[at + 1]
    del args[at:at + 2]
# (blocks, width, ff, heads, KV heads, head length or None for width / heads)
SHAPES = {
    "gemma3": (2, 8, 16, 10, 2, 8) if gqa else (1, 8, 16, 2, 1, 4),
    "llama": (2, 8, 16, 2, 1, None),
    "qwen2": (2, 16, 16, 4, 2, None),
    "qwen3": (2, 8, 16, 2, 1, 8),
    "gemma": (1, 8, 16, 2, 2, 8),
    "gemma2": (2, 8, 16, 2, 1, 4),
}
if arch not in SHAPES:
    sys.exit(f"unknown architecture {arch}: one of {', '.join(SHAPES)}")
name = "tiny-gemma3-gqa.gguf" if gqa else f"tiny-{arch}.gguf"
out = args[0] if args else os.path.join(root, "fuzz/seeds/model", name)
w = GGUFWriter(out, arch)
blocks, width, ff, heads, kv, head = SHAPES[arch]
w.add_block_count(blocks)
w.add_embedding_length(width)
w.add_feed_forward_length(ff)
w.add_head_count(heads)
w.add_head_count_kv(kv)
if head is not None:
    w.add_key_length(head)
    w.add_value_length(head)
else:
    head = width // heads
w.add_context_length(600 if gqa else 32)
w.add_layer_norm_rms_eps(1e-6 if arch.startswith("gemma") else 1e-5)
if arch in ("gemma3", "qwen2", "qwen3"):
    w.add_rope_freq_base(1e6)
if arch == "gemma3":
    w.add_sliding_window(8)
if gqa:
    w.add_array("gemma3.attention.sliding_window_pattern", [True, False])
if arch == "llama":
    w.add_string("llama.rope.scaling.type", "linear")
    w.add_float32("llama.rope.scaling.factor", 2.0)
if arch == "gemma2":
    w.add_sliding_window(4)
    w.add_float32("gemma2.attn_logit_softcapping", 2.0)
    w.add_float32("gemma2.final_logit_softcapping", 3.0)

tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
types = [TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL, TokenType.UNKNOWN, TokenType.USER_DEFINED,
         TokenType.USER_DEFINED]
tokens += [f"<0x{b:02X}>" for b in range(256)]
types += [TokenType.BYTE] * 256
pieces = ["▁", "▁the", "▁a", "he", "llo", "▁hello", "▁wor", "ld", "é", "東京", "▁▁", "\n"]
tokens += pieces
types += [TokenType.NORMAL] * len(pieces)
scores = [0.0] * (len(tokens) - len(pieces)) + [-float(i) for i in range(len(pieces))]
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(2)
w.add_eos_token_id(1)
w.add_add_bos_token(True)
w.add_add_space_prefix(False)

rng = np.random.default_rng(1)
vocab = len(tokens)
def t(name, *shape):
    # numpy shape (rows, values per row): the writer stores it innermost first, as GGUF does.
    if len(shape) == 1:  # a norm's gains
        values = 1.0 + 0.3 * rng.standard_normal(shape)
    else:
        values = rng.standard_normal(shape) * 2.0 / np.sqrt(shape[1])
    w.add_tensor(name, values.astype(np.float32))
t("token_embd.weight", vocab, width)
t("output_norm.weight", width)
if arch in ("llama", "qwen3"):
    t("output.weight", vocab, width)
if arch == "llama":
    # Frequency factors between 1 and 4, one per pair of a head.
    w.add_tensor("rope_freqs.weight", (1.0 + 3.0 * rng.random(head // 2)).astype(np.float32))
sandwich = arch in ("gemma2", "gemma3")
for b in range(blocks):
    p = f"blk.{b}."
    t(p + "attn_norm.weight", width)
    t(p + "attn_q.weight", heads * head, width)
    t(p + "attn_k.weight", kv * head, width)
    t(p + "attn_v.weight", kv * head, width)
    if arch == "qwen2":
        for part, n in (("q", heads * head), ("k", kv * head), ("v", kv * head)):
            w.add_tensor(p + f"attn_{part}.bias", (0.5 * rng.standard_normal(n)).astype(np.float32))
    t(p + "attn_output.weight", width, heads * head)
    if arch in ("gemma3", "qwen3"):
        t(p + "attn_q_norm.weight", head)
        t(p + "attn_k_norm.weight", head)
    if sandwich:
        t(p + "post_attention_norm.weight", width)
    t(p + "ffn_norm.weight", width)
    t(p + "ffn_gate.weight", ff, width)
    t(p + "ffn_up.weight", ff, width)
    t(p + "ffn_down.weight", width, ff)
    if sandwich:
        t(p + "post_ffw_norm.weight", width)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(out, os.path.getsize(out), "bytes")
