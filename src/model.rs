//! A user's model file, whichever kind it is: a `.ninfer` artifact or a GGUF file, told apart by
//! the first four bytes. Opened from a path (native) or from bytes (a browser's `ArrayBuffer`).
//! The CLI's file commands and the browser API name tensors the same way through it.

use crate::container::{Artifact, ObjectKind};
use crate::error::{Error, Result};
use crate::gguf::reader::{GgufFile, TensorKind};
use crate::gpu::capability::{self, Status};
use crate::gpu::{Op, Platform, Variant};
use crate::tensor::EncodedTensor;
use serde::Serialize;

/// GGUF's magic, the first four bytes of every GGUF file.
const GGUF_MAGIC: &[u8; 4] = b"GGUF";

pub enum Model {
    Ninfer(Artifact),
    Gguf(GgufFile),
}

/// One tensor as a listing shows it: what it is and what this device can do with it.
#[derive(Debug, Clone, Serialize)]
pub struct TensorInfo {
    pub name: String,
    pub format: String,
    pub layout: String,
    pub shape: Vec<usize>,
    pub bytes: usize,
    /// Per op (dequant, matmul, gather): `supported`, or why not.
    pub ops: Vec<(String, String)>,
    /// Why the tensor cannot be used at all (an invalid payload, an unregistered type).
    pub error: Option<String>,
}

impl Model {
    /// Opens a file from disk (memory-mapped).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Model> {
        let path = path.as_ref();
        let mut magic = [0u8; 4];
        let mut f = crate::files::open_regular(path)?;
        let is_gguf = std::io::Read::read_exact(&mut f, &mut magic).is_ok() && &magic == GGUF_MAGIC;
        Ok(if is_gguf { Model::Gguf(GgufFile::open(path)?) } else { Model::Ninfer(Artifact::open(path)?) })
    }

    /// A file held in memory: a GGUF, or a `.ninfer` entry named `name` whose continuation
    /// parts `part(name)` hands over by file name.
    pub fn from_bytes(name: &str, bytes: Vec<u8>, part: impl FnMut(&str) -> Result<Vec<u8>>) -> Result<Model> {
        if bytes.starts_with(GGUF_MAGIC) {
            return Ok(Model::Gguf(GgufFile::from_bytes(bytes)?));
        }
        Ok(Model::Ninfer(Artifact::from_bytes(name, bytes, part)?))
    }

    /// TENSOR as tensors: an object id or binding name (`.ninfer`; a multi-part binding gives one
    /// piece per part), or a tensor name (`.gguf`).
    pub fn pieces(&self, tensor: &str) -> Result<Vec<EncodedTensor<'_>>> {
        match self {
            Model::Ninfer(a) => a.resolve(tensor),
            Model::Gguf(g) => Ok(vec![g.tensor(tensor)?]),
        }
    }

    /// TENSOR as one rank-2 matrix for `op` (see [`Stacked`]).
    pub fn stacked(&self, tensor: &str, op: &str) -> Result<Stacked<'_>> {
        Stacked::new(self.pieces(tensor)?, op)
    }

    /// Every tensor the file holds, by object id (`.ninfer`) or name (`.gguf`, registered types).
    pub fn tensor_names(&self) -> Vec<String> {
        match self {
            Model::Ninfer(a) => a
                .objects()
                .iter()
                .filter(|o| matches!(o.kind, ObjectKind::Tensor { .. }))
                .map(|o| o.id.clone())
                .collect(),
            Model::Gguf(g) => g
                .tensors
                .iter()
                .filter(|t| matches!(t.kind, TensorKind::Registered { .. }))
                .map(|t| t.name.clone())
                .collect(),
        }
    }

    /// The GGUF tensors of types the registry lacks, each with the reason it cannot be read
    /// (a `.ninfer` artifact holds registered formats only): what `verify` reports as not
    /// checked rather than leaving out.
    pub fn unsupported_tensors(&self) -> Vec<(String, String)> {
        match self {
            Model::Ninfer(_) => Vec::new(),
            Model::Gguf(g) => g
                .tensors
                .iter()
                .filter(|t| !matches!(t.kind, TensorKind::Registered { .. }))
                .map(|t| (t.name.clone(), g.tensor(&t.name).err().map(|e| e.to_string()).unwrap_or_default()))
                .collect(),
        }
    }

    /// One tensor by object id or GGUF name.
    pub fn tensor(&self, name: &str) -> Result<EncodedTensor<'_>> {
        match self {
            Model::Ninfer(a) => a.tensor(name),
            Model::Gguf(g) => g.tensor(name),
        }
    }

    /// Every tensor with its capability status on `platform`; each payload is validated, so a
    /// tensor no kernel would be given is not shown as supported. GGUF tensors of types the
    /// registry lacks are listed with the reason.
    pub fn tensor_infos(&self, platform: Option<&Platform>) -> Vec<TensorInfo> {
        let mut out: Vec<TensorInfo> = self.tensor_names().into_iter().map(|n| self.info(&n, platform)).collect();
        if let Model::Gguf(g) = self {
            for (name, why) in self.unsupported_tensors() {
                let shape = g.info(&name).map(|t| t.shape()).unwrap_or_default();
                out.push(TensorInfo {
                    name,
                    format: String::new(),
                    layout: String::new(),
                    shape,
                    bytes: 0,
                    ops: Vec::new(),
                    error: Some(why),
                });
            }
        }
        out
    }

    fn info(&self, name: &str, platform: Option<&Platform>) -> TensorInfo {
        let mut info = TensorInfo {
            name: name.to_string(),
            format: String::new(),
            layout: String::new(),
            shape: Vec::new(),
            bytes: 0,
            ops: Vec::new(),
            error: None,
        };
        let tensor = match self.tensor(name) {
            Ok(t) => t,
            Err(e) => {
                info.error = Some(e.to_string());
                return info;
            }
        };
        let d = tensor.desc();
        (info.format, info.layout, info.shape, info.bytes) =
            (d.format.name().into(), d.layout.name().into(), d.shape.clone(), tensor.payload().len());
        if let Err(e) = tensor.validate() {
            info.error = Some(e.to_string());
            return info;
        }
        for op in Op::ALL {
            let status = match capability::status(d.format, d.layout, op, Variant::Workgroup, platform) {
                Status::Supported => "supported".to_string(),
                Status::Unsupported(why) => why,
            };
            info.ops.push((op.name().to_string(), status));
        }
        info
    }
}

