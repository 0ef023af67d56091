use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::lenient::{self, Scalar};

/// Receives Kineto events one by one as they are parsed, so a file's events
/// are never all held as raw records at once.
pub trait EventSink<'a> {
    fn event(&mut self, event: RawEvent<'a>);
    /// An element of the event list that is not a JSON object (a number, a
    /// string, a nested list): skipped, and counted by sinks that report it.
    fn not_an_object(&mut self);
}

/// One element of an event list: an event object, or anything else, which
/// is consumed without being kept (nesting of any depth included).
pub enum ListItem<'a> {
    Event(RawEvent<'a>),
    NotAnObject,
}

impl<'a> ListItem<'a> {
    /// Hands the element to `sink`.
    pub fn give_to(self, sink: &mut dyn EventSink<'a>) {
        match self {
            ListItem::Event(event) => sink.event(event),
            ListItem::NotAnObject => sink.not_an_object(),
        }
    }
}

impl<'de> Deserialize<'de> for ListItem<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListItemVisitor)
    }
}

struct ListItemVisitor;

impl<'de> Visitor<'de> for ListItemVisitor {
    type Value = ListItem<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        RawEvent::deserialize(de::value::MapAccessDeserializer::new(map)).map(ListItem::Event)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ListItem::NotAnObject)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(ListItem::NotAnObject)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(ListItem::NotAnObject)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(ListItem::NotAnObject)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(ListItem::NotAnObject)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(ListItem::NotAnObject)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(ListItem::NotAnObject)
    }
}

/// A trace file after the JSON pass: the top-level metadata tracecast reads,
/// and ET nodes (Kineto events went to the sink). Strings borrow from the input.
#[derive(Default, Debug)]
pub struct RawFile<'a> {
    /// Kineto events handed to the sink; `None` when the file had no event list.
    pub event_count: Option<usize>,
    /// The file was a bare JSON list of events (the oldest traces).
    pub bare_list: bool,
    pub devices: Vec<RawDevice>,
    pub distributed: Option<RawDistributed>,
    pub base_time_ns: Option<i64>,
    pub schema_version: Option<String>,
    pub et_schema: Option<String>,
    pub et_pid: Option<i64>,
    pub et_nodes: Option<Vec<RawEtNode<'a>>>,
    /// Names of top-level keys not read. Values are never kept: some hold
    /// environment dumps with secrets.
    pub unknown_keys: Vec<String>,
    /// The top-level `format` tag, which tracecast's own JSON files carry.
    pub format_tag: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct RawEvent<'a> {
    #[serde(default, borrow, deserialize_with = "lenient::string")]
    pub ph: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient::string")]
    pub cat: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient::string")]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub pid: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub tid: Option<i64>,
    /// The value's JSON text as written (a number, in a sane trace): times
    /// are read from the digits, never through a float. `None` when absent
    /// or null.
    #[serde(default, borrow, deserialize_with = "raw_text")]
    pub ts: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "raw_text")]
    pub dur: Option<&'a str>,
    /// Boxed: the arguments are most of an event's size (about 600 of 750
    /// bytes), and the event is moved several times on its way from the
    /// parser to the sink; the copies cost more than the allocation.
    #[serde(default, borrow)]
    pub args: Option<Box<RawArgs<'a>>>,
}

