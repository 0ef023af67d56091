//! Inflating a gzip trace and reading its event list at once: both cores
//! work from the first megabyte, and the text is never held whole.
//!
//! The inflater fills a buffer; once it holds a run of whole events (cut
//! at an element boundary `json::list` finds), the run is queued and the
//! few bytes after it start the next buffer. Another core reads the queue
//! while the inflater goes on, and the inflater reads from it too when it
//! falls behind, so that only a few runs' text is alive at once. The last
//! events, the list's `]` and the metadata after it are read at the end,
//! and every run's records join in file order (`Parsed::build`). If the
//! list does not start in the first megabyte, or a run does not read as
//! whole events of the list, the file is inflated again and parsed whole,
//! the usual way: a wrong cut costs time, never data.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read};
use std::sync::{Condvar, Mutex};

use crate::build::{self, KinetoBuilder, Parsed};
use crate::json::{ParseError, list};
use crate::source;

/// Text inflated per read, and the least cut off as one run: small enough
/// that the other core starts early and little text is alive, large enough
/// that a run's overhead (a builder, a boundary search) stays small.
const READ_BYTES: usize = 1 << 20;
const RUN_BYTES: usize = 2 << 20;

/// Runs waiting beyond which the inflater reads one itself.
const MAX_QUEUED: usize = 2;

/// Files below this size (as the gzip trailer gives it) are read the usual
/// way (`build::parse`).
const MIN_BYTES: usize = 8 << 20;

/// A trace file's stored bytes inflated (if gzip) and parsed: the
/// uncompressed size, and the records or why there are none. An `Err` is a
/// file that could not be decompressed.
pub(crate) fn inflate_and_parse(bytes: Vec<u8>) -> io::Result<(u64, Result<Parsed, ParseError>)> {
    if let Some((size, inflater)) = source::inflater(&bytes)?.filter(|(size, _)| *size >= MIN_BYTES) {
        if let Some((len, parsed)) = read_in_runs(inflater, size)? {
            return Ok((len, Ok(parsed)));
        }
        tracing::debug!("the event list could not be read while inflating; reading the whole text");
    }
    let text = source::decompress_owned(bytes)?;
    Ok((text.len() as u64, build::parse(&text)))
}

/// Runs of whole events waiting to be read, and the buffers of runs
/// already read, for the inflater to fill again: the allocator would keep
/// freed buffers for a while, and new ones would come on top of them.
struct Queue {
    pending: Mutex<Pending>,
    ready: Condvar,
    spare: Mutex<Vec<Vec<u8>>>,
}

struct Pending {
    /// Each run's text with its place in the file.
    runs: VecDeque<(usize, Vec<u8>)>,
    /// The inflater is done: no run will come.
    closed: bool,
}

