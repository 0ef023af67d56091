//! The event reader's fast path against serde on real traces: every trace
//! file in `fixtures/traces` and `../shared/traces`, read element by
//! element (the fast path, serde for what it leaves) and in one serde pass,
//! must give the same events in the same order and the same metadata.

use std::io::Read;
use std::path::{Path, PathBuf};

use tracecast_ingest::json::{self, EventSink, RawEvent};

#[derive(Default)]
struct Events(Vec<String>);

impl<'a> EventSink<'a> for Events {
    fn event(&mut self, event: RawEvent<'a>) {
        self.0.push(format!("{event:?}"));
    }
    fn not_an_object(&mut self) {
        self.0.push("not an object".into());
    }
}

fn trace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.to_string_lossy();
        if path.is_dir() {
            trace_files(&path, out);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(path);
        }
    }
}

fn text_of(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes;
    }
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .read_to_end(&mut text)
        .unwrap();
    text
}

#[test]
fn every_trace_reads_the_same_through_the_fast_path_and_serde() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    trace_files(&root.join("fixtures/traces"), &mut files);
    let shared = root.join("../shared/traces");
    if shared.is_dir() {
        trace_files(&shared, &mut files);
    } else {
        eprintln!("note: ../shared/traces is missing; only the bundled fixtures are read");
    }
    let mut listed = 0;
    for path in &files {
        let bytes = text_of(path);
        let Ok(text) = json::text(&bytes) else { continue };
        let mut one_pass = Events::default();
        let Ok(serde_file) = json::parse_text(text, &mut one_pass) else {
            continue;
        };
        let Some(plan) = json::list::plan(text) else { continue };
        let (mut first, mut second) = (Events::default(), Events::default());
        let file = json::list::parse(text, &plan, &mut first, &mut second)
            .unwrap_or_else(|| panic!("{}: the event list did not read element by element", path.display()));
        first.0.extend(second.0);
        assert!(first.0 == one_pass.0, "{}: the events differ", path.display());
        assert_eq!(
            format!("{file:?}"),
            format!("{serde_file:?}"),
            "{}: the metadata differs",
            path.display()
        );
        listed += 1;
    }
    assert!(listed >= 3, "only {listed} Kineto files were read");
}
