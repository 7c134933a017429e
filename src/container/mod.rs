//! The `.ninfer` v3 container (container.md): an entry file with a 32-byte header and a JSON
//! root, optional continuation parts, and one logical payload concatenated across files.
//!
//! Reading is memory-mapped: [`Artifact::open`] checks headers, the JSON root and file sizes, and
//! touches no payload byte. Per-object checks (256-byte tensor alignment, format and layout names,
//! the layout's encoded size) run when an object is first used, as the spec requires, so an
//! artifact carrying a format this build does not know still opens. Tensors come back as
//! [`EncodedTensor`](crate::EncodedTensor)s borrowed from the map; only an object that straddles
//! two files is copied.
//!
//! Writing ([`ArtifactWriter`]) produces exactly what the reader accepts: the writer runs the
//! reader's JSON rules on its own root before touching the disk.
//!
//! Every violation is [`Error::Container`](crate::Error::Container) naming one of the [`rule`]s.

#[cfg(not(target_arch = "wasm32"))]
pub mod checkpoint;
pub mod import;
mod json;
mod reader;
mod root;
pub mod sources;
mod uses;
mod writer;

pub use json::{ParsedRoot, RawJson};
pub use reader::Artifact;
pub use root::{
    ActivationPolicy, AuxRole, Binding, BindingPart, Component, FileEntry, ObjectEntry, ObjectKind, Root, Use,
};
pub use uses::ResolvedUse;
pub use writer::{ArtifactWriter, Written};

use crate::error::Error;

/// "NINFER", 0, version 3.
pub const ENTRY_MAGIC: [u8; 8] = *b"NINFER\x00\x03";
/// "NINPRT", 0, version 3.
pub const PART_MAGIC: [u8; 8] = *b"NINPRT\x00\x03";
/// Both headers are 32 bytes: magic, a u64, the 16-byte artifact id.
pub const HEADER_BYTES: usize = 32;
/// Payloads start on this boundary: after the padded JSON in the entry, at 4096 in a part.
pub const PAYLOAD_ALIGN: usize = 4096;
/// Tensor offsets in the logical payload are multiples of this (GPU-friendly binding offsets).
pub const TENSOR_ALIGN: u64 = 256;
/// The largest tensor rank the container carries.
pub const MAX_RANK: usize = 16;

