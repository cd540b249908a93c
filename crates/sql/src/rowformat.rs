//! Compression per table: `ROW_FORMAT=` of CREATE / ALTER TABLE and the
//! `tokudb_row_format` variable, as TokuDB had them.
//!
//! A table's rows are compressed by the engine, one codec per dictionary
//! (`fractaldb::Codec`). Every dictionary of a table (main, status, each
//! secondary index) is created with the codec its `TableDef::codec` names,
//! so the record says how the table is stored and a rebuild (ALTER's copy,
//! TRUNCATE) keeps it.
//!
//! Names (case-insensitive, unquoted words: anything else is MariaDB's 1064,
//! `lex.rs` checks it where the statement is still text):
//! - TokuDB's: TOKUDB_UNCOMPRESSED (none), TOKUDB_ZLIB, TOKUDB_SNAPPY,
//!   TOKUDB_LZMA, TOKUDB_QUICKLZ (lz4: QuickLZ's role, fast and light),
//!   TOKUDB_FAST (lz4, as FAST was QuickLZ), TOKUDB_SMALL (lzma),
//!   TOKUDB_DEFAULT (zstd, our default where TokuDB's was zlib), and ours,
//!   TOKUDB_ZSTD and TOKUDB_LZ4.
//! - MySQL's (InnoDB / Aria dumps carry them): COMPRESSED is zstd (a table
//!   asked to be compressed is, whatever `tokudb_row_format` says);
//!   DYNAMIC, COMPACT, REDUNDANT, FIXED, PAGE take `tokudb_row_format`'s
//!   codec, as DEFAULT and no ROW_FORMAT do.
//!
//! Block sizes: `tokudb_block_size` (the node size), `tokudb_read_block_size`
//! (the basement: what a point read of an evicted leaf reads and
//! decompresses; larger ones compress better) and `tokudb_fanout`, as the
//! session has them at CREATE TABLE, are the table's (`TableDef::node_bytes`,
//! `basement_bytes`, `fanout`) for every dictionary it ever gets, as the
//! codec is. TokuDB read them at every dictionary's creation; its defaults
//! were 4 MiB and 64 KiB, the engine's are 1 MiB and 8 KiB.
//!
//! What is shown: SHOW CREATE TABLE and Create_options give the name as it
//! was declared (upper case; nothing for DEFAULT, as MariaDB), Row_format
//! the codec in use as TokuDB's name (`tokudb_zstd`, ...).

use fractaldb::{Codec, DictOptions};

use crate::catalog::TableDef;
use crate::error::{SqlError, SqlResult};
use crate::value::Value;

/// Every name ROW_FORMAT takes, upper case, with its codec (`None`: the
/// codec `tokudb_row_format` names).
const NAMES: &[(&str, Option<Codec>)] = &[
    ("DEFAULT", None),
    ("DYNAMIC", None),
    ("FIXED", None),
    ("COMPACT", None),
    ("REDUNDANT", None),
    ("PAGE", None),
    ("COMPRESSED", Some(Codec::Zstd)),
    ("TOKUDB_UNCOMPRESSED", Some(Codec::None)),
    ("TOKUDB_ZLIB", Some(Codec::Zlib)),
    ("TOKUDB_SNAPPY", Some(Codec::Snappy)),
    ("TOKUDB_QUICKLZ", Some(Codec::Lz4)),
    ("TOKUDB_LZMA", Some(Codec::Lzma)),
    ("TOKUDB_FAST", Some(Codec::Lz4)),
    ("TOKUDB_SMALL", Some(Codec::Lzma)),
    ("TOKUDB_DEFAULT", Some(Codec::Zstd)),
    ("TOKUDB_ZSTD", Some(Codec::Zstd)),
    ("TOKUDB_LZ4", Some(Codec::Lz4)),
];

/// The values of `tokudb_row_format`, in TokuDB's order (SET by number
/// counts from 0 here), ours last.
pub const VAR_VALUES: &[&str] = &[
    "tokudb_uncompressed",
    "tokudb_zlib",
    "tokudb_snappy",
    "tokudb_quicklz",
    "tokudb_lzma",
    "tokudb_fast",
    "tokudb_small",
    "tokudb_default",
    "tokudb_zstd",
    "tokudb_lz4",
];

