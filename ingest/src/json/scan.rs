//! A fast path for one Kineto event object: the fields tracecast reads, in
//! the forms real traces write them, read straight off the text.
//!
//! serde's derived reader spends most of ingest's parsing time in its
//! generic visitors. This reader answers only where it is sure to give
//! what serde gives ([`super::raw::RawEvent`]'s lenient rules); anything
//! else (an escaped string it would keep, a number written as a string, a
//! duplicate key, a malformed value) answers `None`, and the caller parses
//! that element with serde as before, errors included. Values it skips are
//! checked as serde checks them, so a file serde refuses is refused.

use std::borrow::Cow;

use super::lenient::Scalar;
use super::raw::{RawArgs, RawEvent};

/// Reads the event object starting at `at` (its `{`). Returns the event and
/// the offset just past its `}`, or `None` to leave the element to serde.
pub fn event(text: &str, at: usize) -> Option<(RawEvent<'_>, usize)> {
    let mut c = Cursor { text, at };
    let mut event = RawEvent {
        ph: None,
        cat: None,
        name: None,
        pid: None,
        tid: None,
        ts: None,
        dur: None,
        args: None,
    };
    let mut seen = Seen::default();
    c.object(|c, key| {
        match key {
            "ph" => event.ph = seen.once(0, c.string())?,
            "cat" => event.cat = seen.once(1, c.string())?,
            "name" => event.name = seen.once(2, c.string())?,
            "pid" => event.pid = seen.once(3, c.scalar().map(|s| s.as_i64()))?,
            "tid" => event.tid = seen.once(4, c.scalar().map(|s| s.as_i64()))?,
            "ts" => event.ts = seen.once(5, c.raw_number())?,
            "dur" => event.dur = seen.once(6, c.raw_number())?,
            "args" => event.args = seen.once(7, c.args())?,
            _ => c.skip_value(0)?,
        }
        Some(())
    })?;
    Some((event, c.at))
}

/// Which fields were met: serde refuses a field given twice.
#[derive(Default)]
struct Seen(u64);

impl Seen {
    fn once<T>(&mut self, field: u32, value: Option<T>) -> Option<T> {
        let bit = 1u64 << field;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        value
    }
}

