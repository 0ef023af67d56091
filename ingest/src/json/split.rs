//! Parsing one large Kineto file on two cores.
//!
//! The `traceEvents` list is cut in two at an element boundary near its
//! middle and the halves are parsed at once. The cut is found with a cheap
//! textual guess: JSON strings cannot hold a raw newline, so `},` followed by
//! a newline and then `{` is structural, an element boundary in some list of
//! objects. The guess is then proven: the first half must end exactly at the
//! cut, the second must end at a `]`, and the document with the list emptied
//! must be valid JSON with nothing in it. Any doubt, and the caller parses
//! the file in one pass as usual; a wrong guess costs time, never data.

use serde_json::Deserializer;

use super::raw::{EventSink, ListItem, RawEvent, RawFile, parse_text};

/// Files below this size are not worth the second thread.
const MIN_BYTES: usize = 4 << 20;

/// Where the list was cut.
pub struct Cut {
    /// Just after the list's `[`.
    first: usize,
    /// The `,` that ends the first half.
    comma: usize,
    /// The `{` that starts the second half.
    second: usize,
}

fn skip_ws(text: &str, mut at: usize) -> usize {
    let b = text.as_bytes();
    while at < b.len() && b[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// A cut near the middle of `traceEvents`, if the file looks splittable.
pub fn plan(text: &str) -> Option<Cut> {
    plan_from(text, MIN_BYTES)
}

fn plan_from(text: &str, min_bytes: usize) -> Option<Cut> {
    if text.len() < min_bytes {
        return None;
    }
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
    let mut from = first + (text.len() - first) / 2;
    for _ in 0..64 {
        let found = from + text[from..].find("},\n")?;
        let second = skip_ws(text, found + 2);
        if text.as_bytes().get(second) == Some(&b'{') {
            return Some(Cut {
                first,
                comma: found + 1,
                second,
            });
        }
        from = found + 1;
    }
    None
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
        let mut stream = Deserializer::from_str(&text[at..]).into_iter::<ListItem<'a>>();
        let item = stream.next()?.ok()?;
        at += stream.byte_offset();
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

/// Parses both halves at once. `None` means the cut did not hold: the
/// sinks must be discarded and the file parsed in one pass.
pub fn parse_halves<'a>(
    text: &'a str,
    cut: &Cut,
    first: &mut (dyn EventSink<'a> + Send),
    second: &mut (dyn EventSink<'a> + Send),
) -> Option<RawFile<'a>> {
    let (a, b) = rayon::join(
        || elements(text, cut.first, Some(cut.comma), first),
        || elements(text, cut.second, None, second),
    );
    let ((_, n1), (end, n2)) = (a?, b?);
    // The rest of the document, with the list emptied, holds the metadata.
    let rest = format!("{}{}", &text[..cut.first], &text[end..]);
    let mut none = NoEvents(0);
    let file = parse_text(&rest, &mut none).ok()?;
    if none.0 != 0 || file.et_nodes.is_some() {
        return None;
    }
    Some(RawFile {
        event_count: Some(n1 + n2),
        et_nodes: None,
        ..file.into_static()
    })
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
        let cut = plan_from(text, 0)?;
        let (mut a, mut b) = (Names::default(), Names::default());
        let file = parse_halves(text, &cut, &mut a, &mut b)?;
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
    fn small_files_are_not_split() {
        assert!(plan(&doc(10, false)).is_none());
    }
}