/// `tokudb_row_format`'s built-in default.
pub const VAR_DEFAULT: &str = "tokudb_zstd";

/// Whether `word` is a name ROW_FORMAT takes.
pub fn is_name(word: &str) -> bool {
    NAMES.iter().any(|(n, _)| n.eq_ignore_ascii_case(word))
}

/// A ROW_FORMAT as a table records it: the declared name (upper case, ""
/// for DEFAULT, which MariaDB does not keep) and the codec it stores the
/// rows with, `default` (the session's `tokudb_row_format`) for the names
/// that leave it open. An unknown name is 1064, as MariaDB's parser says.
pub fn resolve(name: &str, default: Codec) -> SqlResult<(String, Codec)> {
    let (n, codec) = NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .ok_or_else(|| SqlError::syntax(format!("'{name}' at line 1")))?;
    let declared = if *n == "DEFAULT" { String::new() } else { n.to_string() };
    Ok((declared, codec.unwrap_or(default)))
}

/// The codec of a `tokudb_row_format` value (one of [`VAR_VALUES`]).
pub fn var_codec(v: &str) -> Codec {
    match v.to_ascii_lowercase().as_str() {
        "tokudb_uncompressed" => Codec::None,
        "tokudb_zlib" => Codec::Zlib,
        "tokudb_snappy" => Codec::Snappy,
        "tokudb_quicklz" | "tokudb_fast" | "tokudb_lz4" => Codec::Lz4,
        "tokudb_lzma" | "tokudb_small" => Codec::Lzma,
        _ => Codec::Zstd,
    }
}

/// A value SET (or the configuration) gives `tokudb_row_format`: one of
/// [`VAR_VALUES`] by name (any case) or by number, stored lower case; else
/// 1231, and 1232 for a number that is not an integer (MariaDB's checks of
/// an ENUM variable).
pub fn check_var(v: &Value) -> SqlResult<Value> {
    let bad = || SqlError::wrong_value_for_var("tokudb_row_format", &v.render());
    let name = match v {
        Value::Str(s) => {
            let s = String::from_utf8_lossy(s);
            VAR_VALUES.iter().find(|n| n.eq_ignore_ascii_case(&s)).ok_or_else(bad)?
        }
        Value::Int(i) => usize::try_from(*i).ok().and_then(|i| VAR_VALUES.get(i)).ok_or_else(bad)?,
        Value::UInt(u) => usize::try_from(*u).ok().and_then(|i| VAR_VALUES.get(i)).ok_or_else(bad)?,
        Value::Null => return Err(bad()),
        _ => {
            return Err(SqlError::new(
                1232,
                "42000",
                "Incorrect argument type to variable 'tokudb_row_format'",
            ))
        }
    };
    Ok(Value::str(*name))
}

/// The codec a table's record names. Records written before tables had a
/// codec hold "zstd" (the serde default): the codec every dictionary was
/// created with then.
pub fn codec(def: &TableDef) -> Codec {
    let c = Codec::from_name(&def.codec);
    debug_assert!(c.is_some(), "a table's record names an engine codec: {:?}", def.codec);
    c.unwrap_or(Codec::Zstd)
}

/// The settings every dictionary of `def` is created with: its codec and
/// block sizes (the engine's defaults where the record has none). A
/// basement larger than the node is the node: TokuDB took any pair.
pub fn dict_options(def: &TableDef) -> DictOptions {
    let d = DictOptions::default();
    let or_default = |v: u32, dflt: usize| if v == 0 { dflt } else { v as usize };
    let node_size_bytes = or_default(def.node_bytes, d.node_size_bytes);
    DictOptions {
        codec: codec(def),
        node_size_bytes,
        basement_size_bytes: or_default(def.basement_bytes, d.basement_size_bytes).min(node_size_bytes),
        fanout: or_default(def.fanout, d.fanout),
        ..d
    }
}

/// `serde`'s test for the numbers a record leaves out when 0 (block
/// sizes, `carry_form`, `row_form`).
pub(crate) fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// The codec as Row_format shows it: TokuDB's name for it.
pub fn shown(codec: Codec) -> &'static str {
    match codec {
        Codec::None => "tokudb_uncompressed",
        Codec::Zstd => "tokudb_zstd",
        Codec::Lz4 => "tokudb_lz4",
        Codec::Snappy => "tokudb_snappy",
        Codec::Zlib => "tokudb_zlib",
        Codec::Lzma => "tokudb_lzma",
    }
}

