//! The generator behind the schema in [`super::schema`]: from one table of structs and record
//! kinds it writes the Rust types (`#[non_exhaustive]`, public fields, a builder-style setter
//! per field), the batch codec of every struct ([`Message`]), the archive's column layout
//! ([`Columns`](crate::codec::columns::Columns)), the [`super::Record`] enum with its tags, the
//! id and time visitors ([`super::IdFields`], [`super::Timed`], in `visit.rs`) and, for the
//! tests, the schema as data (`SCHEMA`, `RECORDS`: `docs/formats.md`'s record tables are
//! checked against it).
//!
//! A field line reads `name: Type = [positional] [keyed] hint`:
//! - `[positional]`: how a field of codec version 1 is written in its frozen position (`var`, `var3`,
//!   `byte`, `svar`, `dur start`, `bytes`, `f64`, `ids`, `corr`, `opt_corr`, `opt_ext`, and
//!   `group flags BIT [FIELDS]` for the optional groups behind a presence byte); `[]` for
//!   fields added later;
//! - `[keyed]`: the field's number in the keyed part (`[]` for a purely positional field). A
//!   positional struct field with a number writes the fields its struct gained later there;
//! - `hint`: the archive column hint (`time`, `corr`, `hot`, `cold`, `dur(start)`).

use crate::codec::wire::{put_key, put_len_prefixed, Cursor, WireType};

