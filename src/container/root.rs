//! The JSON root as types: parsed with every structural rule of container.md (the ones that need
//! no registry and no payload byte), and serialized back for the writer.
//!
//! Parsing is by hand over a `serde_json::Value` rather than `#[derive(Deserialize)]`, because
//! each refusal has to name its rule and its place (`objects[3] ("w")`), and serde's messages
//! name neither.

use super::json::{parse_root, ParsedRoot, RawJson};
use super::{rule, violation, MAX_RANK};
use crate::error::Result;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

/// One file of the artifact: the entry (`path` None) or a continuation part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub path: Option<String>,
    pub payload_bytes: u64,
}

/// What an object holds. Format and layout stay strings until the object is used: an unknown
/// name must not stop the rest of the artifact from opening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectKind {
    Tensor { format: String, layout: String, shape: Vec<usize>, divisors: usize },
    Resource { encoding: String },
}

/// One entry of `objects`: a tensor or a raw resource in the logical payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    pub id: String,
    pub offset: u64,
    pub bytes: u64,
    pub kind: ObjectKind,
}

impl ObjectEntry {
    /// One past the object's last logical byte (parse checked that it does not overflow).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.bytes)
    }

    /// A tensor's element count (1 for rank 0); `None` for a resource or on overflow.
    pub fn elements(&self) -> Option<usize> {
        match &self.kind {
            ObjectKind::Tensor { shape, .. } => shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)),
            ObjectKind::Resource { .. } => None,
        }
    }
}

/// A range of one object's logical C-order elements, `[begin, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingPart {
    pub object: String,
    pub range: Range<u64>,
}

/// What a parameter name stands for: a whole tensor, or element ranges of tensors in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    Object(String),
    Parts(Vec<BindingPart>),
}

/// Which activation quantization a use allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActivationPolicy {
    A16Only,
    AllowA8,
    AllowA4,
}

impl ActivationPolicy {
    pub const ALL: [ActivationPolicy; 3] =
        [ActivationPolicy::A16Only, ActivationPolicy::AllowA8, ActivationPolicy::AllowA4];

    pub const fn name(self) -> &'static str {
        match self {
            ActivationPolicy::A16Only => "A16Only",
            ActivationPolicy::AllowA8 => "AllowA8",
            ActivationPolicy::AllowA4 => "AllowA4",
        }
    }
}

/// The closed set of auxiliary roles of a use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuxRole {
    /// fp32 scalar dividing the activation.
    ActivationInputDivisor,
    /// bf16 `[K]` signs of a Hadamard rotation.
    HadamardSigns,
    /// int32 `[K]` permutation of activation columns (gguf parameters only).
    InputColumns,
}

impl AuxRole {
    pub const ALL: [AuxRole; 3] = [AuxRole::ActivationInputDivisor, AuxRole::HadamardSigns, AuxRole::InputColumns];

    pub const fn name(self) -> &'static str {
        match self {
            AuxRole::ActivationInputDivisor => "activation_input_divisor",
            AuxRole::HadamardSigns => "hadamard_signs",
            AuxRole::InputColumns => "input_columns",
        }
    }
}

/// One entry of `uses`: a parameter applied to an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    pub parameter: String,
    pub input: String,
    pub activation_policy: Option<ActivationPolicy>,
    pub auxiliaries: BTreeMap<AuxRole, Binding>,
}

/// One entry of `components`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Component {
    pub config: Map<String, Value>,
    pub target: Option<String>,
    pub resources: BTreeMap<String, String>,
    pub proposal: Option<Map<String, Value>>,
}

/// The whole JSON root.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Root {
    pub components: BTreeMap<String, Component>,
    pub objects: Vec<ObjectEntry>,
    pub bindings: BTreeMap<String, Binding>,
    pub uses: Vec<Use>,
    pub files: Vec<FileEntry>,
    /// Free-form objects, kept as checked JSON text (see `json.rs` on memory).
    pub metadata: Option<RawJson>,
    pub provenance: Option<RawJson>,
}

const ROOT_REQUIRED: [&str; 5] = ["components", "objects", "bindings", "uses", "files"];
const ROOT_OPTIONAL: [&str; 2] = ["metadata", "provenance"];

