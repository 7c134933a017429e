//! The tokenizer of a GGUF's own vocabulary (`tokenizer.ggml.*`): model `llama` (SentencePiece
//! pieces with scores and byte fallback, below) or `gpt2` (byte-level BPE, [`bpe`]), encoding as
//! llama.cpp encodes (the facts, from its vocabulary code). SentencePiece:
//!
//! 1. The text is cut around special tokens, longest first: user-defined tokens always, control
//!    and unknown tokens only when special text is asked to be parsed; anything else is plain
//!    text.
//! 2. Each plain piece (after a space when the vocabulary adds a prefix and the piece follows a
//!    special token or starts the text) has its spaces written as U+2581, is split into UTF-8
//!    characters, and adjacent symbols whose concatenation is a token are merged, the highest
//!    score first (ties: leftmost first), until none can be.
//! 3. A symbol that is a token gives its id; any other gives one byte token (`<0xXX>`) per byte.
//! 4. BOS first where the vocabulary says so, EOS last likewise.

use super::config::Source;
use crate::error::clip;
use crate::error::{Error, Result};
use crate::gguf::reader::{Array, GgufHeader, Value};
use std::collections::{BinaryHeap, HashMap};

/// SentencePiece's visible space.
const SPACE: &str = "\u{2581}";
/// The largest vocabulary read: 2^21 tokens, eight times gemma3's 262144 (the largest of the
/// families read). The tokenizer keeps each token's text twice (the list and the map), so a
/// vocabulary of tens of millions would take gigabytes before any check could fail.
pub const MAX_VOCAB: usize = 1 << 21;

/// A token's type (`tokenizer.ggml.token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Undefined,
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl TokenKind {
    fn from_code(code: i64) -> Option<TokenKind> {
        Some(match code {
            0 => TokenKind::Undefined,
            1 => TokenKind::Normal,
            2 => TokenKind::Unknown,
            3 => TokenKind::Control,
            4 => TokenKind::UserDefined,
            5 => TokenKind::Unused,
            6 => TokenKind::Byte,
            _ => return None,
        })
    }
}

/// A vocabulary and its encoding rules.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    /// Byte-level BPE's merges and pre-tokenizer (`gpt2`); `None`: SentencePiece (`llama`).
    bpe: Option<bpe::Bpe>,
    tokens: Vec<String>,
    scores: Vec<f32>,
    kinds: Vec<TokenKind>,
    to_id: HashMap<String, u32>,
    /// Control, user-defined and unknown tokens, longest text first.
    special: Vec<u32>,
    bytes: [Option<u32>; 256],
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    add_bos: bool,
    add_eos: bool,
    add_space_prefix: bool,
    /// `tokenizer.chat_template`, as the file holds it.
    chat_template: Option<String>,
}

fn tokenizer_error(detail: String) -> Error {
    Error::Model(detail)
}

/// An optional token id key, below `vocab`.
fn token_id<S: Source + ?Sized>(src: &S, key: &str, vocab: usize) -> Result<Option<u32>> {
    match src.value(key) {
        None => Ok(None),
        Some(Value::U32(id)) if (*id as usize) < vocab => Ok(Some(*id)),
        Some(Value::U32(id)) => {
            Err(tokenizer_error(format!("`{key}` = {id} is past the vocabulary of {vocab} tokens")))
        }
        Some(_) => Err(tokenizer_error(format!("`{key}` must be a u32 token id"))),
    }
}

fn flag<S: Source + ?Sized>(src: &S, key: &str, default: bool) -> Result<bool> {
    match src.value(key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(tokenizer_error(format!("`{key}` must be a bool"))),
    }
}

/// Byte-level BPE's pre-tokenizer and merges (`tokenizer.ggml.pre`, `tokenizer.ggml.merges`).
fn byte_level_bpe<S: Source + ?Sized>(src: &S) -> Result<bpe::Bpe> {
    let pre = match src.value("tokenizer.ggml.pre") {
        Some(Value::String(p)) => bpe::PreTokenizer::from_name(p).ok_or_else(|| {
            tokenizer_error(format!(
                "pre-tokenizer `{}` is not supported: this reads {}",
                clip(p),
                bpe::PreTokenizer::NAMES.join(", ")
            ))
        })?,
        Some(_) => return Err(tokenizer_error("`tokenizer.ggml.pre` must be a string".into())),
        // llama.cpp reads a file without one with its `default` splitter, with a warning that
        // quality degrades; that splitter is not one of those read here.
        None => {
            return Err(tokenizer_error("a `gpt2` vocabulary without `tokenizer.ggml.pre` is not supported".into()))
        }
    };
    match src.value("tokenizer.ggml.merges") {
        Some(Value::Array(Array::String(merges))) => bpe::Bpe::new(pre, merges),
        _ => Err(tokenizer_error("`tokenizer.ggml.merges` must be an array of strings".into())),
    }
}

