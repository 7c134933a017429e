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
"""
import os
import sys

import numpy as np
from gguf import GGUFWriter, TokenType

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]
gqa = "--gqa" in args
args = [a for a in args if a != "--gqa"]
name = "tiny-gemma3-gqa.gguf" if gqa else "tiny-gemma3.gguf"
out = args[0] if args else os.path.join(root, "fuzz/seeds/model", name)
w = GGUFWriter(out, "gemma3")
blocks, width, ff, heads, kv, head = (2, 8, 16, 10, 2, 8) if gqa else (1, 8, 16, 2, 1, 4)
w.add_block_count(blocks)
w.add_embedding_length(width)
w.add_feed_forward_length(ff)
w.add_head_count(heads)
w.add_head_count_kv(kv)
w.add_key_length(head)
w.add_value_length(head)
w.add_context_length(600 if gqa else 32)
w.add_layer_norm_rms_eps(1e-6)
w.add_rope_freq_base(1e6)
w.add_sliding_window(8)
if gqa:
    w.add_array("gemma3.attention.sliding_window_pattern", [True, False])

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
for b in range(blocks):
    p = f"blk.{b}."
    t(p + "attn_norm.weight", width)
    t(p + "attn_q.weight", heads * head, width)
    t(p + "attn_k.weight", kv * head, width)
    t(p + "attn_v.weight", kv * head, width)
    t(p + "attn_output.weight", width, heads * head)
    t(p + "attn_q_norm.weight", head)
    t(p + "attn_k_norm.weight", head)
    t(p + "post_attention_norm.weight", width)
    t(p + "ffn_norm.weight", width)
    t(p + "ffn_gate.weight", ff, width)
    t(p + "ffn_up.weight", ff, width)
    t(p + "ffn_down.weight", width, ff)
    t(p + "post_ffw_norm.weight", width)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(out, os.path.getsize(out), "bytes")
