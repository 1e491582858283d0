//! Events as flat rows of integer columns, generated from the model schema: the form the
//! archive (`xpuprof-archive`) predicts and delta-encodes.
//!
//! Every field of an event whose types are all scalar maps to a fixed number of `u64` columns
//! (an `Option` to a presence column plus its value's columns, present or not), in schema order.
//! Each column carries a [`Hint`] from the schema: how the archive predicts it, and whether it
//! changes often (the archive puts those first so its "changed columns" mask stays short).

use super::wire::{unzigzag, zigzag};

/// Most columns an event kind may have (the archive's changed-columns mask is a `u64`).
pub const MAX_COLUMNS: usize = 64;

/// How a column is predicted, as the schema declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hint {
    /// A timestamp: predicted from the location's last timestamp, whatever the event kind.
    Time,
    /// A backend correlation id: predicted from the location's last one, whatever the kind.
    Correlation,
    /// Changes from event to event: predicted from the previous event of the kind, and placed
    /// early in the mask.
    Hot,
    /// Rarely changes: predicted from the previous event of the kind.
    Cold,
}

/// A row being written: the columns of one event.
#[derive(Debug, Clone)]
pub struct Row {
    /// The values; only the first [`Row::len`] are meaningful.
    pub values: [u64; MAX_COLUMNS],
    len: usize,
}

impl Default for Row {
    fn default() -> Self {
        Self { values: [0; MAX_COLUMNS], len: 0 }
    }
}

impl Row {
    /// An empty row.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of columns written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no column was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets the columns.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The columns written.
    pub fn as_slice(&self) -> &[u64] {
        &self.values[..self.len]
    }

    /// Appends a column (ignored past [`MAX_COLUMNS`]; the schema's tests keep every kind under).
    #[inline]
    pub fn push(&mut self, v: u64) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = v;
            self.len += 1;
        }
    }
}

/// A row being read.
#[derive(Debug)]
pub struct RowReader<'a> {
    values: &'a [u64],
    pos: usize,
}

impl<'a> RowReader<'a> {
    /// A reader over `values`; columns past the end read as 0.
    pub fn new(values: &'a [u64]) -> Self {
        Self { values, pos: 0 }
    }

    /// The next column.
    #[inline]
    pub fn next_value(&mut self) -> u64 {
        let v = self.values.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v
    }
}

/// A field type that maps to a fixed number of columns.
pub trait Columns: Sized {
    /// Appends the value's columns.
    fn put_columns(&self, row: &mut Row);
    /// Reads the value back. Values too large for the field (only in a corrupt archive) are
    /// truncated, never a panic.
    fn get_columns(r: &mut RowReader<'_>) -> Self;
    /// Appends one hint per column; `hint` is the field's hint from the schema.
    fn hints(hint: Hint, out: &mut Vec<Hint>);
}

/// Implements [`Columns`] for types that are one column through `as`-style conversions.
macro_rules! one_column {
    ($($t:ty: |$v:ident| $to:expr, |$w:ident| $from:expr;)*) => {$(
        impl Columns for $t {
            #[inline]
            fn put_columns(&self, row: &mut Row) {
                let $v = *self;
                row.push($to);
            }
            #[inline]
            fn get_columns(r: &mut RowReader<'_>) -> Self {
                let $w = r.next_value();
                $from
            }
            fn hints(hint: Hint, out: &mut Vec<Hint>) {
                out.push(hint);
            }
        }
    )*};
}
pub(crate) use one_column;

one_column! {
    u64: |v| v, |w| w;
    u32: |v| u64::from(v), |w| w as u32;
    u16: |v| u64::from(v), |w| w as u16;
    u8: |v| u64::from(v), |w| w as u8;
    bool: |v| u64::from(v), |w| w != 0;
    i64: |v| zigzag(v), |w| unzigzag(w);
    f64: |v| v.to_bits(), |w| f64::from_bits(w);
}

impl Columns for [u32; 3] {
    fn put_columns(&self, row: &mut Row) {
        for v in self {
            row.push(u64::from(*v));
        }
    }
    fn get_columns(r: &mut RowReader<'_>) -> Self {
        [r.next_value() as u32, r.next_value() as u32, r.next_value() as u32]
    }
    fn hints(hint: Hint, out: &mut Vec<Hint>) {
        out.extend([hint; 3]);
    }
}

impl<T: Columns + Default> Columns for Option<T> {
    #[inline]
    fn put_columns(&self, row: &mut Row) {
        row.push(u64::from(self.is_some()));
        match self {
            Some(v) => v.put_columns(row),
            None => T::default().put_columns(row),
        }
    }
    #[inline]
    fn get_columns(r: &mut RowReader<'_>) -> Self {
        let present = r.next_value() != 0;
        let v = T::get_columns(r);
        present.then_some(v)
    }
    fn hints(hint: Hint, out: &mut Vec<Hint>) {
        out.push(Hint::Cold);
        T::hints(hint, out);
    }
}