/// A struct of the schema: its positional part (codec version 1) and keyed part.
pub trait Message: Sized + Default {
    /// Writes the positional fields.
    fn put_pos(&self, o: &mut Vec<u8>);
    /// Reads the positional fields; the others are their defaults.
    fn get_pos(c: &mut Cursor<'_>) -> Self;
    /// Writes the keyed fields that differ from their defaults.
    fn put_ext(&self, o: &mut Vec<u8>);
    /// Reads keyed fields to the end of `c`, skipping unknown ones.
    fn merge_ext(&mut self, c: &mut Cursor<'_>);
}

/// The keyed part of a positional struct field, written as one keyed field of its parent.
pub trait ExtPart {
    /// Writes the keyed fields of the value, if any.
    fn put_ext_part(&self, o: &mut Vec<u8>);
    /// Reads them.
    fn merge_ext_part(&mut self, c: &mut Cursor<'_>);
}

impl<T: Message> ExtPart for T {
    fn put_ext_part(&self, o: &mut Vec<u8>) {
        self.put_ext(o);
    }
    fn merge_ext_part(&mut self, c: &mut Cursor<'_>) {
        self.merge_ext(c);
    }
}

impl<T: Message> ExtPart for Option<T> {
    fn put_ext_part(&self, o: &mut Vec<u8>) {
        if let Some(v) = self {
            v.put_ext(o);
        }
    }
    fn merge_ext_part(&mut self, c: &mut Cursor<'_>) {
        // Keyed fields of a group the positional part says is absent: read and dropped.
        self.get_or_insert_with(T::default).merge_ext(c);
    }
}

/// Writes keyed field `number` holding `v`'s keyed part; nothing when that part is empty.
pub fn put_ext_part<T: ExtPart>(o: &mut Vec<u8>, number: u32, v: &T) {
    let at = o.len();
    put_key(o, number, WireType::Len);
    let len_at = o.len();
    put_len_prefixed(o, |o| v.put_ext_part(o));
    if o.len() == len_at + 1 {
        o.truncate(at);
    }
}

/// Reads keyed field body `ty` into `v`'s keyed part.
pub fn merge_ext_part<T: ExtPart>(c: &mut Cursor<'_>, ty: u8, v: &mut T) {
    if ty != WireType::Len as u8 {
        c.skip(ty);
        return;
    }
    let body = c.bytes();
    let mut sub = Cursor::new(body);
    v.merge_ext_part(&mut sub);
    if let Some(r) = sub.bad_reason() {
        c.set_bad(r);
    }
}

/// One field's code, by role; used only by [`model_schema`].
macro_rules! schema_field {
    // ---- positional writing
    (@pos_put [], $s:ident . $f:ident, $o:ident) => {};
    (@pos_put [var], $s:ident . $f:ident, $o:ident) => {
        $crate::codec::wire::put_varint($o, $crate::codec::wire::Varint::to_var(&$s.$f))
    };
    (@pos_put [var3], $s:ident . $f:ident, $o:ident) => {
        for v in $s.$f {
            $crate::codec::wire::put_varint($o, u64::from(v));
        }
    };
    (@pos_put [byte], $s:ident . $f:ident, $o:ident) => {
        $o.push($crate::codec::wire::ByteEnum::to_u8($s.$f))
    };
    (@pos_put [svar], $s:ident . $f:ident, $o:ident) => {
        $crate::codec::wire::put_svarint($o, $s.$f)
    };
    (@pos_put [dur $start:ident], $s:ident . $f:ident, $o:ident) => {
        $crate::codec::wire::put_varint($o, $s.$f.saturating_sub($s.$start))
    };
    (@pos_put [bytes], $s:ident . $f:ident, $o:ident) => {
        $crate::codec::wire::put_bytes($o, $crate::codec::wire::ByteStr::as_wire_bytes(&$s.$f))
    };
    (@pos_put [f64], $s:ident . $f:ident, $o:ident) => {
        $o.extend_from_slice(&$s.$f.to_le_bytes())
    };
    (@pos_put [ids], $s:ident . $f:ident, $o:ident) => {{
        $crate::codec::wire::put_varint($o, $s.$f.len() as u64);
        for id in &$s.$f {
            $crate::codec::wire::put_varint($o, u64::from(id.0));
        }
    }};
    (@pos_put [opt_corr], $s:ident . $f:ident, $o:ident) => {
        $crate::model::ids::put_opt_corr($o, $s.$f)
    };
    (@pos_put [corr], $s:ident . $f:ident, $o:ident) => {
        $crate::model::ids::put_opt_corr($o, Some($s.$f))
    };
    (@pos_put [opt_ext], $s:ident . $f:ident, $o:ident) => {
        $crate::model::ids::put_opt_external($o, $s.$f)
    };
    (@pos_put [group $flags:ident $bit:literal [$($g:ident)*]], $s:ident . $f:ident, $o:ident) => {{
        let mut bits = 0u8;
        let mut i = 0u8;
        $(
            bits |= u8::from($s.$g.is_some()) << i;
            i += 1;
        )*
        let _ = i;
        $o.push(bits);
        if let Some(v) = &$s.$f {
            $crate::model::generate::Message::put_pos(v, $o);
        }
    }};
    (@pos_put [group $flags:ident $bit:literal], $s:ident . $f:ident, $o:ident) => {
        if let Some(v) = &$s.$f {
            $crate::model::generate::Message::put_pos(v, $o);
        }
    };

    // ---- positional reading: `let` statements binding the field's name
    (@pos_get [], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = Default::default();
    };
    (@pos_get [var], $f:ident : $t:ty, $c:ident) => {
        let v = $c.varint();
        let $f: $t = $crate::codec::wire::Varint::from_var(v, $c);
    };
    (@pos_get [var3], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = [$c.u32(), $c.u32(), $c.u32()];
    };
    (@pos_get [byte], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $crate::codec::wire::ByteEnum::from_u8($c.u8());
    };
    (@pos_get [svar], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $c.svarint();
    };
    (@pos_get [dur $start:ident], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $start.saturating_add($c.varint());
    };
    (@pos_get [bytes], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $crate::codec::wire::ByteStr::from_wire_bytes($c.bytes());
    };
    (@pos_get [f64], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $c.f64();
    };
    (@pos_get [ids], $f:ident : $t:ty, $c:ident) => {
        let n = $c.varint() as usize;
        // Every id takes at least one byte: refuse counts the payload cannot hold.
        let $f: $t = if n > $c.remaining() {
            $c.set_bad("id list longer than its record");
            Default::default()
        } else {
            (0..n).map(|_| $crate::model::ids::IdType::from_raw($c.u32())).collect()
        };
    };
    (@pos_get [opt_corr], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $crate::model::ids::get_opt_corr($c);
    };
    (@pos_get [corr], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $crate::model::ids::get_opt_corr($c).unwrap_or_else(|| {
            $c.set_bad("record without its required correlation id");
            Default::default()
        });
    };
    (@pos_get [opt_ext], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = $crate::model::ids::get_opt_external($c);
    };
    (@pos_get [group $flags:ident $bit:literal [$($g:ident)*]], $f:ident : $t:ty, $c:ident) => {
        let $flags = $c.u8();
        let $f: $t = ($flags & (1 << $bit) != 0).then(|| $crate::model::generate::Message::get_pos($c));
    };
    (@pos_get [group $flags:ident $bit:literal], $f:ident : $t:ty, $c:ident) => {
        let $f: $t = ($flags & (1 << $bit) != 0).then(|| $crate::model::generate::Message::get_pos($c));
    };

    // ---- keyed writing
    (@ext_put [$($p:tt)*] [], $s:ident . $f:ident, $o:ident) => {};
    (@ext_put [] [$n:literal], $s:ident . $f:ident, $o:ident) => {
        $crate::codec::wire::put_keyed($o, $n, &$s.$f)
    };
    (@ext_put [$($p:tt)+] [$n:literal], $s:ident . $f:ident, $o:ident) => {
        $crate::model::generate::put_ext_part($o, $n, &$s.$f)
    };

    // ---- keyed reading: true when `$n` is this field's number
    (@ext_get [$($p:tt)*] [], $s:ident . $f:ident, $n:ident, $ty:ident, $c:ident) => {
        false
    };
    (@ext_get [] [$num:literal], $s:ident . $f:ident, $n:ident, $ty:ident, $c:ident) => {
        if $n == $num {
            $s.$f = $c.keyed_value($ty);
            true
        } else {
            false
        }
    };
    (@ext_get [$($p:tt)+] [$num:literal], $s:ident . $f:ident, $n:ident, $ty:ident, $c:ident) => {
        if $n == $num {
            $crate::model::generate::merge_ext_part($c, $ty, &mut $s.$f);
            true
        } else {
            false
        }
    };

    // ---- archive columns
    (@col_put dur($start:ident), $s:ident . $f:ident, $row:ident) => {
        $row.push($s.$f.wrapping_sub($s.$start))
    };
    (@col_put $hint:ident, $s:ident . $f:ident, $row:ident) => {
        $crate::codec::columns::Columns::put_columns(&$s.$f, $row)
    };
    (@col_get dur($start:ident), $f:ident : $t:ty, $r:ident) => {
        let $f: $t = $start.wrapping_add($r.next_value());
    };
    (@col_get $hint:ident, $f:ident : $t:ty, $r:ident) => {
        let $f: $t = $crate::codec::columns::Columns::get_columns($r);
    };
    (@col_hints dur($start:ident), $t:ty, $out:ident) => {
        $out.push($crate::codec::columns::Hint::Hot)
    };
    (@col_hints $hint:ident, $t:ty, $out:ident) => {
        <$t as $crate::codec::columns::Columns>::hints(schema_field!(@hint $hint), $out)
    };
    // ---- the keyed wire type, for the schema's description (0 when the field has no number)
    (@wire [$($p:tt)*] [] $t:ty) => { 0 };
    (@wire [] [$n:literal] $t:ty) => { <$t as $crate::codec::wire::Wire>::TYPE as u8 };
    (@wire [$($p:tt)+] [$n:literal] $t:ty) => { $crate::codec::wire::WireType::Len as u8 };

    (@hint time) => { $crate::codec::columns::Hint::Time };
    (@hint corr) => { $crate::codec::columns::Hint::Correlation };
    (@hint hot) => { $crate::codec::columns::Hint::Hot };
    (@hint cold) => { $crate::codec::columns::Hint::Cold };
}
pub(crate) use schema_field;

/// The [`Columns`](crate::codec::columns::Columns) impl of a struct marked `[columns]`.
macro_rules! schema_columns {
    ([] $($rest:tt)*) => {};
    ([columns] $S:ident { $( $f:ident : $fty:ty = $hint:ident $(($harg:ident))? ),* }) => {
        impl $crate::codec::columns::Columns for $S {
            #[inline]
            fn put_columns(&self, row: &mut $crate::codec::columns::Row) {
                $( schema_field!(@col_put $hint $(($harg))?, self.$f, row); )*
            }
            #[inline]
            fn get_columns(r: &mut $crate::codec::columns::RowReader<'_>) -> Self {
                $( schema_field!(@col_get $hint $(($harg))?, $f: $fty, r); )*
                Self { $($f),* }
            }
            fn hints(_: $crate::codec::columns::Hint, out: &mut Vec<$crate::codec::columns::Hint>) {
                $( schema_field!(@col_hints $hint $(($harg))?, $fty, out); )*
            }
        }
    };
}
pub(crate) use schema_columns;

/// Generates the model from the schema table (see the module docs for the field syntax).
macro_rules! model_schema {
    (
        structs {
            $(
                $(#[$sattr:meta])*
                struct $S:ident [$($flag:ident)?] {
                    $(
                        $(#[$fattr:meta])*
                        $f:ident : $fty:ty = [$($pos:tt)*] [$($ext:tt)*] $hint:ident $(($harg:ident))?
                    ),* $(,)?
                }
            )*
        }
        records {
            $(
                $(#[$vattr:meta])*
                $V:ident($VS:ident) = $tag:literal $(archive $akind:literal)?
            ),* $(,)?
        }
    ) => {
        $(
            $(#[$sattr])*
            #[non_exhaustive]
            pub struct $S {
                $( $(#[$fattr])* pub $f: $fty, )*
            }

            impl $S {
                $(
                    #[doc = concat!("Sets [`", stringify!($S), "::", stringify!($f), "`] (builder style).")]
                    #[inline]
                    #[must_use]
                    pub fn $f(mut self, v: $fty) -> Self {
                        self.$f = v;
                        self
                    }
                )*
            }

            // Structs without positional (or keyed) fields leave the buffer untouched.
            #[allow(unused_variables)]
            impl $crate::model::generate::Message for $S {
                #[inline]
                fn put_pos(&self, o: &mut Vec<u8>) {
                    $( schema_field!(@pos_put [$($pos)*], self.$f, o); )*
                }
                #[inline]
                fn get_pos(c: &mut $crate::codec::wire::Cursor<'_>) -> Self {
                    $( schema_field!(@pos_get [$($pos)*], $f: $fty, c); )*
                    Self { $($f),* }
                }
                #[inline]
                fn put_ext(&self, o: &mut Vec<u8>) {
                    $( schema_field!(@ext_put [$($pos)*] [$($ext)*], self.$f, o); )*
                }
                #[inline]
                fn merge_ext(&mut self, c: &mut $crate::codec::wire::Cursor<'_>) {
                    c.keyed(|n, ty, c| {
                        $( if schema_field!(@ext_get [$($pos)*] [$($ext)*], self.$f, n, ty, c) { return true; } )*
                        let _ = (ty, &c);
                        false
                    });
                }
            }

            impl $crate::codec::wire::Wire for $S {
                const TYPE: $crate::codec::wire::WireType = $crate::codec::wire::WireType::Len;
                fn put(&self, o: &mut Vec<u8>) {
                    $crate::model::generate::Message::put_pos(self, o);
                    $crate::model::generate::Message::put_ext(self, o);
                }
                fn get(c: &mut $crate::codec::wire::Cursor<'_>) -> Self {
                    let mut v = <Self as $crate::model::generate::Message>::get_pos(c);
                    $crate::model::generate::Message::merge_ext(&mut v, c);
                    v
                }
                fn is_absent(&self) -> bool {
                    *self == Self::default()
                }
            }

            schema_columns!([$($flag)?] $S { $( $f: $fty = $hint $(($harg))? ),* });
            $crate::model::visit::schema_visit!($S { $( $f $hint $(($harg))? ),* });
        )*

        /// The schema as data, for the checks that keep its other renderings in step with it
        /// (`docs/formats.md`'s record tables: `formats_doc.rs`).
        #[cfg(test)]
        pub(crate) const SCHEMA: &[$crate::model::formats_doc::StructInfo] = &[$(
            $crate::model::formats_doc::StructInfo {
                name: stringify!($S),
                fields: &[$(
                    $crate::model::formats_doc::FieldInfo {
                        name: stringify!($f),
                        ty: stringify!($fty),
                        pos: stringify!($($pos)*),
                        keyed: stringify!($($ext)*),
                        wire: schema_field!(@wire [$($pos)*] [$($ext)*] $fty),
                    },
                )*],
            },
        )*];

        /// Every record kind: tag, name, struct.
        #[cfg(test)]
        pub(crate) const RECORDS: &[(u8, &str, &str)] = &[$(($tag, stringify!($V), stringify!($VS)),)*];

        /// Everything that travels through the plugin ABI: a definition or an event.
        ///
        /// `#[non_exhaustive]`: kinds are added over time; a sink ignores kinds it does not know.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum Record {
            $( $(#[$vattr])* $V($VS), )*
        }

        impl Record {
            /// The record's tag in the batch codec.
            pub fn tag(&self) -> u8 {
                match self {
                    $( Record::$V(_) => $tag, )*
                }
            }

            /// Writes the payload (positional then keyed fields).
            pub(crate) fn put_payload(&self, o: &mut Vec<u8>) {
                match self {
                    $( Record::$V(v) => {
                        $crate::model::generate::Message::put_pos(v, o);
                        $crate::model::generate::Message::put_ext(v, o);
                    } )*
                }
            }

            /// Reads the payload of a record with `tag`; `None` for a tag this SDK does not know.
            pub(crate) fn get_payload(tag: u8, c: &mut $crate::codec::wire::Cursor<'_>) -> Option<Self> {
                $(
                    if tag == $tag {
                        let mut v = <$VS as $crate::model::generate::Message>::get_pos(c);
                        $crate::model::generate::Message::merge_ext(&mut v, c);
                        return Some(Record::$V(v));
                    }
                )*
                None
            }

            /// Reads the payload of a record with `tag` and appends the record to `out`, built
            /// there (a `Record` is large: this saves moving it through a return value and
            /// the caller's hands); false, nothing appended, for a tag this SDK does not know.
            #[inline]
            pub(crate) fn push_payload(
                tag: u8,
                c: &mut $crate::codec::wire::Cursor<'_>,
                out: &mut Vec<Self>,
            ) -> bool {
                $(
                    if tag == $tag {
                        let mut v = <$VS as $crate::model::generate::Message>::get_pos(c);
                        $crate::model::generate::Message::merge_ext(&mut v, c);
                        out.push(Record::$V(v));
                        return true;
                    }
                )*
                false
            }

            /// The event's kind number in the archive's column layout; `None` for records the
            /// archive stores as codec bytes.
            pub fn archive_kind(&self) -> Option<u8> {
                match self {
                    $( Record::$V(_) => None $(.or(Some($akind)))?, )*
                }
            }

            /// Appends the event's columns (see [`crate::codec::columns`]) and returns its
            /// archive kind; `None` (nothing written) for records stored as codec bytes.
            #[inline]
            pub fn put_columns(&self, row: &mut $crate::codec::columns::Row) -> Option<u8> {
                match self {
                    $( $(
                        Record::$V(v) => {
                            $crate::codec::columns::Columns::put_columns(v, row);
                            Some($akind)
                        }
                    )? )*
                    _ => None,
                }
            }

            /// Rebuilds an event of archive kind `kind` from its columns.
            #[inline]
            pub fn from_columns(kind: u8, r: &mut $crate::codec::columns::RowReader<'_>) -> Option<Self> {
                $( $(
                    if kind == $akind {
                        return Some(Record::$V($crate::codec::columns::Columns::get_columns(r)));
                    }
                )? )*
                let _ = r;
                None
            }

            /// [`Record::from_columns`] onto the end of `out` (built in the vector's spare
            /// capacity: a record is large, and each move of it costs about as much as reading
            /// its columns); false, and nothing added, for an unknown kind.
            #[inline]
            pub fn push_from_columns(
                kind: u8,
                r: &mut $crate::codec::columns::RowReader<'_>,
                out: &mut Vec<Self>,
            ) -> bool {
                out.reserve(1);
                let slot = &mut out.spare_capacity_mut()[0];
                $( $(
                    if kind == $akind {
                        slot.write(Record::$V($crate::codec::columns::Columns::get_columns(r)));
                        // SAFETY: the slot after the vector's end was initialised just above,
                        // within the capacity reserved.
                        unsafe { out.set_len(out.len() + 1) };
                        return true;
                    }
                )? )*
                let _ = (r, slot);
                false
            }

            /// The column hints of archive kind `kind`, one per column.
            pub fn column_hints(kind: u8) -> Option<Vec<$crate::codec::columns::Hint>> {
                $( $(
                    if kind == $akind {
                        let mut out = Vec::new();
                        <$VS as $crate::codec::columns::Columns>::hints($crate::codec::columns::Hint::Cold, &mut out);
                        return Some(out);
                    }
                )? )*
                None
            }

            /// Every archive kind number the schema declares.
            pub fn archive_kinds() -> &'static [u8] {
                &[$($($akind,)?)*]
            }

            /// Every tag the schema declares, with the record kind's name.
            pub fn tags() -> &'static [(u8, &'static str)] {
                &[$(($tag, stringify!($V)),)*]
            }
        }
    };
}
pub(crate) use model_schema;