/// A merge candidate: two adjacent symbols whose text is a token.
#[derive(Debug, PartialEq)]
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
}

impl Eq for Bigram {}

impl Ord for Bigram {
    /// The highest score first; of equal scores, the leftmost.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score.total_cmp(&other.score).then(other.left.cmp(&self.left))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A symbol of the merge: a byte range of the piece, linked to its neighbours.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

impl Tokenizer {
    /// The vocabulary of a GGUF whose `tokenizer.ggml.model` is `llama` (SentencePiece).
    pub fn from_gguf(file: &GgufHeader) -> Result<Tokenizer> {
        Tokenizer::from_source(file)
    }

    /// The vocabulary from any [`Source`] of metadata.
    pub fn from_source<S: Source + ?Sized>(src: &S) -> Result<Tokenizer> {
        let byte_level = match src.value("tokenizer.ggml.model") {
            Some(Value::String(m)) if m == "llama" => false,
            Some(Value::String(m)) if m == "gpt2" => true,
            Some(Value::String(m)) => {
                return Err(tokenizer_error(format!(
                    "tokenizer model `{}` is not supported: this reads `llama` (SentencePiece) and `gpt2` \
                     (byte-level BPE)",
                    clip(m)
                )))
            }
            _ => return Err(tokenizer_error("`tokenizer.ggml.model` must be a string".into())),
        };
        let bpe = match byte_level {
            false => None,
            true => Some(byte_level_bpe(src)?),
        };
        let tokens = match src.value("tokenizer.ggml.tokens") {
            Some(Value::Array(Array::String(t))) if t.len() > MAX_VOCAB => {
                return Err(tokenizer_error(format!(
                    "`tokenizer.ggml.tokens` holds {} tokens, over the {MAX_VOCAB} this reads",
                    t.len()
                )))
            }
            Some(Value::Array(Array::String(t))) if !t.is_empty() => t.clone(),
            _ => return Err(tokenizer_error("`tokenizer.ggml.tokens` must be a non-empty array of strings".into())),
        };
        let n = tokens.len();
        let scores = match src.value("tokenizer.ggml.scores") {
            None => vec![0.0; n],
            Some(Value::Array(Array::F32(s))) if s.len() == n && s.iter().all(|v| v.is_finite()) => s.clone(),
            Some(_) => {
                return Err(tokenizer_error(format!(
                    "`tokenizer.ggml.scores` must be {n} finite f32 scores, one per token"
                )))
            }
        };
        let codes: Vec<i64> = match src.value("tokenizer.ggml.token_type") {
            None => vec![1; n],
            Some(Value::Array(Array::I32(t))) if t.len() == n => t.iter().map(|&c| c as i64).collect(),
            Some(Value::Array(Array::U32(t))) if t.len() == n => t.iter().map(|&c| c as i64).collect(),
            Some(_) => {
                return Err(tokenizer_error(format!("`tokenizer.ggml.token_type` must be {n} integers, one per token")))
            }
        };
        let kinds = codes
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                TokenKind::from_code(c)
                    .ok_or_else(|| tokenizer_error(format!("token {i} has type {c}; token types are 0..=6")))
            })
            .collect::<Result<Vec<_>>>()?;
        // As llama.cpp builds its map: a text given twice names its last id.
        let to_id: HashMap<String, u32> = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let mut special: Vec<u32> = (0..n as u32)
            .filter(|&i| matches!(kinds[i as usize], TokenKind::Control | TokenKind::UserDefined | TokenKind::Unknown))
            .filter(|&i| !tokens[i as usize].is_empty())
            .collect();
        special.sort_by_key(|&i| std::cmp::Reverse(tokens[i as usize].len()));
        let mut bytes = [None; 256];
        for (b, slot) in bytes.iter_mut().enumerate() {
            *slot = to_id.get(&format!("<0x{b:02X}>")).copied();
        }
        // llama.cpp's defaults where a key is absent: SentencePiece adds BOS and a space prefix,
        // byte-level BPE no prefix, and BOS as its pre-tokenizer says.
        let spm = bpe.is_none();
        let default_bos = bpe.as_ref().is_none_or(|b| b.pre().adds_bos());
        Ok(Tokenizer {
            bpe,
            bos: token_id(src, "tokenizer.ggml.bos_token_id", n)?,
            eos: token_id(src, "tokenizer.ggml.eos_token_id", n)?,
            add_bos: flag(src, "tokenizer.ggml.add_bos_token", default_bos)?,
            add_eos: flag(src, "tokenizer.ggml.add_eos_token", false)?,
            add_space_prefix: flag(src, "tokenizer.ggml.add_space_prefix", spm)?,
            chat_template: match src.value("tokenizer.chat_template") {
                None => None,
                Some(Value::String(t)) => Some(t.clone()),
                Some(_) => return Err(tokenizer_error("`tokenizer.chat_template` must be a string".into())),
            },
            tokens,
            scores,
            kinds,
            to_id,
            special,
            bytes,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The id of the token whose text is exactly `text` (a turn marker, say).
    pub fn token(&self, text: &str) -> Option<u32> {
        self.to_id.get(text).copied()
    }

    /// The file's chat template ([`super::chat`]). A file without one whose vocabulary has
    /// gemma's turn markers (gemma-3-270m's) gets gemma's, the template its family is trained
    /// with; any other file without one is refused for chat.
    pub fn chat_template(&self) -> Result<super::chat::ChatTemplate> {
        use super::chat::ChatTemplate;
        match &self.chat_template {
            Some(t) => ChatTemplate::detect(t),
            None if ChatTemplate::Gemma.markers().iter().all(|m| self.to_id.contains_key(*m)) => {
                Ok(ChatTemplate::Gemma)
            }
            None => Err(tokenizer_error("chat: the file has no chat template (`tokenizer.chat_template`)".into())),
        }
    }

    /// A token's type.
    pub fn kind(&self, id: u32) -> Option<TokenKind> {
        self.kinds.get(id as usize).copied()
    }

    /// Encodes `text` as llama.cpp does with its special tokens added (BOS) and, where
    /// `special`, control-token text parsed as those tokens.
    pub fn encode(&self, text: &str, special: bool) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        if self.add_bos {
            out.push(self.bos.ok_or_else(|| tokenizer_error("the vocabulary adds BOS but names none".into()))?);
        }
        let mut after_special = true;
        for piece in self.partition(text, special) {
            match piece {
                Piece::Token(id) => {
                    out.push(id);
                    after_special = true;
                }
                Piece::Text(t) if self.bpe.is_some() => {
                    if let Some(bpe) = &self.bpe {
                        bpe.encode(t, &self.to_id, &mut out)?;
                    }
                    after_special = false;
                }
                Piece::Text(t) => {
                    let mut s = String::with_capacity(t.len() + 3);
                    if self.add_space_prefix && after_special {
                        s.push(' ');
                    }
                    s.push_str(t);
                    self.encode_piece(&s.replace(' ', SPACE), &mut out)?;
                    after_special = false;
                }
            }
        }
        if self.add_eos {
            out.push(self.eos.ok_or_else(|| tokenizer_error("the vocabulary adds EOS but names none".into()))?);
        }
        Ok(out)
    }

    /// `text` cut around the special tokens it holds, longest tokens first.
    fn partition<'t>(&self, text: &'t str, special: bool) -> Vec<Piece<'t>> {
        let mut pieces = vec![Piece::Text(text)];
        for &id in &self.special {
            let kind = self.kinds[id as usize];
            if !special && matches!(kind, TokenKind::Control | TokenKind::Unknown) {
                continue;
            }
            let needle = self.tokens[id as usize].as_str();
            let mut next = Vec::with_capacity(pieces.len());
            for p in pieces {
                let Piece::Text(mut rest) = p else {
                    next.push(p);
                    continue;
                };
                while let Some(at) = rest.find(needle) {
                    if at > 0 {
                        next.push(Piece::Text(&rest[..at]));
                    }
                    next.push(Piece::Token(id));
                    rest = &rest[at + needle.len()..];
                }
                if !rest.is_empty() {
                    next.push(Piece::Text(rest));
                }
            }
            pieces = next;
        }
        pieces
    }

    /// One plain piece (spaces already U+2581): merges by score, then byte fallback.
    fn encode_piece(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let mut symbols: Vec<Symbol> = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| Symbol {
                start: s,
                len: starts.get(i + 1).copied().unwrap_or(text.len()) - s,
                prev: i.checked_sub(1),
                next: (i + 1 < starts.len()).then_some(i + 1),
            })
            .collect();
        let mut queue = BinaryHeap::new();
        let bigram = |symbols: &[Symbol], left: Option<usize>, right: Option<usize>| -> Option<Bigram> {
            let (l, r) = (left?, right?);
            let piece = &text[symbols[l].start..symbols[r].start + symbols[r].len];
            let id = *self.to_id.get(piece)?;
            Some(Bigram { score: self.scores[id as usize], left: l, right: r, size: piece.len() })
        };
        for i in 1..symbols.len() {
            queue.extend(bigram(&symbols, Some(i - 1), Some(i)));
        }
        while let Some(b) = queue.pop() {
            let (l, r) = (symbols[b.left], symbols[b.right]);
            // Stale: one side was merged since the pair was queued.
            if l.len == 0 || r.len == 0 || l.len + r.len != b.size {
                continue;
            }
            symbols[b.left].len += r.len;
            symbols[b.right].len = 0;
            symbols[b.left].next = r.next;
            if let Some(n) = r.next {
                symbols[n].prev = Some(b.left);
            }
            queue.extend(bigram(&symbols, symbols[b.left].prev, Some(b.left)));
            queue.extend(bigram(&symbols, Some(b.left), symbols[b.left].next));
        }
        let mut i = if symbols.is_empty() { None } else { Some(0) };
        while let Some(s) = i {
            let sym = symbols[s];
            let piece = &text[sym.start..sym.start + sym.len];
            // A merged symbol is always a token (merges are only made into tokens); a single
            // character that is not one falls back to its bytes.
            match self.to_id.get(piece) {
                Some(&id) => out.push(id),
                None => {
                    for &byte in piece.as_bytes() {
                        let id = self.bytes[byte as usize]
                            .or_else(|| self.to_id.get(std::str::from_utf8(&[byte]).unwrap_or("")).copied())
                            .ok_or_else(|| {
                                tokenizer_error(format!("the vocabulary has no token for byte 0x{byte:02X}"))
                            })?;
                        out.push(id);
                    }
                }
            }
            i = sym.next;
        }
        Ok(())
    }
}