/// Refuses members outside `required ∪ optional` and missing required ones.
fn members(
    map: &Map<String, Value>,
    at: &str,
    required: &[&str],
    optional: &[&str],
    unknown_rule: &'static str,
    missing_rule: &'static str,
) -> Result<()> {
    if let Some(k) = map.keys().find(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str())) {
        return Err(violation(unknown_rule, format!("{at} has unknown member `{k}`")));
    }
    if let Some(k) = required.iter().find(|k| !map.contains_key(**k)) {
        return Err(violation(missing_rule, format!("{at} lacks member `{k}`")));
    }
    Ok(())
}

fn object<'v>(v: &'v Value, rule: &'static str, at: &str) -> Result<&'v Map<String, Value>> {
    v.as_object().ok_or_else(|| violation(rule, format!("{at} is not a JSON object")))
}

fn string<'v>(v: Option<&'v Value>, rule: &'static str, at: &str) -> Result<&'v str> {
    v.and_then(Value::as_str).ok_or_else(|| violation(rule, format!("{at} is not a string")))
}

/// A non-negative JSON integer (`1.0` is not one).
fn uint(v: Option<&Value>, rule: &'static str, at: &str) -> Result<u64> {
    v.and_then(Value::as_u64).ok_or_else(|| {
        violation(
            rule,
            format!("{at} is not a non-negative integer (found {})", v.map(|v| v.to_string()).unwrap_or_default()),
        )
    })
}

fn check_id(id: &str, at: &str) -> Result<()> {
    if id.is_empty() || id.contains('\0') {
        return Err(violation(rule::OBJECT_ID, format!("{at}: id {id:?}")));
    }
    Ok(())
}

impl Root {
    /// Parses a root with every JSON rule; `entry_name` is the entry file's own name, which no
    /// part may reuse.
    pub fn parse_bytes(json: &[u8], entry_name: &str) -> Result<Root> {
        Root::parse(&parse_root(json)?, entry_name)
    }

    /// [`Root::parse_bytes`] after the JSON pass.
    pub fn parse(parsed: &ParsedRoot, entry_name: &str) -> Result<Root> {
        let map = object(&parsed.value, rule::ROOT_OBJECT, "the root")?;
        members(map, "the root", &ROOT_REQUIRED, &ROOT_OPTIONAL, rule::UNKNOWN_MEMBER, rule::REQUIRED_MEMBER)?;
        let typed = |name: &str, want_object: bool| -> Result<&Value> {
            let v = &map[name];
            let ok = if want_object { v.is_object() } else { v.is_array() };
            if !ok {
                return Err(violation(
                    rule::MEMBER_TYPE,
                    format!("`{name}` is {}, not an {}", kind_name(v), if want_object { "object" } else { "array" }),
                ));
            }
            Ok(v)
        };
        let files = parse_files(typed("files", false)?, entry_name)?;
        let total = files
            .iter()
            .try_fold(0u64, |a, f| a.checked_add(f.payload_bytes))
            .ok_or_else(|| violation(rule::FILE_ENTRY, "the payload sizes overflow u64"))?;
        let objects = parse_objects(typed("objects", false)?, total)?;
        let by_id: HashMap<&str, &ObjectEntry> = objects.iter().map(|o| (o.id.as_str(), o)).collect();
        let components = parse_components(typed("components", true)?, &by_id)?;
        let mut bindings = BTreeMap::new();
        for (name, b) in object(typed("bindings", true)?, rule::MEMBER_TYPE, "`bindings`")? {
            bindings.insert(name.clone(), parse_binding(b, &format!("bindings[{name:?}]"), &by_id)?);
        }
        let uses = parse_uses(typed("uses", false)?, &bindings, &by_id)?;
        let free = |name: &str| -> Result<Option<RawJson>> {
            match parsed.raw.get(name) {
                None => Ok(None),
                Some(v) if v.is_object() => Ok(Some(v.clone())),
                Some(_) => Err(violation(rule::MEMBER_TYPE, format!("`{name}` is not a JSON object"))),
            }
        };
        let metadata = free("metadata")?;
        let provenance = free("provenance")?;
        if let Some(name) = metadata.as_ref().and_then(|m| m.member("name")) {
            if name.as_str().is_none_or(str::is_empty) {
                return Err(violation(rule::METADATA_NAME, format!("metadata.name is {name}")));
            }
        }
        Ok(Root { components, objects, bindings, uses, files, metadata, provenance })
    }