/// The `args` keys tracecast reads, under every spelling seen in the catalog.
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct RawArgs<'a> {
    #[serde(rename = "External id", alias = "external id", deserialize_with = "lenient::int")]
    pub external_id: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub correlation: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub device: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub stream: Option<i64>,
    #[serde(rename = "Record function id", deserialize_with = "lenient::int")]
    pub record_function_id: Option<i64>,
    #[serde(rename = "Sequence number", deserialize_with = "lenient::int")]
    pub sequence_number: Option<i64>,
    #[serde(rename = "Fwd thread id", deserialize_with = "lenient::int")]
    pub fwd_thread_id: Option<i64>,
    #[serde(rename = "registers per thread", deserialize_with = "lenient::int")]
    pub registers_per_thread: Option<i64>,
    #[serde(rename = "shared memory", deserialize_with = "lenient::int")]
    pub shared_memory: Option<i64>,
    #[serde(rename = "blocks per SM", deserialize_with = "lenient::float")]
    pub blocks_per_sm: Option<f64>,
    #[serde(rename = "warps per SM", deserialize_with = "lenient::float")]
    pub warps_per_sm: Option<f64>,
    #[serde(deserialize_with = "lenient::dim3")]
    pub grid: Option<[Option<i64>; 3]>,
    #[serde(deserialize_with = "lenient::dim3")]
    pub block: Option<[Option<i64>; 3]>,
    #[serde(rename = "est. achieved occupancy %", deserialize_with = "lenient::float")]
    pub achieved_occupancy: Option<f64>,
    #[serde(rename = "theoretical occupancy %", deserialize_with = "lenient::float")]
    pub theoretical_occupancy: Option<f64>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(rename = "graph id", deserialize_with = "lenient::int")]
    pub graph_id: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub bytes: Option<i64>,
    #[serde(rename = "Collective name", borrow, deserialize_with = "lenient::string")]
    pub collective_name: Option<Cow<'a, str>>,
    #[serde(rename = "In msg nelems", deserialize_with = "lenient::int")]
    pub in_msg_nelems: Option<i64>,
    #[serde(rename = "Out msg nelems", deserialize_with = "lenient::int")]
    pub out_msg_nelems: Option<i64>,
    #[serde(rename = "Group size", deserialize_with = "lenient::int")]
    pub group_size: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub dtype: Option<Cow<'a, str>>,
    #[serde(rename = "Process Group Name", borrow, deserialize_with = "lenient::string")]
    pub process_group_name: Option<Cow<'a, str>>,
    #[serde(rename = "Process Group Ranks", borrow, deserialize_with = "lenient::string")]
    pub process_group_ranks: Option<Cow<'a, str>>,
    #[serde(rename = "Input Dims", deserialize_with = "lenient::shapes")]
    pub input_dims: Option<Vec<Option<Vec<i64>>>>,
    #[serde(rename = "Input type", deserialize_with = "lenient::strings")]
    pub input_types: Option<Vec<String>>,
}

/// `deviceProperties` entries (2022+) and `computeProperties` entries (2021).
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct RawDevice {
    #[serde(deserialize_with = "lenient::int")]
    pub id: Option<i64>,
    #[serde(deserialize_with = "owned_string")]
    pub name: Option<String>,
    #[serde(rename = "totalGlobalMem", deserialize_with = "lenient::int")]
    pub total_memory: Option<i64>,
    #[serde(rename = "computeMajor", alias = "major", deserialize_with = "lenient::int")]
    pub compute_major: Option<i64>,
    #[serde(rename = "computeMinor", alias = "minor", deserialize_with = "lenient::int")]
    pub compute_minor: Option<i64>,
    #[serde(rename = "numSms", alias = "multiProcessorCount", deserialize_with = "lenient::int")]
    pub sm_count: Option<i64>,
    #[serde(
        rename = "maxThreadsPerMultiprocessor",
        alias = "maxThreadsPerMultiProcessor",
        deserialize_with = "lenient::int"
    )]
    pub max_threads_per_sm: Option<i64>,
    #[serde(rename = "regsPerMultiprocessor", deserialize_with = "lenient::int")]
    pub regs_per_sm: Option<i64>,
    #[serde(
        rename = "sharedMemPerMultiprocessor",
        alias = "maxSharedMemoryPerMultiProcessor",
        deserialize_with = "lenient::int"
    )]
    pub shared_memory_per_sm: Option<i64>,
    #[serde(rename = "warpSize", deserialize_with = "lenient::int")]
    pub warp_size: Option<i64>,
}

impl RawFile<'_> {
    /// The metadata of a Kineto file, which borrows nothing (ET nodes are dropped).
    pub fn into_static(self) -> RawFile<'static> {
        RawFile {
            event_count: self.event_count,
            bare_list: self.bare_list,
            devices: self.devices,
            distributed: self.distributed,
            base_time_ns: self.base_time_ns,
            schema_version: self.schema_version,
            et_schema: self.et_schema,
            et_pid: self.et_pid,
            et_nodes: None,
            unknown_keys: self.unknown_keys,
            format_tag: self.format_tag,
        }
    }
}

