//! Little-endian reading of message payloads.

/// Little-endian reader over a payload; reads past the end give 0 and set `short`.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    /// A read went past the end.
    pub short: bool,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from the start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, at: 0, short: false }
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    /// Current offset.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        if self.remaining() < n {
            self.short = true;
            self.at = self.buf.len();
            return &[];
        }
        let b = &self.buf[self.at..self.at + n];
        self.at += n;
        b
    }

    /// Skips to the next multiple of 8.
    pub fn align8(&mut self) {
        let pad = (8 - self.at % 8) % 8;
        self.bytes(pad);
    }

    /// A `u8`.
    pub fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }

    /// A `u16`.
    pub fn u16(&mut self) -> u16 {
        self.bytes(2).try_into().map(u16::from_le_bytes).unwrap_or(0)
    }

    /// A `u32`.
    pub fn u32(&mut self) -> u32 {
        self.bytes(4).try_into().map(u32::from_le_bytes).unwrap_or(0)
    }

    /// A `u64`.
    pub fn u64(&mut self) -> u64 {
        self.bytes(8).try_into().map(u64::from_le_bytes).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::Reader;

    #[test]
    fn reads_little_endian_and_flags_short_reads() {
        let mut r = Reader::new(&[1, 2, 0, 3, 0, 0, 0, 9]);
        assert_eq!((r.u8(), r.u16(), r.u32()), (1, 2, 3));
        assert!(!r.short);
        assert_eq!(r.u64(), 0);
        assert!(r.short);
        assert_eq!(r.remaining(), 0);
    }
}
