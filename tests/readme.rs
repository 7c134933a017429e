//! The README's format table is the registry and capability table, so it cannot drift.

use ninfer_wgpu::gpu::capability::{status, Status};
use ninfer_wgpu::gpu::{Op, Variant};
use ninfer_wgpu::Format;

fn cell(format: Format, op: Op) -> String {
    match status(format, format.spec().layouts[0], op, Variant::Workgroup, None) {
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
            s.layouts[0].name(),
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
