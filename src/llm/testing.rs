//! Metadata and tensor shapes as a GGUF would give them, for the model modules' tests.

use super::config::Source;
use crate::gguf::reader::Value;
use std::collections::HashMap;

#[derive(Clone, Default)]
pub(crate) struct Table {
    pub values: HashMap<String, Value>,
    pub shapes: HashMap<String, Vec<usize>>,
}

impl Table {
    pub fn put(&mut self, key: &str, value: Value) -> &mut Table {
        self.values.insert(key.to_string(), value);
        self
    }
}

impl Source for Table {
    fn value(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.shapes.get(name).cloned()
    }

    fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.shapes.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}
