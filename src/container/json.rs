//! Strict JSON: serde_json's grammar plus the two rules it does not enforce by itself.
//!
//! - Duplicate keys: serde_json keeps the last value silently, so two producers could disagree on
//!   what `"offset"` means. The value is built through a seed whose map visitor refuses a key it
//!   has already seen.
//! - Non-finite numbers: the grammar has no NaN/Infinity literals, but serde_json reports a
//!   literal that overflows f64 (`1e999`) as "number out of range"; that is the same rule.
//!
//! Recursion depth is bounded by serde_json's own limit (128), so a hostile nesting cannot
//! overflow the stack.
//!
//! Memory: a `Value` costs 32 bytes and more per JSON value, so a 64 MB array of small numbers
//! would take gigabytes. Free-form members (the root's `metadata` and `provenance`) are
//! therefore checked by [`check_strict`], which builds nothing, and kept as their raw text
//! ([`RawJson`]): one byte per byte, parsed only when asked.

use super::{rule, violation};
use crate::error::Result;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// Root members kept as raw text: free-form, possibly large, never needed to read a tensor.
pub const RAW_MEMBERS: [&str; 2] = ["metadata", "provenance"];

/// A JSON value held as its checked text.
#[derive(Debug, Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Text already checked by [`check_strict`] (or produced by serde_json).
    fn new(raw: &RawValue) -> RawJson {
        RawJson(raw.to_owned())
    }

    /// Serializes a value (the writer's side).
    pub fn from_value(v: &impl serde::Serialize) -> Result<RawJson> {
        serde_json::value::to_raw_value(v)
            .map(RawJson)
            .map_err(|e| violation(rule::JSON_SYNTAX, format!("serializing: {e}")))
    }

    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The value as a tree; its memory is the caller's choice.
    pub fn parse(&self) -> Result<Value> {
        serde_json::from_str(self.text()).map_err(|e| violation(rule::JSON_SYNTAX, e.to_string()))
    }

    /// One member of an object, without building the others (they are skipped, not stored).
    pub fn member(&self, name: &str) -> Option<Value> {
        let members: BTreeMap<String, &RawValue> = serde_json::from_str(self.text()).ok()?;
        members.get(name).and_then(|v| serde_json::from_str(v.get()).ok())
    }

    /// Whether the text is a JSON object.
    pub fn is_object(&self) -> bool {
        self.text().trim_start().starts_with('{')
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl serde::Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// The root with its raw members apart: the rest as a tree, `metadata`/`provenance` as text.
pub struct ParsedRoot {
    pub value: Value,
    pub raw: BTreeMap<&'static str, RawJson>,
}

/// Parses the root object: every member strictly, the [`RAW_MEMBERS`] checked without building.
pub fn parse_root(bytes: &[u8]) -> Result<ParsedRoot> {
    let text = utf8(bytes)?;
    let broken: Cell<Option<&'static str>> = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = RootSeed { broken: &broken }.deserialize(&mut de).and_then(|v| de.end().map(|_| v));
    let (value, raw) = parsed.map_err(|e| judged(&broken, e))?;
    let mut out = BTreeMap::new();
    for (name, raw) in raw {
        check_strict(raw.get().as_bytes()).map_err(|e| match e {
            crate::Error::Container { rule, detail } => violation(rule, format!("in `{name}`: {detail}")),
            other => other,
        })?;
        out.insert(name, RawJson::new(raw));
    }
    Ok(ParsedRoot { value, raw: out })
}

/// Checks the strict grammar (duplicate keys, non-finite numbers) and builds nothing: memory is
/// the largest object's key set, never a tree.
pub fn check_strict(bytes: &[u8]) -> Result<()> {
    let text = utf8(bytes)?;
    let broken: Cell<Option<&'static str>> = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let checked = CheckSeed { broken: &broken }.deserialize(&mut de).and_then(|v| de.end().map(|_| v));
    checked.map_err(|e| judged(&broken, e))
}

fn utf8(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes)
        .map_err(|e| violation(rule::JSON_UTF8, format!("invalid UTF-8 at JSON byte {}", e.valid_up_to())))
}

/// The rule a failed parse broke: one of ours the visitor recorded, or serde_json's grammar.
fn judged(broken: &Cell<Option<&'static str>>, e: serde_json::Error) -> crate::Error {
    let rule = match broken.get() {
        Some(r) => r,
        // serde_json's wording for a literal beyond f64's range; the corpus test pins it.
        None if e.to_string().contains("number out of range") => rule::JSON_NON_FINITE,
        None => rule::JSON_SYNTAX,
    };
    violation(rule, e.to_string())
}

#[derive(Clone, Copy)]
struct StrictSeed<'c> {
    broken: &'c Cell<Option<&'static str>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // serde_json never hands over a non-finite f64 today; this keeps the rule if it ever does.
        match Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => {
                self.broken.set(Some(rule::JSON_NON_FINITE));
                Err(E::custom(format!("non-finite number {v}")))
            }
        }
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(duplicate(self.broken, &key));
            }
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

fn duplicate<E: de::Error>(broken: &Cell<Option<&'static str>>, key: &str) -> E {
    broken.set(Some(rule::JSON_DUPLICATE_KEY));
    E::custom(format!("key `{}` appears twice in one object", crate::error::clip(key)))
}

/// The root object: [`RAW_MEMBERS`] borrowed as raw text, every other member built strictly.
#[derive(Clone, Copy)]
struct RootSeed<'c> {
    broken: &'c Cell<Option<&'static str>>,
}

type RootParts<'de> = (Value, Vec<(&'static str, &'de RawValue)>);

impl<'de> DeserializeSeed<'de> for RootSeed<'_> {
    type Value = RootParts<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RootParts<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RootSeed<'_> {
    type Value = RootParts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RootParts<'de>, A::Error> {
        let mut out = Map::new();
        let mut raw = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(duplicate(self.broken, &key));
            }
            match RAW_MEMBERS.iter().find(|m| **m == key) {
                Some(&name) => raw.push((name, map.next_value::<&'de RawValue>()?)),
                None => {
                    let value = map.next_value_seed(StrictSeed { broken: self.broken })?;
                    out.insert(key, value);
                }
            }
        }
        Ok((Value::Object(out), raw))
    }

    // Anything but an object is built whole and refused by `Root::parse` with its rule.
    fn visit_bool<E>(self, v: bool) -> Result<RootParts<'de>, E> {
        Ok((Value::Bool(v), Vec::new()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<RootParts<'de>, E> {
        Ok((Value::Number(v.into()), Vec::new()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<RootParts<'de>, E> {
        Ok((Value::Number(v.into()), Vec::new()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RootParts<'de>, E> {
        StrictSeed { broken: self.broken }.visit_f64(v).map(|v| (v, Vec::new()))
    }
    fn visit_str<E>(self, v: &str) -> Result<RootParts<'de>, E> {
        Ok((Value::String(v.to_owned()), Vec::new()))
    }
    fn visit_unit<E>(self) -> Result<RootParts<'de>, E> {
        Ok((Value::Null, Vec::new()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RootParts<'de>, A::Error> {
        StrictSeed { broken: self.broken }.visit_seq(seq).map(|v| (v, Vec::new()))
    }
}

/// The strict rules over any value, keeping nothing but each open object's keys.
#[derive(Clone, Copy)]
struct CheckSeed<'c> {
    broken: &'c Cell<Option<&'static str>>,
}

impl<'de> DeserializeSeed<'de> for CheckSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CheckSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        StrictSeed { broken: self.broken }.visit_f64(v).map(|_| ())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(duplicate(self.broken, &key));
            }
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}
