//! Every table and file format tracecast writes, defined once.
//!
//! A table is a [`TableDef`]: its name, format version, and columns, each with
//! a type, a unit and a meaning. Arrow schemas are derived from these
//! definitions, and so is `schemas/TABLES.md` (a test keeps it current), so
//! code and documentation cannot drift apart.

pub mod collector;
mod column;
pub mod features;
pub mod hardware;
pub mod lake;
pub mod model;
pub mod plan;
pub mod predict;
pub mod public;

pub use column::{ColType, Column, Role, TableDef};

/// Every table definition, in documentation order.
pub fn all_tables() -> Vec<&'static TableDef> {
    let mut tables = lake::TABLES.to_vec();
    tables.extend_from_slice(&features::TABLES);
    tables.extend_from_slice(&predict::TABLES);
    tables.extend_from_slice(plan::TABLES);
    tables.extend_from_slice(&public::TABLES);
    tables
}

/// The Markdown reference generated from the definitions (`schemas/TABLES.md`).
pub fn markdown() -> String {
    let mut out = String::from(
        "# tracecast tables\n\n\
         Generated from `schemas/src` by `cargo test -p tracecast-schemas` \
         (the test fails when this file is stale; `UPDATE_SCHEMAS=1` rewrites it).\n\
         Times are integer nanoseconds since the Unix epoch unless a unit says otherwise.\n",
    );
    for table in all_tables() {
        out.push_str(&table.markdown());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    #[test]
    fn tables_md_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/TABLES.md");
        let generated = super::markdown();
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "schemas/TABLES.md is stale: run `UPDATE_SCHEMAS=1 cargo test -p tracecast-schemas`"
        );
    }

    #[test]
    fn every_table_has_unique_documented_columns() {
        let mut names = HashSet::new();
        for table in super::all_tables() {
            assert!(names.insert(table.name), "table {} defined twice", table.name);
            let mut cols = HashSet::new();
            for c in table.columns {
                assert!(cols.insert(c.name), "{}.{} defined twice", table.name, c.name);
                assert!(!c.doc.is_empty(), "{}.{} has no meaning", table.name, c.name);
            }
            assert_eq!(table.schema().fields().len(), table.columns.len());
        }
    }
}
