//! One error type for the whole crate. Every refusal names the rule it enforces, so a user can find
//! the sentence of the spec that rejected their input.

use thiserror::Error;

/// Everything that can go wrong, as values. Nothing in this crate panics on user input.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A name that is not in a closed registry (format, layout, method…).
    #[error("unknown {kind} `{}`; valid names: {}", clip(.name), message(.valid))]
    UnknownName { kind: &'static str, name: String, valid: String },

    /// A (format, layout) pair outside the closed set of layouts.md.
    #[error("format `{format}` cannot be stored in layout `{layout}`: {format} uses {allowed}")]
    FormatLayout { format: &'static str, layout: &'static str, allowed: &'static str },

    /// A logical shape or parameter that the layout or format does not allow.
    #[error("{layout}: shape rule `{rule}` violated: {}", message(.detail))]
    Shape { layout: &'static str, rule: &'static str, detail: String },

    /// A payload whose length differs from the layout's encoded size.
    #[error("{layout} payload for shape {shape:?} must be exactly {expected} bytes, got {actual}")]
    PayloadSize { layout: &'static str, shape: Vec<usize>, expected: u64, actual: u64 },

    /// A stored word that the format reference places outside the valid artifact language.
    #[error("{format}: {rule} ({location})")]
    InvalidWord { format: &'static str, rule: &'static str, location: String },

    /// Physical padding whose contents are not the layout's canonical ones.
    #[error("{layout}: non-canonical padding: {rule} ({location})")]
    Padding { layout: &'static str, rule: &'static str, location: String },

    /// A numeric conversion with no representable result (overflow, NaN into a NaN-less format).
    #[error("{target}: cannot encode {value:e}: {rule}")]
    Numeric { target: &'static str, value: f64, rule: &'static str },

    /// Logical words handed to an encoder that do not match the declared geometry.
    #[error("logical words: {0}")]
    Words(String),

    /// A combination that is well formed but not supported here (op, platform, limit).
    #[error("unsupported: {}", message(.0))]
    Unsupported(String),

    /// The GPU runtime failed (no adapter, device lost, out of memory, mapping failed).
    #[error("gpu: {0}")]
    Gpu(String),

    /// A `.ninfer` container that breaks a structural rule of container.md. `rule` quotes the
    /// rule (one of [`crate::container::rule`]); `detail` says where and what was found.
    #[error("container rule violated: {rule}: {}", message(.detail))]
    Container { rule: &'static str, detail: String },

    /// Reading or writing a file failed.
    #[error("io: {}", message(.0))]
    Io(String),

    /// A model whose configuration is missing, mistyped or inconsistent (its metadata keys and
    /// tensor shapes), or of an architecture this does not run.
    #[error("model: {}", message(.0))]
    Model(String),
}

impl Error {
    /// A numeric refusal placed at element `at` of tensor `name`.
    pub fn context(self, name: &str, at: usize) -> Error {
        match self {
            Error::Numeric { target, value, rule } => {
                Error::Unsupported(format!("{}: element {at}: {target}: cannot encode {value}: {rule}", clip(name)))
            }
            other => other,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Longest stretch of foreign text (a header, a driver message) an error quotes.
pub const MAX_QUOTE: usize = 200;
/// Most names an error lists before eliding the rest with a count.
pub const MAX_LISTED: usize = 12;

/// Longest message a variant that carries free text shows.
pub const MAX_MESSAGE: usize = 600;

/// `text`, cut at [`MAX_QUOTE`] characters with the number left out, so an error stays short
/// whatever a hostile file put in it.
pub fn clip(text: &str) -> String {
    clip_to(text, MAX_QUOTE)
}

fn clip_to(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} more characters)", &text[..cut], text[cut..].chars().count()),
    }
}

fn message(text: &str) -> String {
    clip_to(text, MAX_MESSAGE)
}

/// Up to [`MAX_LISTED`] distinct names, then how many more there are.
pub fn short_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<&str> = names.into_iter().filter(|n| seen.insert(*n)).collect();
    let shown: Vec<&str> = distinct.iter().take(MAX_LISTED).copied().collect();
    match distinct.len() - shown.len() {
        0 => shown.join(", "),
        more => format!("{}, … and {more} more", shown.join(", ")),
    }
}
