//! Inflating a gzip trace and reading its event list at once, so that both
//! cores work from the first megabyte instead of parsing waiting for the
//! whole inflate.
//!
//! The text is inflated into one map, as `source::decompress_owned` does.
//! As it grows, each run of whole events behind the inflater is cut off
//! (`split_at_mut`, at an element boundary `json::list` finds) and queued;
//! another core reads the queue while the inflater goes on, and once the
//! inflater is done it reads from the queue too. The last events, the
//! list's `]` and the metadata after it are read with the whole text, and
//! every run's records join in file order. If any run does not read as
//! whole events of the list, the file is parsed from the whole text the
//! usual way: a wrong cut costs time, never data.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Condvar, Mutex};

use flate2::read::MultiGzDecoder;

use crate::build::{self, KinetoBuilder, Parsed};
use crate::json::{ParseError, list};
use crate::source;

/// Text inflated per read, and the least queued as one run: small enough
/// that the other core starts early, large enough that a run's overhead
/// (a builder, a boundary search) stays small.
const READ_BYTES: usize = 1 << 20;
const RUN_BYTES: usize = 2 << 20;

/// Files below this size are read the usual way (`build::parse`).
const MIN_BYTES: usize = 8 << 20;

/// A trace file's stored bytes inflated (if gzip) and parsed: the
/// uncompressed size, and the records or why there are none. An `Err` is a
/// file that could not be decompressed.
pub(crate) fn inflate_and_parse(bytes: Vec<u8>) -> io::Result<(u64, Result<Parsed, ParseError>)> {
    let size = source::gzip_size(&bytes).filter(|&n| n >= MIN_BYTES);
    if let Some(size) = size {
        // One byte more than the trailer says: a full map means it lied.
        let mut map = memmap2::MmapMut::map_anon(size + 1)?;
        let mut decoder = MultiGzDecoder::new(&bytes[..]);
        match inflate_reading(&mut decoder, &mut map)? {
            Inflated::Read { len, parsed } => return Ok((len as u64, Ok(*parsed))),
            Inflated::Whole { len } => {
                let parsed = build::parse(&map[..len]);
                return Ok((len as u64, parsed));
            }
            Inflated::Overflow => {
                let mut text = map.to_vec();
                drop(map);
                decoder.read_to_end(&mut text)?;
                return Ok((text.len() as u64, build::parse(&text)));
            }
        }
    }
    let text = source::decompress_owned(bytes)?;
    Ok((text.len() as u64, build::parse(&text)))
}

enum Inflated {
    /// Inflated and read at once.
    Read { len: usize, parsed: Box<Parsed> },
    /// Inflated, but to be parsed from the whole text.
    Whole { len: usize },
    /// The map filled: the gzip trailer's size was wrong.
    Overflow,
}

/// Runs of whole events waiting to be read.
struct Queue<'m> {
    pending: Mutex<Pending<'m>>,
    ready: Condvar,
}

struct Pending<'m> {
    /// Each run with its place in the file.
    runs: VecDeque<(usize, &'m [u8])>,
    /// The inflater is done: no run will come.
    closed: bool,
}

