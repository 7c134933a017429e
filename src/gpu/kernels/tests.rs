//! Unit tests of kernel assembly (src/gpu/kernels/mod.rs).

use super::*;

fn flags(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("const ")?.split_once(": bool = "))
        .map(|(name, v)| (name.to_string(), v.trim_end_matches(';') == "true"))
        .collect()
}

#[test]
fn exactly_one_row_rule_and_one_packing_is_set_per_format() {
    for format in Format::ALL {
        let text = constants(KernelKey::new(format, Op::Dequant, Variant::Workgroup, Columns::One)).unwrap();
        let f = flags(&text);
        let row = f.iter().filter(|(n, v)| n.starts_with("ROW_") && *v).count();
        assert_eq!(row, 1, "{format}: one ROW_* flag");
        let packings = f.iter().filter(|(n, v)| n.starts_with("PACK_") && *v).count();
        let want = usize::from(format.category() == Category::Grouped);
        assert_eq!(packings, want, "{format}: PACK_* flags");
    }
}

/// The text of WGSL function `name` in `source`, from its `fn` to the next function's.
fn function_body<'a>(source: &'a str, name: &str) -> &'a str {
    let start = source.find(&format!("fn {name}(")).unwrap_or_else(|| panic!("no fn {name}"));
    let rest = &source[start + 3..];
    &source[start..start + 3 + rest.find("\nfn ").unwrap_or(rest.len())]
}

#[test]
fn every_ggml_type_has_its_decoders_in_the_codecs() {
    let defines = |source: &str, name: String| source.contains(&format!("fn {name}(base: u32, "));
    let gguf_blocks = Codec::GgufBlocks.sources().concat();
    for format in Format::ALL {
        let Some(t) = format.gguf() else { continue };
        let n = t.ggml_name.to_lowercase();
        assert!(defines(&gguf_blocks, format!("levels_{n}")), "{format}: levels_{n}");
        assert!(defines(&gguf_blocks, format!("affine_{n}")), "{format}: affine_{n}");
        match t.a8 {
            A8Reader::Chunk => {
                assert!(defines(CODEC_GGUF_CODES, format!("codes_{n}")), "{format}: codes_{n}");
                assert!(defines(CODEC_GGUF_CODES, format!("affine8_{n}")), "{format}: affine8_{n}");
            }
            A8Reader::Pair => {
                assert!(defines(CODEC_GGUF_CODES, format!("pair_{n}")), "{format}: pair_{n}");
                // chunk_pair8 serves only blocks of 64 values or more (shaders/ops/matmul_a8.wgsl).
                assert!(t.values >= 64, "{format}: a pair needs 64-value blocks, not {}", t.values);
            }
        }
        // block_window (shaders/codecs/gguf_codes.wgsl) reads a 32-value block as the aligned
        // words from its first, which holds only for 2 mod 4 bytes: a block of another size
        // (q4_1's 20, q5_1's 24 bytes: whole words) reads its fields as words of its own.
        if t.values == 32 && t.bytes % 4 != 2 {
            let body = function_body(CODEC_GGUF_CODES, &format!("codes_{n}"));
            assert!(!body.contains("block_window"), "{format}: a {}-byte block read through block_window", t.bytes);
        }
        let key = KernelKey::new(format, Op::MatmulA8, Variant::EmulatedDot, Columns::One);
        let text = assemble(key).unwrap();
        assert!(text.contains(&format!("return levels_{n}(base, j, c);")), "{format}: block_levels");
    }
}

#[test]
fn product_lanes_fit_the_reduction_tree() {
    // shaders/ops/matmul.wgsl halves the lanes per step and block_row divides the workgroup by them.
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
    // A8 kernels (shaders/ops/matmul_a8.wgsl's pair path holds its rows as one or two quads); the other
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
                // As shaders/codecs/gguf_blocks.wgsl's grid_level_indices reads them.
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
    // shaders/codecs/gguf_codes.wgsl negates grid bytes as (g ^ 0xff) + 1, which would carry into the
    // next byte for g = 0: iq3's words and iq2's levels hold none.
    assert!(!IQ2_GRID_LEVELS.contains(&0));
    for format in [Format::GgufIq3Xxs, Format::GgufIq3S] {
        let grid = gguf_grid(format).unwrap();
        assert!(grid.iter().all(|w| w.to_le_bytes().iter().all(|&b| b != 0)), "{format}: a zero grid byte");
    }
}