    /// The logical payload's length: the sum of every file's payload.
    pub fn payload_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.payload_bytes).fold(0u64, u64::saturating_add)
    }

    /// Where each file's payload starts in the logical payload (`P_i`).
    pub fn file_starts(&self) -> Vec<u64> {
        let mut at = 0u64;
        self.files
            .iter()
            .map(|f| {
                let start = at;
                at = at.saturating_add(f.payload_bytes);
                start
            })
            .collect()
    }

    /// A linear search; `Artifact::object` keeps an index for repeated lookups.
    pub fn object(&self, id: &str) -> Option<&ObjectEntry> {
        self.objects.iter().find(|o| o.id == id)
    }

    /// The root as JSON text, members in the spec's order of mention (the free-form ones as
    /// they were given).
    pub fn to_text(&self) -> Result<Vec<u8>> {
        #[derive(serde::Serialize)]
        struct Text<'a> {
            #[serde(flatten)]
            structure: &'a Map<String, Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            metadata: Option<&'a RawJson>,
            #[serde(skip_serializing_if = "Option::is_none")]
            provenance: Option<&'a RawJson>,
        }
        let Value::Object(structure) = self.structure() else { unreachable!("structure() builds an object") };
        let text =
            Text { structure: &structure, metadata: self.metadata.as_ref(), provenance: self.provenance.as_ref() };
        serde_json::to_vec(&text).map_err(|e| violation(rule::JSON_SYNTAX, format!("serializing the root: {e}")))
    }

    fn structure(&self) -> Value {
        let mut root = Map::new();
        root.insert(
            "components".into(),
            Value::Object(self.components.iter().map(|(id, c)| (id.clone(), component_json(c))).collect()),
        );
        root.insert("objects".into(), Value::Array(self.objects.iter().map(object_json).collect()));
        root.insert(
            "bindings".into(),
            Value::Object(self.bindings.iter().map(|(n, b)| (n.clone(), binding_json(b))).collect()),
        );
        root.insert("uses".into(), Value::Array(self.uses.iter().map(use_json).collect()));
        root.insert(
            "files".into(),
            Value::Array(
                self.files.iter().map(|f| json!({ "path": f.path, "payload_bytes": f.payload_bytes })).collect(),
            ),
        );
        Value::Object(root)
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A continuation path is a bare sibling file name: nothing that could leave the directory.
fn check_part_path(path: &str, at: &str) -> Result<()> {
    if path.is_empty() || path == "." || path == ".." || path.contains(['/', '\\', '\0']) {
        return Err(violation(rule::PART_PATH, format!("{at}.path is {path:?}")));
    }
    Ok(())
}

fn parse_files(v: &Value, entry_name: &str) -> Result<Vec<FileEntry>> {
    let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
    if list.is_empty() {
        return Err(violation(rule::MEMBER_TYPE, "`files` is empty"));
    }
    let mut seen = BTreeSet::new();
    let mut files = Vec::with_capacity(list.len());
    for (i, f) in list.iter().enumerate() {
        let at = format!("files[{i}]");
        let m = object(f, rule::FILE_ENTRY, &at)?;
        members(m, &at, &["path", "payload_bytes"], &[], rule::FILE_ENTRY, rule::FILE_ENTRY)?;
        let payload_bytes = uint(m.get("payload_bytes"), rule::FILE_ENTRY, &format!("{at}.payload_bytes"))?;
        if payload_bytes == 0 {
            return Err(violation(rule::FILE_ENTRY, format!("{at}.payload_bytes is 0")));
        }
        let path = match (&m["path"], i) {
            (Value::Null, 0) => None,
            (Value::String(p), i) if i > 0 => {
                check_part_path(p, &at)?;
                if p == entry_name || !seen.insert(p.as_str()) {
                    return Err(violation(
                        rule::PART_PATH_UNIQUE,
                        format!("{at}.path {p:?} is used twice or names the entry"),
                    ));
                }
                Some(p.clone())
            }
            (p, _) => return Err(violation(rule::ENTRY_PATH_NULL, format!("{at}.path is {p}"))),
        };
        files.push(FileEntry { path, payload_bytes });
    }
    Ok(files)
}

fn parse_shape(v: Option<&Value>, at: &str) -> Result<Vec<usize>> {
    let bad = |why: String| violation(rule::TENSOR_SHAPE, format!("{at}.shape {why}"));
    let dims = v.and_then(Value::as_array).ok_or_else(|| bad("is not an array".into()))?;
    if dims.len() > MAX_RANK {
        return Err(bad(format!("has rank {}", dims.len())));
    }
    let shape = dims
        .iter()
        .map(|d| {
            d.as_u64().filter(|&d| d > 0).and_then(|d| usize::try_from(d).ok()).ok_or_else(|| bad(format!("holds {d}")))
        })
        .collect::<Result<Vec<usize>>>()?;
    if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).is_none() {
        return Err(bad(format!("{shape:?} has more elements than the address space")));
    }
    Ok(shape)
}

