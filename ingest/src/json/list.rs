//! The `traceEvents` list, read element by element: each event through the
//! fast path of `scan` where it can, through serde where it cannot.
//!
//! A large file's list is cut in two at an element boundary near its middle
//! and the halves are parsed at once. The cut is found with a cheap textual
//! guess: JSON strings cannot hold a raw newline, so `},` followed by a
//! newline and then `{` is structural, an element boundary in some list of
//! objects. Whether cut or not, the reading is then proven: the first half
//! must end exactly at the cut, the list must end at a `]`, and the
//! document with the list emptied must be valid JSON with nothing in it.
//! Any doubt, and the caller parses the file in one pass of serde as
//! usual; a wrong guess costs time, never data.

use serde_json::Deserializer;

use super::raw::{EventSink, ListItem, RawEvent, RawFile, parse_text};
use super::scan;

/// Files below this size are not worth the second thread.
const MIN_BYTES: usize = 4 << 20;

/// Where the list starts, and where it is cut.
pub struct Plan {
    /// Just after the list's `[`.
    first: usize,
    cut: Option<Cut>,
}

struct Cut {
    /// The `,` that ends the first half.
    comma: usize,
    /// The `{` that starts the second half.
    second: usize,
}

impl Plan {
    /// Whether the list is read in two halves at once.
    pub fn is_cut(&self) -> bool {
        self.cut.is_some()
    }
}

/// JSON's four whitespace bytes, no others (serde refuses a form feed).
fn skip_ws(text: &str, at: usize) -> usize {
    skip_ws_bytes(text.as_bytes(), at)
}

fn skip_ws_bytes(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(at) {
        at += 1;
    }
    at
}

/// The textual guess at an element boundary: `},` followed by a newline
/// (which no JSON string holds raw), whitespace and `{`. Given where a
/// `},\n` was found, the offset of that `{`, if it is there.
fn boundary_at(b: &[u8], found: usize) -> Option<usize> {
    let next = skip_ws_bytes(b, found + 2);
    (b.get(next) == Some(&b'{')).then_some(next)
}

/// Where `traceEvents` starts, cut near its middle when the file is large
/// enough; `None` when the text holds no such list (execution traces, bare
/// lists of events), which serde then reads in one pass.
pub fn plan(text: &str) -> Option<Plan> {
    plan_from(text, MIN_BYTES)
}

fn plan_from(text: &str, min_bytes: usize) -> Option<Plan> {
    let key = text.find("\"traceEvents\"")?;
    let mut at = skip_ws(text, key + "\"traceEvents\"".len());
    if text.as_bytes().get(at) != Some(&b':') {
        return None;
    }
    at = skip_ws(text, at + 1);
    if text.as_bytes().get(at) != Some(&b'[') {
        return None;
    }
    let first = at + 1;
    let cut = if text.len() >= min_bytes {
        cut_near_middle(text, first)
    } else {
        None
    };
    Some(Plan { first, cut })
}

fn cut_near_middle(text: &str, first: usize) -> Option<Cut> {
    let mut from = first + (text.len() - first) / 2;
    for _ in 0..64 {
        let found = from + text[from..].find("},\n")?;
        if let Some(second) = boundary_at(text.as_bytes(), found) {
            return Some(Cut {
                comma: found + 1,
                second,
            });
        }
        from = found + 1;
    }
    None
}

/// One list element at `at`: the fast path for an event object, serde for
/// anything it leaves. Returns the element and the offset just past it.
fn element(text: &str, at: usize) -> Option<(ListItem<'_>, usize)> {
    if let Some((event, end)) = scan::event(text, at) {
        return Some((ListItem::Event(event), end));
    }
    let mut stream = Deserializer::from_str(&text[at..]).into_iter::<ListItem<'_>>();
    let item = stream.next()?.ok()?;
    Some((item, at + stream.byte_offset()))
}

/// Parses list elements from `at` until a `]`, or until the `,` at `stop`.
/// Returns the offset of that `]` or `,`, or `None` if the text is not a
/// run of elements ending there.
fn elements<'a>(
    text: &'a str,
    mut at: usize,
    stop: Option<usize>,
    sink: &mut dyn EventSink<'a>,
) -> Option<(usize, usize)> {
    let mut count = 0;
    loop {
        at = skip_ws(text, at);
        let (item, end) = element(text, at)?;
        at = end;
        item.give_to(sink);
        count += 1;
        at = skip_ws(text, at);
        match text.as_bytes().get(at) {
            Some(b',') if Some(at) == stop => return Some((at, count)),
            Some(b',') if stop.is_some_and(|s| at > s) => return None,
            Some(b',') => at += 1,
            Some(b']') if stop.is_none() => return Some((at, count)),
            _ => return None,
        }
    }
}

/// Reads the list as planned, both halves at once where it is cut (the
/// second half's events go to `second`). `None` means the reading did not
/// hold: the sinks must be discarded and the file parsed in one pass.
pub fn parse<'a>(
    text: &'a str,
    plan: &Plan,
    first: &mut (dyn EventSink<'a> + Send),
    second: &mut (dyn EventSink<'a> + Send),
) -> Option<RawFile<'a>> {
    let (count, end) = match &plan.cut {
        Some(cut) => {
            let (a, b) = rayon::join(
                || elements(text, plan.first, Some(cut.comma), first),
                || elements(text, cut.second, None, second),
            );
            let ((_, n1), (end, n2)) = (a?, b?);
            (n1 + n2, end)
        }
        None if text.as_bytes().get(skip_ws(text, plan.first)) == Some(&b']') => (0, skip_ws(text, plan.first)),
        None => {
            let (end, n) = elements(text, plan.first, None, first)?;
            (n, end)
        }
    };
    metadata(text, plan.first, end, count)
}