// The tall tiled kernel is A32's subgroup variant on a native CPU driver, and nowhere else: GPUs
// and the browser keep four rows, and no other op or variant has a tall kernel to build.
#[test]
fn the_tall_tiled_kernel_is_a32_subgroup_on_native_cpu_drivers_only() {
    use crate::gpu::capability::tiled_columns_on;
    assert_eq!(tiled_columns_on(Op::Matmul, Variant::Subgroup, "Cpu", false), Columns::TiledTall);
    for (op, variant, device, browser) in [
        (Op::Matmul, Variant::Subgroup, "Cpu", true),
        (Op::Matmul, Variant::Subgroup, "DiscreteGpu", false),
        (Op::Matmul, Variant::Subgroup, "IntegratedGpu", false),
        (Op::Matmul, Variant::Workgroup, "Cpu", false),
        (Op::MatmulA8, Variant::Subgroup, "Cpu", false),
        (Op::MatmulA8, Variant::EmulatedDot, "Cpu", false),
    ] {
        assert_eq!(tiled_columns_on(op, variant, device, browser), Columns::Tiled, "{op:?} {variant:?} {device}");
    }
    for key in crate::gpu::capability::kernel_keys().into_iter().filter(|k| k.columns == Columns::TiledTall) {
        assert_eq!((key.op, key.variant), (Op::Matmul, Variant::Subgroup), "{}", key.label());
    }
    let tall = |op, variant| assemble(KernelKey::new(Format::GgufQ4K, op, variant, Columns::TiledTall));
    let source = tall(Op::Matmul, Variant::Subgroup).expect("A32's tall tiled kernel");
    let key = KernelKey::new(Format::GgufQ4K, Op::Matmul, Variant::Subgroup, Columns::TiledTall);
    assert!(source.contains(&format!("fn {}(", key.entry_point())) && source.contains("fn tall("));
    // The other tiled modules hold no part of it (a browser checks every function's uniformity).
    let four = assemble(KernelKey::new(Format::GgufQ4K, Op::Matmul, Variant::Subgroup, Columns::Tiled)).unwrap();
    assert!(!four.contains("fn tall(") && !four.contains("matmul_tiled_tall"));
    for (op, variant) in [(Op::Matmul, Variant::Workgroup), (Op::MatmulA8, Variant::Subgroup)] {
        let err = tall(op, variant).expect_err("no tall kernel");
        assert!(err.to_string().contains("A32's subgroup variant only"), "{err}");
    }
}

#[test]
fn the_tall_kernel_stages_the_records_of_32_value_blocks_of_even_sizes() {
    let staged: Vec<Format> = Format::ALL.iter().copied().filter(|f| staged_records(*f)).collect();
    let expected = [Format::GgufQ8_0, Format::GgufQ4_0, Format::GgufQ5_0, Format::GgufIq4Nl];
    assert_eq!(staged, [&expected[..], &[Format::GgufQ4_1, Format::GgufQ5_1]].concat());
    let module = |format, columns| assemble(KernelKey::new(format, Op::Matmul, Variant::Subgroup, columns)).unwrap();
    // Exactly one record_word per GGUF module: the stage's in a staged type's tall kernel, the
    // buffer's everywhere else.
    let from_stage = "return STAGE[w];";
    let from_buffer = "return plane0[w];";
    for format in [Format::GgufQ4_1, Format::GgufQ5_0, Format::GgufMxfp4, Format::GgufQ4K, Format::GgufQ6K] {
        for columns in Columns::ALL.into_iter().filter(|c| c.exists(format, Op::Matmul, Variant::Subgroup)) {
            let source = module(format, columns);
            let staged = (staged_records(format) && columns == Columns::TiledTall) || columns == Columns::TallOneColumn;
            assert_eq!(source.matches("fn record_word(").count(), 1, "{format:?} {columns:?}");
            assert_eq!(source.contains(from_stage), staged, "{format:?} {columns:?}");
            assert_eq!(source.contains(from_buffer), !staged, "{format:?} {columns:?}");
        }
    }
    // Some 256-value types' one column has a kernel of its own where the tall kernel is bound,
    // which stages the records a block at a time; only A32's subgroup variant.
    let blocks: Vec<Format> = Format::ALL.iter().copied().filter(|f| staged_blocks(*f)).collect();
    assert_eq!(blocks, [Format::GgufQ2K, Format::GgufQ3K, Format::GgufQ6K, Format::GgufTq1_0]);
    assert!(!Columns::TallOneColumn.exists(Format::GgufQ4K, Op::Matmul, Variant::Subgroup));
    assert!(!Columns::TallOneColumn.exists(Format::GgufQ6K, Op::Matmul, Variant::Workgroup));
    assert!(!Columns::TallOneColumn.exists(Format::GgufQ6K, Op::MatmulA8, Variant::Subgroup));
    let one = module(Format::GgufQ6K, Columns::TallOneColumn);
    assert!(one.contains("fn matmul_tall_one_column(") && !one.contains("fn matmul_tiled_tall("));
    let err = assemble(KernelKey::new(Format::GgufQ6K, Op::Matmul, Variant::Workgroup, Columns::TallOneColumn))
        .expect_err("A32's subgroup variant only");
    assert!(err.to_string().contains("the types it stages a block at a time only"), "{err}");
    // Other codecs have no block readers, so no record_word.
    assert!(!module(Format::Q8G32Fp16, Columns::TiledTall).contains("fn record_word("));
}

