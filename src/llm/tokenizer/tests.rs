//! The encoding rules on a toy vocabulary (gemma-3-270m's own against llama.cpp:
//! tests/gemma/).

use super::*;
use crate::llm::testing::Table;

/// A vocabulary of pieces with scores, types and the two byte tokens of "é"; BOS 1, no space
/// prefix unless asked.
fn toy(prefix: bool) -> Table {
    let pieces: [(&str, f32, i32); 14] = [
        ("<unk>", 0.0, 2),
        ("<bos>", 0.0, 3),
        ("<ctl>", 0.0, 3),
        ("<ud>", 0.0, 4),
        ("<0xC3>", 0.0, 6),
        ("<0xA9>", 0.0, 6),
        ("a", -1.0, 1),
        ("b", -1.0, 1),
        ("c", -1.0, 1),
        ("\u{2581}", -1.0, 1),
        ("ab", -3.0, 1),
        ("bc", -2.0, 1),
        ("\u{2581}a", -2.5, 1),
        ("bcc", -4.0, 1),
    ];
    let mut t = Table::default();
    t.put("tokenizer.ggml.model", Value::String("llama".into()))
        .put("tokenizer.ggml.tokens", Value::Array(Array::String(pieces.iter().map(|p| p.0.to_string()).collect())))
        .put("tokenizer.ggml.scores", Value::Array(Array::F32(pieces.iter().map(|p| p.1).collect())))
        .put("tokenizer.ggml.token_type", Value::Array(Array::I32(pieces.iter().map(|p| p.2).collect())))
        .put("tokenizer.ggml.bos_token_id", Value::U32(1))
        .put("tokenizer.ggml.add_space_prefix", Value::Bool(prefix));
    t
}

fn encode(t: &Table, text: &str, special: bool) -> Vec<u32> {
    Tokenizer::from_source(t).unwrap().encode(text, special).unwrap()
}

#[test]
fn the_highest_scoring_pair_merges_first() {
    // "abc": bc (-2) merges before ab (-3), and a + bc is not a token: "a", "bc" (ab first
    // would have given "ab", "c").
    assert_eq!(encode(&toy(false), "abc", false), [1, 6, 11]);
    // A merge makes new pairs: "abcc" merges bc, then bc + c.
    assert_eq!(encode(&toy(false), "abcc", false), [1, 6, 13]);
    // Equal scores: the leftmost pair first.
    assert_eq!(encode(&toy(false), "abab", false), [1, 10, 10]);
}

#[test]
fn spaces_become_u2581_and_the_prefix_is_the_vocabularys_choice() {
    assert_eq!(encode(&toy(false), "a a", false), [1, 6, 12]);
    assert_eq!(encode(&toy(true), "a", false), [1, 12], "a space before the text");
}

#[test]
fn a_character_without_a_token_falls_back_to_its_bytes() {
    assert_eq!(encode(&toy(false), "é", false), [1, 4, 5]);
    let err = Tokenizer::from_source(&toy(false)).unwrap().encode("ü", false).unwrap_err();
    assert!(err.to_string().contains("no token for byte 0xBC"), "ü is C3 BC, and only C3 has a token: {err}");
}

#[test]
fn user_defined_tokens_split_always_control_tokens_only_when_asked() {
    assert_eq!(encode(&toy(false), "a<ud>b", false), [1, 6, 3, 7]);
    // Parsed, "<ctl>" is one token; not parsed, it is text, and "<" has neither a token nor a
    // byte token in this vocabulary, so the encoding is refused.
    assert_eq!(encode(&toy(false), "a<ctl>b", true), [1, 6, 2, 7]);
    assert!(Tokenizer::from_source(&toy(false)).unwrap().encode("a<ctl>b", false).is_err());
    // After a special token the prefix space comes back where the vocabulary adds one.
    assert_eq!(encode(&toy(true), "<ud>a", false), [1, 3, 12]);
}

#[test]
fn a_bad_vocabulary_is_refused_by_name() {
    let mut t = toy(false);
    t.put("tokenizer.ggml.model", Value::String("t5".into()));
    let e = Tokenizer::from_source(&t).unwrap_err().to_string();
    assert!(e.contains("`t5` is not supported"), "{e}");
    // Byte-level BPE: a pre-tokenizer of its own is required, and one of those read.
    t.put("tokenizer.ggml.model", Value::String("gpt2".into()));
    let e = Tokenizer::from_source(&t).unwrap_err().to_string();
    assert!(e.contains("without `tokenizer.ggml.pre`"), "{e}");
    t.put("tokenizer.ggml.pre", Value::String("deepseek-llm".into()));
    let e = Tokenizer::from_source(&t).unwrap_err().to_string();
    assert!(e.contains("pre-tokenizer `deepseek-llm` is not supported: this reads gpt-2, smollm, llama-bpe"), "{e}");
    t.put("tokenizer.ggml.pre", Value::String("smollm".into()));
    let e = Tokenizer::from_source(&t).unwrap_err().to_string();
    assert!(e.contains("`tokenizer.ggml.merges` must be an array of strings"), "{e}");
    let mut t = toy(false);
    t.put("tokenizer.ggml.scores", Value::Array(Array::F32(vec![0.0; 3])));
    assert!(Tokenizer::from_source(&t).unwrap_err().to_string().contains("14 finite f32 scores"));
    let mut t = toy(false);
    t.put("tokenizer.ggml.token_type", Value::Array(Array::I32(vec![9; 14])));
    assert!(Tokenizer::from_source(&t).unwrap_err().to_string().contains("type 9"));
    let mut t = toy(false);
    t.put("tokenizer.ggml.bos_token_id", Value::U32(14));
    assert!(Tokenizer::from_source(&t).unwrap_err().to_string().contains("past the vocabulary of 14"));
    // Over MAX_VOCAB tokens: refused before the vocabulary is copied.
    let mut t = toy(false);
    t.put("tokenizer.ggml.tokens", Value::Array(Array::String(vec![String::new(); MAX_VOCAB + 1])));
    let e = Tokenizer::from_source(&t).unwrap_err().to_string();
    assert!(e.contains(&format!("holds {} tokens, over the {MAX_VOCAB}", MAX_VOCAB + 1)), "{e}");
}

#[test]
fn decoding_turns_pieces_back_into_text_and_a_stream_holds_half_characters_back() {
    let t = Tokenizer::from_source(&toy(false)).unwrap();
    let ids = t.encode("ab aé", false).unwrap();
    assert_eq!(t.decode(&ids).unwrap(), "ab aé", "BOS, a control token, renders as nothing");
    let mut stream = StreamDecoder::default();
    let shown: Vec<String> = ids.iter().map(|&id| stream.push(&t, id).unwrap()).collect();
    // "é" is two byte tokens: nothing after the first, the whole character after the second.
    assert_eq!(shown, ["", "ab", " a", "", "é"]);
    assert_eq!(stream.finish(), "");
    stream.push(&t, 4).unwrap();
    assert_eq!(stream.finish(), "\u{FFFD}", "an unfinished character at the end");
    assert!(t.piece(14).unwrap_err().to_string().contains("past the vocabulary of 14"));
}