/// The structural rules of container.md, one constant per rule, quoted in every error so a user
/// can find the sentence that rejected their file. Tests match on these constants.
pub mod rule {
    // Entry file.
    pub const ENTRY_HEADER: &str = "the entry file starts with the 32-byte header whose magic is NINFER 00 03";
    pub const ENTRY_JSON_BYTES: &str = "json_bytes > 0 and the JSON lies inside the entry file";
    pub const ENTRY_GAP: &str = "the gap between the JSON and the payload start is zero";
    pub const ENTRY_SIZE: &str = "the entry file's size is exactly payload_start + files[0].payload_bytes";
    // JSON text.
    pub const JSON_UTF8: &str = "the JSON is UTF-8";
    pub const JSON_SYNTAX: &str = "the JSON is well-formed";
    pub const JSON_DUPLICATE_KEY: &str = "duplicate keys are errors";
    pub const JSON_NON_FINITE: &str = "non-finite numbers are errors";
    // Root members.
    pub const ROOT_OBJECT: &str = "the JSON root is an object";
    pub const UNKNOWN_MEMBER: &str = "unknown members are errors";
    pub const REQUIRED_MEMBER: &str = "required members are present";
    pub const MEMBER_TYPE: &str = "components and bindings are objects, objects and files non-empty arrays, uses an array, metadata and provenance objects";
    pub const METADATA_NAME: &str = "metadata.name, if present, is a non-empty string";
    // Files and parts.
    pub const FILE_ENTRY: &str = "files[i] is {\"path\": null | file name, \"payload_bytes\": integer > 0}";
    pub const ENTRY_PATH_NULL: &str = "files[0] (the entry) has path null and every continuation a file name";
    pub const PART_PATH: &str = "a part path holds no /, \\ or NUL and is not empty, . or ..";
    pub const PART_PATH_UNIQUE: &str = "part paths are unique and differ from the entry's own name";
    pub const PART_OPEN: &str = "every part listed in files exists beside the entry";
    pub const PART_HEADER: &str = "a part starts with the 32-byte header whose magic is NINPRT 00 03";
    pub const PART_INDEX: &str = "a part's part_index equals its index in files";
    pub const ARTIFACT_ID: &str = "every part carries the entry's artifact_id";
    pub const PART_GAP: &str = "bytes [32, 4096) of a part are zero";
    pub const PART_SIZE: &str = "a part's size is exactly 4096 + files[i].payload_bytes";
    // Objects.
    pub const OBJECT_KIND: &str = "an object is a JSON object whose kind is tensor or resource";
    pub const TENSOR_MEMBERS: &str = "a tensor object has exactly id, kind, shape, format, layout, offset, bytes and optional divisors, of the right types";
    pub const RESOURCE_MEMBERS: &str =
        "a resource object has exactly id, kind, encoding, offset and bytes, of the right types";
    pub const OBJECT_ID: &str = "an id is a non-empty string without NUL";
    pub const OBJECT_ID_UNIQUE: &str = "ids are unique over both kinds";
    pub const TENSOR_SHAPE: &str = "shape has rank 0..16 of positive integers";
    pub const TENSOR_OFFSET: &str = "a tensor's offset is a multiple of 256";
    pub const TENSOR_DIVISORS: &str = "divisors is a positive integer (default 1)";
    pub const RESOURCE_ENCODING: &str = "a resource's encoding is raw_bytes_v1";
    pub const RESOURCE_BYTES: &str = "a resource's bytes > 0";
    pub const OBJECTS_SORTED: &str = "objects are sorted by offset and never overlap";
    pub const OBJECT_BOUNDS: &str = "an object lies inside the logical payload";
    // Components, bindings, uses.
    pub const COMPONENT: &str = "a component is {\"config\": {...}, \"target\"?: id, \"resources\"?: {role: resource id}, \"proposal\"?: {...}}";
    pub const COMPONENT_TARGET: &str = "a component's target names a component or an object";
    pub const COMPONENT_RESOURCE: &str = "a component's resources name resource objects";
    pub const BINDING: &str =
        "a binding is {\"object\": id} or {\"parts\": [{\"object\": id, \"range\": [begin, end]}, ...]}";
    pub const BINDING_OBJECT: &str = "a binding names tensor objects";
    pub const BINDING_RANGE: &str = "a binding range has 0 <= begin < end <= the object's elements";
    pub const USE: &str = "a use is {\"parameter\", \"input\", \"activation_policy\"?, \"auxiliaries\"?}";
    pub const USE_PARAMETER: &str = "a use's parameter names a binding";
    pub const USE_POLICY: &str = "activation_policy is A16Only, AllowA8 or AllowA4";
    pub const USE_UNIQUE: &str = "each (parameter, input) pair is unique";
    pub const AUX_ROLE: &str = "auxiliary roles are activation_input_divisor, hadamard_signs and input_columns";
    // Checked when an object is first used.
    pub const TENSOR_NAMES: &str = "format and layout are canonical names from the closed registries";
    pub const TENSOR_GEOMETRY: &str =
        "the shape, format, layout and divisors are legal together (divisors > 1 only for nvfp4)";
    pub const TENSOR_BYTES: &str = "bytes is exactly the layout's encoded size for the shape";
    pub const BINDING_ROWS: &str = "a binding range resolves to a tensor only when it covers whole rows";
    /// Resolution rules of this reader (container.md leaves a binding's pieces to the consumer):
    /// stacked pieces must form one tensor, and a binding may not repeat data past the payload.
    pub const BINDING_STACK: &str = "a binding's parts stack into one tensor: the same dimensions after the first";
    pub const BINDING_EXPANSION: &str = "a binding's parts together are at most the artifact's logical payload";
    pub const AUX_DIVISOR: &str = "activation_input_divisor is an fp32 scalar";
    pub const AUX_HADAMARD: &str = "hadamard_signs is bf16 [K]";
    pub const AUX_COLUMNS: &str =
        "input_columns is an int32 [K] permutation of the activation columns, for gguf parameters only";
}

/// The error for a broken rule.
pub(crate) fn violation(rule: &'static str, detail: impl Into<String>) -> Error {
    Error::Container { rule, detail: detail.into() }
}

/// `ceil(x / a) * a` in u64, `None` on overflow.
pub(crate) fn align_up(x: u64, a: u64) -> Option<u64> {
    x.checked_add(a - 1).map(|v| v / a * a)
}

/// Lower-case hex of an artifact id, for messages and `inspect`.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