fn parse_object(v: &Value, i: usize) -> Result<ObjectEntry> {
    let at = format!("objects[{i}]");
    let m = object(v, rule::OBJECT_KIND, &at)?;
    let kind = m.get("kind").and_then(Value::as_str);
    let members_rule = match kind {
        Some("tensor") => rule::TENSOR_MEMBERS,
        Some("resource") => rule::RESOURCE_MEMBERS,
        _ => {
            return Err(violation(
                rule::OBJECT_KIND,
                format!("{at}.kind is {}", m.get("kind").map(|k| k.to_string()).unwrap_or_else(|| "missing".into())),
            ))
        }
    };
    let id = string(m.get("id"), rule::OBJECT_ID, &format!("{at}.id"))?;
    let at = format!("{at} ({id:?})");
    check_id(id, &at)?;
    let offset = uint(m.get("offset"), members_rule, &format!("{at}.offset"))?;
    let bytes = uint(m.get("bytes"), members_rule, &format!("{at}.bytes"))?;
    let kind = if kind == Some("tensor") {
        members(
            m,
            &at,
            &["id", "kind", "shape", "format", "layout", "offset", "bytes"],
            &["divisors"],
            members_rule,
            members_rule,
        )?;
        let format = string(m.get("format"), members_rule, &format!("{at}.format"))?.to_owned();
        let layout = string(m.get("layout"), members_rule, &format!("{at}.layout"))?.to_owned();
        let shape = parse_shape(m.get("shape"), &at)?;
        let divisors = match m.get("divisors") {
            None => 1,
            Some(d) => d
                .as_u64()
                .filter(|&d| d > 0)
                .and_then(|d| usize::try_from(d).ok())
                .ok_or_else(|| violation(rule::TENSOR_DIVISORS, format!("{at}.divisors is {d}")))?,
        };
        ObjectKind::Tensor { format, layout, shape, divisors }
    } else {
        members(m, &at, &["id", "kind", "encoding", "offset", "bytes"], &[], members_rule, members_rule)?;
        let encoding = string(m.get("encoding"), members_rule, &format!("{at}.encoding"))?;
        if encoding != "raw_bytes_v1" {
            return Err(violation(rule::RESOURCE_ENCODING, format!("{at}.encoding is {encoding:?}")));
        }
        if bytes == 0 {
            return Err(violation(rule::RESOURCE_BYTES, format!("{at}.bytes is 0")));
        }
        ObjectKind::Resource { encoding: encoding.to_owned() }
    };
    Ok(ObjectEntry { id: id.to_owned(), offset, bytes, kind })
}

fn parse_objects(v: &Value, total: u64) -> Result<Vec<ObjectEntry>> {
    let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
    if list.is_empty() {
        return Err(violation(rule::MEMBER_TYPE, "`objects` is empty"));
    }
    let mut objects: Vec<ObjectEntry> = Vec::with_capacity(list.len());
    let mut ids = BTreeSet::new();
    for (i, v) in list.iter().enumerate() {
        let o = parse_object(v, i)?;
        if !ids.insert(o.id.clone()) {
            return Err(violation(rule::OBJECT_ID_UNIQUE, format!("objects[{i}] reuses id {:?}", o.id)));
        }
        let end = o.offset.checked_add(o.bytes).filter(|&e| e <= total).ok_or_else(|| {
            violation(
                rule::OBJECT_BOUNDS,
                format!(
                    "objects[{i}] ({:?}) spans [{}, {} + {}) but the logical payload is {total} bytes",
                    o.id, o.offset, o.offset, o.bytes
                ),
            )
        })?;
        if let Some(prev) = objects.last() {
            if o.offset < prev.end() {
                return Err(violation(
                    rule::OBJECTS_SORTED,
                    format!(
                        "objects[{i}] ({:?}) at [{}, {end}) starts before the end of {:?} at [{}, {})",
                        o.id,
                        o.offset,
                        prev.id,
                        prev.offset,
                        prev.end()
                    ),
                ));
            }
        }
        objects.push(o);
    }
    Ok(objects)
}

