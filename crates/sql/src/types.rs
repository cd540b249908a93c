//! Column types and collations: what a column holds and how its values order.

use serde::{Deserialize, Serialize};

use crate::error::{SqlError, SqlResult};

/// A collation: a character set and the order of its strings.
///
/// Text is kept in UTF-8 inside fractaldb whatever the column's character
/// set (latin1 and utf8mb3 columns refuse what their set cannot hold); the
/// collation decides comparison and key order (see `collation.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Collation {
    /// Bytes compared as bytes, no padding: BINARY, VARBINARY, BLOB.
    Binary,
    Utf8mb4GeneralCi,
    Utf8mb4Bin,
    Utf8mb4UnicodeCi,
    /// MySQL 8's default; MariaDB 10.11 lacks it, dumps from MySQL 8 carry it.
    Utf8mb4_0900AiCi,
    Utf8mb3GeneralCi,
    Utf8mb3Bin,
    Latin1SwedishCi,
    Latin1Bin,
}

/// Every collation, in the order SHOW COLLATION lists them.
pub const ALL_COLLATIONS: &[Collation] = &[
    Collation::Binary,
    Collation::Latin1SwedishCi,
    Collation::Latin1Bin,
    Collation::Utf8mb3GeneralCi,
    Collation::Utf8mb3Bin,
    Collation::Utf8mb4GeneralCi,
    Collation::Utf8mb4Bin,
    Collation::Utf8mb4UnicodeCi,
    Collation::Utf8mb4_0900AiCi,
];

impl Collation {
    pub fn name(self) -> &'static str {
        match self {
            Collation::Binary => "binary",
            Collation::Utf8mb4GeneralCi => "utf8mb4_general_ci",
            Collation::Utf8mb4Bin => "utf8mb4_bin",
            Collation::Utf8mb4UnicodeCi => "utf8mb4_unicode_ci",
            Collation::Utf8mb4_0900AiCi => "utf8mb4_0900_ai_ci",
            Collation::Utf8mb3GeneralCi => "utf8mb3_general_ci",
            Collation::Utf8mb3Bin => "utf8mb3_bin",
            Collation::Latin1SwedishCi => "latin1_swedish_ci",
            Collation::Latin1Bin => "latin1_bin",
        }
    }

    pub fn charset(self) -> Charset {
        match self {
            Collation::Binary => Charset::Binary,
            Collation::Utf8mb4GeneralCi
            | Collation::Utf8mb4Bin
            | Collation::Utf8mb4UnicodeCi
            | Collation::Utf8mb4_0900AiCi => Charset::Utf8mb4,
            Collation::Utf8mb3GeneralCi | Collation::Utf8mb3Bin => Charset::Utf8mb3,
            Collation::Latin1SwedishCi | Collation::Latin1Bin => Charset::Latin1,
        }
    }

    /// The collation's number in the protocol and INFORMATION_SCHEMA.
    pub fn id(self) -> u16 {
        match self {
            Collation::Binary => 63,
            Collation::Utf8mb4GeneralCi => 45,
            Collation::Utf8mb4Bin => 46,
            Collation::Utf8mb4UnicodeCi => 224,
            Collation::Utf8mb4_0900AiCi => 255,
            Collation::Utf8mb3GeneralCi => 33,
            Collation::Utf8mb3Bin => 83,
            Collation::Latin1SwedishCi => 8,
            Collation::Latin1Bin => 47,
        }
    }

    /// True for the case-insensitive collations (their keys hold weights).
    pub fn is_ci(self) -> bool {
        self.name().ends_with("_ci")
    }

    /// Whether trailing spaces are ignored in comparisons (PAD SPACE): all
    /// but `binary`. utf8mb4_0900_ai_ci is NO PAD in MySQL 8.
    pub fn pad_space(self) -> bool {
        !matches!(self, Collation::Binary | Collation::Utf8mb4_0900AiCi)
    }

    pub fn by_name(name: &str) -> Option<Collation> {
        let n = name.to_ascii_lowercase();
        let n = n.replace("utf8_", "utf8mb3_");
        ALL_COLLATIONS.iter().copied().find(|c| c.name() == n)
    }
}

/// A character set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Charset {
    Binary,
    Utf8mb4,
    Utf8mb3,
    Latin1,
}