/// The serde default of `TableDef::codec`.
pub(crate) fn old_records_codec() -> String {
    Codec::Zstd.name().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_their_codecs() {
        assert_eq!(resolve("tokudb_zlib", Codec::None).unwrap(), ("TOKUDB_ZLIB".into(), Codec::Zlib));
        assert_eq!(resolve("Dynamic", Codec::Lzma).unwrap(), ("DYNAMIC".into(), Codec::Lzma));
        assert_eq!(resolve("default", Codec::Snappy).unwrap(), (String::new(), Codec::Snappy));
        assert_eq!(resolve("COMPRESSED", Codec::None).unwrap().1, Codec::Zstd);
        assert_eq!(resolve("bogus", Codec::Zstd).unwrap_err().code, 1064);
        // Every variable value names a codec, and the default is one of them.
        assert!(VAR_VALUES.contains(&VAR_DEFAULT));
        for v in VAR_VALUES {
            assert_eq!(var_codec(v), resolve(v, Codec::None).unwrap().1, "{v}");
        }
    }

    #[test]
    fn the_variable_takes_names_and_numbers() {
        assert_eq!(check_var(&Value::str("TOKUDB_LZMA")).unwrap().render(), "tokudb_lzma");
        assert_eq!(check_var(&Value::Int(1)).unwrap().render(), "tokudb_zlib");
        assert_eq!(check_var(&Value::Int(10)).unwrap_err().code, 1231);
        assert_eq!(check_var(&Value::str("zstd")).unwrap_err().code, 1231);
        assert_eq!(check_var(&Value::Null).unwrap_err().code, 1231);
        assert_eq!(check_var(&Value::Double(1.5)).unwrap_err().code, 1232);
    }

    /// A record written before tables had a row format reads as what its
    /// dictionaries are: zstd, no declared ROW_FORMAT.
    #[test]
    fn old_catalog_records_load() {
        let rec = r#"{"id":7,"db":"d","name":"t","columns":[],"primary":null,"indexes":[],
            "main_dict":"d/t/main","status_dict":"d/t/status","collation":"Utf8mb4GeneralCi",
            "comment":"","auto_increment_start":1,"schema_version":1,"created":0}"#;
        let def: TableDef = serde_json::from_str(rec).unwrap();
        assert_eq!(def.row_format, "");
        assert_eq!(codec(&def), Codec::Zstd);
        // No block sizes: the engine's defaults.
        assert_eq!((def.node_bytes, def.basement_bytes, def.fanout), (0, 0, 0));
        assert_eq!(dict_options(&def), DictOptions::default());
        assert!(!serde_json::to_string(&def).unwrap().contains("fanout"));
    }

    /// The block-size variables' defaults are the engine's, so a table
    /// created with them gets what the engine would pick, and their bounds
    /// are within the engine's.
    #[test]
    fn block_size_variables_match_the_engine() {
        let d = DictOptions::default();
        let var = |name: &str| crate::sysvars::def(name).unwrap();
        for (name, engine) in [
            ("tokudb_block_size", d.node_size_bytes),
            ("tokudb_read_block_size", d.basement_size_bytes),
            ("tokudb_fanout", d.fanout),
        ] {
            assert_eq!(var(name).default, engine.to_string(), "{name}");
        }
        let crate::sysvars::Kind::Int(lo, hi) = var("tokudb_block_size").kind else { panic!() };
        assert!(lo as usize >= fractaldb::MIN_NODE_BYTES && hi as usize <= fractaldb::MAX_NODE_BYTES);
        let crate::sysvars::Kind::Int(lo, _) = var("tokudb_read_block_size").kind else { panic!() };
        assert!(lo as usize >= fractaldb::MIN_BASEMENT_BYTES);
        let crate::sysvars::Kind::Int(lo, hi) = var("tokudb_fanout").kind else { panic!() };
        assert!(lo as usize >= fractaldb::MIN_FANOUT && hi as usize <= fractaldb::MAX_FANOUT);
    }
}