impl Queue {
    fn new() -> Self {
        Queue {
            pending: Mutex::new(Pending {
                runs: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            spare: Mutex::new(Vec::new()),
        }
    }

    /// A buffer for the next run: one already read, emptied, or a new one.
    fn buffer(&self) -> Vec<u8> {
        let spare = self.spare.lock().expect("no reader panics").pop();
        spare.unwrap_or_else(|| Vec::with_capacity(RUN_BYTES + READ_BYTES))
    }

    fn give_back(&self, mut run: Vec<u8>) {
        run.clear();
        self.spare.lock().expect("no reader panics").push(run);
    }

    /// Queues a run; returns how many are waiting.
    fn push(&self, index: usize, run: Vec<u8>) -> usize {
        let mut pending = self.pending.lock().expect("no reader panics");
        pending.runs.push_back((index, run));
        self.ready.notify_one();
        pending.runs.len()
    }

    fn close(&self) {
        self.pending.lock().expect("no reader panics").closed = true;
        self.ready.notify_all();
    }

    /// The next run; `None` once the queue is closed and empty. `wait`:
    /// block for one while the inflater may still add one.
    fn pop(&self, wait: bool) -> Option<(usize, Vec<u8>)> {
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

/// The runs' records joined in file order as they are read (runs read out
/// of order wait for the ones before them), so that each run's own records
/// are freed at once and the file's are never held twice.
struct Assembly {
    records: KinetoBuilder,
    /// Elements read so far.
    counted: usize,
    /// The run to join next, and the runs read before it.
    next: usize,
    waiting: BTreeMap<usize, KinetoBuilder>,
    /// A run did not read as whole events: the text must be read whole.
    failed: bool,
}

impl Assembly {
    fn add(&mut self, index: usize, read: Option<(usize, KinetoBuilder)>) {
        let Some((count, records)) = read.filter(|_| !self.failed) else {
            self.failed = true;
            self.waiting.clear();
            return;
        };
        self.counted += count;
        self.waiting.insert(index, records);
        while let Some(records) = self.waiting.remove(&self.next) {
            self.records.append(records);
            self.next += 1;
        }
    }
}

/// Reads one run into its own records, and hands them on.
fn read_run(index: usize, run: &[u8], assembly: &Mutex<Assembly>) {
    let read = std::str::from_utf8(run).ok().and_then(|text| {
        let mut builder = KinetoBuilder::sized(run.len());
        let count = list::run_of_elements(text, &mut builder)?;
        Some((count, builder))
    });
    assembly.lock().expect("no reader panics").add(index, read);
}

fn read_queue(queue: &Queue, wait: bool, assembly: &Mutex<Assembly>) {
    while let Some((index, run)) = queue.pop(wait) {
        read_run(index, &run, assembly);
        queue.give_back(run);
    }
}

/// Appends up to `n` more inflated bytes to `buf`; 0 at the end.
fn fill(inflater: &mut dyn Read, buf: &mut Vec<u8>, n: usize) -> io::Result<usize> {
    inflater.take(n as u64).read_to_end(buf)
}

/// Reads the event list of the text `inflater` gives run by run as it
/// comes (`size`: the text's size as stated or guessed, which room is made
/// for): the text's size and the records, or `None` where the text must be
/// read whole instead.
fn read_in_runs(mut inflater: Box<dyn Read + Send + '_>, size: usize) -> io::Result<Option<(u64, Parsed)>> {
    let mut text = Vec::with_capacity(RUN_BYTES + READ_BYTES);
    if fill(&mut inflater, &mut text, READ_BYTES)? < READ_BYTES {
        return Ok(None);
    }
    let Some(first) = list::list_start(&text) else {
        return Ok(None);
    };
    let head: Vec<u8> = text.drain(..first).collect();
    let mut consumed = first;

    let queue = Queue::new();
    let assembly = Mutex::new(Assembly {
        records: KinetoBuilder::sized(size),
        counted: 0,
        next: 0,
        waiting: BTreeMap::new(),
        failed: false,
    });
    let tail = rayon::scope(|scope| {
        scope.spawn(|_| read_queue(&queue, true, &assembly));
        let mut runs = 0;
        let inflated = loop {
            if assembly.lock().expect("no reader panics").failed {
                // The text will be read whole: no use reading on.
                break Ok(());
            }
            let before = text.len();
            match fill(&mut inflater, &mut text, READ_BYTES) {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
            // A boundary is looked for in the last read only (and a few
            // bytes before it): a text with none must not be searched again
            // and again as it grows.
            let look_from = before.saturating_sub(64);
            if text.len() < RUN_BYTES {
                continue;
            }
            let Some(run_len) = list::whole_elements(&text[look_from..]).map(|n| look_from + n) else {
                continue;
            };
            let mut next = queue.buffer();
            next.extend_from_slice(&text[run_len..]);
            text.truncate(run_len);
            consumed += run_len;
            let waiting = queue.push(runs, std::mem::replace(&mut text, next));
            runs += 1;
            if waiting > MAX_QUEUED
                && let Some((index, run)) = queue.pop(false)
            {
                read_run(index, &run, &assembly);
                queue.give_back(run);
            }
        };
        queue.close();
        read_queue(&queue, false, &assembly);
        inflated.map(|()| text)
    })?;
    let len = (consumed + tail.len()) as u64;

    let Assembly {
        mut records,
        counted,
        failed,
        ..
    } = assembly.into_inner().expect("no reader panics");
    if failed {
        return Ok(None);
    }
    // The runs were checked as UTF-8 one by one; the rest is checked here.
    let (Ok(head), Ok(tail)) = (std::str::from_utf8(&head), std::str::from_utf8(&tail)) else {
        return Ok(None);
    };
    let mut last = KinetoBuilder::sized(tail.len());
    let Some(raw) = list::last_elements(head, tail, counted, &mut last) else {
        return Ok(None);
    };
    records.append(last);
    Ok(Some((len, Parsed::kineto(vec![records], raw))))
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
        let (size, inflater) = source::inflater(stored).unwrap().expect("a stated size");
        matches!(read_in_runs(inflater, size), Ok(Some(_)))
    }

    #[test]
    fn a_large_trace_reads_the_same_inflated_and_read_at_once() {
        for nested in [false, true] {
            let text = trace_text(40_000, nested);
            assert!(text.len() > MIN_BYTES, "{}", text.len());
            let gz = gzip(text.as_bytes());
            // zstd's one-shot compression states the size, as its CLI does.
            let zst = zstd::bulk::compress(text.as_bytes(), 1).unwrap();
            for stored in [gz, zst] {
                if !nested {
                    assert!(read_while_inflating(&stored));
                }
                let (streamed, whole) = both_ways(stored, text.as_bytes());
                assert!(streamed == whole, "nested: {nested}");
            }
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
        assert!(
            source::inflater(&stored)
                .unwrap()
                .is_some_and(|(n, _)| n >= MIN_BYTES && n < text.len())
        );
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