fn parse_components(v: &Value, by_id: &HashMap<&str, &ObjectEntry>) -> Result<BTreeMap<String, Component>> {
    let map = object(v, rule::MEMBER_TYPE, "`components`")?;
    let mut out = BTreeMap::new();
    for (id, c) in map {
        let at = format!("components[{id:?}]");
        let m = object(c, rule::COMPONENT, &at)?;
        members(m, &at, &["config"], &["target", "resources", "proposal"], rule::COMPONENT, rule::COMPONENT)?;
        let config = object(&m["config"], rule::COMPONENT, &format!("{at}.config"))?.clone();
        let target = match m.get("target") {
            None => None,
            Some(t) => {
                let t = string(Some(t), rule::COMPONENT, &format!("{at}.target"))?;
                if !map.contains_key(t) && !by_id.contains_key(t) {
                    return Err(violation(
                        rule::COMPONENT_TARGET,
                        format!("{at}.target {t:?} is neither a component nor an object"),
                    ));
                }
                Some(t.to_owned())
            }
        };
        let mut resources = BTreeMap::new();
        if let Some(r) = m.get("resources") {
            for (role, rid) in object(r, rule::COMPONENT, &format!("{at}.resources"))? {
                let rid = string(Some(rid), rule::COMPONENT, &format!("{at}.resources[{role:?}]"))?;
                if !matches!(by_id.get(rid).map(|o| &o.kind), Some(ObjectKind::Resource { .. })) {
                    return Err(violation(
                        rule::COMPONENT_RESOURCE,
                        format!("{at}.resources[{role:?}] names {rid:?}, which is not a resource object"),
                    ));
                }
                resources.insert(role.clone(), rid.to_owned());
            }
        }
        let proposal = match m.get("proposal") {
            None => None,
            Some(p) => Some(object(p, rule::COMPONENT, &format!("{at}.proposal"))?.clone()),
        };
        out.insert(id.clone(), Component { config, target, resources, proposal });
    }
    Ok(out)
}

/// The tensor object a binding names, or the rule it breaks.
fn bound_tensor<'o>(id: &str, at: &str, by_id: &HashMap<&str, &'o ObjectEntry>) -> Result<&'o ObjectEntry> {
    match by_id.get(id) {
        Some(o) if matches!(o.kind, ObjectKind::Tensor { .. }) => Ok(o),
        Some(_) => Err(violation(rule::BINDING_OBJECT, format!("{at} names resource {id:?}"))),
        None => Err(violation(rule::BINDING_OBJECT, format!("{at} names {id:?}, which is not an object"))),
    }
}

fn parse_binding(v: &Value, at: &str, by_id: &HashMap<&str, &ObjectEntry>) -> Result<Binding> {
    let m = object(v, rule::BINDING, at)?;
    if m.len() != 1 {
        return Err(violation(rule::BINDING, format!("{at} has members {:?}", m.keys().collect::<Vec<_>>())));
    }
    if let Some(id) = m.get("object") {
        let id = string(Some(id), rule::BINDING, &format!("{at}.object"))?;
        bound_tensor(id, at, by_id)?;
        return Ok(Binding::Object(id.to_owned()));
    }
    let parts = m
        .get("parts")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| violation(rule::BINDING, format!("{at} is neither {{object}} nor a non-empty {{parts}}")))?;
    let mut out = Vec::with_capacity(parts.len());
    for (j, p) in parts.iter().enumerate() {
        let pat = format!("{at}.parts[{j}]");
        let pm = object(p, rule::BINDING, &pat)?;
        members(pm, &pat, &["object", "range"], &[], rule::BINDING, rule::BINDING)?;
        let id = string(pm.get("object"), rule::BINDING, &format!("{pat}.object"))?;
        let o = bound_tensor(id, &pat, by_id)?;
        let range = match pm["range"].as_array().map(Vec::as_slice) {
            Some([b, e]) => {
                uint(Some(b), rule::BINDING, &format!("{pat}.range[0]"))?
                    ..uint(Some(e), rule::BINDING, &format!("{pat}.range[1]"))?
            }
            _ => return Err(violation(rule::BINDING, format!("{pat}.range is not [begin, end]"))),
        };
        let elements = o.elements().unwrap_or(0) as u64;
        if range.start >= range.end || range.end > elements {
            return Err(violation(
                rule::BINDING_RANGE,
                format!("{pat}.range is [{}, {}) of {id:?} with {elements} elements", range.start, range.end),
            ));
        }
        out.push(BindingPart { object: id.to_owned(), range });
    }
    Ok(Binding::Parts(out))
}

