//! Input files: directory walking, gzip, zstd and tar detection by content
//! (never by name), and archive members streamed one at a time so memory
//! stays bounded by the largest member, not the archive.

use std::fs;
use std::io::{self, Chain, Cursor, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

/// A file found under the paths given to `ingest`.
#[derive(Debug, Clone)]
pub struct InputFile {
    pub path: PathBuf,
    pub size: u64,
}

/// What a walk of the input paths found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Candidate traces; unreadable entries as `Err` so the caller can log them and go on.
    pub files: Vec<Result<InputFile, (PathBuf, io::Error)>>,
    /// Files met in a directory that are plainly not traces (by their
    /// extension, or hidden), and lakes inside an input directory.
    pub ignored: Vec<PathBuf>,
}

/// Extensions of files that are never traces. Only directory walks go by
/// name; a file named on the command line is always tried (by content).
const NOT_TRACES: &[&str] = &[
    "md", "markdown", "rst", "txt", "py", "ipynb", "sh", "rs", "c", "cc", "cpp", "h", "hpp", "cu", "png", "jpg",
    "jpeg", "gif", "svg", "webp", "bmp", "pdf", "html", "htm", "css", "csv", "tsv", "parquet", "yaml", "yml", "toml",
    "ini", "cfg", "lock", "log",
];

fn plainly_not_a_trace(path: &Path) -> bool {
    let hidden = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'));
    let by_extension = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| NOT_TRACES.contains(&e.to_ascii_lowercase().as_str()));
    hidden || by_extension
}

/// Files under `paths` (recursing into directories, in name order), never
/// entering `lake` or any other lake. A path that does not exist is an error.
pub fn discover(paths: &[PathBuf], lake: &Path) -> Result<Discovered, (PathBuf, io::Error)> {
    let lake = fs::canonicalize(lake).ok();
    let mut found = Discovered::default();
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| (path.clone(), e))?;
        if meta.is_dir() {
            walk(path, lake.as_deref(), &mut found);
        } else {
            found.files.push(Ok(InputFile {
                path: path.clone(),
                size: meta.len(),
            }));
        }
    }
    Ok(found)
}

fn walk(dir: &Path, lake: Option<&Path>, found: &mut Discovered) {
    let is_our_lake = lake.is_some_and(|l| fs::canonicalize(dir).is_ok_and(|d| d == l));
    if is_our_lake || crate::lake::is_lake(dir) {
        tracing::debug!("{}: a lake, not walked", dir.display());
        return found.ignored.push(dir.to_path_buf());
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return found.files.push(Err((dir.to_path_buf(), e))),
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        match fs::metadata(&path) {
            Ok(m) if m.is_dir() => walk(&path, lake, found),
            Ok(_) if plainly_not_a_trace(&path) => {
                tracing::debug!("{}: not a trace (by its name), skipped", path.display());
                found.ignored.push(path);
            }
            Ok(m) => found.files.push(Ok(InputFile { path, size: m.len() })),
            Err(e) => found.files.push(Err((path, e))),
        }
    }
}

pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// A zstd frame's magic number (RFC 8878), little-endian.
pub fn is_zstd(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// The largest zstd window accepted: 2 GiB, zstd's own limit, so that
/// traces compressed with `--long` (windows over the default 128 MiB) read.
const ZSTD_WINDOW_LOG_MAX: u32 = 31;

type ZstdDecoder<'a, R> = zstd::stream::read::Decoder<'a, io::BufReader<R>>;

fn zstd_decoder<'a, R: Read>(inner: R) -> io::Result<ZstdDecoder<'a, R>> {
    let mut decoder = zstd::stream::read::Decoder::new(inner)?;
    decoder.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
    Ok(decoder)
}

fn zstd_reader<'a, R: Read + 'a>(inner: R) -> io::Result<Box<dyn Read + 'a>> {
    Ok(Box::new(zstd_decoder(inner)?))
}

fn inflate_zstd(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let capacity = zstd_size(bytes).unwrap_or_else(|| bytes.len().saturating_mul(12).min(1 << 30));
    let mut out = Vec::with_capacity(capacity);
    zstd_reader(bytes)?.read_to_end(&mut out)?;
    Ok(out)
}

fn is_tar_header(block: &[u8]) -> bool {
    block.len() >= 262 && &block[257..262] == b"ustar"
}

/// The bytes of a trace, decompressed if they are gzip or zstd.
pub fn decompress(bytes: &[u8]) -> io::Result<std::borrow::Cow<'_, [u8]>> {
    if is_zstd(bytes) {
        return Ok(std::borrow::Cow::Owned(inflate_zstd(bytes)?));
    }
    if !is_gzip(bytes) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let capacity = match trailer_size(bytes) {
        Some(n) => n + 1,
        None => bytes.len().saturating_mul(12).min(1 << 30),
    };
    let mut out = Vec::with_capacity(capacity);
    MultiGzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(std::borrow::Cow::Owned(out))
}