#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct RawDistributed {
    #[serde(deserialize_with = "lenient::int")]
    pub rank: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub world_size: Option<i64>,
    #[serde(deserialize_with = "owned_string")]
    pub backend: Option<String>,
}

/// A PyTorch Execution Trace node, schema 1.0.1 (flat fields) or
/// 1.0.3/1.1.x (`ctrl_deps`, nested `inputs`, `attrs` list).
#[derive(Deserialize, Debug)]
pub struct RawEtNode<'a> {
    #[serde(default, deserialize_with = "lenient::int")]
    pub id: Option<i64>,
    #[serde(default, borrow, deserialize_with = "lenient::string")]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub parent: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub ctrl_deps: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub rf_id: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub fw_parent: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub seq_id: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub scope: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub tid: Option<i64>,
    #[serde(default, borrow, deserialize_with = "lenient::string")]
    pub op_schema: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub inputs: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub outputs: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "lenient::shapes")]
    pub input_shapes: Option<Vec<Option<Vec<i64>>>>,
    #[serde(default, deserialize_with = "lenient::strings")]
    pub input_types: Option<Vec<String>>,
    #[serde(default, deserialize_with = "lenient::shapes")]
    pub output_shapes: Option<Vec<Option<Vec<i64>>>>,
    #[serde(default, deserialize_with = "lenient::strings")]
    pub output_types: Option<Vec<String>>,
    #[serde(default, borrow)]
    pub attrs: Option<Vec<RawEtAttr<'a>>>,
}

#[derive(Deserialize, Debug)]
pub struct RawEtAttr<'a> {
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub value: Option<Scalar<'a>>,
}

/// ET 1.0.3+ `inputs`/`outputs`: `{values, shapes, types}`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct RawEtIo {
    #[serde(deserialize_with = "lenient::shapes")]
    pub shapes: Option<Vec<Option<Vec<i64>>>>,
    #[serde(deserialize_with = "lenient::strings")]
    pub types: Option<Vec<String>>,
}

fn raw_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    let raw = <&RawValue>::deserialize(d)?.get();
    Ok((raw != "null").then_some(raw))
}

fn owned_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(lenient::string(d)?.map(Cow::into_owned))
}

/// Why a file is not a trace tracecast can read, in words for the user.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("empty file")]
    Empty,
    #[error("truncated: the JSON ends early (line {line}, column {column})")]
    Truncated { line: usize, column: usize },
    #[error("not valid JSON at line {line}, column {column}: {detail}")]
    Syntax { line: usize, column: usize, detail: String },
    #[error("not a trace: {0}")]
    Shape(String),
    /// A tracecast collector manifest: it describes the trace beside it.
    #[error("a collector manifest, not a trace")]
    Manifest,
    /// Parsed, but nothing in it becomes a lake row.
    #[error("no events: {0}")]
    NoEvents(String),
}

/// The file as text: it must start like JSON and be UTF-8. One check of the
/// whole buffer is cheaper than serde_json's check of each string.
pub fn text(bytes: &[u8]) -> Result<&str, ParseError> {
    let first = bytes.iter().position(|b| !b.is_ascii_whitespace());
    let Some(first) = first else {
        return Err(ParseError::Empty);
    };
    if !matches!(bytes[first], b'{' | b'[') {
        return Err(ParseError::Shape(
            "the file does not start with a JSON object or list".into(),
        ));
    }
    std::str::from_utf8(bytes).map_err(|bad| {
        let line = 1 + bytes[..bad.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        ParseError::Syntax {
            line,
            column: 0,
            detail: format!(
                "not valid UTF-8 (byte {} is not part of a character)",
                bad.valid_up_to()
            ),
        }
    })
}

/// Parses a whole trace file in one pass, handing Kineto events to `sink`.
pub fn parse<'a>(bytes: &'a [u8], sink: &mut dyn EventSink<'a>) -> Result<RawFile<'a>, ParseError> {
    parse_text(text(bytes)?, sink)
}

/// [`parse`] for text already checked by [`text`].
pub fn parse_text<'a>(text: &'a str, sink: &mut dyn EventSink<'a>) -> Result<RawFile<'a>, ParseError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let file = TopSeed { sink }
        .deserialize(&mut de)
        .and_then(|file| de.end().map(|()| file))
        .map_err(|e| describe(e, text.as_bytes()))?;
    if file.event_count.is_none() && file.et_nodes.is_none() {
        if file.format_tag.as_deref() == Some(tracecast_schemas::collector::MANIFEST_FORMAT) {
            return Err(ParseError::Manifest);
        }
        return Err(ParseError::Shape(
            "a JSON object with neither `traceEvents` (Kineto) nor `nodes` (PyTorch Execution Trace)".into(),
        ));
    }
    Ok(file)
}

