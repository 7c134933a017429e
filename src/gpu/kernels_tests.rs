//! Unit tests of kernel assembly (src/gpu/kernels.rs).

use super::*;

fn flags(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("const ")?.split_once(": bool = "))
        .map(|(name, v)| (name.to_string(), v.trim_end_matches(';') == "true"))
        .collect()
}

#[test]
fn exactly_one_row_rule_and_one_gguf_decoder_flag_is_set_per_format() {
    for format in Format::ALL {
        let text = constants(KernelKey::new(format, Op::Dequant, Variant::Workgroup, Columns::One)).unwrap();
        let f = flags(&text);
        let row = f.iter().filter(|(n, v)| n.starts_with("ROW_") && *v).count();
        assert_eq!(row, 1, "{format}: one ROW_* flag");
        let gguf: Vec<_> = f.iter().filter(|(n, _)| n.starts_with("IS_")).collect();
        match format.category() {
            Category::GgufBlock => {
                assert_eq!(gguf.iter().filter(|(_, v)| *v).count(), 1, "{format}: one IS_* flag");
                assert_eq!(gguf.len(), Format::ALL.iter().filter(|f| f.category() == Category::GgufBlock).count());
            }
            _ => assert!(gguf.is_empty(), "{format}: no gguf flags"),
        }
    }
}

#[test]
fn every_gguf_flag_has_a_decoder_in_the_codec() {
    for format in Format::ALL {
        if let Some(flag) = gguf_flag(format) {
            let tests = CODEC_GGUF_BLOCKS.matches(&format!("if {flag} ")).count()
                + CODEC_GGUF_BLOCKS.matches(&format!("|| {flag} ")).count();
            assert_eq!(tests, 2, "{flag}: tested once by chunk_levels and once by chunk_affine");
            // A8: a chunk alone (codes and map) or a pair of sub-blocks, never both.
            let tests_in = |dispatcher: &str| {
                let at = CODEC_GGUF_CODES.find(dispatcher).expect(dispatcher);
                let body = &CODEC_GGUF_CODES[at..at + CODEC_GGUF_CODES[at..].find("\n}\n").unwrap()];
                body.matches(&format!("if {flag} ")).count() + body.matches(&format!("|| {flag} ")).count()
            };
            let alone = (tests_in("fn chunk_codes("), tests_in("fn chunk_affine8("));
            let pair = tests_in("fn chunk_pair8(");
            assert!(
                (alone == (1, 1) && pair == 0) || (alone == (0, 0) && pair == 1),
                "{flag}: chunk_codes and chunk_affine8 {alone:?}, chunk_pair8 {pair}"
            );
            // chunk_pair8 serves only blocks of 64 values or more (ops/matmul_a8.wgsl).
            let Geometry::Block { values, .. } = format.spec().geometry else { unreachable!("{flag}: not a block") };
            assert!(pair == 0 || values >= 64, "{flag}: a pair needs 64-value blocks, not {values}");
        }
    }
}

#[test]
fn product_lanes_fit_the_reduction_tree() {
    // ops/matmul.wgsl halves the lanes per step and block_row divides the workgroup by them.
    for format in Format::ALL {
        let lanes = product_lanes(format);
        assert!(
            lanes.is_power_of_two()
                && lanes >= 4
                && MATMUL_WG.is_multiple_of(lanes)
                && lanes.is_multiple_of(MATMUL_RUN),
            "{format}: {lanes} lanes"
        );
    }
}