impl Charset {
    pub fn name(self) -> &'static str {
        match self {
            Charset::Binary => "binary",
            Charset::Utf8mb4 => "utf8mb4",
            Charset::Utf8mb3 => "utf8mb3",
            Charset::Latin1 => "latin1",
        }
    }

    pub fn default_collation(self) -> Collation {
        match self {
            Charset::Binary => Collation::Binary,
            Charset::Utf8mb4 => Collation::Utf8mb4GeneralCi,
            Charset::Utf8mb3 => Collation::Utf8mb3GeneralCi,
            Charset::Latin1 => Collation::Latin1SwedishCi,
        }
    }

    /// Most bytes one character takes.
    pub fn max_len(self) -> u64 {
        match self {
            Charset::Binary | Charset::Latin1 => 1,
            Charset::Utf8mb3 => 3,
            Charset::Utf8mb4 => 4,
        }
    }

    pub fn by_name(name: &str) -> Option<Charset> {
        match name.to_ascii_lowercase().as_str() {
            "binary" => Some(Charset::Binary),
            "utf8mb4" => Some(Charset::Utf8mb4),
            "utf8mb3" | "utf8" => Some(Charset::Utf8mb3),
            "latin1" => Some(Charset::Latin1),
            _ => None,
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Charset::Binary => "Binary pseudo charset",
            Charset::Utf8mb4 => "UTF-8 Unicode",
            Charset::Utf8mb3 => "UTF-8 Unicode",
            Charset::Latin1 => "cp1252 West European",
        }
    }
}

/// How a string column keeps its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StrKind {
    /// CHAR(n) / BINARY(n): padded to n (CHAR strips the padding on read).
    Fixed,
    /// VARCHAR(n) / VARBINARY(n).
    Var,
    /// TINYTEXT..LONGTEXT / TINYBLOB..LONGBLOB; `len` is the byte limit
    /// (255, 65535, 16777215, 4294967295).
    Lob,
}

/// The type of a column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SqlType {
    /// TINYINT (1 byte), SMALLINT (2), MEDIUMINT (3), INT (4), BIGINT (8).
    Int {
        bytes: u8,
        unsigned: bool,
    },
    /// DECIMAL(precision, scale), precision 1..=65, scale 0..=38.
    Decimal {
        precision: u8,
        scale: u8,
        unsigned: bool,
    },
    Float {
        unsigned: bool,
    },
    Double {
        unsigned: bool,
    },
    /// BIT(1..=64).
    Bit {
        bits: u8,
    },
    /// CHAR/VARCHAR/TEXT (a text collation) or BINARY/VARBINARY/BLOB
    /// (`Collation::Binary`); `len` in characters for Fixed/Var, bytes for Lob.
    Str {
        kind: StrKind,
        len: u64,
        coll: Collation,
    },
    Enum {
        values: Vec<String>,
        coll: Collation,
    },
    Set {
        values: Vec<String>,
        coll: Collation,
    },
    Date,
    Time {
        fsp: u8,
    },
    DateTime {
        fsp: u8,
    },
    Timestamp {
        fsp: u8,
    },
    Year,
    Json,
}

impl SqlType {
    pub fn int_range(bytes: u8, unsigned: bool) -> (i128, i128) {
        let bits = bytes as u32 * 8;
        if unsigned {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        }
    }

    pub fn is_string(&self) -> bool {
        matches!(self, SqlType::Str { .. } | SqlType::Enum { .. } | SqlType::Set { .. })
    }

    pub fn is_lob(&self) -> bool {
        matches!(self, SqlType::Str { kind: StrKind::Lob, .. } | SqlType::Json)
    }

    pub fn collation(&self) -> Option<Collation> {
        match self {
            SqlType::Str { coll, .. } | SqlType::Enum { coll, .. } | SqlType::Set { coll, .. } => Some(*coll),
            SqlType::Json => Some(Collation::Utf8mb4Bin),
            _ => None,
        }
    }

    pub fn is_temporal(&self) -> bool {
        matches!(
            self,
            SqlType::Date | SqlType::Time { .. } | SqlType::DateTime { .. } | SqlType::Timestamp { .. }
        )
    }

