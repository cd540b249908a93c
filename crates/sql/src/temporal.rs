//! Dates and times: parsing, validation, arithmetic, time zones. (Stub: helper owns it.)
use crate::value::{Temporal, TemporalKind};

/// Reads a date/datetime/time from text as MySQL does ('2024-01-31',
/// '2024-01-31 10:00:00.123', '20240131', '10:00', '1 10:00:00' ...);
/// `None` if it is not one.
pub fn parse(s: &[u8], kind: TemporalKind) -> Option<Temporal> {
    let _ = (s, kind);
    None
}
