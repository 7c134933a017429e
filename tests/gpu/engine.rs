//! The engine API beyond conformance's bound products: both product kernels in every variant,
//! gathers whose ids stay on the device (across windows, with out-of-range ids flagged, never
//! read), dequant into an engine's buffer, stacked uploads, the refusals, and a device lost
//! mid-sequence.

use super::first_gpu;
use ninfer_wgpu::conformance::{self, Verdict};
use ninfer_wgpu::gpu::{self, DeviceSlice, Gpu, GpuOptions, Op, Profile, Variant, POISON};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{self, random_words, Rng, Words};
use ninfer_wgpu::{oracle, EncodedTensor, Error, Format};

fn tensor_words(format: Format, shape: &[usize], rng: &mut Rng) -> (Vec<u8>, Vec<u32>) {
    let logical = random_words(format, shape, 1, rng, Words::All).unwrap();
    let t = EncodedTensor::encode(&logical, format.layout()).unwrap();
    let words = match oracle::dequant(&t).unwrap() {
        oracle::Dequantized::F32(v) => v.into_iter().map(f32::to_bits).collect(),
        oracle::Dequantized::I32(v) => v.into_iter().map(|i| i as u32).collect(),
    };
    (t.payload().to_vec(), words)
}

fn upload(gpu: &Gpu, format: Format, shape: &[usize], payload: &[u8]) -> ninfer_wgpu::gpu::GpuTensor {
    let desc = ninfer_wgpu::TensorDesc::new(format, format.layout(), shape);
    let t = EncodedTensor::new(desc, payload).unwrap();
    block_on(gpu.upload(&t.validate().unwrap())).unwrap()
}

#[test]
fn a_bound_gather_reads_ids_on_the_device_across_windows_and_flags_out_of_range_ids() {
    // A 64 KiB binding limit cuts each table into two or three windows.
    let Some(gpu) = first_gpu(GpuOptions { max_binding: Some(1 << 16), ..Default::default() }) else { return };
    let seed = testgen::test_seed("bound gather").unwrap();
    let mut rng = Rng::new(seed);
    for (format, shape) in
        [(Format::GgufQ4K, [600usize, 512]), (Format::Bf16, [2000, 33]), (Format::GgufIq2Xs, [1200, 256])]
    {
        let (payload, words) = tensor_words(format, &shape, &mut rng);
        let table = upload(&gpu, format, &shape, &payload);
        let (n, k) = (shape[0] as u32, shape[1] as u64);
        // Ids at an odd offset; one past N and one far past it.
        let mut ids: Vec<u32> = (0..15).map(|_| rng.below(n as u64) as u32).collect();
        ids.extend([n - 1, 0, n, u32::MAX - 3, n - 1]);
        let id_at = 3;
        let mut id_host = vec![7u32; id_at as usize];
        id_host.extend(&ids);
        let id_buf = block_on(gpu.create_buffer_with(&id_host, "ids")).unwrap();
        let (y_at, stride) = (5u64, k + 3);
        let y_buf =
            block_on(gpu.create_buffer_with(&vec![1u32; (y_at + stride * ids.len() as u64) as usize], "y")).unwrap();
        let op = block_on(gpu.bind_gather(
            &table,
            DeviceSlice::new(&id_buf, id_at, ids.len() as u64),
            DeviceSlice::new(&y_buf, y_at, k).with_stride(stride),
            ids.len() as u32,
        ))
        .unwrap();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        op.encode(&mut encoder, ids.len() as u32).unwrap();
        block_on(gpu.submit(encoder)).unwrap();
        let got: Vec<u32> =
            block_on(gpu.read(DeviceSlice::new(&y_buf, y_at, k).with_stride(stride), ids.len() as u64)).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let row = &got[i * k as usize..][..k as usize];
            if id < n {
                assert_eq!(
                    row,
                    &words[id as usize * k as usize..][..k as usize],
                    "seed {seed}: {format} request {i} (id {id})"
                );
            } else {
                assert!(
                    row.iter().all(|&w| w == POISON),
                    "seed {seed}: {format} request {i}: an out-of-range id's row is poisoned"
                );
            }
        }
        let status = block_on(op.read_status(&gpu)).unwrap();
        assert_eq!((status.out_of_range, status.largest_id), (2, u32::MAX - 3), "{format}: status names the ids");
        op.clear_status(&gpu).unwrap();
        assert_eq!(block_on(op.read_status(&gpu)).unwrap().out_of_range, 0);
        // The gaps between rows are untouched.
        let all: Vec<u32> = block_on(gpu.read(DeviceSlice::new(&y_buf, 0, y_buf.size() / 4), 1)).unwrap();
        for (i, &w) in all.iter().enumerate() {
            let inside = i as u64 >= y_at && (i as u64 - y_at) % stride < k;
            assert!(inside || w == 1, "{format}: y word {i} outside the rows was written");
        }
    }
}

