//! Byte-level BPE (`tokenizer.ggml.model` = `gpt2`), encoding as llama.cpp encodes (the facts,
//! from its vocabulary and Unicode code):
//!
//! 1. A plain piece of text is split into words by the vocabulary's pre-tokenizer
//!    (`tokenizer.ggml.pre`): `gpt-2` is GPT-2's pattern `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|
//!    ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)` (a character nothing matches is a word of its own);
//!    `smollm` first makes every number character a word of its own, then applies GPT-2's.
//! 2. Each word's UTF-8 bytes are written as GPT-2's printable characters (one per byte), and
//!    adjacent symbols are merged by the merge list's rank (`tokenizer.ggml.merges`, lowest
//!    first; ties: leftmost first) until no pair is in the list.
//! 3. Each symbol is a token. (llama.cpp falls back to single-byte tokens for a symbol that is
//!    not, and silently drops the bytes that have none; a vocabulary that needs the fallback is
//!    refused here instead, naming the symbol.)
//!
//! Letters are Unicode's general category L (the `regex-syntax` crate's tables), numbers
//! category N (`char::is_numeric`), whitespace the White_Space property (`char::is_whitespace`),
//! as llama.cpp's own tables classify them.

use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::OnceLock;

/// The pre-tokenizers read, by their `tokenizer.ggml.pre` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizer {
    Gpt2,
    Smollm,
}

impl PreTokenizer {
    pub const NAMES: [&'static str; 2] = ["gpt-2", "smollm"];

    pub fn from_name(name: &str) -> Option<PreTokenizer> {
        match name {
            "gpt-2" => Some(PreTokenizer::Gpt2),
            "smollm" => Some(PreTokenizer::Smollm),
            _ => None,
        }
    }
}

/// Bytes GPT-2 writes as the character of the same code point: `!`..`~`, `¡`..`¬`, `®`..`ÿ`.
fn printable(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// GPT-2's byte-to-character map: a printable byte is its own character; the n-th other byte
/// (0..=0x20, 0x7F..=0xA0, 0xAD, in byte order) is U+0100 + n.
pub fn byte_char(b: u8) -> char {
    static TABLE: OnceLock<[char; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = ['\0'; 256];
        let mut next = 0x100u32;
        for (byte, c) in table.iter_mut().enumerate() {
            *c = match printable(byte as u8) {
                true => char::from(byte as u8),
                false => {
                    next += 1;
                    char::from_u32(next - 1).unwrap_or('\0')
                }
            };
        }
        table
    })[b as usize]
}

/// The byte a GPT-2 character stands for; `None` for a character outside the map.
pub fn char_byte(c: char) -> Option<u8> {
    static INVERSE: OnceLock<HashMap<char, u8>> = OnceLock::new();
    INVERSE.get_or_init(|| (0..=255u8).map(|b| (byte_char(b), b)).collect()).get(&c).copied()
}

/// Unicode general category L, as ranges.
fn letters() -> &'static [(char, char)] {
    static LETTERS: OnceLock<Vec<(char, char)>> = OnceLock::new();
    LETTERS.get_or_init(|| {
        use regex_syntax::hir::{Class, HirKind};
        match regex_syntax::parse(r"\p{L}").map(|h| h.kind().clone()) {
            Ok(HirKind::Class(Class::Unicode(class))) => class.ranges().iter().map(|r| (r.start(), r.end())).collect(),
            // regex-syntax built with its Unicode tables always parses this; without them no
            // letter outside ASCII would be one (and the tests comparing with llama.cpp fail).
            _ => Vec::new(),
        }
    })
}

fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    letters()
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `text` split into words by `pre`, in order; together they are the whole text.
pub fn split(pre: PreTokenizer, text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    match pre {
        PreTokenizer::Gpt2 => gpt2(text, &mut words),
        PreTokenizer::Smollm => {
            let mut start = 0;
            for (i, c) in text.char_indices() {
                if c.is_numeric() {
                    if i > start {
                        gpt2(&text[start..i], &mut words);
                    }
                    words.push(&text[i..i + c.len_utf8()]);
                    start = i + c.len_utf8();
                }
            }
            if start < text.len() {
                gpt2(&text[start..], &mut words);
            }
        }
    }
    words
}

