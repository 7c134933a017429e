//! The file commands end to end with `--device cpu`: quantize `.npy` and safetensors inputs,
//! inspect the artifact, dequant and matvec against the library's own oracle. Inputs are built
//! here byte by byte, independent of the parsers under test.

use crate::common::*;
use ninfer_wgpu::container::{rule, Artifact};
use ninfer_wgpu::encode::grouped::{self, SearchOptions};
use ninfer_wgpu::encode::{direct, fp8_row, Source};
use ninfer_wgpu::numeric::{f32_to_bf16, f32_to_f16};
use ninfer_wgpu::oracle::{self, Dequantized};
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::Format;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

/// The CLI with no adapter selectable, so nothing here touches a GPU.
fn cli() -> ninfer_wgpu_testkit::Cli {
    ninfer_wgpu_testkit::cli!().env("NINFER_WGPU_ADAPTER", "no-such-adapter-for-tests")
}

fn run(args: &[&str]) -> Output {
    cli().run(args)
}

#[track_caller]
fn ok(args: &[&str]) -> String {
    cli().ok(args)
}

/// Runs a command that must fail with exit code 2 and returns its stderr.
#[track_caller]
fn fails(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

/// An `.npy` v1 file: `descr` is `<f4` or `<f2`, `data` the little-endian words.
fn write_npy(path: &Path, descr: &str, shape: &[usize], data: &[u8]) {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = if shape.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    // NumPy pads the header with spaces and a newline so the data starts 64-byte aligned.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.unit() * 2.0).collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn quantize_npy_to_q4_then_dequant_and_matvec_match_the_oracle() {
    let dir = TempDir::new("cli-q4");
    let (n, k) = (6, 200);
    let values = random(n * k, 1);
    let input = dir.join("weights.npy");
    write_npy(&input, "<f4", &[n, k], &f32_bytes(&values));
    let out = dir.join("model.ninfer");
    ok(&["quantize", s(&input), s(&out), "--format", "q4_g64_fp16"]);

    let a = Artifact::open(&out).unwrap();
    let t = a.tensor("weights").unwrap();
    let expected = grouped::grouped_absmax(Format::Q4G64Fp16, n, k, Source::F32(&values)).unwrap();
    assert_eq!(t.payload(), expected.tensor.payload(), "the CLI stores exactly what grouped_absmax produces");
    let p = a.root().provenance.as_ref().unwrap().parse().unwrap();
    assert_eq!(p["weights"]["method"], "grouped_absmax");
    assert_eq!(p["weights"]["params"]["source_file"], "weights.npy");

    let deq = dir.join("w.f32");
    ok(&["dequant", s(&out), "weights", "--device", "cpu", "-o", s(&deq)]);
    let Dequantized::F32(reference) = oracle::dequant(&t).unwrap() else { panic!("q4 decodes to f32") };
    assert_eq!(
        read_f32(&deq).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        reference.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );

    let x = random(k, 2);
    let xf = dir.join("x.f32");
    std::fs::write(&xf, f32_bytes(&x)).unwrap();
    let y = dir.join("y.f32");
    ok(&["matvec", s(&out), "weights", "--x", s(&xf), "--device", "cpu", "-o", s(&y)]);
    let yref: Vec<f32> = oracle::matvec(&t, &x).unwrap().y.iter().map(|&v| v as f32).collect();
    assert_eq!(read_f32(&y), yref);
}

#[test]
fn quantize_runs_the_named_method() {
    let dir = TempDir::new("cli-methods");
    let (n, k) = (3, 96);
    let values = random(n * k, 3);
    let input = dir.join("m.npy");
    write_npy(&input, "<f4", &[n, k], &f32_bytes(&values));
    let cases: [(&str, Option<&str>, Vec<u8>, &str); 4] = [
        (
            "q8_g32_fp16",
            Some("grouped_search"),
            grouped::grouped_search(Format::Q8G32Fp16, n, k, Source::F32(&values), SearchOptions::default())
                .unwrap()
                .tensor
                .payload()
                .to_vec(),
            "grouped_search",
        ),
        (
            "fp8_e4m3fn_row_fp16",
            None,
            fp8_row::fp8_row_maxabs(Format::Fp8E4m3fnRowFp16, n, k, Source::F32(&values))
                .unwrap()
                .tensor
                .payload()
                .to_vec(),
            "fp8_row_maxabs",
        ),
        ("bf16", None, direct::f32_to_bf16(&[n, k], &values).unwrap().tensor.payload().to_vec(), "f32_to_bf16"),
        ("fp32", None, f32_bytes(&values), "persist"),
    ];
    for (format, method, payload, recorded) in cases {
        let out = dir.join(&format!("{format}.ninfer"));
        let mut args = vec!["quantize", s(&input), s(&out), "--format", format];
        if let Some(m) = method {
            args.extend(["--method", m]);
        }
        ok(&args);
        let a = Artifact::open(&out).unwrap();
        assert_eq!(a.tensor("m").unwrap().payload(), &payload[..], "{format}");
        assert_eq!(a.root().provenance.as_ref().unwrap().parse().unwrap()["m"]["method"], recorded, "{format}");
    }
}

#[test]
fn quantize_widens_f16_npy_exactly_into_fp32() {
    let dir = TempDir::new("cli-f16");
    let values = [1.0f32, -0.5, 65504.0, 5.960_464_5e-8];
    let words: Vec<u8> = values.iter().flat_map(|&v| f32_to_f16(v).to_le_bytes()).collect();
    let input = dir.join("h.npy");
    write_npy(&input, "<f2", &[4], &words);
    let out = dir.join("h.ninfer");
    ok(&["quantize", s(&input), s(&out), "--format", "fp32"]);
    let deq = dir.join("h.f32");
    ok(&["dequant", s(&out), "h", "-o", s(&deq)]);
    assert_eq!(read_f32(&deq), values, "binary16 values, including the smallest subnormal, widen exactly");
}

/// A safetensors file with the given (name, dtype, shape, bytes), in that data order.
#[test]
fn quantize_reads_safetensors_and_keeps_bf16_words() {
    let dir = TempDir::new("cli-st");
    let (n, k) = (2, 64);
    let a_vals = random(n * k, 4);
    let b_vals = random(k, 5);
    let b_words: Vec<u16> = b_vals.iter().map(|&v| f32_to_bf16(v)).collect();
    let input = dir.join("in.safetensors");
    write_safetensors(
        &input,
        &[
            ("layers.0.w", "F32", vec![n, k], f32_bytes(&a_vals)),
            ("layers.0.norm", "BF16", vec![k], b_words.iter().flat_map(|w| w.to_le_bytes()).collect()),
        ],
    );
    let out = dir.join("st.ninfer");
    ok(&["quantize", s(&input), s(&out), "--format", "bf16"]);
    let art = Artifact::open(&out).unwrap();
    assert_eq!(art.objects().len(), 2);
    // bf16 in, bf16 out: persisted bit for bit, not rounded again.
    let norm = art.tensor("layers.0.norm").unwrap();
    assert_eq!(norm.payload(), b_words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
    assert_eq!(art.root().provenance.as_ref().unwrap().parse().unwrap()["layers.0.norm"]["method"], "persist");
    assert_eq!(art.root().provenance.as_ref().unwrap().parse().unwrap()["layers.0.w"]["method"], "f32_to_bf16");
    // Tensor names are bindings too.
    assert_eq!(art.binding("layers.0.w").unwrap()[0].shape(), &[n, k]);
}

#[test]
fn quantize_refuses_what_a_method_cannot_do() {
    let dir = TempDir::new("cli-refuse");
    let input = dir.join("cube.npy");
    write_npy(&input, "<f4", &[2, 2, 64], &f32_bytes(&random(256, 6)));
    let out = dir.join("x.ninfer");
    // A rank-3 tensor is not a matrix: kept direct by default, refused when a rule asks for q4.
    assert!(fails(&["quantize", s(&input), s(&out), "--format", "q4_g64_fp16", "--format-for", "cu*=q4_g64_fp16"])
        .contains("rank-2"));
    let flat = dir.join("flat.npy");
    write_npy(&flat, "<f4", &[2, 64], &f32_bytes(&random(128, 7)));
    assert!(fails(&["quantize", s(&flat), s(&out), "--format", "q4_g64_fp16", "--method", "fp8_row_maxabs"])
        .contains("does not produce"));
    assert!(
        fails(&["quantize", s(&flat), s(&out), "--format", "Q4"]).contains("q4_g64_fp16"),
        "an unknown format lists the valid names"
    );
    assert!(fails(&["quantize", s(&flat), s(&out), "--format", "nvfp4"]).contains("does not produce nvfp4"));
    let f8 = dir.join("f8.npy");
    write_npy(&f8, "<f8", &[2], &[0u8; 16]);
    assert!(fails(&["quantize", s(&f8), s(&out), "--format", "fp32"]).contains("<f8"));
    assert!(!out.exists(), "nothing written");
}

#[test]
fn inspect_lists_tensors_with_capability_status_without_a_gpu() {
    let f = fixture("cli-inspect", Some(500));
    let text = ok(&["inspect", s(&f.entry)]);
    assert!(text.contains("no GPU adapter opened"), "{text}");
    for needle in [
        "q4_g64_fp16",
        "row_split_k128_v1",
        "[4,130]",
        "544",
        "gguf_q8_0",
        "resource tok",
        "binding layer.w_top",
        "use layer.w on x",
    ] {
        assert!(text.contains(needle), "inspect shows {needle}: {text}");
    }
    let v: Value = serde_json::from_str(&ok(&["inspect", s(&f.entry), "--json"])).unwrap();
    assert_eq!(v["platform"], Value::Null);
    assert!(v["gpu_error"].is_string());
    assert_eq!(v["files"].as_array().unwrap().len(), 5);
    let w = v["tensors"].as_array().unwrap().iter().find(|t| t["id"] == "w").unwrap();
    assert_eq!(
        (w["format"].as_str(), w["layout"].as_str(), w["bytes"].as_u64()),
        (Some("q4_g64_fp16"), Some("row_split_k128_v1"), Some(544))
    );
    assert_eq!(w["shape"], json!([4, 130]));
    assert_eq!(w["matmul"]["status"], "supported");
    assert_eq!(w["gather"]["status"], "supported");
    let cols = v["tensors"].as_array().unwrap().iter().find(|t| t["id"] == "cols").unwrap();
    assert_eq!(cols["matmul"]["status"], "unsupported", "int32 has no matmul");
    assert_eq!(cols["gather"]["status"], "supported", "int32 rows are gathered exactly");
    let g = v["tensors"].as_array().unwrap().iter().find(|t| t["id"] == "g").unwrap();
    assert_eq!(g["dequant"]["status"], "supported", "gguf_q8_0 has a kernel");
}

#[test]
fn inspect_reports_a_first_use_failure_per_tensor() {
    let f = fixture("cli-inspect-bad", None);
    edit_json(&f.entry, |v| v["objects"][0]["format"] = json!("q4"));
    let v: Value = serde_json::from_str(&ok(&["inspect", s(&f.entry), "--json"])).unwrap();
    let w = v["tensors"].as_array().unwrap().iter().find(|t| t["id"] == "w").unwrap();
    assert!(w["error"].as_str().unwrap().contains(rule::TENSOR_NAMES));
}

#[test]
fn dequant_writes_i32_for_int32_and_concatenates_binding_parts() {
    let f = fixture("cli-deq", Some(500));
    let dir = &f.dir;
    let cols = dir.join("cols.i32");
    ok(&["dequant", s(&f.entry), "cols", "-o", s(&cols)]);
    let got: Vec<i32> =
        std::fs::read(&cols).unwrap().chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, (0..64).rev().collect::<Vec<i32>>());
    // layer.w_top = rows 0, 1 and 3 of w.
    let top = dir.join("top.f32");
    ok(&["dequant", s(&f.entry), "layer.w_top", "--device", "cpu", "-o", s(&top)]);
    let Dequantized::F32(all) = oracle::dequant(&f.tensors["w"]).unwrap() else { panic!() };
    let expected: Vec<f32> = [0, 1, 3].iter().flat_map(|&r| all[r * K..(r + 1) * K].to_vec()).collect();
    assert_eq!(read_f32(&top), expected);
}

#[test]
fn file_commands_report_errors_with_the_rule() {
    let f = fixture("cli-errors", Some(500));
    let out = f.dir.join("o.f32");
    assert!(fails(&["dequant", s(&f.entry), "nothing", "-o", s(&out)]).contains("unknown object or binding"));
    let xf = f.dir.join("x.f32");
    std::fs::write(&xf, [0u8; 5]).unwrap();
    assert!(fails(&["matvec", s(&f.entry), "w", "--x", s(&xf), "-o", s(&out)]).contains("not a whole number"));
    std::fs::write(&xf, f32_bytes(&[1.0; 3])).unwrap();
    assert!(fails(&["matvec", s(&f.entry), "w", "--x", s(&xf), "-o", s(&out)]).contains("J columns of K"));
    assert!(fails(&["matvec", s(&f.entry), "w", "--x", s(&xf), "--columns", "0", "-o", s(&out)]).contains("1..=65536"));
    assert!(fails(&["gather", s(&f.entry), "w", "--rows", "1,4", "-o", s(&out)]).contains("row index 4 but N = 4"));
    assert!(fails(&["gather", s(&f.entry), "w", "--rows", "1,x", "-o", s(&out)]).contains("`x` is not a row index"));
    std::fs::remove_file(&f.files()[2]).unwrap();
    assert!(fails(&["inspect", s(&f.entry)]).contains(rule::PART_OPEN));
}

fn bytes_of<T: Copy, const W: usize>(v: &[T], f: fn(T) -> [u8; W]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

#[test]
fn quantize_takes_a_whole_mixed_checkpoint_with_rules_and_shards() {
    let dir = TempDir::new("cli-checkpoint");
    let w = random(4 * 64, 21);
    let bias = random(64, 22);
    let norm: Vec<u16> = (0..64).map(|i| 0x3F80 + i as u16).collect();
    let emb: Vec<u16> = (0..3 * 64).map(|i| 0x3C00 + (i % 50) as u16).collect();
    let pos: Vec<i64> = (0..8).collect();
    let tensors = vec![
        ("enc.w", "F32", vec![4, 64], f32_bytes(&w)),
        ("enc.b", "F32", vec![64], f32_bytes(&bias)),
        ("norm", "BF16", vec![64], bytes_of(&norm, u16::to_le_bytes)),
        ("emb", "F16", vec![3, 64], bytes_of(&emb, u16::to_le_bytes)),
        ("pos", "I64", vec![1, 8], bytes_of(&pos, i64::to_le_bytes)),
    ];
    let model = dir.join("model.safetensors");
    write_safetensors(&model, &tensors);
    let formats = |art: &Artifact| -> Vec<(String, String)> {
        art.objects()
            .iter()
            .map(|o| (o.id.clone(), art.tensor_desc(&o.id).unwrap().format.name().to_string()))
            .collect()
    };
    let out = dir.join("q.ninfer");
    ok(&["quantize", s(&model), s(&out), "--format", "q4_g64_fp16"]);
    let art = Artifact::open(&out).unwrap();
    let mut got = formats(&art);
    got.sort();
    let want =
        [("emb", "q4_g64_fp16"), ("enc.b", "fp32"), ("enc.w", "q4_g64_fp16"), ("norm", "fp32"), ("pos", "int32")];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
    let pos_words = art.tensor("pos").unwrap().payload().to_vec();
    assert_eq!(pos_words, bytes_of(&(0..8).collect::<Vec<i32>>(), i32::to_le_bytes), "int64 narrowed exactly");
    assert_eq!(art.tensor("enc.b").unwrap().payload(), f32_bytes(&bias), "a vector kept exactly");
    let p = art.root().provenance.as_ref().unwrap().parse().unwrap();
    assert_eq!(
        (p["pos"]["params"]["rule"].as_str(), p["pos"]["params"]["source_dtype"].as_str()),
        (Some("integers are kept as int32"), Some("i64"))
    );

    // Rules: a format for one name, direct bf16 for others.
    let ruled = dir.join("r.ninfer");
    ok(&[
        "quantize",
        s(&model),
        s(&ruled),
        "--format",
        "q4_g64_fp16",
        "--format-for",
        "emb=q8_g32_fp16",
        "--keep",
        "enc.*",
        "--vectors",
        "bf16",
    ]);
    let art = Artifact::open(&ruled).unwrap();
    let mut got = formats(&art);
    got.sort();
    let want = [("emb", "q8_g32_fp16"), ("enc.b", "bf16"), ("enc.w", "bf16"), ("norm", "bf16"), ("pos", "int32")];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(art.tensor("norm").unwrap().payload(), bytes_of(&norm, u16::to_le_bytes), "bf16 words kept");

    // Shards through an index; a tensor in two shards and an int64 past int32 are refused.
    let (a, b) = (dir.join("a.safetensors"), dir.join("b.safetensors"));
    write_safetensors(&a, &tensors[..2]);
    write_safetensors(&b, &tensors[2..]);
    let index = dir.join("model.safetensors.index.json");
    let map: serde_json::Map<String, Value> = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| (t.0.to_string(), json!(if i < 2 { "a.safetensors" } else { "b.safetensors" })))
        .collect();
    std::fs::write(&index, serde_json::to_vec(&json!({ "weight_map": map })).unwrap()).unwrap();
    let sharded = dir.join("s.ninfer");
    ok(&["quantize", s(&index), s(&sharded), "--format", "q4_g64_fp16"]);
    assert_eq!(Artifact::open(&sharded).unwrap().objects().len(), 5);
    write_safetensors(&b, &tensors[1..]);
    assert!(
        fails(&["quantize", s(&index), s(&dir.join("x.ninfer")), "--format", "q4_g64_fp16"]).contains("enc.b is in")
    );
    let big = dir.join("big.safetensors");
    // The bad tensor comes after a converted (and spooled) one: nothing is left behind.
    write_safetensors(
        &big,
        &[tensors[0].clone(), ("position_ids", "I64", vec![2], bytes_of(&[0i64, 1 << 40], i64::to_le_bytes))],
    );
    let e = fails(&["quantize", s(&big), s(&dir.join("y.ninfer")), "--format", "q4_g64_fp16"]);
    assert!(e.contains("position_ids") && e.contains("element 1") && e.contains("1099511627776"), "{e}");
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') || n.starts_with("y.ninfer"))
        .collect();
    assert!(left.is_empty(), "a failed quantize left {left:?}");
    let f64s = dir.join("f64.safetensors");
    write_safetensors(&f64s, &[("d", "F64", vec![1], vec![0; 8])]);
    assert!(fails(&["quantize", s(&f64s), s(&dir.join("z.ninfer")), "--format", "fp32"]).contains("d: dtype F64"));
}