/// TENSOR as one matrix: a multi-part binding stacks its parts' row blocks (one K, rows one after
/// another, container.md), a plain tensor is one piece. Products and gathers run per piece; these
/// helpers say which piece serves what and where its results go, so the CLI and the browser API
/// address bindings alike.
pub struct Stacked<'a> {
    pub pieces: Vec<EncodedTensor<'a>>,
    /// Rows of all pieces together.
    pub n: usize,
    /// The pieces' shared K.
    pub k: usize,
}

impl<'a> Stacked<'a> {
    /// Rank-2 pieces of one K, or an error naming `op` and the shape that is not.
    pub fn new(pieces: Vec<EncodedTensor<'a>>, op: &str) -> Result<Stacked<'a>> {
        let (mut k, mut n) = (None, 0);
        for t in &pieces {
            match t.shape() {
                [rows, cols] if k.is_none_or(|k| k == *cols) => {
                    k = Some(*cols);
                    n += rows;
                }
                s => {
                    return Err(Error::Unsupported(format!(
                        "{op} needs rank-2 [N, K] pieces of one K, got shape {s:?}"
                    )))
                }
            }
        }
        Ok(Stacked { pieces, n, k: k.unwrap_or(0) })
    }

    /// The first row of each piece in the stacked matrix.
    pub fn first_rows(&self) -> Vec<usize> {
        self.pieces
            .iter()
            .scan(0, |row, t| {
                let first = *row;
                *row += t.shape()[0];
                Some(first)
            })
            .collect()
    }

    /// For each piece, the requests it serves as (request index, row within the piece), in
    /// request order; a row past N is refused naming both.
    pub fn route(&self, rows: &[u32]) -> Result<Vec<Vec<(usize, u32)>>> {
        if let Some(&bad) = rows.iter().find(|&&r| r as usize >= self.n) {
            return Err(Error::Shape {
                layout: "gather",
                rule: "rows are < N",
                detail: format!("row index {bad} but N = {}", self.n),
            });
        }
        let firsts = self.first_rows();
        let mut routes = vec![Vec::new(); self.pieces.len()];
        for (i, &r) in rows.iter().enumerate() {
            let p = firsts.partition_point(|&f| f <= r as usize) - 1;
            routes[p].push((i, (r as usize - firsts[p]) as u32));
        }
        Ok(routes)
    }

    /// Copies piece `piece`'s product (`columns` columns of its rows, back to back) into `y`,
    /// `columns` columns of all N rows; lengths that do not match are an error naming them.
    pub fn place_columns<T: Copy>(&self, piece: usize, part: &[T], columns: usize, y: &mut [T]) -> Result<()> {
        let (Some(&first), Some(t)) = (self.first_rows().get(piece), self.pieces.get(piece)) else {
            return Err(Error::Unsupported(format!("piece {piece} of {}", self.pieces.len())));
        };
        let rows = t.shape()[0];
        if part.len() != columns * rows || y.len() != columns * self.n {
            return Err(Error::Unsupported(format!(
                "placing {} values of {columns} column(s) of {rows} rows into {} values of {columns} column(s) of {} rows",
                part.len(),
                y.len(),
                self.n
            )));
        }
        for j in 0..columns {
            y[j * self.n + first..j * self.n + first + rows].copy_from_slice(&part[j * rows..(j + 1) * rows]);
        }
        Ok(())
    }
}
