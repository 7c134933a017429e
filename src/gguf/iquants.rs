//! ggml's i-quants: grid lookups with sign tables (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s),
//! ternary grids with a delta (iq1_s, iq1_m), and the non-linear iq4_xs. Expressions follow
//! `dequantize_row_iq*` in ggml-quants.c, left to right.

use super::f16_at;
use super::tables::{
    IQ1S_DELTA, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL,
};

/// Byte `j` of a packed grid entry (ggml reads grids through a `uint8_t *`).
fn g8(entry: u64, j: usize) -> f32 {
    ((entry >> (8 * j)) & 0xFF) as f32
}

fn g4(entry: u32, j: usize) -> f32 {
    ((entry >> (8 * j)) & 0xFF) as f32
}

/// `signs & kmask_iq2xs[j] ? -1.f : 1.f` (kmask_iq2xs[j] = 1 << j).
fn sign(signs: u8, j: usize) -> f32 {
    if signs & (1 << j) != 0 {
        -1.0
    } else {
        1.0
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// block_iq2_xxs { ggml_half d; uint16_t qs[32]; }: per 32 values two u32 words, four grid
/// indices in the first, four 7-bit sign indices and a 4-bit scale in the second.
pub fn iq2_xxs(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let a0 = u32_at(b, 2 + 8 * ib);
        let a1 = u32_at(b, 2 + 8 * ib + 4);
        let db = d * (0.5 + (a1 >> 28) as f32) * 0.25;
        for l in 0..4 {
            let grid = IQ2XXS_GRID[((a0 >> (8 * l)) & 0xFF) as usize];
            let signs = KSIGNS_IQ2XS[((a1 >> (7 * l)) & 127) as usize];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = db * g8(grid, j) * sign(signs, j);
            }
        }
    }
}

/// block_iq2_xs { ggml_half d; uint16_t qs[32]; uint8_t scales[8]; }: 9-bit grid index and a
/// 7-bit sign index per u16; two 4-bit scales per 32 values.
pub fn iq2_xs(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let s = b[66 + ib];
        let db = [d * (0.5 + (s & 0xF) as f32) * 0.25, d * (0.5 + (s >> 4) as f32) * 0.25];
        for l in 0..4 {
            let q = u16_at(b, 2 + 2 * (4 * ib + l));
            let grid = IQ2XS_GRID[(q & 511) as usize];
            let signs = KSIGNS_IQ2XS[(q >> 9) as usize];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = db[l / 2] * g8(grid, j) * sign(signs, j);
            }
        }
    }
}

/// block_iq2_s { ggml_half d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; }: qs[0..32]
/// are grid index low bytes, qs[32..64] explicit sign bytes, qh two high index bits each.
pub fn iq2_s(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let (qs, signs, qh, scales) = (&b[2..34], &b[34..66], &b[66..74], &b[74..82]);
    for ib in 0..8 {
        let db = [d * (0.5 + (scales[ib] & 0xF) as f32) * 0.25, d * (0.5 + (scales[ib] >> 4) as f32) * 0.25];
        for l in 0..4 {
            let index = qs[4 * ib + l] as usize | (((qh[ib] as usize) << (8 - 2 * l)) & 0x300);
            let grid = IQ2S_GRID[index];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = db[l / 2] * g8(grid, j) * sign(signs[4 * ib + l], j);
            }
        }
    }
}

/// block_iq3_xxs { ggml_half d; uint8_t qs[3*QK_K/8]; }: 64 grid index bytes, then per 32
/// values a u32 of four 7-bit sign indices and a 4-bit scale.
pub fn iq3_xxs(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let aux = u32_at(b, 2 + 64 + 4 * ib);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for l in 0..4 {
            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
            let grid1 = IQ3XXS_GRID[b[2 + 8 * ib + 2 * l] as usize];
            let grid2 = IQ3XXS_GRID[b[2 + 8 * ib + 2 * l + 1] as usize];
            for j in 0..4 {
                y[32 * ib + 8 * l + j] = db * g4(grid1, j) * sign(signs, j);
                y[32 * ib + 8 * l + j + 4] = db * g4(grid2, j) * sign(signs, j + 4);
            }
        }
    }
}

