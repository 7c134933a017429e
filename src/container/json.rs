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

use super::{rule, violation};
use crate::error::Result;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// Parses `bytes` as one JSON value, refusing duplicate keys and non-finite numbers.
pub fn parse_strict(bytes: &[u8]) -> Result<Value> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| violation(rule::JSON_UTF8, format!("invalid UTF-8 at JSON byte {}", e.valid_up_to())))?;
    // The visitor records which of our rules it broke; serde_json's error then only carries the
    // position.
    let broken: Cell<Option<&'static str>> = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = StrictSeed { broken: &broken }.deserialize(&mut de).and_then(|v| de.end().map(|_| v));
    parsed.map_err(|e| {
        let rule = match broken.get() {
            Some(r) => r,
            // serde_json's wording for a literal beyond f64's range; the corpus test pins it.
            None if e.to_string().contains("number out of range") => rule::JSON_NON_FINITE,
            None => rule::JSON_SYNTAX,
        };
        violation(rule, e.to_string())
    })
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
                self.broken.set(Some(rule::JSON_DUPLICATE_KEY));
                return Err(de::Error::custom(format!("key `{key}` appears twice in one object")));
            }
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}