/// The tall kernels (CPU drivers) are built for TALL_WG invocations and as many rows a
/// workgroup as the binder sizes their grid by; every other module keeps TILED_WG.
#[test]
fn only_the_tall_kernels_take_the_small_tiled_workgroup() {
    for format in [Format::GgufQ4_1, Format::GgufQ6K, Format::GgufQ4K] {
        for columns in Columns::ALL.into_iter().filter(|c| c.exists(format, Op::Matmul, Variant::Subgroup)) {
            let source = assemble(KernelKey::new(format, Op::Matmul, Variant::Subgroup, columns)).unwrap();
            let tall = matches!(columns, Columns::TiledTall | Columns::TallOneColumn);
            let wg = if tall { TALL_WG } else { TILED_WG };
            assert_eq!(tiled_wg(columns), wg, "{format:?} {columns:?}");
            assert_eq!(tiled_rows(columns), wg * TILED_ROW_BLOCK, "{format:?} {columns:?}");
            assert!(source.contains(&format!("const TILED_WG: u32 = {wg}u;")), "{format:?} {columns:?}");
            let rows = format!("const TILED_ROWS: u32 = {}u;", tiled_rows(columns));
            assert!(source.contains(&rows), "{format:?} {columns:?}");
        }
    }
    const { assert!(TALL_WG < TILED_WG && (TALL_WG * TILED_ROW_BLOCK).is_multiple_of(ROW_TILE)) };
}

/// Only the tall kernel (A32, CPU drivers) of q4_K, q5_K and the grid i-quants reads one column's
/// sub-blocks in pairs, the i-quants' through their A8 pair decoders; every other module of
/// theirs, and every other type's, a chunk at a time. Every module that names the code types
/// declares them once.
#[test]
fn only_the_tall_kernels_of_pair_types_read_sub_block_pairs() {
    use Format::*;
    let pairs: Vec<Format> = Format::ALL.iter().copied().filter(|f| a32_pairs(*f)).collect();
    assert_eq!(pairs, [GgufQ4K, GgufQ5K, GgufIq2Xxs, GgufIq2Xs, GgufIq3Xxs, GgufIq1S, GgufIq3S, GgufIq2S, GgufIq1M]);
    assert!(pairs.iter().all(|&f| a32_code_pairs(f) == !matches!(f, GgufQ4K | GgufQ5K)));
    for format in [GgufQ4K, GgufQ5K, GgufQ6K, GgufQ5_0, GgufIq2Xs, GgufIq1M, GgufIq4Xs] {
        for op in [Op::Matmul, Op::MatmulA8] {
            for variant in [Variant::Subgroup, Variant::Workgroup] {
                for columns in Columns::ALL.into_iter().filter(|c| c.exists(format, op, variant)) {
                    let source = assemble(KernelKey::new(format, op, variant, columns)).unwrap();
                    let at = format!("{format:?} {op:?} {variant:?} {columns:?}");
                    let expected = a32_pairs(format) && op == Op::Matmul && columns == Columns::TiledTall;
                    let name = format.gguf().unwrap().ggml_name.to_lowercase();
                    let pair = match a32_code_pairs(format) {
                        true => format!("level_pair_of_codes(pair_{name}(base, j, c))"),
                        false => format!("level_pair_{name}(base, j, c)"),
                    };
                    assert_eq!(source.contains(&pair), expected, "{at}");
                    assert_eq!(source.contains("fn level_pair_dot("), expected, "{at}");
                    let codes = op == Op::MatmulA8 || expected;
                    assert_eq!(source.matches("struct Pair8 {").count(), usize::from(codes), "{at}");
                }
            }
        }
    }
}
