//! `Range`: an iterator over a key range of a dictionary.

use super::*;

/// An iterator over a key range of a dictionary, from [`Dictionary::range`]
/// or [`crate::Txn::range`]. Yields owned pairs; an error ends the iteration
/// after it is yielded. It reads through a [`Cursor`], so once its
/// transaction ended, its dictionary was dropped or its environment closed,
/// it yields one error and ends.
/// A bound longer than `MAX_KEY_BYTES` is such an error, the first item.
pub struct Range {
    /// A bound past the key limit, yielded as the first item.
    refused: Option<Error>,
    cursor: Cursor,
    cmp: Comparator,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
    reverse: bool,
    started: bool,
    done: bool,
}

impl Range {
    pub(crate) fn new(
        mut cursor: Cursor,
        cmp: Comparator,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        reverse: bool,
    ) -> Range {
        // Checked before the bounds are copied.
        let refused = lo.into_iter().chain(hi).find_map(|k| limits::check_key(k).err());
        let (lo, hi) = if refused.is_some() { (None, None) } else { (lo, hi) };
        // A forward range reads no further than its first key at `hi`.
        if !reverse {
            cursor.set_stop(hi);
        }
        Range {
            refused,
            cursor,
            cmp,
            lo: lo.map(|k| k.to_vec()),
            hi: hi.map(|k| k.to_vec()),
            reverse,
            started: false,
            done: false,
        }
    }

    fn step(&mut self) -> Result<bool> {
        if self.started {
            return if self.reverse { self.cursor.prev() } else { self.cursor.next() };
        }
        self.started = true;
        match (self.reverse, &self.lo, &self.hi) {
            (false, Some(lo), _) => self.cursor.seek_ge(&lo.clone()),
            (false, None, _) => self.cursor.first(),
            (true, _, None) => self.cursor.last(),
            (true, _, Some(hi)) => {
                // The last key below `hi`: seek to <= hi, step back if equal.
                let hi = hi.clone();
                let mut ok = self.cursor.seek_le(&hi)?;
                if ok && self.cursor.key().is_some_and(|k| (self.cmp)(k, &hi) == std::cmp::Ordering::Equal) {
                    ok = self.cursor.prev()?;
                }
                Ok(ok)
            }
        }
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
    }
}

impl Range {
    /// The next pair inside the range, borrowed from the cursor's batch
    /// until the next call: [`Iterator::next`] without copying the key and
    /// value (a scan that decodes each row needs no copy of it).
    pub fn next_ref(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.refused.take() {
            self.done = true;
            return Some(Err(e));
        }
        // A forward step to a pair the cursor's batch holds, short of the
        // batch's last: that pair is below `hi` without a comparison (a
        // forward batch ends at its first key at or past the cursor's
        // stop, which is `hi`: `Cursor::set_stop`), so it needs neither
        // the comparator nor its guard. Other steps take the long way.
        let ahead = self.cursor.ahead_in_batch();
        if self.started && !self.reverse && (ahead > 1 || (ahead == 1 && self.hi.is_none())) {
            if let Err(e) = self.cursor.next_in_batch() {
                self.done = true;
                return Some(Err(e));
            }
            return match (self.cursor.key(), self.cursor.value()) {
                (Some(k), Some(v)) => Some(Ok((k, v))),
                _ => None,
            };
        }
        // The bounds are compared with the dictionary's comparator, which
        // may panic: caught like the cursor's own calls.
        let tree = self.cursor.tree().clone();
        match tree.guarded_read(|| self.advance()) {
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
            Ok(false) => {
                self.done = true;
                None
            }
            // `advance` returned true only on a key with a value.
            Ok(true) => match (self.cursor.key(), self.cursor.value()) {
                (Some(k), Some(v)) => Some(Ok((k, v))),
                _ => None,
            },
        }
    }

    /// Moves to the next pair; true when the cursor is on one inside the
    /// range.
    fn advance(&mut self) -> Result<bool> {
        if !self.step()? {
            return Ok(false);
        }
        // On a key after a move that returned true.
        let (Some(k), Some(_)) = (self.cursor.key(), self.cursor.value()) else { return Ok(false) };
        let inside = if self.reverse {
            self.lo.as_ref().is_none_or(|lo| (self.cmp)(k, lo) != std::cmp::Ordering::Less)
        } else {
            self.hi.as_ref().is_none_or(|hi| (self.cmp)(k, hi) == std::cmp::Ordering::Less)
        };
        Ok(inside)
    }
}
