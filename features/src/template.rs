//! The feature SQL files and the small template language they use
//! (documented at the top of `sql/01_selection.sql`).

use std::path::Path;

use tracecast_schemas::features::{FAMILIES, PHASES};

use crate::{FeaturesError, WindowSpec};

/// The built-in pipeline, in the order it runs. `05_steps.sql` runs after
/// the windows are written (it reads them back).
pub const BUILT_IN: [(&str, &str); 5] = [
    ("01_selection.sql", include_str!("../sql/01_selection.sql")),
    ("02_op_phase.sql", include_str!("../sql/02_op_phase.sql")),
    ("03_items.sql", include_str!("../sql/03_items.sql")),
    ("04_windows.sql", include_str!("../sql/04_windows.sql")),
    ("05_steps.sql", include_str!("../sql/05_steps.sql")),
];

/// The pipeline's SQL files: the built-in ones, or the same names read from
/// `dir` (a copy of `features/sql/` a data engineer edited).
pub fn load(dir: Option<&Path>) -> Result<Vec<(String, String)>, FeaturesError> {
    BUILT_IN
        .iter()
        .map(|(name, text)| match dir {
            None => Ok((name.to_string(), text.to_string())),
            Some(dir) => {
                let path = dir.join(name);
                std::fs::read_to_string(&path)
                    .map(|text| (name.to_string(), text))
                    .map_err(|source| FeaturesError::Io {
                        path: path.display().to_string(),
                        source,
                    })
            }
        })
        .collect()
}

/// What edited copies of older versions of the files may still use, and
/// what replaced it.
const WINDOW_AGGREGATES: &str = "a step's windows come from the aggregates window_positions, window_sum and \
     central_sum (see the built-in 04_windows.sql)";
const RETIRED: [(&str, &str); 4] = [
    ("SUM_POSITIONS(", WINDOW_AGGREGATES),
    ("SUM_CENTRAL(", WINDOW_AGGREGATES),
    ("{{off}}", WINDOW_AGGREGATES),
    (
        "fx_selected",
        "the group's traces are those for which selected_trace_key(trace_id) is not null \
         (see the built-in 01_selection.sql)",
    ),
];

const BEGIN: &str = "-- @each position";
const END: &str = "-- @end";

/// Expands one file for a window spec: drops comment lines, repeats
/// `@each position` blocks, fills in the values.
pub fn expand(name: &str, text: &str, spec: &WindowSpec) -> Result<String, FeaturesError> {
    if let Some((old, now)) = RETIRED.iter().find(|(old, _)| text.contains(*old)) {
        return Err(template_error(
            name,
            &format!(
                "`{old}` is no longer part of the pipeline: {now}; `tracecast features --print-sql` \
                 prints the current files"
            ),
        ));
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut block: Option<Vec<&str>> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed == BEGIN {
            block = Some(Vec::new());
        } else if trimmed == END {
            let lines = block
                .take()
                .ok_or_else(|| template_error(name, "`-- @end` without `-- @each position`"))?;
            for p in 0..spec.window {
                for l in &lines {
                    out.push_str(&l.replace("{{p}}", &format!("{p:02}")));
                    out.push('\n');
                }
            }
        } else if trimmed.starts_with("--") {
            continue;
        } else if let Some(lines) = block.as_mut() {
            lines.push(line);
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if block.is_some() {
        return Err(template_error(name, "`-- @each position` without `-- @end`"));
    }
    let mut out = out
        .replace("{{W}}", &spec.window.to_string())
        .replace("{{S}}", &spec.stride.to_string())
        .replace("{{PAD}}", &spec.pad().to_string());
    // Codes come from the one list in `schemas`, never written as numbers.
    for (kind, names) in [("family", &FAMILIES[..]), ("phase", &PHASES[..])] {
        for (code, name) in names.iter().enumerate() {
            out = out.replace(&format!("{{{{{kind}:{name}}}}}"), &code.to_string());
        }
    }
    if let Some(at) = out.find("{{") {
        let rest: String = out[at..].chars().take(24).collect();
        return Err(template_error(name, &format!("unknown template value at `{rest}`")));
    }
    Ok(out)
}

fn template_error(file: &str, reason: &str) -> FeaturesError {
    FeaturesError::Template {
        file: file.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_file_expands_fully() {
        let spec = WindowSpec::new(16, 4).unwrap();
        for (name, text) in BUILT_IN {
            let sql = expand(name, text, &spec).unwrap();
            assert!(!sql.contains("{{"), "{name}");
        }
        let windows = expand("04", BUILT_IN[3].1, &spec).unwrap();
        assert!(windows.contains(", gap_ns_at['p00'] AS p00_gap_ns"));
        assert!(windows.contains("gap_ns_at['p15'] AS p15_gap_ns"));
        assert!(!windows.contains("p16_"));
        assert!(windows.contains("window_index * 4 AS first_item"));
        // Family codes are the schemas' list positions.
        assert!(windows.contains("CAST(i.family = 0 AS BIGINT), i.seq)              AS count_gemm"));
        assert!(windows.contains("CAST(i.family = 10 AS BIGINT), i.seq)             AS count_other"));
        let items = expand("03", BUILT_IN[2].1, &spec).unwrap();
        assert!(items.contains("THEN 7\n"), "copies are copy_memset (7)");
        assert!(items.contains("WHEN w.phase = 2 OR w.name_family = 9 THEN 9"));
    }

    #[test]
    fn broken_templates_name_the_file() {
        let spec = WindowSpec::new(4, 2).unwrap();
        let err = expand("x.sql", "SELECT {{Q}}", &spec).unwrap_err().to_string();
        assert!(err.contains("x.sql") && err.contains("{{Q}}"), "{err}");
        let err = expand("y.sql", "-- @each position\nSELECT 1", &spec)
            .unwrap_err()
            .to_string();
        assert!(err.contains("y.sql"), "{err}");
        let err = expand("z.sql", "SELECT SUM_CENTRAL(contrib{{p}})", &spec)
            .unwrap_err()
            .to_string();
        assert!(err.contains("z.sql") && err.contains("central_sum"), "{err}");
        let err = expand("01.sql", "SELECT * FROM fx_selected", &spec)
            .unwrap_err()
            .to_string();
        assert!(err.contains("selected_trace_key"), "{err}");
        let err = expand("f.sql", "SELECT {{family:gemmm}}", &spec)
            .unwrap_err()
            .to_string();
        assert!(err.contains("f.sql") && err.contains("{{family:gemmm}}"), "{err}");
    }
}