#[test]
fn row_blocks_keep_the_rows_per_workgroup_the_planner_uses() {
    for format in Format::ALL {
        for op in [Op::Matmul, Op::MatmulA8] {
            for columns in Columns::ALL {
                let block = RowBlock::for_kernel(format, op, columns);
                let key = KernelKey::new(format, op, Variant::Workgroup, columns);
                assert!(block.lanes.is_power_of_two() && block.lanes <= MATMUL_WG, "{}", key.label());
                assert_eq!((MATMUL_WG / block.lanes * block.rows) as usize, matmul_rows(format), "{}", key.label());
                let Ok(source) = assemble(key) else { continue };
                assert!(source.contains(&format!("const ROW_BLOCK: u32 = {}u;", block.rows)), "{}", key.label());
                assert!(source.contains(&format!("const MATMUL_LANES: u32 = {}u;", block.lanes)), "{}", key.label());
            }
        }
    }
    // The tall block is for matvec's row-at-a-time kernels and the grid families' several-column
    // A8 kernels (ops/matmul_a8.wgsl's pair path holds its rows as one or two quads); the other
    // rows-together paths are written for four rows.
    let tall = |format| RowBlock { rows: 2 * ROW_BLOCK, lanes: 2 * product_lanes(format) };
    for (format, op, columns) in [
        (Format::GgufQ4K, Op::MatmulA8, Columns::One),
        (Format::GgufIq1S, Op::MatmulA8, Columns::UpToMax),
        (Format::GgufIq3S, Op::MatmulA8, Columns::UpToMax),
    ] {
        assert_eq!(RowBlock::for_kernel(format, op, columns), tall(format));
    }
    for (format, op, columns) in [
        (Format::GgufQ4_0, Op::MatmulA8, Columns::One),
        (Format::GgufQ5_0, Op::MatmulA8, Columns::UpToMax),
        (Format::GgufQ4K, Op::MatmulA8, Columns::UpToMax),
        (Format::GgufIq1S, Op::Matmul, Columns::UpToMax),
        (Format::GgufQ4K, Op::Matmul, Columns::UpToMax),
        (Format::Bf16, Op::Matmul, Columns::UpToMax),
    ] {
        assert_eq!(RowBlock::for_kernel(format, op, columns).rows, ROW_BLOCK);
    }
    for format in Format::ALL {
        for op in [Op::Matmul, Op::MatmulA8] {
            for columns in Columns::ALL {
                let rows = RowBlock::for_kernel(format, op, columns).rows;
                assert!(rows == ROW_BLOCK || rows == 2 * ROW_BLOCK, "{format} {op:?} {columns:?}: {rows} rows");
                // A tall several-column block needs A8's pair path (blocks of 64 values or more).
                if rows > ROW_BLOCK && columns == Columns::UpToMax {
                    let Geometry::Block { values, .. } = format.spec().geometry else {
                        panic!("{format}: not a block")
                    };
                    assert!(op == Op::MatmulA8 && values >= 64, "{format} {op:?}");
                }
            }
        }
    }
}