/// The document around the list (`text` up to `first`, just after the
/// list's `[`, and from `end`, its `]`), read with the list emptied.
fn metadata(text: &str, first: usize, end: usize, count: usize) -> Option<RawFile<'static>> {
    metadata_around(&text[..first], &text[end..], count)
}

/// The document from `head` (up to the list's `[`) and `tail` (from its
/// `]`): it must be valid JSON holding no other events.
fn metadata_around(head: &str, tail: &str, count: usize) -> Option<RawFile<'static>> {
    let rest = format!("{head}{tail}");
    let mut none = NoEvents(0);
    let file = parse_text(&rest, &mut none).ok()?;
    if none.0 != 0 || file.et_nodes.is_some() {
        return None;
    }
    Some(RawFile {
        event_count: Some(count),
        et_nodes: None,
        ..file.into_static()
    })
}

/// For reading a list while its text is still being inflated: where the
/// list starts in the first bytes of a file (just after its `[`).
pub fn list_start(head: &[u8]) -> Option<usize> {
    let valid = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    plan_from(valid, usize::MAX).map(|plan| plan.first)
}

/// The length of the longest run of whole elements at the start of
/// `bytes` that ends at an element boundary (its `,` included), as
/// [`cut_near_middle`] finds one; `None` if `bytes` holds no boundary.
pub fn whole_elements(bytes: &[u8]) -> Option<usize> {
    let mut end = bytes.len();
    loop {
        let found = memchr::memmem::rfind(&bytes[..end], b"},\n")?;
        if boundary_at(bytes, found).is_some() {
            return Some(found + 2);
        }
        end = found + 1;
    }
}

/// Reads a run of elements cut by [`whole_elements`] (it ends with the
/// `,` after its last element). Returns how many, or `None` if the cut
/// was not at a boundary of this list.
pub fn run_of_elements<'a>(run: &'a str, sink: &mut dyn EventSink<'a>) -> Option<usize> {
    let comma = run.len().checked_sub(1)?;
    elements(run, 0, Some(comma), sink).map(|(_, n)| n)
}

/// Reads the last elements of the list, `tail` being the text after the
/// last run (from just after its `,` to the end of the file), then the
/// document around the list. `head` is the text up to the list's `[`, and
/// `counted` the number of elements in the runs.
pub fn last_elements<'a>(
    head: &str,
    tail: &'a str,
    counted: usize,
    sink: &mut dyn EventSink<'a>,
) -> Option<RawFile<'static>> {
    let (end, n) = elements(tail, 0, None, sink)?;
    metadata_around(head, &tail[end..], counted + n)
}

struct NoEvents(usize);

impl<'a> EventSink<'a> for NoEvents {
    fn event(&mut self, _: RawEvent<'a>) {
        self.0 += 1;
    }
    fn not_an_object(&mut self) {
        self.0 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Names(Vec<String>);
    impl<'a> EventSink<'a> for Names {
        fn event(&mut self, e: RawEvent<'a>) {
            self.0.push(e.name.unwrap_or_default().into_owned());
        }
        fn not_an_object(&mut self) {}
    }

    fn doc(events: usize, nested_lists: bool) -> String {
        let mut s = String::from("{\"schemaVersion\": 1, \"traceEvents\": [\n");
        for i in 0..events {
            let args = if nested_lists {
                ", \"args\": {\"l\": [{\"a\": 1},\n {\"b\": 2}]}"
            } else {
                ""
            };
            s.push_str(&format!(
                "  {{\"ph\": \"X\", \"name\": \"e{i} }},\\n {{\", \"ts\": {i}{args}}}"
            ));
            s.push_str(if i + 1 < events { ",\n" } else { "\n" });
        }
        s.push_str("], \"baseTimeNanoseconds\": 42, \"traceName\": \"x\"}");
        s
    }

    fn run(text: &str) -> Option<(RawFile<'_>, Vec<String>)> {
        let plan = plan_from(text, 0)?;
        assert!(plan.is_cut(), "{text}");
        let (mut a, mut b) = (Names::default(), Names::default());
        let file = parse(text, &plan, &mut a, &mut b)?;
        a.0.extend(b.0);
        Some((file, a.0))
    }

    #[test]
    fn halves_hold_every_event_and_the_metadata_after_the_list() {
        let text = doc(101, false);
        let (file, names) = run(&text).expect("splits");
        assert_eq!(file.event_count, Some(101));
        assert_eq!(file.base_time_ns, Some(42));
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 101);
    }

    #[test]
    fn a_cut_inside_an_event_is_refused() {
        // Every event holds a list of objects split over two lines, so some
        // cuts land inside an event; those must be refused, never misread.
        for n in [3, 4, 7, 10] {
            let text = doc(n, true);
            if let Some((file, names)) = run(&text) {
                assert_eq!(file.event_count, Some(n), "{n}");
                assert_eq!(names.len(), n, "{n}");
            }
        }
    }

    #[test]
    fn small_files_are_read_in_one_piece() {
        let text = doc(10, false);
        let plan = plan(&text).expect("a list");
        assert!(!plan.is_cut());
        let (mut a, mut b) = (Names::default(), Names::default());
        let file = parse(&text, &plan, &mut a, &mut b).expect("reads");
        assert_eq!((file.event_count, a.0.len(), b.0.len()), (Some(10), 10, 0));
    }
}
