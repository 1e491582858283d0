//! Packet framing and compression: how encoded packets reach the file.
//!
//! A Perfetto trace file is the encoding of `Trace { repeated TracePacket packet = 1 }`, so
//! every packet is written as field 1 (tag byte `0x0a`, varint length, bytes). With compression
//! on, packets are gathered into a bundle of at most [`OutputOptions::bundle_bytes`] and the
//! bundle is written as one packet holding only `compressed_packets` (field 50): the zlib
//! stream of the bundle's framed packets, the form Perfetto's own service writes with
//! `compression_type = DEFLATE` and trace processor expands while it tokenizes. Memory holds
//! one bundle at most.

use std::io::{self, Write};

use flate2::{Compress, Compression, FlushCompress, Status};
use prost::Message;

use crate::pb::Enc;
use crate::proto::TracePacket;

/// Perfetto's limit on one `compressed_packets` packet, header included.
const MAX_COMPRESSED_PACKET: usize = 512 * 1024;

/// How packets are written.
#[derive(Debug, Clone, Copy)]
pub struct OutputOptions {
    /// Deflate bundles of packets into `compressed_packets`.
    pub compress: bool,
    /// Uncompressed bytes per bundle (clamped so a bundle always fits Perfetto's 512 KiB limit).
    pub bundle_bytes: usize,
}

/// Writes framed packets to `W`, compressed in bundles or as they come.
#[derive(Debug)]
pub struct Output<W: Write> {
    out: W,
    opts: OutputOptions,
    /// Framed packets not yet written (the current bundle).
    pending: Vec<u8>,
    /// Reused compression buffer.
    packed: Vec<u8>,
    /// The compressor, reset for each bundle (a new one per bundle allocated and zeroed its
    /// tables every time).
    deflate: Compress,
    /// Bytes written to `out`.
    written: u64,
    /// Framed packet bytes before compression.
    raw: u64,
    packets: u64,
}

impl<W: Write> Output<W> {
    /// An output on `out`.
    pub fn new(out: W, mut opts: OutputOptions) -> Self {
        // Deflate can grow incompressible input by a few bytes per 16 KiB block: stay well below.
        opts.bundle_bytes = opts.bundle_bytes.clamp(4096, MAX_COMPRESSED_PACKET - 16 * 1024);
        Self {
            out,
            opts,
            pending: Vec::with_capacity(opts.bundle_bytes + 4096),
            packed: Vec::new(),
            deflate: Compress::new(Compression::fast(), true),
            written: 0,
            raw: 0,
            packets: 0,
        }
    }

    /// Frames `packet` as `Trace.packet` and queues it.
    pub fn packet(&mut self, packet: &TracePacket) -> io::Result<()> {
        let len = packet.encoded_len();
        self.pending.push(0x0a);
        prost::encoding::encode_varint(len as u64, &mut self.pending);
        packet.encode_raw(&mut self.pending);
        self.raw += (len + 1 + prost::encoding::encoded_len_varint(len as u64)) as u64;
        self.packets += 1;
        if self.pending.len() >= self.opts.bundle_bytes {
            self.flush_bundle()?;
        }
        Ok(())
    }

