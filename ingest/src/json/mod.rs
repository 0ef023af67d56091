//! The JSON layer: one pass over a trace file's bytes into borrowed raw
//! records. Knows field names and their spellings across eras; knows
//! nothing of linking or tables.

pub mod lenient;
mod raw;
pub mod time;

pub use raw::{parse, ParseError, RawDevice, RawEtIo, RawEtNode, RawEvent, RawFile};