fn describe(e: serde_json::Error, bytes: &[u8]) -> ParseError {
    let (line, column) = (e.line(), e.column());
    match e.classify() {
        serde_json::error::Category::Eof => ParseError::Truncated { line, column },
        serde_json::error::Category::Data => {
            ParseError::Shape(format!("unexpected JSON shape at line {line}, column {column}: {e}"))
        }
        _ => {
            let mut detail = e.to_string();
            if let Some(cut) = detail.find(" at line") {
                detail.truncate(cut);
            }
            if near_non_json_number(bytes, line, column) {
                detail.push_str(" (NaN and Infinity are not JSON numbers)");
            }
            ParseError::Syntax { line, column, detail }
        }
    }
}

/// Whether the text at the error position is `NaN`/`Infinity`, which some
/// Python writers emit.
fn near_non_json_number(bytes: &[u8], line: usize, column: usize) -> bool {
    let line_start = if line <= 1 {
        0
    } else {
        let mut seen = 1;
        match bytes.iter().position(|&b| {
            if b == b'\n' {
                seen += 1;
            }
            seen == line
        }) {
            Some(p) => p + 1,
            None => return false,
        }
    };
    let at = line_start + column.saturating_sub(1);
    let from = at.saturating_sub(8);
    let to = (at + 9).min(bytes.len());
    let window = String::from_utf8_lossy(&bytes[from.min(to)..to]);
    window.contains("NaN") || window.contains("Infinity")
}

