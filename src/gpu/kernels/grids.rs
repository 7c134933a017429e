//! The i-quant grids as the WGSL codecs read them: ggml's tables (`src/gguf/tables.rs`), with
//! the 8-byte entries packed over their three levels so that every grid fits workgroup memory.

use crate::format::{Format, Grid};

/// The levels an 8-byte grid entry's values take: ggml's iq2 grids hold 0x08, 0x19 and 0x2b, its
/// iq1s_grid the int8 bytes -1, 0 and 1. A level's index is what the device grid stores.
pub(super) const IQ2_GRID_LEVELS: [u8; 3] = [0x08, 0x19, 0x2b];
pub(super) const IQ1_GRID_LEVELS: [u8; 3] = [0xff, 0x00, 0x01];

/// How an 8-byte grid entry is stored over its levels' indices (shaders/codecs/gguf_blocks.wgsl,
/// grid_level_indices; generated as GRID_NIBBLES).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryBits {
    /// One word per entry, value v's index in the nibble at bit 8 (v % 4) + 4 (v / 4): the
    /// indices of values 0..3 and 4..7 are then the word masked, one operation each. For the
    /// iq2 grids, which fit workgroup memory so (iq2_s: 1024 words).
    Nibbles,
    /// 16 bits per entry, value v's index at bits 2v, entry e in half e % 2 of word e / 2: a
    /// quarter of ggml's bytes, which every grid needs to fit (iq1s_grid: 2048 entries).
    Pairs,
}

/// ggml's 8-byte grid entries stored as shaders/codecs/gguf_blocks.wgsl reads them (`EntryBits`). A byte
/// outside `levels` would store as index 3, which no decoder maps back: `packed_grids_are_lossless`
/// proves every table is inside its levels.
fn pack_grid(grid: &[u64], levels: [u8; 3], bits: EntryBits) -> Vec<u32> {
    let entry = |e: u64| {
        e.to_le_bytes().iter().enumerate().fold(0u32, |word, (v, byte)| {
            let index = levels.iter().position(|l| l == byte).unwrap_or(3) as u32;
            word | match bits {
                EntryBits::Nibbles => index << (8 * (v % 4) + 4 * (v / 4)),
                EntryBits::Pairs => index << (2 * v),
            }
        })
    };
    match bits {
        EntryBits::Nibbles => grid.iter().map(|&e| entry(e)).collect(),
        EntryBits::Pairs => {
            grid.chunks(2).map(|pair| pair.iter().rev().fold(0, |word, &e| word << 16 | entry(e))).collect()
        }
    }
}

/// Where a format's grid comes from: iq3's 4-byte entries as they are, the 8-byte ones packed
/// over their levels (`pack_grid`).
enum GridSource {
    Words(&'static [u32]),
    Packed(&'static [u64], [u8; 3], EntryBits),
}

/// The grid an i-quant kernel reads from plane1, as u32 words: ggml's tables from
/// `gguf::tables`, iq3's 4-byte entries as they are and the 8-byte ones packed (`pack_grid`).
pub fn gguf_grid(format: Format) -> Option<Vec<u32>> {
    grid_source(format).map(|source| match source {
        GridSource::Words(words) => words.to_vec(),
        GridSource::Packed(grid, levels, bits) => pack_grid(grid, levels, bits),
    })
}

/// Whether `format`'s grid entries are stored one per word in nibbles (`EntryBits::Nibbles`).
pub(super) fn grid_nibbles(format: Format) -> bool {
    matches!(grid_source(format), Some(GridSource::Packed(_, _, EntryBits::Nibbles)))
}

/// Whether `format`'s kernels bind a grid (without building it).
pub fn has_grid(format: Format) -> bool {
    grid_source(format).is_some()
}

fn grid_source(format: Format) -> Option<GridSource> {
    use crate::gguf::tables::*;
    let grid = format.gguf()?.grid?;
    Some(match grid {
        Grid::Iq2Xxs => GridSource::Packed(&IQ2XXS_GRID, IQ2_GRID_LEVELS, EntryBits::Nibbles),
        Grid::Iq2Xs => GridSource::Packed(&IQ2XS_GRID, IQ2_GRID_LEVELS, EntryBits::Nibbles),
        Grid::Iq2S => GridSource::Packed(&IQ2S_GRID, IQ2_GRID_LEVELS, EntryBits::Nibbles),
        Grid::Iq3Xxs => GridSource::Words(&IQ3XXS_GRID),
        Grid::Iq3S => GridSource::Words(&IQ3S_GRID),
        Grid::Iq1S => GridSource::Packed(&IQ1S_GRID, IQ1_GRID_LEVELS, EntryBits::Pairs),
    })
}