#[test]
fn a_bound_dequant_writes_every_word_at_the_engines_offset() {
    let Some(gpu) = first_gpu(GpuOptions::default()) else { return };
    let mut rng = Rng::new(testgen::test_seed("bound dequant").unwrap());
    let (format, shape) = (Format::GgufQ6K, [9usize, 512]);
    let (payload, words) = tensor_words(format, &shape, &mut rng);
    let t = upload(&gpu, format, &shape, &payload);
    let y = block_on(gpu.create_buffer_with(&vec![1u32; words.len() + 20], "y")).unwrap();
    let op = block_on(gpu.bind_dequant(&t, DeviceSlice::new(&y, 13, words.len() as u64))).unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    op.encode(&mut encoder, 1).unwrap();
    block_on(gpu.submit(encoder)).unwrap();
    let got: Vec<u32> = block_on(gpu.read(DeviceSlice::new(&y, 0, words.len() as u64 + 20), 1)).unwrap();
    assert_eq!(&got[13..13 + words.len()], &words[..]);
    assert!(got[..13].iter().chain(&got[13 + words.len()..]).all(|&w| w == 1), "nothing outside the slice is written");
}

#[test]
fn stacked_matrices_are_their_parts_rows_in_order_and_mixed_ones_are_refused() {
    let Some(gpu) = first_gpu(GpuOptions::default()) else { return };
    let mut rng = Rng::new(testgen::test_seed("stacked upload").unwrap());
    // q4_0 rows of K = 32 are 18 bytes: parts end mid-word, so the upload carries bytes across.
    let format = Format::GgufQ4_0;
    let shapes = [[3usize, 32], [5, 32], [1, 32]];
    let parts: Vec<_> = shapes.iter().map(|s| tensor_words(format, s, &mut rng)).collect();
    let tensors: Vec<_> = parts
        .iter()
        .zip(&shapes)
        .map(|((payload, _), s)| {
            EncodedTensor::new(ninfer_wgpu::TensorDesc::new(format, format.layout(), s), &payload[..]).unwrap()
        })
        .collect();
    let valid: Vec<_> = tensors.iter().map(|t| t.validate().unwrap()).collect();
    let stacked = block_on(gpu.upload_stacked(&valid.iter().collect::<Vec<_>>(), Profile::A32)).unwrap();
    assert_eq!(stacked.desc().shape, vec![9, 32]);
    let expected: Vec<u32> = parts.iter().flat_map(|(_, w)| w.clone()).collect();
    assert_eq!(block_on(gpu.dequant(&stacked)).unwrap(), expected);

    let (other, _) = tensor_words(Format::GgufQ8_0, &[2, 32], &mut rng);
    let q8 = EncodedTensor::new(
        ninfer_wgpu::TensorDesc::new(Format::GgufQ8_0, Format::GgufQ8_0.layout(), &[2, 32]),
        &other[..],
    )
    .unwrap();
    let q8 = q8.validate().unwrap();
    refused("mixed formats", block_on(gpu.upload_stacked(&[&valid[0], &q8], Profile::A32)), &["one format"]);
    let (wide, _) = tensor_words(format, &[1, 64], &mut rng);
    let wide = EncodedTensor::new(ninfer_wgpu::TensorDesc::new(format, format.layout(), &[1, 64]), &wide[..]).unwrap();
    let wide = wide.validate().unwrap();
    refused("another K", block_on(gpu.upload_stacked(&[&valid[0], &wide], Profile::A32)), &["K only"]);
    refused("nothing", block_on(gpu.upload_stacked(&[], Profile::A32)), &["no tensors"]);
}

