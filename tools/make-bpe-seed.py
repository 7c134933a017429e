#!/usr/bin/env python3
"""Writes a tiny `llama` model (one block, width 8, random f32 weights) carrying another GGUF's
byte-level BPE vocabulary (tokens, types, merges, BOS/EOS ids) under the pre-tokenizer PRE, so
that llama.cpp loads it and tokenizes with PRE's rules (tests/gemma/smollm.rs compares our ids
with llama.cpp's for each pre-tokenizer on SmolLM2's vocabulary). `add_bos_token` and
`add_space_prefix` are left out: each side's default for PRE applies. Three tokens are appended
so that the pre-tokenizers' differences show in the ids: `12` and `123` with the merges `1 2`
and `12 3` (digits grouped by three, or one by one), and `ĠXyzzy`, which no merge makes (a word
that is a token whole, taken whole only where merges are ignored). Needs llama.cpp's `gguf`
package. A fourth argument, if given, is written as the model's `tokenizer.chat_template`
(tests/gemma/smollm.rs checks llama.cpp's templates so).
Usage: tools/make-bpe-seed.py SOURCE.gguf PRE OUT.gguf [CHAT_TEMPLATE]
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter

source, pre, out = sys.argv[1:4]
template = sys.argv[4] if len(sys.argv) > 4 else None
fields = GGUFReader(source).fields


def strings(key):
    f = fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def scalar(key):
    f = fields[key]
    return int(f.parts[f.data[0]][0])


tokens = strings("tokenizer.ggml.tokens") + ["12", "123", "\u0120Xyzzy"]
types = [int(fields["tokenizer.ggml.token_type"].parts[i][0]) for i in fields["tokenizer.ggml.token_type"].data]
types += [1, 1, 1]
merges = strings("tokenizer.ggml.merges") + ["1 2", "12 3"]
w = GGUFWriter(out, "llama")
width, ff, heads = 8, 16, 2
w.add_block_count(1)
w.add_context_length(64)
w.add_embedding_length(width)
w.add_feed_forward_length(ff)
w.add_head_count(heads)
w.add_head_count_kv(heads)
w.add_layer_norm_rms_eps(1e-5)
w.add_tokenizer_model("gpt2")
w.add_tokenizer_pre(pre)
w.add_token_list(tokens)
w.add_token_types(types)
w.add_token_merges(merges)
w.add_bos_token_id(scalar("tokenizer.ggml.bos_token_id"))
w.add_eos_token_id(scalar("tokenizer.ggml.eos_token_id"))
if template is not None:
    w.add_chat_template(template)

rng = np.random.default_rng(3)
def t(name, *shape):
    w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))
t("token_embd.weight", len(tokens), width)
t("output_norm.weight", width)
for name, shape in [("attn_norm", (width,)), ("attn_q", (width, width)), ("attn_k", (width, width)),
                    ("attn_v", (width, width)), ("attn_output", (width, width)), ("ffn_norm", (width,)),
                    ("ffn_gate", (ff, width)), ("ffn_up", (ff, width)), ("ffn_down", (width, ff))]:
    t(f"blk.0.{name}.weight", *shape)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
