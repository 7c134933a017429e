//! Every path and section that a document or a code comment refers to exists: a renamed file or
//! heading breaks this test, not a reader's trust.
//!
//! What counts as a reference: a path from the repository root (`src/…`, `shaders/…`, `docs/…`,
//! …) anywhere in a Markdown file and in the comments of code, shaders and scripts; a section as
//! `README.md#slug` or `docs/<file>.md#slug` (or a Markdown link `[..](file.md#slug)`), whose slug
//! must be the GitHub anchor of a heading in that file. Paths under `shaders/` written from inside
//! it (`ops/…`, `codecs/…`) are refused: from the root is the one way to write them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const ROOTS: &[&str] =
    &["src/", "shaders/", "tests/", "tools/", "docs/", "examples/", "benches/", "web/", "fuzz/", ".ci/"];
/// Paths that are written from inside `shaders/` and must name it.
const SHADER_DIRS: &[&str] = &["ops/", "codecs/"];
/// Outputs of a build, not files of the repository.
const BUILT: &[&str] = &["web/pkg", "web/dist", "fuzz/target", "fuzz/corpus", "fuzz/artifacts"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files a reader reads: Markdown whole, code and scripts for their comments.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !matches!(
                    name.as_str(),
                    "target" | "node_modules" | "pkg" | "dist" | "corpus" | "artifacts" | "seeds"
                ) {
                    walk(&p, out);
                }
            } else if [".rs", ".wgsl", ".md", ".sh", ".py", ".js", ".mjs", ".html", ".toml"]
                .iter()
                .any(|x| name.ends_with(x))
                || name == "run"
            {
                out.push(p);
            }
        }
    }
    let mut out = vec![root().join("README.md"), root().join("Cargo.toml"), root().join(".ci/run")];
    for dir in ["src", "shaders", "tests", "tools", "docs", "examples", "benches", "web", "fuzz"] {
        walk(&root().join(dir), &mut out);
    }
    // Generated tables, and this file, whose examples are not references.
    out.retain(|p| !p.ends_with("src/gguf/tables.rs") && !p.ends_with("tests/references.rs"));
    out
}

/// The text of a file that can hold references: Markdown whole, other files their comments.
fn commentary(path: &Path, text: &str) -> String {
    let name = path.to_string_lossy();
    if name.ends_with(".md") {
        return text.to_string();
    }
    let marker = if name.ends_with(".rs") || name.ends_with(".wgsl") || name.ends_with(".js") || name.ends_with(".mjs")
    {
        "//"
    } else if name.ends_with(".html") {
        "<!--"
    } else {
        "#"
    };
    text.lines().filter_map(|l| l.find(marker).map(|at| &l[at..])).collect::<Vec<_>>().join("\n")
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// Path-like tokens that start with one of `prefixes` at a word boundary.
fn tokens<'a>(text: &'a str, prefixes: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (at, _) in text.char_indices() {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| is_path_char(c) || c == '*' || c == '$' || c == '~') {
            continue;
        }
        let rest = &text[at..];
        if !prefixes.iter().any(|p| rest.starts_with(p)) {
            continue;
        }
        let end = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
        let next = rest[end..].chars().next();
        // Globs, templates and shell expansions name no single file.
        if next.is_some_and(|c| matches!(c, '*' | '{' | '<' | '$')) {
            continue;
        }
        out.push(rest[..end].trim_end_matches(['.', ',', ':', ';']));
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped, spaces
/// to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Whether `path`, with its `..` steps applied, lies inside the repository.
fn inside_repository(path: &Path) -> bool {
    let mut parts: Vec<std::path::Component> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other),
        }
    }
    parts.iter().collect::<PathBuf>().starts_with(root())
}

/// Section references: `file.md#slug` tokens, resolved from the root or, for a Markdown link in
/// a document, from the document's folder; `](#slug)` within the same document.
fn section_refs(path: &Path, text: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(".md#") {
        let start = text[..at].rfind(|c: char| !is_path_char(c)).map_or(0, |i| i + 1);
        let file = &text[start..at + 3];
        let rest = &text[at + 4..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_'))).unwrap_or(rest.len());
        let linked = text[..start].ends_with("](");
        let relative = (!file.contains('/') && !file.starts_with("README")) || file.starts_with("../");
        let target = if linked && relative { path.parent().unwrap().join(file) } else { root().join(file) };
        // Sections of files outside the repository (`../shared/spec/…`) are not this test's:
        // a checkout need not have them beside it.
        if inside_repository(&target) {
            out.push((target, rest[..end].to_string()));
        }
    }
    for (at, _) in text.match_indices("](#") {
        let rest = &text[at + 3..];
        let end = rest.find(')').unwrap_or(rest.len());
        out.push((path.to_path_buf(), rest[..end].to_string()));
    }
    out
}

#[test]
fn every_referenced_path_and_section_exists() {
    let mut broken = Vec::new();
    for path in sources() {
        let Ok(text) = fs::read_to_string(&path) else { continue };
        let shown = path.strip_prefix(root()).unwrap().display().to_string();
        let text = commentary(&path, &text);
        for t in tokens(&text, ROOTS) {
            if BUILT.iter().any(|b| t.starts_with(b)) || t.ends_with('/') && root().join(t).is_dir() {
                continue;
            }
            if !root().join(t).exists() {
                broken.push(format!("{shown}: path `{t}` does not exist"));
            }
        }
        for t in tokens(&text, SHADER_DIRS) {
            broken.push(format!("{shown}: `{t}` is written from inside shaders/; write `shaders/{t}`"));
        }
        for (target, anchor) in section_refs(&path, &text) {
            match fs::read_to_string(&target) {
                Err(_) => broken.push(format!("{shown}: `{}` does not exist", target.display())),
                Ok(md) if !anchors(&md).contains(&anchor) => {
                    broken.push(format!("{shown}: no heading `#{anchor}` in {}", target.display()))
                }
                Ok(_) => {}
            }
        }
    }
    broken.sort();
    broken.dedup();
    assert!(broken.is_empty(), "{} broken references:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn the_checks_find_what_they_look_for() {
    // The scanner itself: a path, a glob it skips, a shader path written from inside, a section.
    let text = "see src/gpu/plan.rs, tools/*.sh and ops/matmul.wgsl; docs/judging.md#a8-profile.";
    assert_eq!(tokens(text, ROOTS), ["src/gpu/plan.rs", "docs/judging.md"]);
    assert_eq!(tokens(text, SHADER_DIRS), ["ops/matmul.wgsl"]);
    assert_eq!(section_refs(Path::new("x"), text), [(root().join("docs/judging.md"), "a8-profile".to_string())]);
    assert_eq!(slug(" Why some cells stay under 2x, counted"), "why-some-cells-stay-under-2x-counted");
    assert!(tokens("../shared/tools/fetch-gemma.sh", ROOTS).is_empty(), "paths outside the repository");
    assert!(section_refs(Path::new("x"), "../shared/spec/criteria.md#a8").is_empty(), "sections outside it");
    let inside = section_refs(&root().join("docs/cli.md"), "[j](../README.md#formats)");
    assert_eq!(inside, [(root().join("docs/../README.md"), "formats".to_string())]);
}