/// GPT-2's pattern over `text`, matched as llama.cpp's hand-written matcher does.
fn gpt2<'t>(text: &'t str, words: &mut Vec<&'t str>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let at = |p: usize| chars.get(p).map(|&(_, c)| c);
    let byte = |p: usize| chars.get(p).map_or(text.len(), |&(b, _)| b);
    let letter = |p: usize| at(p).is_some_and(is_letter);
    let number = |p: usize| at(p).is_some_and(char::is_numeric);
    let space = |p: usize| at(p).is_some_and(char::is_whitespace);
    let other = |p: usize| at(p).is_some_and(|c| !(c.is_whitespace() || is_letter(c) || c.is_numeric()));
    let (mut pos, mut prev) = (0, 0);
    let mut add = |end: usize, words: &mut Vec<&'t str>| {
        if end > prev {
            words.push(&text[byte(prev)..byte(end)]);
        }
        prev = end;
    };
    while pos < n {
        let c = chars[pos].1;
        // 's|'t|'re|'ve|'m|'ll|'d
        if c == '\'' {
            let contraction = match (at(pos + 1), at(pos + 2)) {
                (Some('s' | 't' | 'm' | 'd'), _) => 2,
                (Some('r'), Some('e')) | (Some('v'), Some('e')) | (Some('l'), Some('l')) => 3,
                _ => 0,
            };
            if contraction > 0 {
                pos += contraction;
                add(pos, words);
                continue;
            }
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: one class after an optional space.
        let lead = if c == ' ' { pos + 1 } else { pos };
        let class: Option<&dyn Fn(usize) -> bool> = if letter(lead) {
            Some(&letter)
        } else if number(lead) {
            Some(&number)
        } else if other(lead) {
            Some(&other)
        } else {
            None
        };
        if let Some(class) = class {
            pos = lead;
            while class(pos) {
                pos += 1;
            }
            add(pos, words);
            continue;
        }
        let mut run = 0;
        while space(pos + run) {
            run += 1;
        }
        // `\s+(?!\S)`: a run followed by more text gives its last space to the next word.
        if run > 1 && pos + run < n {
            pos += run - 1;
        } else if run > 0 {
            pos += run;
        } else {
            pos += 1;
        }
        add(pos, words);
    }
}

/// A vocabulary's merge list with the pre-tokenizer its words come from.
#[derive(Debug, Clone)]
pub struct Bpe {
    pre: PreTokenizer,
    /// "left right" (GPT-2 characters: a token's text never holds a space) → rank.
    ranks: HashMap<String, u32>,
}

impl Bpe {
    /// The merges of `tokenizer.ggml.merges`, each "left right", in rank order.
    pub fn new(pre: PreTokenizer, merges: &[String]) -> Result<Bpe> {
        let mut ranks = HashMap::with_capacity(merges.len());
        for (rank, m) in merges.iter().enumerate() {
            // llama.cpp splits at the first space after the first byte.
            if !m.as_bytes().iter().skip(1).any(|&b| b == b' ') {
                return Err(Error::Model(format!(
                    "`tokenizer.ggml.merges` entry {rank} (`{}`) is not two symbols separated by a space",
                    crate::error::clip(m)
                )));
            }
            ranks.entry(m.clone()).or_insert(rank as u32);
        }
        Ok(Bpe { pre, ranks })
    }

    /// The ids of a plain piece of text, appended to `out`.
    pub fn encode(&self, text: &str, to_id: &HashMap<String, u32>, out: &mut Vec<u32>) -> Result<()> {
        for word in split(self.pre, text) {
            let encoded: String = word.bytes().map(byte_char).collect();
            self.merge(&encoded, to_id, out)?;
        }
        Ok(())
    }