/// The top level: an object (keys read by name, unknown keys skipped and
/// only their names kept) or a bare list of events.
struct TopSeed<'s, 'a> {
    sink: &'s mut dyn EventSink<'a>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, 'de> {
    type Value = RawFile<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// The `traceEvents` list: each event goes to the sink as soon as it is read.
struct EventsSeed<'s, 'a> {
    sink: &'s mut dyn EventSink<'a>,
}

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, 'de> {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_, 'de> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while let Some(item) = seq.next_element::<ListItem<'de>>()? {
            item.give_to(&mut *self.sink);
            n += 1;
        }
        Ok(n)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, 'de> {
    type Value = RawFile<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kineto trace object, a list of trace events, or an execution trace")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let n = EventsSeed { sink: self.sink }.visit_seq(seq)?;
        Ok(RawFile {
            event_count: Some(n),
            bare_list: true,
            ..RawFile::default()
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut file = RawFile::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "traceEvents" => file.event_count = Some(map.next_value_seed(EventsSeed { sink: &mut *self.sink })?),
                "deviceProperties" | "computeProperties" => {
                    let devices: Option<Vec<RawDevice>> = map.next_value()?;
                    file.devices = devices.unwrap_or_default();
                }
                "distributedInfo" => file.distributed = map.next_value()?,
                "baseTimeNanoseconds" => file.base_time_ns = map.next_value::<Scalar<'_>>()?.as_i64(),
                "schemaVersion" => file.schema_version = map.next_value::<Scalar<'_>>()?.into_string(),
                "schema" => file.et_schema = map.next_value::<Scalar<'_>>()?.into_string(),
                "pid" => file.et_pid = map.next_value::<Scalar<'_>>()?.as_i64(),
                "nodes" => file.et_nodes = Some(map.next_value()?),
                "format" => file.format_tag = map.next_value::<Scalar<'_>>()?.into_string(),
                // Known, not needed.
                "displayTimeUnit" | "traceName" | "time" | "start_ts" | "finish_ts" => {
                    map.next_value::<IgnoredAny>()?;
                }
                other => {
                    map.next_value::<IgnoredAny>()?;
                    file.unknown_keys.push(printable_key(other));
                }
            }
        }
        Ok(file)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Err(E::custom("the top level is a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Err(E::custom("the top level is a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Err(E::custom("the top level is a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Err(E::custom("the top level is a string"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Err(E::custom("the top level is a boolean"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Err(E::custom("the top level is null"))
    }
}

/// Key names are kept for diagnostics; anything that does not look like an
/// identifier could be data, so it is not kept.
fn printable_key(key: &str) -> String {
    let identifier = key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '));
    if identifier {
        key.to_string()
    } else {
        "<unprintable key>".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect<'a>(Vec<RawEvent<'a>>);
    impl<'a> EventSink<'a> for Collect<'a> {
        fn event(&mut self, event: RawEvent<'a>) {
            self.0.push(event);
        }
        fn not_an_object(&mut self) {}
    }

    fn parse_all(bytes: &[u8]) -> Result<(RawFile<'_>, Vec<RawEvent<'_>>), ParseError> {
        let mut sink = Collect::default();
        let file = parse(bytes, &mut sink)?;
        Ok((file, sink.0))
    }

    #[test]
    fn reads_object_and_bare_list() {
        let obj = br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2}], "SECRET_ENV": {"TOKEN": "x"}}"#;
        let (f, events) = parse_all(obj).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(f.event_count, Some(1));
        assert_eq!(f.unknown_keys, vec!["SECRET_ENV".to_string()]);
        assert_eq!(f.schema_version.as_deref(), Some("1"));
        let list =
            br#"[{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 2, "pid": "Traces", "tid": "stream 7"}]"#;
        let (f, events) = parse_all(list).unwrap();
        assert!(f.bare_list);
        assert_eq!(events[0].pid, None);
        assert_eq!(events[0].ts, Some("1"));
    }

    #[test]
    fn errors_say_why() {
        assert!(matches!(parse_all(b"  \n"), Err(ParseError::Empty)));
        assert!(matches!(
            parse_all(br#"{"traceEvents": [{"ph": "X""#),
            Err(ParseError::Truncated { .. })
        ));
        let nan = parse_all(br#"{"traceEvents": [{"ts": NaN}]}"#).unwrap_err().to_string();
        assert!(nan.contains("NaN and Infinity are not JSON"), "{nan}");
        let other = parse_all(br#"{"hello": 1}"#).unwrap_err().to_string();
        assert!(other.contains("neither `traceEvents`"), "{other}");
        let manifest = parse_all(br#"{"format": "tracecast-collector-manifest", "format_version": 1}"#);
        assert!(matches!(manifest, Err(ParseError::Manifest)));
        let scalar = parse_all(b"42").unwrap_err().to_string();
        assert!(scalar.contains("does not start with a JSON object"), "{scalar}");
        let utf8 = parse_all(b"{\"traceEvents\": [{\"name\": \"\xff\"}]}")
            .unwrap_err()
            .to_string();
        assert!(utf8.contains("not valid UTF-8"), "{utf8}");
    }

    #[test]
    fn odd_argument_types_do_not_fail_the_file() {
        let obj = br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
            "args": {"occupancy": {"a": 1}, "grid": "x", "stream": "7", "External id": 18446744073709551615,
                     "Input Dims": [[1, 2], [], [[1], [2]], 3]}}]}"#;
        let (_, events) = parse_all(obj).unwrap();
        let a = events.into_iter().next().unwrap().args.unwrap();
        assert_eq!(a.grid, None);
        assert_eq!(a.stream, Some(7));
        assert_eq!(a.external_id, None, "u64 above i64::MAX is not an Int64 id");
        assert_eq!(a.input_dims, Some(vec![Some(vec![1, 2]), Some(vec![]), None, None]));
    }
}