impl Tokenizer {
    /// The bytes token `id` stands for in text: a byte token's byte; a piece's text with U+2581
    /// as a space; nothing for control tokens (BOS, turn markers), as llama.cpp renders them
    /// without special rendering.
    pub fn piece(&self, id: u32) -> Result<Vec<u8>> {
        let i = id as usize;
        let text = self
            .tokens
            .get(i)
            .ok_or_else(|| tokenizer_error(format!("token id {id} is past the vocabulary of {}", self.tokens.len())))?;
        if self.bpe.is_some() {
            // As llama.cpp renders byte-level tokens: a normal token's characters as the bytes
            // they stand for, a user-defined one as its text, any other as nothing.
            return match self.kinds[i] {
                TokenKind::Normal => bpe::token_bytes(text),
                TokenKind::UserDefined => Ok(text.as_bytes().to_vec()),
                TokenKind::Control
                | TokenKind::Undefined
                | TokenKind::Unknown
                | TokenKind::Unused
                | TokenKind::Byte => Ok(Vec::new()),
            };
        }
        Ok(match self.kinds[i] {
            TokenKind::Control => Vec::new(),
            TokenKind::Byte => match self.bytes.iter().position(|&b| b == Some(id)) {
                Some(byte) => vec![byte as u8],
                None => text.as_bytes().to_vec(),
            },
            TokenKind::Undefined
            | TokenKind::Normal
            | TokenKind::Unknown
            | TokenKind::UserDefined
            | TokenKind::Unused => text.replace(SPACE, " ").into_bytes(),
        })
    }

