//! Byte-level BPE (`tokenizer.ggml.model` = `gpt2`), encoding as llama.cpp encodes (the facts,
//! from its vocabulary and Unicode code):
//!
//! 1. A plain piece of text is split into words by the vocabulary's pre-tokenizer
//!    (`tokenizer.ggml.pre`): `gpt-2` is GPT-2's pattern `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|
//!    ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)` (a character nothing matches is a word of its own);
//!    `smollm` first makes every number character a word of its own, then applies GPT-2's;
//!    `llama-bpe` (`llama3`, `llama-v3`) is Llama 3's pattern (numbers in runs of up to three
//!    digits, a word that is a token as a whole taken unmerged, BOS added by default), and
//!    `qwen2` the same with every digit a word; `default` is llama.cpp's fallback (runs of
//!    punctuation, GPT-2's pattern, runs of numbers, ASCII digits by three, each splitting the
//!    words the one before left).
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
    /// Llama 3's pattern (`llama-bpe`, `llama3`, `llama-v3`): numbers in runs of up to 3 digits.
    Llama3,
    /// Qwen2's: Llama 3's with every digit a word of its own.
    Qwen2,
    /// llama.cpp's `default`: runs of punctuation, then GPT-2's pattern, then runs of numbers,
    /// then ASCII digits by three.
    Default,
}

