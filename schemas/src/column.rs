use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

/// The column types tracecast uses. A closed set keeps definitions `const`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Bool,
    Int32,
    Int64,
    UInt64,
    Float64,
    Utf8,
    /// A list of strings.
    ListUtf8,
    /// A list of integers (one tensor shape).
    ListInt64,
    /// A list of integer lists (tensor shapes).
    ListListInt64,
}

impl ColType {
    /// A single integer per row (not a list).
    pub fn is_flat_integer(self) -> bool {
        matches!(self, ColType::Int32 | ColType::Int64 | ColType::UInt64)
    }

    pub fn to_arrow(self) -> DataType {
        match self {
            ColType::Bool => DataType::Boolean,
            ColType::Int32 => DataType::Int32,
            ColType::Int64 => DataType::Int64,
            ColType::UInt64 => DataType::UInt64,
            ColType::Float64 => DataType::Float64,
            ColType::Utf8 => DataType::Utf8,
            ColType::ListUtf8 => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            ColType::ListInt64 => DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            ColType::ListListInt64 => DataType::List(Arc::new(Field::new(
                "item",
                DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
                true,
            ))),
        }
    }

    fn sql_name(self) -> &'static str {
        match self {
            ColType::Bool => "BOOLEAN",
            ColType::Int32 => "INT",
            ColType::Int64 => "BIGINT",
            ColType::UInt64 => "BIGINT UNSIGNED",
            ColType::Float64 => "DOUBLE",
            ColType::Utf8 => "VARCHAR",
            ColType::ListUtf8 => "LIST<VARCHAR>",
            ColType::ListInt64 => "LIST<BIGINT>",
            ColType::ListListInt64 => "LIST<LIST<BIGINT>>",
        }
    }
}

/// One column: the single definition every reader and writer uses.
#[derive(Debug)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColType,
    pub nullable: bool,
    /// Unit of the value (`ns`, `bytes`, `count`, ...), or `""` where none applies.
    pub unit: &'static str,
    pub doc: &'static str,
    /// Holds few distinct values (codes, launch configurations): files we
    /// write store it dictionary-encoded, which makes them smaller.
    pub few_values: bool,
    /// What a model reading the table may do with the column.
    pub role: Role,
    /// Grows with the batch size under a batch-size what-if (work and
    /// launch sizes of forward and backward operators).
    pub batch_scaled: bool,
}

/// A column's part in a table a model reads (the feature tables); other
/// tables' columns keep the default, [`Role::Value`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A value of the row: a predictor input where a model reads the table.
    Value,
    /// Names the row (trace, step, window): never an input.
    Identifier,
    /// What the model learns to predict.
    Target,
    /// Timed on the recorded GPU: it describes a trace but is never a
    /// predictor input (its doc says *Measured*, for readers of TABLES.md).
    Measured,
    /// Describes the recorded GPU by name or count; the hardware profile's
    /// figures are the inputs instead, so that another GPU can replace them.
    RecordedHardware,
    /// Describes an operator for the op model's what-ifs (`predict`), not a
    /// window-model input: the window model learns from FLOPs and bytes.
    OpModelOnly,
}

impl Column {
    pub const fn few_values(self) -> Column {
        Column {
            few_values: true,
            ..self
        }
    }

    pub const fn measured(self) -> Column {
        Column {
            role: Role::Measured,
            ..self
        }
    }

    pub const fn identifier(self) -> Column {
        Column {
            role: Role::Identifier,
            ..self
        }
    }

    pub const fn target(self) -> Column {
        Column {
            role: Role::Target,
            ..self
        }
    }

    pub const fn recorded_hardware(self) -> Column {
        Column {
            role: Role::RecordedHardware,
            ..self
        }
    }

    pub const fn op_model_only(self) -> Column {
        Column {
            role: Role::OpModelOnly,
            ..self
        }
    }

    pub const fn batch_scaled(self) -> Column {
        Column {
            batch_scaled: true,
            ..self
        }
    }
}

/// Shorthand constructors keep the table definitions readable.
pub const fn req(name: &'static str, ty: ColType, unit: &'static str, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: false,
        unit,
        doc,
        few_values: false,
        role: Role::Value,
        batch_scaled: false,
    }
}

pub const fn opt(name: &'static str, ty: ColType, unit: &'static str, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: true,
        unit,
        doc,
        few_values: false,
        role: Role::Value,
        batch_scaled: false,
    }
}

/// A table (or columnar file format) with a version that changes whenever
/// a column is added, removed or changes meaning.
#[derive(Debug)]
pub struct TableDef {
    pub name: &'static str,
    pub version: u32,
    pub doc: &'static str,
    pub columns: &'static [Column],
}

impl TableDef {
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(c.name, c.ty.to_arrow(), c.nullable))
            .collect();
        let metadata = [
            ("tracecast.table".to_string(), self.name.to_string()),
            ("tracecast.version".to_string(), self.version.to_string()),
        ];
        Arc::new(Schema::new_with_metadata(fields, metadata.into_iter().collect()))
    }

    /// A batch of this table from columns given by name, in any order:
    /// every column of the definition must be given once, with its type.
    pub fn batch(&self, columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, String> {
        let mut by_name: std::collections::HashMap<&str, ArrayRef> = std::collections::HashMap::new();
        for (name, array) in columns {
            if self.columns.iter().all(|c| c.name != name) {
                return Err(format!("table {} has no column {name}", self.name));
            }
            if by_name.insert(name, array).is_some() {
                return Err(format!("column {}.{name} given twice", self.name));
            }
        }
        let arrays = self
            .columns
            .iter()
            .map(|c| {
                by_name
                    .remove(c.name)
                    .ok_or_else(|| format!("column {}.{} not given", self.name, c.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(self.schema(), arrays).map_err(|e| format!("table {}: {e}", self.name))
    }

    /// Position of a column, for writers that fill columns by index.
    pub fn index_of(&self, name: &str) -> usize {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("table {} has no column {name}", self.name))
    }

    pub fn markdown(&self) -> String {
        let mut out = format!("\n## `{}` (version {})\n\n{}\n\n", self.name, self.version, self.doc);
        out.push_str("| column | type | null | unit | meaning |\n|---|---|---|---|---|\n");
        for c in self.columns {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                c.name,
                c.ty.sql_name(),
                if c.nullable { "yes" } else { "no" },
                c.unit,
                c.doc
            ));
        }
        out
    }
}
