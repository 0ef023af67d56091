//! The JSON layer: one pass over a trace file's bytes into borrowed raw
//! records. Knows field names and their spellings across eras; knows
//! nothing of linking or tables.

pub mod lenient;
pub mod list;
mod raw;
mod scan;
pub mod time;

pub use raw::{EventSink, ParseError, RawDevice, RawEtIo, RawEtNode, RawEvent, RawFile, parse, parse_text, text};