impl PreTokenizer {
    pub const NAMES: [&'static str; 7] = ["gpt-2", "smollm", "llama-bpe", "llama3", "llama-v3", "qwen2", "default"];

    pub fn from_name(name: &str) -> Option<PreTokenizer> {
        match name {
            "gpt-2" => Some(PreTokenizer::Gpt2),
            "smollm" => Some(PreTokenizer::Smollm),
            "llama-bpe" | "llama3" | "llama-v3" => Some(PreTokenizer::Llama3),
            "qwen2" => Some(PreTokenizer::Qwen2),
            "default" => Some(PreTokenizer::Default),
            _ => None,
        }
    }

    /// Whether the vocabulary adds BOS where `tokenizer.ggml.add_bos_token` is absent
    /// (llama.cpp's default for the pre-tokenizer).
    pub fn adds_bos(self) -> bool {
        match self {
            PreTokenizer::Llama3 => true,
            PreTokenizer::Gpt2 | PreTokenizer::Smollm | PreTokenizer::Qwen2 | PreTokenizer::Default => false,
        }
    }

    /// Whether a word that is a token as a whole is taken whole, unmerged (Llama 3's rule).
    fn ignores_merges(self) -> bool {
        match self {
            PreTokenizer::Llama3 => true,
            PreTokenizer::Gpt2 | PreTokenizer::Smollm | PreTokenizer::Qwen2 | PreTokenizer::Default => false,
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
    LETTERS.get_or_init(|| unicode_class(r"\p{L}"))
}

/// Unicode general category P, as ranges.
fn punctuation() -> &'static [(char, char)] {
    static PUNCTUATION: OnceLock<Vec<(char, char)>> = OnceLock::new();
    PUNCTUATION.get_or_init(|| unicode_class(r"\p{P}"))
}

fn unicode_class(pattern: &str) -> Vec<(char, char)> {
    use regex_syntax::hir::{Class, HirKind};
    match regex_syntax::parse(pattern).map(|h| h.kind().clone()) {
        Ok(HirKind::Class(Class::Unicode(class))) => class.ranges().iter().map(|r| (r.start(), r.end())).collect(),
        // regex-syntax built with its Unicode tables always parses these; without them no
        // character outside ASCII would be in the class (and the tests against llama.cpp fail).
        _ => Vec::new(),
    }
}

fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    ranges
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

fn is_letter(c: char) -> bool {
    match c.is_ascii() {
        true => c.is_ascii_alphabetic(),
        false => in_ranges(letters(), c),
    }
}

/// `default`'s first class: Unicode punctuation and `$+<=>^~|`.
fn is_punctuation(c: char) -> bool {
    "$+<=>^~|".contains(c) || in_ranges(punctuation(), c)
}

/// `text` split into words by `pre`, in order; together they are the whole text.
pub fn split(pre: PreTokenizer, text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    match pre {
        PreTokenizer::Gpt2 => gpt2(text, &mut words),
        PreTokenizer::Llama3 => llama3(text, &mut words, 3),
        PreTokenizer::Qwen2 => llama3(text, &mut words, 1),
        PreTokenizer::Default => {
            // Each pattern splits every word the one before left: its matches are words, and
            // so are the stretches between them.
            let mut pieces = Vec::new();
            runs(text, is_punctuation, &mut pieces);
            let mut gpt = Vec::new();
            pieces.iter().for_each(|p| gpt2(p, &mut gpt));
            let mut numbers = Vec::new();
            gpt.iter().for_each(|p| runs(p, char::is_numeric, &mut numbers));
            numbers.iter().for_each(|p| digit_triples(p, &mut words));
        }
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

/// A text as a pre-tokenizer walks it: characters by index (an index past the end is no
/// character, of no class), and the words cut so far.
struct Scan<'t, 'w> {
    text: &'t str,
    chars: Vec<(usize, char)>,
    /// Where the next word starts (a character index).
    from: usize,
    words: &'w mut Vec<&'t str>,
}

impl<'t, 'w> Scan<'t, 'w> {
    fn new(text: &'t str, words: &'w mut Vec<&'t str>) -> Self {
        Scan { text, chars: text.char_indices().collect(), from: 0, words }
    }

    fn len(&self) -> usize {
        self.chars.len()
    }

    fn at(&self, p: usize) -> Option<char> {
        self.chars.get(p).map(|&(_, c)| c)
    }

    fn letter(&self, p: usize) -> bool {
        self.at(p).is_some_and(is_letter)
    }

    fn number(&self, p: usize) -> bool {
        self.at(p).is_some_and(char::is_numeric)
    }

    fn space(&self, p: usize) -> bool {
        self.at(p).is_some_and(char::is_whitespace)
    }

    fn newline(&self, p: usize) -> bool {
        self.at(p).is_some_and(|c| c == '\r' || c == '\n')
    }

    /// `[^\s\p{L}\p{N}]`
    fn other(&self, p: usize) -> bool {
        self.at(p).is_some_and(|c| !(c.is_whitespace() || is_letter(c) || c.is_numeric()))
    }

    /// The length of a contraction at `p` (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`; any case
    /// where `any_case`, and no letter but ASCII's lowercases to these), or 0.
    fn contraction(&self, p: usize, any_case: bool) -> usize {
        let at = |p: usize| self.at(p).map(|c| if any_case { c.to_ascii_lowercase() } else { c });
        match (self.at(p), at(p + 1), at(p + 2)) {
            (Some('\''), Some('s' | 't' | 'm' | 'd'), _) => 2,
            (Some('\''), Some('r'), Some('e'))
            | (Some('\''), Some('v'), Some('e'))
            | (Some('\''), Some('l'), Some('l')) => 3,
            _ => 0,
        }
    }

    /// The whitespace run at `p`: `\s+(?!\S)` where more text follows (the run's last space
    /// goes to the next word), else the whole run; a position of no class takes one character.
    fn space_run_end(&self, p: usize) -> usize {
        let mut run = 0;
        while self.space(p + run) {
            run += 1;
        }
        match run {
            0 | 1 => p + 1,
            _ if p + run < self.len() => p + run - 1,
            _ => p + run,
        }
    }

    /// The end of the run of `class` characters from `p`.
    fn run(&self, mut p: usize, class: impl Fn(&Self, usize) -> bool) -> usize {
        while class(self, p) {
            p += 1;
        }
        p
    }

    /// Cuts the word that ends before character `end`.
    fn cut(&mut self, end: usize) {
        let byte = |p: usize| self.chars.get(p).map_or(self.text.len(), |&(b, _)| b);
        if end > self.from {
            let word = &self.text[byte(self.from)..byte(end)];
            self.words.push(word);
        }
        self.from = end;
    }
}

/// `[class]+` over `text`: each run of `class` characters a word, and each stretch between.
fn runs<'t>(text: &'t str, class: fn(char) -> bool, words: &mut Vec<&'t str>) {
    let mut from = 0;
    let mut inside = None;
    for (i, c) in text.char_indices() {
        let now = class(c);
        if inside.is_some_and(|was| was != now) {
            words.push(&text[from..i]);
            from = i;
        }
        inside = Some(now);
    }
    if from < text.len() {
        words.push(&text[from..]);
    }
}

/// `[0-9][0-9][0-9]` over `text`: each three ASCII digits in a row (leftmost first) a word, and
/// each stretch between.
fn digit_triples<'t>(text: &'t str, words: &mut Vec<&'t str>) {
    let b = text.as_bytes();
    let (mut from, mut i) = (0, 0);
    while i + 3 <= b.len() {
        if b[i..i + 3].iter().all(u8::is_ascii_digit) {
            if i > from {
                words.push(&text[from..i]);
            }
            words.push(&text[i..i + 3]);
            i += 3;
            from = i;
        } else {
            i += 1;
        }
    }
    if from < text.len() {
        words.push(&text[from..]);
    }
}

/// GPT-2's pattern over `text`, matched as llama.cpp's hand-written matcher does.
fn gpt2<'t>(text: &'t str, words: &mut Vec<&'t str>) {
    let mut s = Scan::new(text, words);
    let mut pos = 0;
    while pos < s.len() {
        let contraction = s.contraction(pos, false);
        if contraction > 0 {
            pos += contraction;
            s.cut(pos);
            continue;
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: one class after an optional space.
        let lead = if s.at(pos) == Some(' ') { pos + 1 } else { pos };
        pos = if s.letter(lead) {
            s.run(lead, Scan::letter)
        } else if s.number(lead) {
            s.run(lead, Scan::number)
        } else if s.other(lead) {
            s.run(lead, Scan::other)
        } else {
            s.space_run_end(pos)
        };
        s.cut(pos);
    }
}

/// Llama 3's pattern, `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
/// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, matched as llama.cpp's hand-written
/// matcher does (`digits` = 3; Qwen2's pattern is the same with 1, which llama.cpp runs through
/// a regex engine to the same words).
fn llama3<'t>(text: &'t str, words: &mut Vec<&'t str>, digits: usize) {
    let mut s = Scan::new(text, words);
    let mut pos = 0;
    while pos < s.len() {
        let contraction = s.contraction(pos, true);
        if contraction > 0 {
            pos += contraction;
            s.cut(pos);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if !(s.newline(pos) || s.number(pos)) && (s.letter(pos) || s.letter(pos + 1)) {
            pos += 1;
            while s.letter(pos) {
                pos += 1;
            }
            s.cut(pos);
            continue;
        }
        // \p{N}{1,digits}
        if s.number(pos) {
            let mut from = pos;
            while s.number(pos) {
                pos += 1;
                if pos - from >= digits {
                    s.cut(pos);
                    from = pos;
                }
            }
            s.cut(pos);
            continue;
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*` (a space at the very end is a word by this branch too)
        let lead = if s.at(pos) == Some(' ') { pos + 1 } else { pos };
        if !(s.space(lead) || s.letter(lead) || s.number(lead)) {
            pos = lead;
            while s.other(pos) {
                pos += 1;
            }
            while s.newline(pos) {
                pos += 1;
            }
            s.cut(pos);
            continue;
        }
        // \s*[\r\n]+: a run of whitespace up to its last newline.
        let mut last_newline = None;
        let mut end = pos;
        while s.space(end) {
            end += 1;
            if s.newline(end - 1) {
                last_newline = Some(end);
            }
        }
        pos = last_newline.unwrap_or_else(|| s.space_run_end(pos));
        s.cut(pos);
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

    pub fn pre(&self) -> PreTokenizer {
        self.pre
    }

    /// The ids of a plain piece of text, appended to `out`.
    pub fn encode(&self, text: &str, to_id: &HashMap<String, u32>, out: &mut Vec<u32>) -> Result<()> {
        for word in split(self.pre, text) {
            let encoded: String = word.bytes().map(byte_char).collect();
            match (self.pre.ignores_merges(), to_id.get(&encoded)) {
                (true, Some(&id)) => out.push(id),
                _ => self.merge(&encoded, to_id, out)?,
            }
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
    fn llama3_and_qwen2_split_as_llama_cpp() {
        let text = "Hello (world) IT'S 12345 x\n\n  y ,\n";
        assert_eq!(
            split(PreTokenizer::Llama3, text),
            ["Hello", " (", "world", ")", " IT", "'S", " ", "123", "45", " x", "\n\n", " ", " y", " ,\n"]
        );
        assert_eq!(
            split(PreTokenizer::Qwen2, text),
            ["Hello", " (", "world", ")", " IT", "'S", " ", "1", "2", "3", "4", "5", " x", "\n\n", " ", " y", " ,\n"]
        );
    }

    #[test]
    fn default_splits_punctuation_then_gpt2_then_numbers_then_digit_triples() {
        assert_eq!(
            split(PreTokenizer::Default, "a+b=12345 (x)! 7½8"),
            ["a", "+", "b", "=", "123", "45", " ", "(", "x", ")!", " ", "7½8"]
        );
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