    /// The type as SHOW CREATE TABLE and INFORMATION_SCHEMA.COLUMNS.COLUMN_TYPE print it.
    pub fn column_type(&self) -> String {
        let uns = |u: bool| if u { " unsigned" } else { "" };
        match self {
            SqlType::Int { bytes, unsigned } => {
                let (name, w) = match bytes {
                    1 => ("tinyint", 4),
                    2 => ("smallint", 6),
                    3 => ("mediumint", 9),
                    4 => ("int", 11),
                    _ => ("bigint", 20),
                };
                let w = if *unsigned && *bytes != 8 { w - 1 } else { w };
                format!("{name}({w}){}", uns(*unsigned))
            }
            SqlType::Decimal { precision, scale, unsigned } => {
                format!("decimal({precision},{scale}){}", uns(*unsigned))
            }
            SqlType::Float { unsigned } => format!("float{}", uns(*unsigned)),
            SqlType::Double { unsigned } => format!("double{}", uns(*unsigned)),
            SqlType::Bit { bits } => format!("bit({bits})"),
            SqlType::Str { kind, len, coll } => {
                let bin = *coll == Collation::Binary;
                match kind {
                    StrKind::Fixed => format!("{}({len})", if bin { "binary" } else { "char" }),
                    StrKind::Var => format!("{}({len})", if bin { "varbinary" } else { "varchar" }),
                    StrKind::Lob => {
                        let size = match len {
                            0..=255 => "tiny",
                            256..=65535 => "",
                            65536..=16777215 => "medium",
                            _ => "long",
                        };
                        format!("{size}{}", if bin { "blob" } else { "text" })
                    }
                }
            }
            SqlType::Enum { values, .. } => format!("enum({})", quote_list(values)),
            SqlType::Set { values, .. } => format!("set({})", quote_list(values)),
            SqlType::Date => "date".into(),
            SqlType::Time { fsp } => with_fsp("time", *fsp),
            SqlType::DateTime { fsp } => with_fsp("datetime", *fsp),
            SqlType::Timestamp { fsp } => with_fsp("timestamp", *fsp),
            SqlType::Year => "year(4)".into(),
            SqlType::Json => "longtext".into(),
        }
    }

    /// INFORMATION_SCHEMA.COLUMNS.DATA_TYPE.
    pub fn data_type(&self) -> String {
        let t = self.column_type();
        let end = t.find(['(', ' ']).unwrap_or(t.len());
        t[..end].to_string()
    }

    /// Checks the type's own parameters (precision, lengths, fsp).
    pub fn validate(&self, col: &str) -> SqlResult<()> {
        match self {
            SqlType::Decimal { precision, scale, .. } => {
                if *precision > 65 {
                    return Err(SqlError::too_big_precision(*precision as u64, col, 65));
                }
                if scale > precision {
                    return Err(SqlError::scale_bigger_than_precision(col));
                }
                if *scale > 38 {
                    return Err(SqlError::new(
                        1425,
                        "42000",
                        format!("Too big scale {scale} specified for '{col}'. Maximum is 38"),
                    ));
                }
            }
            SqlType::Bit { bits } if *bits == 0 || *bits > 64 => {
                return Err(SqlError::too_big_field_length(col, 64));
            }
            SqlType::Str { kind: StrKind::Fixed, len, .. } if *len > 255 => {
                return Err(SqlError::too_big_field_length(col, 255));
            }
            SqlType::Str { kind: StrKind::Var, len, coll } => {
                let max = 65532 / coll.charset().max_len();
                if *len > max {
                    return Err(SqlError::too_big_field_length(col, max));
                }
            }
            SqlType::Time { fsp } | SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } if *fsp > 6 => {
                return Err(SqlError::too_big_precision(*fsp as u64, col, 6));
            }
            SqlType::Enum { values, .. } | SqlType::Set { values, .. } if values.is_empty() => {
                return Err(SqlError::syntax("')'"));
            }
            SqlType::Set { values, .. } if values.len() > 64 => {
                return Err(SqlError::new(
                    1097,
                    "HY000",
                    format!("Too many strings for column {col} and SET"),
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

fn with_fsp(name: &str, fsp: u8) -> String {
    if fsp == 0 {
        name.to_string()
    } else {
        format!("{name}({fsp})")
    }
}

fn quote_list(values: &[String]) -> String {
    values.iter().map(|v| format!("'{}'", v.replace('\'', "''"))).collect::<Vec<_>>().join(",")
}