// Each product entry point's workgroup memory (the grid copy and its own reduction slots:
// `partial` for matmul, `subgroup_sums` for matmul_subgroup), read from the generated constants,
// stays within WebGPU's default 16 KiB, for every row block and column count.
#[test]
fn product_workgroup_memory_fits_webgpu_default() {
    let constant = |source: &str, name: &str| -> u32 {
        let line = source.lines().find(|l| l.starts_with(&format!("const {name}: u32 = "))).unwrap_or("");
        line.rsplit(' ').next().and_then(|v| v.trim_end_matches("u;").parse().ok()).unwrap_or(0)
    };
    let mut checked = 0;
    for format in Format::ALL {
        for op in [Op::Matmul, Op::MatmulA8] {
            for columns in Columns::ALL {
                let Ok(source) = assemble(KernelKey::new(format, op, Variant::Workgroup, columns)) else { continue };
                let grid = if source.contains("const GRID_IN_WORKGROUP: bool = true;") {
                    constant(&source, "GRID_WG_WORDS")
                } else {
                    0
                };
                let partial = constant(&source, "PARTIAL_SLOTS");
                let subgroup = constant(&source, "SUBGROUP_SLOTS");
                assert!(partial > 0 && subgroup > 0, "{format} {op:?} {columns:?}: no reduction slots");
                for slots in [partial, subgroup] {
                    assert!(4 * (grid + slots) <= 16384, "{format} {op:?} {columns:?}: {grid} + {slots} words");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "{checked} kernels checked");
}

#[test]
fn matvec_order_is_written_into_each_product_kernel_from_the_table() {
    for format in Format::ALL {
        for op in [Op::Matmul, Op::MatmulA8] {
            let key = KernelKey::new(format, op, Variant::Workgroup, Columns::One);
            let Ok(source) = assemble(key) else { continue };
            let expected = matches!(matvec_order(format, op), MatvecOrder::RowAtATime);
            assert!(source.contains(&format!("const MATVEC_ROW_AT_A_TIME: bool = {expected};")), "{}", key.label());
        }
    }
    assert_eq!(matvec_order(Format::GgufQ4_0, Op::MatmulA8), MatvecOrder::RowsTogether);
    assert_eq!(matvec_order(Format::GgufQ4K, Op::MatmulA8), MatvecOrder::RowAtATime);
    assert_eq!(matvec_order(Format::GgufQ4_0, Op::Matmul), MatvecOrder::RowAtATime);
}

#[test]
fn one_column_with_the_default_variant_has_its_own_kernel_and_the_rest_share_one() {
    assert_eq!(Columns::for_request(1, true), Columns::One);
    assert_eq!(Columns::for_request(1, false), Columns::UpToMax, "a named variant takes the general kernel");
    for j in 2..=MAX_COLUMNS {
        for default in [true, false] {
            assert_eq!(Columns::for_request(j, default), Columns::UpToMax, "J = {j}");
        }
    }
    let f = Format::GgufQ4K;
    for op in [Op::Matmul, Op::MatmulA8] {
        let one = KernelKey::new(f, op, Variant::Workgroup, Columns::One);
        let many = KernelKey::new(f, op, Variant::Workgroup, Columns::UpToMax);
        assert!(assemble(one).unwrap().contains("const KERNEL_COLUMNS: u32 = 1u;"));
        assert!(assemble(many).unwrap().contains(&format!("const KERNEL_COLUMNS: u32 = {MAX_COLUMNS}u;")));
        assert_ne!(one.label(), many.label());
    }
    for op in [Op::Dequant, Op::Gather] {
        let one = KernelKey::new(f, op, Variant::Workgroup, Columns::One);
        assert_eq!(one, KernelKey::new(f, op, Variant::Workgroup, Columns::UpToMax), "{op:?} has one kernel");
    }
}

#[test]
fn packed_grids_are_lossless() {
    use crate::gguf::tables::*;
    for (grid, levels, format, nibbles) in [
        (&IQ2XXS_GRID[..], IQ2_GRID_LEVELS, Format::GgufIq2Xxs, true),
        (&IQ2XS_GRID[..], IQ2_GRID_LEVELS, Format::GgufIq2Xs, true),
        (&IQ2S_GRID[..], IQ2_GRID_LEVELS, Format::GgufIq2S, true),
        (&IQ1S_GRID[..], IQ1_GRID_LEVELS, Format::GgufIq1S, false),
        (&IQ1S_GRID[..], IQ1_GRID_LEVELS, Format::GgufIq1M, false),
    ] {
        let packed = gguf_grid(format).unwrap();
        assert_eq!(grid_nibbles(format), nibbles, "{format}");
        assert_eq!(packed.len(), if nibbles { grid.len() } else { grid.len().div_ceil(2) });
        for (e, &entry) in grid.iter().enumerate() {
            for (v, &byte) in entry.to_le_bytes().iter().enumerate() {
                // As codecs/gguf_blocks.wgsl's grid_level_indices reads them.
                let index = if nibbles {
                    packed[e] >> (8 * (v % 4) + 4 * (v / 4)) & 15
                } else {
                    packed[e / 2] >> (16 * (e % 2)) >> (2 * v) & 3
                } as usize;
                assert_eq!(levels.get(index), Some(&byte), "{format}: entry {e} value {v}");
            }
        }
    }
}

#[test]
fn every_grid_fits_workgroup_memory() {
    for format in Format::ALL {
        if let Some(grid) = gguf_grid(format) {
            assert!(grid.len() <= GRID_WORKGROUP_WORDS, "{format}: {} words", grid.len());
        }
    }
}

#[test]
fn no_signed_grid_has_a_zero_byte() {
    // codecs/gguf_codes.wgsl negates grid bytes as (g ^ 0xff) + 1, which would carry into the
    // next byte for g = 0: iq3's words and iq2's levels hold none.
    assert!(!IQ2_GRID_LEVELS.contains(&0));
    for format in [Format::GgufIq3Xxs, Format::GgufIq3S] {
        let grid = gguf_grid(format).unwrap();
        assert!(grid.iter().all(|w| w.to_le_bytes().iter().all(|&b| b != 0)), "{format}: a zero grid byte");
    }
}