/// A trace's text, decompressed or as stored.
pub enum Text {
    /// Stored uncompressed: the bytes as read.
    Stored(Vec<u8>),
    /// Inflated into an anonymous map of the size the gzip trailer gives,
    /// so that dropping it returns the memory to the system at once (the
    /// allocator would keep it for a while, and the tables built next would
    /// come on top of it).
    Mapped { map: memmap2::MmapMut, len: usize },
    /// Inflated where the trailer's size could not be trusted.
    Inflated(Vec<u8>),
}

impl std::ops::Deref for Text {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Text::Stored(v) | Text::Inflated(v) => v,
            Text::Mapped { map, len } => &map[..*len],
        }
    }
}

/// [`decompress`] for bytes the caller gives up: compressed input is freed
/// once inflated, and stored text is handed back without a copy.
pub fn decompress_owned(bytes: Vec<u8>) -> io::Result<Text> {
    if is_zstd(&bytes) {
        return Ok(Text::Inflated(inflate_zstd(&bytes)?));
    }
    if !is_gzip(&bytes) {
        return Ok(Text::Stored(bytes));
    }
    let Some(size) = trailer_size(&bytes) else {
        return Ok(Text::Inflated(decompress(&bytes)?.into_owned()));
    };
    // One byte more than the trailer says: a full map means it lied. The
    // pages are mapped at once (one call) rather than by a fault each.
    let mut map = memmap2::MmapOptions::new().len(size + 1).populate().map_anon()?;
    let mut decoder = MultiGzDecoder::new(&bytes[..]);
    let mut len = 0;
    while len < map.len() {
        match decoder.read(&mut map[len..]) {
            Ok(0) => return Ok(Text::Mapped { map, len }),
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let mut out = map[..len].to_vec();
    drop(map);
    decoder.read_to_end(&mut out)?;
    Ok(Text::Inflated(out))
}

/// A reader of the text of gzip or zstd bytes, with the text's size as the
/// bytes state it (gzip's trailer, zstd's frame header) or, for a zstd
/// stream that does not say (one written as it was made), a guess from
/// JSON's usual ratio; `None` for other bytes, or a gzip trailer that is
/// not plausible.
pub fn inflater(bytes: &[u8]) -> io::Result<Option<(usize, Box<dyn Read + Send + '_>)>> {
    if is_gzip(bytes)
        && let Some(size) = trailer_size(bytes)
    {
        return Ok(Some((size, Box::new(MultiGzDecoder::new(bytes)))));
    }
    if is_zstd(bytes) {
        let size = zstd_size(bytes).unwrap_or_else(|| bytes.len().saturating_mul(16));
        return Ok(Some((size, Box::new(zstd_decoder(bytes)?))));
    }
    Ok(None)
}

/// The size zstd's frame header gives, where the compressor knew it (zstd's
/// CLI writes it) and it is plausible.
fn zstd_size(bytes: &[u8]) -> Option<usize> {
    zstd::zstd_safe::get_frame_content_size(bytes)
        .ok()
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= bytes.len().saturating_mul(256))
}

/// The uncompressed size a single-member gzip's trailer gives (mod 2^32),
/// where it is plausible, so that a bad trailer cannot balloon a buffer.
fn trailer_size(bytes: &[u8]) -> Option<usize> {
    let at = bytes.len().checked_sub(4)?;
    let n = u32::from_le_bytes(bytes[at..].try_into().expect("4 bytes")) as usize;
    (n >= bytes.len() && n <= bytes.len().saturating_mul(64)).then_some(n)
}

/// What a stored file turned out to be.
pub enum Contents<'a> {
    /// One trace (bytes as stored, possibly gzip).
    Single,
    /// A tar archive (optionally gzip-compressed): members follow.
    Archive(TarStream<'a>),
}

/// A tar archive read from the bytes already sniffed, then the rest of the file.
pub type TarStream<'a> = tar::Archive<Chain<Cursor<Vec<u8>>, Box<dyn Read + 'a>>>;

/// Looks at a file's first bytes (through gzip or zstd) to tell a tar
/// archive from a single trace.
pub fn open(bytes: &[u8]) -> io::Result<Contents<'_>> {
    let mut reader: Box<dyn Read> = if is_gzip(bytes) {
        Box::new(MultiGzDecoder::new(bytes))
    } else if is_zstd(bytes) {
        zstd_reader(bytes)?
    } else {
        Box::new(bytes)
    };
    let mut head = vec![0u8; 512];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            // A corrupt gzip stream is the parser's to report, with its reason.
            Err(_) => return Ok(Contents::Single),
        }
    }
    head.truncate(filled);
    if !is_tar_header(&head) {
        return Ok(Contents::Single);
    }
    Ok(Contents::Archive(tar::Archive::new(Cursor::new(head).chain(reader))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn walks_skip_non_traces_and_lakes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in [
            "a.json",
            "b.json.gz",
            "CATALOG.md",
            "plot.png",
            ".DS_Store",
            "notes.txt",
        ] {
            std::fs::write(root.join(name), b"{}").unwrap();
        }
        std::fs::create_dir_all(root.join("lake/_ingest_log")).unwrap();
        std::fs::write(root.join("lake/_ingest_log/part.parquet"), b"PAR1").unwrap();
        std::fs::create_dir_all(root.join("other/_ingest_log")).unwrap();
        std::fs::write(root.join("other/x.parquet"), b"PAR1").unwrap();
        let found = discover(&[root.to_path_buf(), root.join("notes.txt")], &root.join("lake")).unwrap();
        let files: Vec<String> = found
            .files
            .iter()
            .map(|f| {
                f.as_ref()
                    .unwrap()
                    .path
                    .strip_prefix(root)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        // A file named on the command line is tried whatever its name.
        assert_eq!(files, ["a.json", "b.json.gz", "notes.txt"]);
        let mut ignored: Vec<String> = found
            .ignored
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        ignored.sort();
        assert_eq!(
            ignored,
            [".DS_Store", "CATALOG.md", "lake", "notes.txt", "other", "plot.png"]
        );
    }

    #[test]
    fn owned_decompression_gives_the_same_text_whatever_the_trailer_says() {
        let text: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("{{\"ts\": {i}}},\n").into_bytes())
            .collect();
        let single = gz(&text);
        assert!(matches!(decompress_owned(single.clone()).unwrap(), Text::Mapped { .. }));
        assert_eq!(&*decompress_owned(single).unwrap(), &text[..]);
        // Two members: the trailer gives the second's size only, half the
        // whole, so the map fills up and inflating goes on.
        let mut two = gz(&text);
        two.extend(gz(&text));
        let both = [&text[..], &text[..]].concat();
        assert_eq!(
            trailer_size(&two),
            Some(text.len()),
            "a plausible size, and a wrong one"
        );
        assert!(matches!(decompress_owned(two.clone()).unwrap(), Text::Inflated(_)));
        assert_eq!(&*decompress_owned(two).unwrap(), &both[..]);
        assert!(matches!(decompress_owned(b"{}".to_vec()).unwrap(), Text::Stored(_)));
        let mut cut = gz(&text);
        cut.truncate(cut.len() / 2);
        assert!(decompress_owned(cut).is_err(), "a cut-off gzip is an error");
    }

    #[test]
    fn detects_by_content() {
        assert!(matches!(open(b"{\"traceEvents\": []}").unwrap(), Contents::Single));
        assert!(matches!(open(&gz(b"{}")).unwrap(), Contents::Single));
        assert_eq!(decompress(&gz(b"abc")).unwrap().as_ref(), b"abc");
        let tarball = gz(&one_member_tar("rank0.json"));
        assert_eq!(member_names(open(&tarball).unwrap()), ["rank0.json"]);
    }

    /// A tar archive of one `{}` member.
    fn one_member_tar(name: &str) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(2);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, &b"{}"[..]).unwrap();
        builder.into_inner().unwrap()
    }

    fn member_names(contents: Contents<'_>) -> Vec<String> {
        let Contents::Archive(mut a) = contents else {
            panic!("tarball not detected")
        };
        a.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn zstd_traces_and_archives_read_like_gzip_ones() {
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("{{\"ts\": {i}}},\n").into_bytes())
            .collect();
        let packed = zstd::stream::encode_all(&text[..], 3).unwrap();
        assert!(is_zstd(&packed) && !is_gzip(&packed));
        assert!(matches!(open(&packed).unwrap(), Contents::Single));
        assert_eq!(decompress(&packed).unwrap().as_ref(), &text[..]);
        assert_eq!(&*decompress_owned(packed.clone()).unwrap(), &text[..]);
        let mut cut = packed;
        cut.truncate(cut.len() / 2);
        assert!(decompress_owned(cut).is_err(), "a cut-off zstd frame is an error");

        let tarball = zstd::stream::encode_all(&one_member_tar("rank1.json")[..], 3).unwrap();
        assert_eq!(member_names(open(&tarball).unwrap()), ["rank1.json"]);
    }
}