    /// The text of `ids` (invalid UTF-8, from byte tokens that do not form characters, as U+FFFD).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        let mut bytes = Vec::new();
        for &id in ids {
            bytes.extend(self.piece(id)?);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Decodes a stream of tokens a token at a time, holding back the bytes of a character that
/// byte tokens have only begun, so a stream never shows half a character.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    pending: Vec<u8>,
}

impl StreamDecoder {
    /// The text that `id` completes (possibly empty).
    pub fn push(&mut self, tokenizer: &Tokenizer, id: u32) -> Result<String> {
        self.pending.extend(tokenizer.piece(id)?);
        // Everything up to an incomplete sequence at the end (at most 3 bytes) is shown.
        let keep = match std::str::from_utf8(&self.pending) {
            Ok(_) => 0,
            Err(e) if e.error_len().is_none() => self.pending.len() - e.valid_up_to(),
            Err(_) => 0,
        };
        let done: Vec<u8> = self.pending.drain(..self.pending.len() - keep).collect();
        Ok(String::from_utf8_lossy(&done).into_owned())
    }

    /// What is still held back, at the end of a stream (U+FFFD for an unfinished character).
    pub fn finish(&mut self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned()
    }
}

/// A stretch of the text, or a special token found in it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Piece<'t> {
    Text(&'t str),
    Token(u32),
}

pub mod bpe;
#[cfg(test)]
mod tests;