    /// Queues a packet encoded by hand: `f` writes its fields (at most `bound` bytes) straight
    /// into the bundle, framed as `Trace.packet`.
    #[inline(always)]
    pub fn encoded(&mut self, bound: usize, f: impl FnOnce(&mut Enc<'_>)) -> io::Result<()> {
        let before = self.pending.len();
        // The frame: key, length (moved when 128 bytes or more: up to 3 more bytes).
        Enc::reserved(&mut self.pending, bound + 8, |e| {
            let at = e.begin(1);
            f(e);
            e.end(at);
        });
        self.raw += (self.pending.len() - before) as u64;
        self.packets += 1;
        if self.pending.len() >= self.opts.bundle_bytes {
            self.flush_bundle()?;
        }
        Ok(())
    }

    /// Writes what is queued: one compressed bundle, or the framed packets as they are.
    pub fn flush_bundle(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if !self.opts.compress {
            self.out.write_all(&self.pending)?;
            self.written += self.pending.len() as u64;
            self.pending.clear();
            return Ok(());
        }
        self.compress()?;
        // TracePacket { compressed_packets (50) = bytes }, framed as Trace.packet.
        let inner_len = 2 + prost::encoding::encoded_len_varint(self.packed.len() as u64) + self.packed.len();
        let mut tmp = Vec::with_capacity(24);
        tmp.push(0x0a);
        prost::encoding::encode_varint(inner_len as u64, &mut tmp);
        prost::encoding::encode_key(50, prost::encoding::WireType::LengthDelimited, &mut tmp);
        prost::encoding::encode_varint(self.packed.len() as u64, &mut tmp);
        self.out.write_all(&tmp)?;
        self.out.write_all(&self.packed)?;
        self.written += (tmp.len() + self.packed.len()) as u64;
        self.pending.clear();
        Ok(())
    }

    /// Deflates the bundle into `packed`, one zlib stream per bundle.
    fn compress(&mut self) -> io::Result<()> {
        self.packed.clear();
        self.deflate.reset();
        // zlib's compressBound: enough for incompressible input.
        let n = self.pending.len();
        self.packed.reserve(n + (n >> 12) + (n >> 14) + (n >> 25) + 64);
        loop {
            let done = self.deflate.total_in() as usize;
            match self.deflate.compress_vec(&self.pending[done..], &mut self.packed, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => return Ok(()),
                Ok(_) => self.packed.reserve(4096),
                Err(e) => return Err(io::Error::other(format!("failed to deflate packets: {e}"))),
            }
        }
    }

    /// Bytes written to the file so far (queued packets not included).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Framed packet bytes produced so far, before compression.
    pub fn raw_bytes(&self) -> u64 {
        self.raw
    }

    /// Packets produced so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Writes the last bundle, flushes, and returns the inner writer.
    #[cfg(test)]
    pub fn finish(self) -> io::Result<W> {
        Ok(self.finish_counted()?.0)
    }

    /// [`Output::finish`], also returning the file size.
    pub fn finish_counted(mut self) -> io::Result<(W, u64)> {
        self.flush_bundle()?;
        self.out.flush()?;
        Ok((self.out, self.written))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Trace;

    fn packet(ts: u64) -> TracePacket {
        TracePacket { timestamp: Some(ts), trusted_packet_sequence_id: Some(7), ..Default::default() }
    }

    #[test]
    fn uncompressed_output_is_a_trace_message() {
        let mut o = Output::new(Vec::new(), OutputOptions { compress: false, bundle_bytes: 0 });
        for ts in 0..3 {
            o.packet(&packet(ts)).unwrap();
        }
        let bytes = o.finish().unwrap();
        let trace = Trace::decode(bytes.as_slice()).unwrap();
        assert_eq!(trace.packet, vec![packet(0), packet(1), packet(2)]);
    }

    #[test]
    fn compressed_bundles_expand_to_the_same_packets() {
        let mut o = Output::new(Vec::new(), OutputOptions { compress: true, bundle_bytes: 4096 });
        for ts in 0..5000 {
            o.packet(&packet(ts)).unwrap();
        }
        let raw = o.raw_bytes();
        let bytes = o.finish().unwrap();
        assert!((bytes.len() as u64) < raw / 2, "{} compressed vs {raw} raw", bytes.len());
        let outer = Trace::decode(bytes.as_slice()).unwrap();
        assert!(outer.packet.len() > 1, "more than one bundle");
        let mut all = Vec::new();
        for p in outer.packet {
            let z = p.compressed_packets.expect("only bundles at top level");
            assert!(z.len() < MAX_COMPRESSED_PACKET);
            let plain = flate2::read::ZlibDecoder::new(z.as_slice());
            let plain: Vec<u8> = std::io::Read::bytes(plain).map(Result::unwrap).collect();
            all.extend(Trace::decode(plain.as_slice()).unwrap().packet);
        }
        assert_eq!(all.len(), 5000);
        assert_eq!(all[4999], packet(4999));
    }
}