fn refused<T>(what: &str, r: ninfer_wgpu::Result<T>, needles: &[&str]) {
    match r {
        Err(Error::Unsupported(m)) | Err(Error::Shape { detail: m, .. }) => {
            assert!(needles.iter().all(|n| m.contains(n)), "{what}: `{m}` lacks {needles:?}")
        }
        Err(e) => panic!("{what}: unexpected error {e}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

#[test]
fn bad_operands_are_refused_before_anything_is_recorded() {
    let Some(gpu) = first_gpu(GpuOptions { max_binding: Some(1 << 16), ..Default::default() }) else { return };
    let mut rng = Rng::new(testgen::test_seed("bound refusals").unwrap());
    let (format, shape) = (Format::GgufQ8_0, [16usize, 64]);
    let (payload, _) = tensor_words(format, &shape, &mut rng);
    let w = upload(&gpu, format, &shape, &payload);
    let x = block_on(gpu.create_buffer(64 * 8, "x")).unwrap();
    let y = block_on(gpu.create_buffer(16 * 8, "y")).unwrap();
    let xs = DeviceSlice::new(&x, 0, 64);
    let ys = DeviceSlice::new(&y, 0, 16);
    let bind =
        |x: DeviceSlice<'_, f32>, y: DeviceSlice<'_, f32>, j| block_on(gpu.bind_matmul(&w, Profile::A32, x, y, j));
    refused("x past its buffer", bind(xs, ys, 9), &["pass the buffer's end", "512 elements"]);
    refused("y past its buffer", bind(xs, DeviceSlice::new(&y, 5, 16), 8), &["matmul y", "pass the buffer's end"]);
    refused(
        "x at an odd offset",
        bind(DeviceSlice::new(&x, 2, 64), ys, 1),
        &["its offset (2 elements) is not a multiple of 4"],
    );
    refused(
        "x at an odd stride",
        bind(xs.with_stride(66), ys, 2),
        &["its column stride (66 elements) is not a multiple of 4"],
    );
    refused("a stride shorter than a column", bind(xs.with_stride(32), ys, 2), &["overlap"]);
    refused("x and y in one buffer", bind(xs, DeviceSlice::new(&x, 256, 16), 1), &["one buffer", "WebGPU"]);
    refused("y on the weights", bind(xs, DeviceSlice::new(w.buffer(0), 0, 16), 1), &["weights' own"]);
    refused("K mismatch", bind(DeviceSlice::new(&x, 0, 60), ys, 1), &["K = 64"]);
    let uniform = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1024,
        usage: wgpu::BufferUsages::UNIFORM,
        mapped_at_creation: false,
    });
    refused("no STORAGE usage", bind(xs, DeviceSlice::new(&uniform, 0, 16), 1), &["STORAGE"]);
    // Past the binding limit: the limit and the size are both named.
    let big = block_on(gpu.create_buffer(64 * 4096, "big x")).unwrap();
    let big_y = block_on(gpu.create_buffer(16 * 4096, "big y")).unwrap();
    refused(
        "4096 columns over a 64 KiB binding",
        bind(DeviceSlice::new(&big, 0, 64), DeviceSlice::new(&big_y, 0, 16), 4096),
        &["1048576 bytes", "65536-byte"],
    );
    // A gather's ids hold at least its largest count, and never share the output's buffer.
    let ids = block_on(gpu.create_buffer_with(&[0u32; 8], "ids")).unwrap();
    let rows = block_on(gpu.create_buffer(64 * 8, "rows")).unwrap();
    let gather = |ids: DeviceSlice<'_, u32>, y: DeviceSlice<'_, u32>, max| block_on(gpu.bind_gather(&w, ids, y, max));
    refused(
        "4 ids for 5 rows",
        gather(DeviceSlice::new(&ids, 0, 4), DeviceSlice::new(&rows, 0, 64), 5),
        &["4 ids", "5"],
    );
    refused(
        "ids and rows in one buffer",
        gather(DeviceSlice::new(&rows, 0, 4), DeviceSlice::new(&rows, 64, 64), 4),
        &["one buffer"],
    );
    // Counts are checked at record; an accepted record and the refused one change nothing.
    let op = bind(xs, ys, 8).unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        refused("9 columns on an op bound for 8", op.record(&mut pass, 9), &["1..=8", "got 9"]);
        refused("0 columns", op.record(&mut pass, 0), &["got 0"]);
        op.record(&mut pass, 8).unwrap();
    }
    block_on(gpu.submit(encoder)).unwrap();
}

#[test]
fn a_device_lost_mid_sequence_is_an_error_not_a_panic() {
    let Some(gpu) = first_gpu(GpuOptions::default()) else { return };
    let mut rng = Rng::new(testgen::test_seed("lost device").unwrap());
    let (payload, _) = tensor_words(Format::GgufQ4_0, &[8, 64], &mut rng);
    let w = upload(&gpu, Format::GgufQ4_0, &[8, 64], &payload);
    let x = block_on(gpu.create_buffer(64, "x")).unwrap();
    let y = block_on(gpu.create_buffer(8, "y")).unwrap();
    let op = block_on(gpu.bind_matmul(&w, Profile::A32, DeviceSlice::new(&x, 0, 64), DeviceSlice::new(&y, 0, 8), 1))
        .unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    op.encode(&mut encoder, 1).unwrap();
    block_on(gpu.submit(encoder)).unwrap();
    gpu.device().destroy();
    let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let err = op.encode(&mut encoder, 1).expect_err("recording on a lost device is refused");
    assert!(err.to_string().contains("lost"), "{err}");
    let err = block_on(gpu.read(DeviceSlice::<f32>::new(&y, 0, 8), 1)).expect_err("reading back is refused");
    assert!(err.to_string().contains("lost"), "{err}");
}