/// block_iq3_s { ggml_half d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; }:
/// `db = d * (1 + 2 * scale)`, grid index = qs | one high bit from qh.
pub fn iq3_s(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let (qs, qh, signs, scales) = (&b[2..66], &b[66..74], &b[74..106], &b[106..110]);
    for ib in 0..8 {
        let s = scales[ib / 2];
        let nibble = if ib % 2 == 0 { s & 0xF } else { s >> 4 };
        let db = d * (1 + 2 * nibble as i32) as f32;
        let h = qh[ib] as usize;
        for l in 0..4 {
            let grid1 = IQ3S_GRID[qs[8 * ib + 2 * l] as usize | ((h << (8 - 2 * l)) & 256)];
            let grid2 = IQ3S_GRID[qs[8 * ib + 2 * l + 1] as usize | ((h << (7 - 2 * l)) & 256)];
            let sg = signs[4 * ib + l];
            for j in 0..4 {
                y[32 * ib + 8 * l + j] = db * g4(grid1, j) * sign(sg, j);
                y[32 * ib + 8 * l + j + 4] = db * g4(grid2, j) * sign(sg, j + 4);
            }
        }
    }
}

/// Byte `j` of an iq1s_grid entry as ggml's `int8_t` grid value (-1, 0 or 1).
fn t8(entry: u64, j: usize) -> f32 {
    ((entry >> (8 * j)) as u8 as i8) as f32
}

/// block_iq1_s { ggml_half d; uint8_t qs[QK_K/8]; uint16_t qh[QK_K/32]; }:
/// `dl = d * (2 * scale + 1)`, `y = dl * (grid + delta)`.
pub fn iq1_s(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let qh = u16_at(b, 34 + 2 * ib) as usize;
        let dl = d * (2 * ((qh >> 12) & 7) + 1) as f32;
        let delta = if qh & 0x8000 != 0 { -IQ1S_DELTA } else { IQ1S_DELTA };
        for l in 0..4 {
            let grid = IQ1S_GRID[b[2 + 4 * ib + l] as usize | (((qh >> (3 * l)) & 7) << 8)];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = dl * (t8(grid, j) + delta);
            }
        }
    }
}

/// block_iq1_m { uint8_t qs[QK_K/8]; uint8_t qh[QK_K/16]; uint8_t scales[QK_K/32]; }: the
/// binary16 super-scale is spread over the top nibbles of the four u16 scale words.
pub fn iq1_m(b: &[u8], y: &mut [f32]) {
    let (qs, qh) = (&b[0..32], &b[32..48]);
    let sc = [u16_at(b, 48), u16_at(b, 50), u16_at(b, 52), u16_at(b, 54)];
    let scale = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000);
    let d = crate::numeric::f16_to_f32(scale);
    for ib in 0..8 {
        let s = sc[ib / 2] as usize;
        let dl1 = d * (2 * ((s >> (6 * (ib % 2))) & 7) + 1) as f32;
        let dl2 = d * (2 * ((s >> (6 * (ib % 2) + 3)) & 7) + 1) as f32;
        let (h0, h1) = (qh[2 * ib] as usize, qh[2 * ib + 1] as usize);
        let q = &qs[4 * ib..4 * ib + 4];
        let index = [
            q[0] as usize | ((h0 << 8) & 0x700),
            q[1] as usize | ((h0 << 4) & 0x700),
            q[2] as usize | ((h1 << 8) & 0x700),
            q[3] as usize | ((h1 << 4) & 0x700),
        ];
        let delta =
            [h0 & 0x08, h0 & 0x80, h1 & 0x08, h1 & 0x80].map(|bit| if bit != 0 { -IQ1S_DELTA } else { IQ1S_DELTA });
        for l in 0..4 {
            let grid = IQ1S_GRID[index[l]];
            let dl = if l < 2 { dl1 } else { dl2 };
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = dl * (t8(grid, j) + delta[l]);
            }
        }
    }
}

/// block_iq4_xs { ggml_half d; uint16_t scales_h; uint8_t scales_l[QK_K/64]; uint8_t qs[QK_K/2]; }:
/// 6-bit scales minus 32, `dl = d * ls`, `y = dl * kvalues_iq4nl[nibble]`.
pub fn iq4_xs(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let scales_h = u16_at(b, 2) as i32;
    for ib in 0..8 {
        let low = (b[4 + ib / 2] >> (4 * (ib % 2))) as i32 & 0xF;
        let ls = low | (((scales_h >> (2 * ib)) & 3) << 4);
        let dl = d * (ls - 32) as f32;
        let qs = &b[8 + 16 * ib..8 + 16 * ib + 16];
        for j in 0..16 {
            y[32 * ib + j] = dl * KVALUES_IQ4NL[(qs[j] & 0xF) as usize] as f32;
            y[32 * ib + j + 16] = dl * KVALUES_IQ4NL[(qs[j] >> 4) as usize] as f32;
        }
    }
}