impl<'m> Queue<'m> {
    fn new() -> Self {
        Queue {
            pending: Mutex::new(Pending {
                runs: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }

    fn push(&self, index: usize, run: &'m [u8]) {
        self.pending
            .lock()
            .expect("no reader panics")
            .runs
            .push_back((index, run));
        self.ready.notify_one();
    }

    fn close(&self) {
        self.pending.lock().expect("no reader panics").closed = true;
        self.ready.notify_all();
    }

    /// The next run; `None` once the queue is closed and empty. `wait`:
    /// block for one while the inflater may still add one.
    fn pop(&self, wait: bool) -> Option<(usize, &'m [u8])> {
        let mut pending = self.pending.lock().expect("no reader panics");
        loop {
            if let Some(run) = pending.runs.pop_front() {
                return Some(run);
            }
            if pending.closed || !wait {
                return None;
            }
            pending = self.ready.wait(pending).expect("no reader panics");
        }
    }
}

/// One run read into its own records; `None` when it did not read as a
/// run of whole events.
type RunRecords = (usize, Option<(usize, KinetoBuilder)>);

fn read_run(index: usize, run: &[u8]) -> RunRecords {
    let records = std::str::from_utf8(run).ok().and_then(|text| {
        let mut builder = KinetoBuilder::sized(run.len());
        let count = list::run_of_elements(text, &mut builder)?;
        Some((count, builder))
    });
    (index, records)
}

fn read_queue(queue: &Queue<'_>, wait: bool, out: &Mutex<Vec<RunRecords>>) {
    while let Some((index, run)) = queue.pop(wait) {
        let records = read_run(index, run);
        out.lock().expect("no reader panics").push(records);
    }
}

/// Inflates into `map`, queueing runs of whole events as they come for
/// another core, and reading them too once the text is all there.
fn inflate_reading(decoder: &mut MultiGzDecoder<&[u8]>, map: &mut [u8]) -> io::Result<Inflated> {
    let capacity = map.len();
    // The first read must hold the start of the list; else no runs.
    let mut len = 0;
    while len < READ_BYTES.min(capacity) {
        match read_some(decoder, &mut map[len..READ_BYTES.min(capacity)])? {
            0 => return Ok(Inflated::Whole { len }),
            n => len += n,
        }
    }
    let Some(first) = list::list_start(&map[..len]) else {
        return finish_inflating(decoder, map, len)
            .map(|len| len.map_or(Inflated::Overflow, |len| Inflated::Whole { len }));
    };

    let queue = Queue::new();
    let records = Mutex::new(Vec::new());
    // `rest` is the text from the end of the last run queued; `filled` of
    // it is inflated.
    let (_, rest) = map.split_at_mut(first);
    let mut filled = len - first;
    let mut consumed = first;
    let outcome = rayon::scope(|scope| {
        scope.spawn(|_| read_queue(&queue, true, &records));
        let mut rest = rest;
        let mut runs = 0;
        let inflated = loop {
            // A boundary is looked for in the last read only (and a few
            // bytes before it): a text with none must not be searched again
            // and again as it grows.
            let look_from = filled.saturating_sub(READ_BYTES + 64);
            if filled >= RUN_BYTES
                && let Some(run_len) = list::whole_elements(&rest[look_from..filled]).map(|n| look_from + n)
            {
                let (run, after) = std::mem::take(&mut rest).split_at_mut(run_len);
                queue.push(runs, run);
                runs += 1;
                rest = after;
                filled -= run_len;
                consumed += run_len;
            }
            if filled == rest.len() {
                break Ok(false);
            }
            let end = (filled + READ_BYTES).min(rest.len());
            match read_some(decoder, &mut rest[filled..end]) {
                Ok(0) => break Ok(true),
                Ok(n) => filled += n,
                Err(e) => break Err(e),
            }
        };
        queue.close();
        read_queue(&queue, false, &records);
        inflated
    });
    let len = consumed + filled;
    if !outcome? {
        return Ok(Inflated::Overflow);
    }
    let mut runs = records.into_inner().expect("no reader panics");
    runs.sort_by_key(|(index, _)| *index);
    let Some(runs) = runs.into_iter().map(|(_, r)| r).collect::<Option<Vec<_>>>() else {
        return Ok(Inflated::Whole { len });
    };
    // The runs were checked as UTF-8 one by one; the rest is checked here.
    let (Ok(head), Ok(tail)) = (
        std::str::from_utf8(&map[..first]),
        std::str::from_utf8(&map[consumed..len]),
    ) else {
        return Ok(Inflated::Whole { len });
    };
    let counted = runs.iter().map(|(n, _)| n).sum();
    let mut last = KinetoBuilder::sized(tail.len());
    let Some(raw) = list::last_elements(head, tail, counted, &mut last) else {
        return Ok(Inflated::Whole { len });
    };
    // Two halves in file order, which `Parsed::build` sorts at once.
    let half = runs.len() / 2;
    let mut later: Vec<KinetoBuilder> = runs.into_iter().map(|(_, builder)| builder).collect();
    let earlier: Vec<KinetoBuilder> = later.drain(..half).collect();
    later.push(last);
    let (records, rest) = rayon::join(|| KinetoBuilder::joined(earlier), || KinetoBuilder::joined(later));
    Ok(Inflated::Read {
        len,
        parsed: Box::new(Parsed::kineto(records, Some(rest), raw)),
    })
}

/// Inflates the rest into `map` from `len`; `None` if it overflows.
fn finish_inflating(decoder: &mut MultiGzDecoder<&[u8]>, map: &mut [u8], mut len: usize) -> io::Result<Option<usize>> {
    while len < map.len() {
        match read_some(decoder, &mut map[len..])? {
            0 => return Ok(Some(len)),
            n => len += n,
        }
    }
    Ok(None)
}

/// One read, retried when interrupted.
fn read_some(decoder: &mut MultiGzDecoder<&[u8]>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match decoder.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A Kineto file of `events` operator/kernel pairs, about 300 bytes
    /// each. With `nested`, every operator's arguments hold a list of
    /// objects over two lines, so that some cuts land inside an event.
    fn trace_text(events: usize, nested: bool) -> String {
        let mut s = String::from(
            "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU\"}],\n\"traceEvents\": [\n",
        );
        for i in 0..events {
            let extra = if nested {
                ", \"l\": [{\"a\": 1},\n {\"b\": 2}]"
            } else {
                ""
            };
            s.push_str(&format!(
                "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op{m}\", \"pid\": 1, \"tid\": 2, \"ts\": {ts}, \"dur\": 5, \
                 \"args\": {{\"External id\": {i}{extra}}}}},\n  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{m}\", \
                 \"pid\": 0, \"tid\": 7, \"ts\": {kts}, \"dur\": 3, \"args\": {{\"External id\": {i}, \"device\": 0, \
                 \"stream\": 7, \"correlation\": {i}, \"grid\": [4, 1, 1], \"block\": [128, 1, 1]}}}}",
                m = i % 97,
                ts = 1000 + 10 * (i / 3),
                kts = 1003 + 10 * (i / 3),
            ));
            s.push_str(if i + 1 < events { ",\n" } else { "\n" });
        }
        s.push_str("], \"baseTimeNanoseconds\": 1700000000000000000}");
        s
    }

    fn gzip(text: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text).unwrap();
        enc.finish().unwrap()
    }

    /// The trace as read at once, and as read from the whole text.
    fn both_ways(stored: Vec<u8>, text: &[u8]) -> (String, String) {
        let (len, parsed) = inflate_and_parse(stored).expect("inflates");
        assert_eq!(len, text.len() as u64);
        let streamed = format!("{:?}", parsed.and_then(Parsed::build).expect("reads"));
        let whole = format!("{:?}", build::parse(text).and_then(Parsed::build).expect("reads"));
        (streamed, whole)
    }

    /// Whether the runs were read while inflating (not the whole text after).
    fn read_while_inflating(stored: &[u8]) -> bool {
        let mut map = vec![0; source::gzip_size(stored).expect("a size") + 1];
        let mut decoder = MultiGzDecoder::new(stored);
        matches!(inflate_reading(&mut decoder, &mut map), Ok(Inflated::Read { .. }))
    }

    #[test]
    fn a_large_trace_reads_the_same_inflated_and_read_at_once() {
        for nested in [false, true] {
            let text = trace_text(40_000, nested);
            assert!(text.len() > MIN_BYTES, "{}", text.len());
            let stored = gzip(text.as_bytes());
            if !nested {
                assert!(read_while_inflating(&stored));
            }
            let (streamed, whole) = both_ways(stored, text.as_bytes());
            assert!(streamed == whole, "nested: {nested}");
        }
    }

    #[test]
    fn a_trailer_that_understates_the_size_loses_nothing() {
        // Two gzip members: the trailer read is the last one's, which gives
        // that member's size alone.
        let text = trace_text(60_000, false);
        let split = text.len() / 4;
        let mut stored = gzip(&text.as_bytes()[..split]);
        stored.extend(gzip(&text.as_bytes()[split..]));
        assert!(source::gzip_size(&stored).is_some_and(|n| n >= MIN_BYTES && n < text.len()));
        let (streamed, whole) = both_ways(stored, text.as_bytes());
        assert!(streamed == whole);
    }

    #[test]
    fn a_truncated_file_is_an_error_not_a_trace() {
        let text = trace_text(40_000, false);
        let stored = gzip(text.as_bytes());
        let mut cut = stored[..stored.len() / 2].to_vec();
        // Keep the trailer, so that the size says to read at once.
        cut.extend_from_slice(&stored[stored.len() - 8..]);
        assert!(inflate_and_parse(cut).is_err());
    }
}