/// Both product kernels (tiled, and the 8-column one in groups) in every variant the first
/// adapter supports, A32 and A8, at one column (the tiled kernel's one-column path) and counts on
/// both sides of a 64-column tile; the tiled kernel with the adapter's rows an invocation and
/// with four (GPUs' shape, which CPU drivers would otherwise not run: capability::tiled_columns).
#[test]
fn products_of_many_columns_meet_the_oracle_through_either_kernel_and_every_variant() {
    for tall_tiles in [None, Some(false)] {
        let Some(gpu) = first_gpu(GpuOptions { tall_tiles, ..Default::default() }) else { return };
        products_of_many_columns_on(&gpu, tall_tiles);
    }
}

/// The tiled kernel a bound A32 product took, as `bench --json` reports it: eight rows an
/// invocation from two columns where the options ask for the tall kernel and the adapter's tiled
/// variant has one (the subgroup variant), four otherwise and at one column.
#[test]
fn a_bound_product_says_how_many_rows_its_tiled_kernel_takes() {
    for tall_tiles in [Some(true), Some(false)] {
        let Some(gpu) = first_gpu(GpuOptions { tall_tiles, ..Default::default() }) else { return };
        let format = Format::GgufQ4K;
        let words = random_words(format, &[70, 512], 1, &mut Rng::new(7), Words::Finite).unwrap();
        let t = block_on(gpu.upload(&EncodedTensor::encode(&words, format.layout()).unwrap().trusted())).unwrap();
        let x = block_on(gpu.create_buffer(512 * 64, "x")).unwrap();
        let y = block_on(gpu.create_buffer(70 * 64, "y")).unwrap();
        let options = gpu::BindOptions { variant: None, tiled_from: Some(1) };
        let (xs, ys) = (DeviceSlice::new(&x, 0, 512), DeviceSlice::new(&y, 0, 70));
        let op = block_on(gpu.bind_matmul_with(&t, Profile::A32, options, xs, ys, 64)).unwrap();
        let best = ninfer_wgpu::gpu::capability::best_variant(format, Op::Matmul, gpu.platform());
        let subgroup = ninfer_wgpu::gpu::capability::tiled_variant(best, gpu.platform()) == Variant::Subgroup;
        let many = if tall_tiles == Some(true) && subgroup { 8 } else { 4 };
        assert_eq!(op.tiled_rows(1).unwrap(), Some(4), "{tall_tiles:?}");
        for count in [2, 64] {
            assert_eq!(op.tiled_rows(count).unwrap(), Some(many), "{tall_tiles:?}, {count} columns");
        }
    }
}

fn products_of_many_columns_on(gpu: &Gpu, tall_tiles: Option<bool>) {
    let seed = testgen::test_seed("products of many columns").expect("seed");
    let mut rng = Rng::new(seed);
    // The tiled kernel from the first column, and never (groups of 8 through the 8-column
    // kernel), whatever the platform's crossover; counts on both sides of a 64-column tile.
    let kernels = [Some(1), Some(u32::MAX)];
    for (format, shape) in
        [(Format::GgufQ4K, vec![70, 512]), (Format::Q4G64Fp16, vec![33, 200]), (Format::Bf16, vec![9, 40])]
    {
        let words = random_words(format, &shape, 1, &mut rng, Words::Finite).unwrap();
        let t = EncodedTensor::encode(&words, format.layout()).unwrap();
        for op in [Op::Matmul, Op::MatmulA8] {
            for variant in Variant::ALL {
                let status =
                    ninfer_wgpu::gpu::capability::status(format, t.layout(), op, variant, Some(gpu.platform()));
                if status != ninfer_wgpu::gpu::capability::Status::Supported {
                    continue;
                }
                for tiled_from in kernels {
                    let options = gpu::BindOptions { variant: None, tiled_from };
                    let counts = [1, 2, 9, 64, 65, 130];
                    let r =
                        block_on(conformance::check_bound_products(gpu, &t, op, variant, options, &counts, &mut rng))
                            .unwrap();
                    assert_eq!(r.columns, counts.iter().sum::<usize>());
                    assert_ne!(
                        r.verdict,
                        Verdict::Fail,
                        "seed {seed}: {format} {} {} tiled from {tiled_from:?}, tall tiles {tall_tiles:?}: {}",
                        op.name(),
                        variant.name(),
                        r.detail
                    );
                }
            }
        }
    }
}