/// The deepest nesting skipped here; deeper values go to serde, whose own
/// limit (128) then decides.
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    /// JSON's four whitespace bytes, no others.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    /// `{ "key": value, ... }`, each key handed to `field` with the cursor at
    /// its value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.items(b'{', b'}', |c| {
            let key = c.plain_string()?;
            c.ws();
            c.eat(b':')?;
            c.ws();
            field(c, key)
        })
    }

    /// `[ value, ... ]`, the cursor handed to `element` at each value.
    fn list(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.items(b'[', b']', element)
    }

    /// `open item, item, ... close`, each item read by `item` from its first
    /// byte; no trailing comma.
    fn items(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(open)?;
        self.ws();
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.peek()? {
                b',' => self.at += 1,
                b if b == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string with no escapes, borrowed from the text.
    fn plain_string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let len = memchr::memchr2(b'"', b'\\', &self.bytes()[start..])?;
        let body = &self.bytes()[start..start + len];
        if self.bytes()[start + len] != b'"' || has_control_byte(body) {
            return None;
        }
        self.at = start + len + 1;
        // Cut at ASCII quotes of text that is valid UTF-8: a char boundary.
        Some(&self.text[start..start + len])
    }

    /// Skips a string, checking its escapes and control bytes as serde does.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        let b = self.bytes();
        loop {
            let len = memchr::memchr2(b'"', b'\\', &b[self.at..])?;
            if has_control_byte(&b[self.at..self.at + len]) {
                return None;
            }
            self.at += len + 1;
            if b[self.at - 1] == b'"' {
                return Some(());
            }
            match *b.get(self.at)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                b'u' => {
                    let hex = b.get(self.at + 1..self.at + 5)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.at += 5;
                }
                _ => return None,
            }
        }
    }

    /// A JSON number's text, checked against JSON's grammar.
    fn number(&mut self) -> Option<&'a str> {
        let b = self.bytes();
        let start = self.at;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            let digits = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == digits {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let digits = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == digits {
                return None;
            }
        }
        self.at = i;
        Some(&self.text[start..i])
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes()
            .get(self.at..)?
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// Skips any value, checking it as serde checks a value it ignores.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' if depth < MAX_DEPTH => self.object(|c, _| c.skip_value(depth + 1)),
            b'[' if depth < MAX_DEPTH => self.list(|c| c.skip_value(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(|_| ()),
            _ => None,
        }
    }

    /// A value as [`Scalar`] reads it. Numbers whose serde reading is not
    /// plain (beyond 64 bits, negative zero) and escaped strings are left to
    /// serde.
    fn scalar(&mut self) -> Option<Scalar<'a>> {
        match self.peek()? {
            b'"' => self.plain_string().map(|s| Scalar::Str(Cow::Borrowed(s))),
            b'-' | b'0'..=b'9' => number_scalar(self.number()?),
            _ => self.skip_value(0).map(|()| Scalar::Other),
        }
    }

    /// A field read as a string: `lenient::string` for strings and null; a
    /// number (which serde would format) is left to serde.
    fn string(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.scalar()? {
            Scalar::Str(s) => Some(Some(s)),
            Scalar::Other => Some(None),
            _ => None,
        }
    }

    /// `ts` and `dur`: a number's own text, or null; other values (which
    /// `raw_text` keeps as written) are left to serde.
    fn raw_number(&mut self) -> Option<Option<&'a str>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            _ => self.number().map(Some),
        }
    }

    fn int(&mut self) -> Option<Option<i64>> {
        self.scalar().map(|s| s.as_i64())
    }

    fn float(&mut self) -> Option<Option<f64>> {
        self.scalar().map(|s| s.as_f64())
    }

    /// `[x, y, z]` as `lenient::dim3` reads it.
    fn dim3(&mut self) -> Option<Option<[Option<i64>; 3]>> {
        if self.peek()? != b'[' {
            return self.skip_value(0).map(|()| None);
        }
        let mut out = [None; 3];
        let mut i = 0;
        self.list(|c| {
            let v = c.scalar()?.as_i64();
            if i < 3 {
                out[i] = v;
            }
            i += 1;
            Some(())
        })?;
        Some(Some(out))
    }

    /// A list of shapes as `lenient::shapes` reads it.
    fn shapes(&mut self) -> Option<Option<Vec<Option<Vec<i64>>>>> {
        if self.peek()? != b'[' {
            return self.skip_value(0).map(|()| None);
        }
        let mut out = Vec::new();
        self.list(|c| {
            if c.peek()? != b'[' {
                out.push(None);
                return c.skip_value(1);
            }
            let mut dims = Vec::new();
            let mut flat = true;
            c.list(|c| {
                match c.scalar()?.as_i64() {
                    Some(v) if flat => dims.push(v),
                    _ => flat = false,
                }
                Some(())
            })?;
            out.push(flat.then_some(dims));
            Some(())
        })?;
        Some(Some(out))
    }

    /// A list of strings as `lenient::strings` reads it.
    fn strings(&mut self) -> Option<Option<Vec<String>>> {
        if self.peek()? != b'[' {
            return self.skip_value(0).map(|()| None);
        }
        let mut out = Vec::new();
        self.list(|c| {
            let s = match c.scalar()? {
                Scalar::Str(s) => s.into_owned(),
                Scalar::Int(v) => v.to_string(),
                Scalar::Other => String::new(),
                // serde's formatting of these is left to serde.
                Scalar::BigUint(_) | Scalar::Float(_) => return None,
            };
            out.push(s);
            Some(())
        })?;
        Some(Some(out))
    }

    /// `args`: an object of the keys `RawArgs` reads, or null.
    fn args(&mut self) -> Option<Option<Box<RawArgs<'a>>>> {
        if self.peek()? == b'n' {
            return self.literal(b"null").map(|()| None);
        }
        let mut a = Box::<RawArgs<'a>>::default();
        let mut seen = Seen::default();
        self.object(|c, key| {
            match key {
                "External id" | "external id" => a.external_id = seen.once(0, c.int())?,
                "correlation" => a.correlation = seen.once(1, c.int())?,
                "device" => a.device = seen.once(2, c.int())?,
                "stream" => a.stream = seen.once(3, c.int())?,
                "Record function id" => a.record_function_id = seen.once(4, c.int())?,
                "Sequence number" => a.sequence_number = seen.once(5, c.int())?,
                "Fwd thread id" => a.fwd_thread_id = seen.once(6, c.int())?,
                "registers per thread" => a.registers_per_thread = seen.once(7, c.int())?,
                "shared memory" => a.shared_memory = seen.once(8, c.int())?,
                "blocks per SM" => a.blocks_per_sm = seen.once(9, c.float())?,
                "warps per SM" => a.warps_per_sm = seen.once(10, c.float())?,
                "grid" => a.grid = seen.once(11, c.dim3())?,
                "block" => a.block = seen.once(12, c.dim3())?,
                "est. achieved occupancy %" => a.achieved_occupancy = seen.once(13, c.float())?,
                "theoretical occupancy %" => a.theoretical_occupancy = seen.once(14, c.float())?,
                "kind" => a.kind = seen.once(15, c.string())?,
                "graph id" => a.graph_id = seen.once(16, c.int())?,
                "bytes" => a.bytes = seen.once(17, c.int())?,
                "Collective name" => a.collective_name = seen.once(18, c.string())?,
                "In msg nelems" => a.in_msg_nelems = seen.once(19, c.int())?,
                "Out msg nelems" => a.out_msg_nelems = seen.once(20, c.int())?,
                "Group size" => a.group_size = seen.once(21, c.int())?,
                "dtype" => a.dtype = seen.once(22, c.string())?,
                "Process Group Name" => a.process_group_name = seen.once(23, c.string())?,
                "Process Group Ranks" => a.process_group_ranks = seen.once(24, c.string())?,
                "Input Dims" => a.input_dims = seen.once(25, c.shapes())?,
                "Input type" => a.input_types = seen.once(26, c.strings())?,
                _ => c.skip_value(0)?,
            }
            Some(())
        })?;
        Some(Some(a))
    }
}