fn parse_uses(
    v: &Value,
    bindings: &BTreeMap<String, Binding>,
    by_id: &HashMap<&str, &ObjectEntry>,
) -> Result<Vec<Use>> {
    let mut out: Vec<Use> = Vec::new();
    let mut pairs = BTreeSet::new();
    for (i, u) in v.as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        let at = format!("uses[{i}]");
        let m = object(u, rule::USE, &at)?;
        members(m, &at, &["parameter", "input"], &["activation_policy", "auxiliaries"], rule::USE, rule::USE)?;
        let parameter = string(m.get("parameter"), rule::USE, &format!("{at}.parameter"))?;
        let input = string(m.get("input"), rule::USE, &format!("{at}.input"))?;
        if !bindings.contains_key(parameter) {
            return Err(violation(rule::USE_PARAMETER, format!("{at}.parameter {parameter:?} is not a binding")));
        }
        if !pairs.insert((parameter, input)) {
            return Err(violation(rule::USE_UNIQUE, format!("{at} repeats ({parameter:?}, {input:?})")));
        }
        let activation_policy = match m.get("activation_policy") {
            None => None,
            Some(p) => Some(
                ActivationPolicy::ALL
                    .into_iter()
                    .find(|a| p.as_str() == Some(a.name()))
                    .ok_or_else(|| violation(rule::USE_POLICY, format!("{at}.activation_policy is {p}")))?,
            ),
        };
        let mut auxiliaries = BTreeMap::new();
        if let Some(a) = m.get("auxiliaries") {
            for (role, b) in object(a, rule::USE, &format!("{at}.auxiliaries"))? {
                let r = AuxRole::ALL
                    .into_iter()
                    .find(|r| r.name() == role)
                    .ok_or_else(|| violation(rule::AUX_ROLE, format!("{at}.auxiliaries has role {role:?}")))?;
                auxiliaries.insert(r, parse_binding(b, &format!("{at}.auxiliaries[{role:?}]"), by_id)?);
            }
        }
        out.push(Use { parameter: parameter.to_owned(), input: input.to_owned(), activation_policy, auxiliaries });
    }
    Ok(out)
}

fn object_json(o: &ObjectEntry) -> Value {
    match &o.kind {
        ObjectKind::Tensor { format, layout, shape, divisors } => {
            let mut v = json!({ "id": o.id, "kind": "tensor", "shape": shape, "format": format, "layout": layout, "offset": o.offset, "bytes": o.bytes });
            // The default is left out, so ordinary tensors read exactly as the spec's example.
            if *divisors != 1 {
                v["divisors"] = json!(divisors);
            }
            v
        }
        ObjectKind::Resource { encoding } => {
            json!({ "id": o.id, "kind": "resource", "encoding": encoding, "offset": o.offset, "bytes": o.bytes })
        }
    }
}

pub(crate) fn binding_json(b: &Binding) -> Value {
    match b {
        Binding::Object(id) => json!({ "object": id }),
        Binding::Parts(parts) => {
            json!({ "parts": parts.iter().map(|p| json!({ "object": p.object, "range": [p.range.start, p.range.end] })).collect::<Vec<_>>() })
        }
    }
}

fn use_json(u: &Use) -> Value {
    let mut v = json!({ "parameter": u.parameter, "input": u.input });
    if let Some(p) = u.activation_policy {
        v["activation_policy"] = json!(p.name());
    }
    if !u.auxiliaries.is_empty() {
        v["auxiliaries"] =
            Value::Object(u.auxiliaries.iter().map(|(r, b)| (r.name().to_owned(), binding_json(b))).collect());
    }
    v
}

fn component_json(c: &Component) -> Value {
    let mut v = json!({ "config": c.config });
    if let Some(t) = &c.target {
        v["target"] = json!(t);
    }
    if !c.resources.is_empty() {
        v["resources"] = json!(c.resources);
    }
    if let Some(p) = &c.proposal {
        v["proposal"] = Value::Object(p.clone());
    }
    v
}