    /// One word in GPT-2 characters: merged by rank, each symbol then a token.
    fn merge(&self, word: &str, to_id: &HashMap<String, u32>, out: &mut Vec<u32>) -> Result<()> {
        // (start, len) per symbol; merging absorbs the right symbol into the left.
        let mut symbols: Vec<(usize, usize)> = word.char_indices().map(|(i, c)| (i, c.len_utf8())).collect();
        let mut next: Vec<Option<usize>> =
            (0..symbols.len()).map(|i| (i + 1 < symbols.len()).then_some(i + 1)).collect();
        let mut prev: Vec<Option<usize>> = (0..symbols.len()).map(|i| i.checked_sub(1)).collect();
        let text = |s: (usize, usize)| &word[s.0..s.0 + s.1];
        let rank = |symbols: &[(usize, usize)], l: usize, r: usize| {
            self.ranks.get(&format!("{} {}", text(symbols[l]), text(symbols[r]))).copied()
        };
        let mut queue = BinaryHeap::new();
        for r in 1..symbols.len() {
            if let Some(k) = rank(&symbols, r - 1, r) {
                queue.push(Reverse((k, r - 1, r, symbols[r - 1].1 + symbols[r].1)));
            }
        }
        while let Some(Reverse((_, l, r, size))) = queue.pop() {
            // Stale: one side merged since the pair was queued (lengths change with every merge).
            if symbols[l].1 == 0 || symbols[r].1 == 0 || symbols[l].1 + symbols[r].1 != size {
                continue;
            }
            symbols[l].1 += symbols[r].1;
            symbols[r].1 = 0;
            next[l] = next[r];
            if let Some(n) = next[r] {
                prev[n] = Some(l);
            }
            for (a, b) in [(prev[l], Some(l)), (Some(l), next[l])] {
                if let (Some(a), Some(b)) = (a, b) {
                    if let Some(k) = rank(&symbols, a, b) {
                        queue.push(Reverse((k, a, b, symbols[a].1 + symbols[b].1)));
                    }
                }
            }
        }
        for s in symbols.into_iter().filter(|s| s.1 > 0) {
            let piece = text(s);
            let id = to_id.get(piece).ok_or_else(|| {
                Error::Model(format!(
                    "the byte-level vocabulary has no token for `{}` (llama.cpp would drop bytes here)",
                    crate::error::clip(piece)
                ))
            })?;
            out.push(*id);
        }
        Ok(())
    }
}

/// A byte-level token's text as the bytes it stands for.
pub fn token_bytes(text: &str) -> Result<Vec<u8>> {
    text.chars()
        .map(|c| {
            char_byte(c).ok_or_else(|| {
                Error::Model(format!("token `{}` holds `{c}`, which is no byte's character", crate::error::clip(text)))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_map_is_a_bijection_onto_printable_characters() {
        let chars: std::collections::HashSet<char> = (0..=255u8).map(byte_char).collect();
        assert_eq!(chars.len(), 256);
        assert_eq!((byte_char(b' '), byte_char(b'\n'), byte_char(b'a'), byte_char(0xAD)), ('Ġ', 'Ċ', 'a', 'Ń'));
        assert!((0..=255u8).all(|b| char_byte(byte_char(b)) == Some(b)));
        assert_eq!(char_byte('€'), None);
    }

    #[test]
    fn gpt2_splits_words_contractions_and_space_runs_as_llama_cpp() {
        let words = split(PreTokenizer::Gpt2, "Hello world's  end,\n\nsee 12ab   x é東京 🙂!");
        assert_eq!(
            words,
            ["Hello", " world", "'s", " ", " end", ",", "\n", "\n", "see", " 12", "ab", "  ", " x", " é東京", " 🙂!"]
        );
        // A run of spaces at the end stays whole; a lone newline before a letter is a word.
        assert_eq!(split(PreTokenizer::Gpt2, "a \n\tb  "), ["a", " \n", "\t", "b", "  "]);
    }

    #[test]
    fn smollm_makes_every_digit_a_word_first() {
        assert_eq!(split(PreTokenizer::Smollm, "in 2024, x1"), ["in", " ", "2", "0", "2", "4", ",", " x", "1"]);
    }

    #[test]
    fn merges_go_lowest_rank_first() {
        let merges: Vec<String> = ["l o", "lo w", "e r", "Ġ l"].iter().map(|s| s.to_string()).collect();
        let bpe = Bpe::new(PreTokenizer::Gpt2, &merges).unwrap();
        let vocab: HashMap<String, u32> = ["l", "o", "w", "e", "r", "Ġ", "lo", "low", "er", "Ġl"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        let mut out = Vec::new();
        bpe.encode("lower low", &vocab, &mut out).unwrap();
        // "lower": l o → lo, lo w → low, e r → er; " low": Ġ l (rank 3) loses to l o (rank 0).
        assert_eq!(out, [7, 8, 5, 7]);
        let e = Bpe::new(PreTokenizer::Gpt2, &["lo".to_string()]).unwrap_err().to_string();
        assert!(e.contains("entry 0"), "{e}");
        let e = bpe.encode("z", &vocab, &mut out).unwrap_err().to_string();
        assert!(e.contains("no token for `z`"), "{e}");
    }
}