/// Whether a string's bytes hold one JSON forbids unescaped. Written as a
/// fold, not a search, so that it compiles to vector compares.
fn has_control_byte(body: &[u8]) -> bool {
    body.iter().fold(false, |any, &b| any | (b < 0x20))
}

/// A number token as serde's visitor sees it: an integer that fits 64 bits,
/// or a decimal read by serde itself (so that the last bit matches its own
/// reading). Integers serde reads as floats (beyond 64 bits, negative zero)
/// are left to it.
fn number_scalar(text: &str) -> Option<Scalar<'_>> {
    if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return serde_json::from_str::<f64>(text).ok().map(Scalar::Float);
    }
    match text.strip_prefix('-') {
        None => {
            let v: u64 = text.parse().ok()?;
            Some(i64::try_from(v).map_or(Scalar::BigUint(v), Scalar::Int))
        }
        Some(digits) => {
            let magnitude: u64 = digits.parse().ok()?;
            let v = (magnitude as i64).wrapping_neg();
            (v < 0).then_some(Scalar::Int(v))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Deserializer;

    use super::super::raw::ListItem;
    use super::*;

    /// serde's reading of the element at the start of `text`: the event's
    /// debug form and where it ends; `None` where serde refuses it or it is
    /// not an object.
    fn serde_reading(text: &str) -> Option<(String, usize)> {
        let mut stream = Deserializer::from_str(text).into_iter::<ListItem<'_>>();
        match stream.next()?.ok()? {
            ListItem::Event(e) => Some((format!("{e:?}"), stream.byte_offset())),
            ListItem::NotAnObject => None,
        }
    }

    /// The fast path's answer, checked against serde's: where it answers,
    /// serde reads the same event ending at the same byte. Returns whether
    /// it answered.
    fn agrees(text: &str) -> bool {
        let Some((event, end)) = event(text, 0) else {
            return false;
        };
        let fast = (format!("{event:?}"), end);
        assert_eq!(Some(fast), serde_reading(text), "{text}");
        true
    }

    #[test]
    fn a_kineto_kernel_and_operator_read_as_serde_reads_them() {
        let kernel = r#"{
    "ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)", "pid": 0, "tid": 7,
    "ts": 1669783687464181.125, "dur": 45,
    "args": {
      "External id": 3073, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 184,
      "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2.0,
      "grid": [40, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 3
    }
  }"#;
        let operator = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 783658, "tid": 785244,
            "ts": 1669783687464181, "dur": 45, "args": {"External id": 3073, "Ev Idx": 0,
            "Input Dims": [[8, 3, 224, 224], [], [[1], [2]], 3], "Input type": ["float", "", 1, null],
            "Sequence number": 1573, "Fwd thread id": 1, "Record function id": 9}}"#;
        let comm = r#"{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
            "ts": 1.5, "args": {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
            "Group size": 8, "dtype": "Float", "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}}"#;
        for text in [kernel, operator, comm, "{}", r#"{"args": null, "ts": null}"#] {
            assert!(agrees(text), "{text}");
        }
    }

    #[test]
    fn what_serde_reads_otherwise_is_left_to_it() {
        for text in [
            r#"{"name": "a\"b"}"#,   // an escape in a kept string
            r#"{"name": 12}"#,       // a number serde would format
            r#"{"ts": 1, "ts": 2}"#, // a duplicate field
            r#"{"args": {"External id": 1, "external id": 2}}"#,
            r#"{"ts": "12"}"#,                  // a time as a string
            r#"{"pid": -0}"#,                   // serde reads -0 as a float
            r#"{"pid": 18446744073709551616}"#, // beyond 64 bits
            r#"{"args": [1, 2]}"#,              // a struct from a list
            r#"{"x": 01}"#,                     // not JSON
            "{\"x\": \"a\u{1}b\"}",             // a control byte in a string
            "{\"x\":\u{c}1}",                   // a form feed is not JSON whitespace
            r#"{"x": [1,]}"#,
            r#"{"x": nul}"#,
            r#"{"x": "\q"}"#,
        ] {
            assert!(!agrees(text), "{text}");
        }
    }

    /// A few thousand events built from the spellings and value types real
    /// traces use and the ones they get wrong, each read both ways.
    #[test]
    fn generated_events_read_as_serde_reads_them() {
        const KEYS: [&str; 12] = [
            "ph",
            "cat",
            "name",
            "pid",
            "tid",
            "ts",
            "dur",
            "args",
            "id",
            "s",
            "bp",
            "na\\u006de",
        ];
        const ARG_KEYS: [&str; 14] = [
            "External id",
            "external id",
            "correlation",
            "stream",
            "grid",
            "block",
            "blocks per SM",
            "est. achieved occupancy %",
            "kind",
            "Input Dims",
            "Input type",
            "bytes",
            "Ev Idx",
            "Call stack",
        ];
        const VALUES: [&str; 40] = [
            "\"X\"",
            "\"kernel\"",
            "\"stream 7\"",
            "\" 42 \"",
            "\"a\\\"b\"",
            "\"\\u00e9t\\u00e9\"",
            "\"\\ud800\"",
            "\"caf\u{e9}\"",
            "0",
            "-0",
            "12",
            "-12",
            "1.5",
            "1e3",
            "-1.0",
            "2.50",
            "1E-2",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "9007199254740993.0",
            "null",
            "true",
            "false",
            "[]",
            "{}",
            "[1, 2, 3]",
            "[40,1,1,7]",
            "[1, [2], \"3\"]",
            "[[1,2],[],[[1]],3,\"x\",null,[1.0],[\"2\"]]",
            "[\"float\", \"\", 1, null, 2.5]",
            "{\"a\": [1, {\"b\": null}]}",
            "01",
            "1.",
            "-",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "\"\\q\"",
        ];
        const SPACES: [&str; 4] = ["", " ", "\n\t ", "\r\n"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut fast, mut total) = (0, 0);
        for _ in 0..4000 {
            let mut text = String::from("{");
            let fields = next(6);
            for i in 0..fields {
                let space = SPACES[next(SPACES.len())];
                let key = KEYS[next(KEYS.len())];
                let value = if key == "args" && next(4) > 0 {
                    let mut args = String::from("{");
                    for j in 0..next(5) {
                        let k = ARG_KEYS[next(ARG_KEYS.len())];
                        let v = VALUES[next(VALUES.len())];
                        args.push_str(&format!("{}\"{k}\"{space}:{v}", if j > 0 { "," } else { "" }));
                    }
                    args + "}"
                } else {
                    VALUES[next(VALUES.len())].to_string()
                };
                let comma = if i > 0 { "," } else { "" };
                text.push_str(&format!("{comma}{space}\"{key}\"{space}:{space}{value}{space}"));
            }
            text.push('}');
            total += 1;
            fast += usize::from(agrees(&text));
        }
        // Both paths are exercised: most answered fast, some left to serde.
        assert!(fast > total / 10 && fast < total, "{fast} of {total} answered fast");
    }
}
