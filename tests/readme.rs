//! The README's format table is the registry and capability table, so it cannot drift.

use ninfer_wgpu::gpu::capability::{status, Status};
use ninfer_wgpu::gpu::{Op, Variant};
use ninfer_wgpu::Format;

fn cell(format: Format, op: Op) -> String {
    match status(format, format.layout(), op, Variant::Workgroup, None) {
        Status::Supported => "yes".into(),
        Status::Unsupported(_) => "no".into(),
    }
}

/// The table as README.md must show it.
fn expected() -> Vec<String> {
    let mut lines = vec![
        "| format | category | bits/weight | layout | dequant | matmul | gather |".to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    for f in Format::ALL {
        let s = f.spec();
        lines.push(format!(
            "| `{}` | {:?} | {} | `{}` | {} | {} | {} |",
            s.name,
            s.category,
            f.bits_per_weight(),
            f.layout().name(),
            cell(f, Op::Dequant),
            cell(f, Op::Matmul),
            cell(f, Op::Gather)
        ));
    }
    lines
}

#[test]
fn readme_format_table_is_the_registry() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let start = readme.find("<!-- formats:begin -->").expect("begin marker") + "<!-- formats:begin -->".len();
    let end = readme.find("<!-- formats:end -->").expect("end marker");
    let got: Vec<&str> = readme[start..end].lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let want = expected();
    assert_eq!(got, want, "README.md's format table drifted from the registry; expected:\n{}", want.join("\n"));
}

/// The README's Rust quick start is `examples/quick_start.rs` (which clippy's `--all-targets`
/// compiles in CI), so the snippet a user copies compiles.
#[test]
fn readme_rust_quick_start_is_the_compiled_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let example = std::fs::read_to_string(format!("{root}/examples/quick_start.rs")).expect("quick_start.rs");
    let start = readme.find("```rust\n").expect("a rust block in README.md") + "```rust\n".len();
    let snippet = &readme[start..start + readme[start..].find("```").expect("the block's end")];
    let body: String =
        example.lines().skip_while(|l| l.starts_with("//!") || l.is_empty()).map(|l| format!("{l}\n")).collect();
    assert_eq!(snippet, body, "README.md's Rust quick start differs from examples/quick_start.rs");
}
