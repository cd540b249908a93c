//! Packet framing: a 3-byte little-endian length and a sequence id before
//! each payload; payloads of 16 MiB - 1 and more go in chunks of 0xffffff
//! bytes, ended by a shorter chunk (maybe empty), and are joined on read.

use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The largest chunk: a payload this long continues in the next packet.
pub const MAX_CHUNK: usize = 0xff_ffff;

/// A client's socket, TCP or Unix.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    /// Ends both directions: the connection's thread sees its next read
    /// fail (KILL CONNECTION, server shutdown).
    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }

    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(d),
            Stream::Unix(s) => s.set_read_timeout(d),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// Why no packet could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The client closed the connection between packets.
    Closed,
    Io(io::Error),
    /// The payload is longer than max_allowed_packet (error 1153). The
    /// rest of it was not read.
    TooLarge,
    /// The sequence id is not the next one (error 1156).
    OutOfOrder,
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// One connection's packets in both directions. Replies are gathered in a
/// buffer and written by [`PacketIo::flush`] once per command (or when the
/// buffer grows past 1 MiB, for large result sets).
pub struct PacketIo {
    reader: BufReader<Stream>,
    writer: Stream,
    out: Vec<u8>,
    /// The sequence id the next packet, either way, carries.
    pub seq: u8,
    /// Bytes read and queued for writing (headers included), for SHOW
    /// STATUS Bytes_received / Bytes_sent.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

const FLUSH_AT: usize = 1 << 20;

impl PacketIo {
    pub fn new(stream: Stream) -> io::Result<PacketIo> {
        let writer = stream.try_clone()?;
        Ok(PacketIo {
            reader: BufReader::with_capacity(64 << 10, stream),
            writer,
            out: Vec::new(),
            seq: 0,
            bytes_in: 0,
            bytes_out: 0,
        })
    }

    pub fn stream(&self) -> &Stream {
        &self.writer
    }

    /// Reads one logical packet (chunks joined). At most `max` bytes of
    /// payload are accepted.
    pub fn read_packet(&mut self, max: usize) -> Result<Vec<u8>, ReadError> {
        let mut payload = Vec::new();
        let mut first = true;
        loop {
            let mut hdr = [0u8; 4];
            if first {
                // A clean close is only one before any byte of a packet.
                let n = read_some(&mut self.reader, &mut hdr)?;
                if n == 0 {
                    return Err(ReadError::Closed);
                }
                self.reader.read_exact(&mut hdr[n..])?;
            } else {
                self.reader.read_exact(&mut hdr)?;
            }
            first = false;
            let len = hdr[0] as usize | (hdr[1] as usize) << 8 | (hdr[2] as usize) << 16;
            if hdr[3] != self.seq {
                return Err(ReadError::OutOfOrder);
            }
            self.seq = self.seq.wrapping_add(1);
            if payload.len() + len > max {
                return Err(ReadError::TooLarge);
            }
            let at = payload.len();
            payload.resize(at + len, 0);
            self.reader.read_exact(&mut payload[at..])?;
            self.bytes_in += 4 + len as u64;
            if len < MAX_CHUNK {
                return Ok(payload);
            }
        }
    }

    /// Queues one logical packet, split in chunks as needed.
    pub fn write_packet(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_CHUNK);
            self.out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            self.out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.out.extend_from_slice(&rest[..n]);
            self.bytes_out += 4 + n as u64;
            rest = &rest[n..];
            // A chunk of exactly MAX_CHUNK bytes says "more follows": a
            // payload that is a multiple of it ends with an empty chunk.
            if n < MAX_CHUNK {
                break;
            }
        }
        if self.out.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.writer.write_all(&self.out)?;
            self.out.clear();
        }
        self.writer.flush()
    }

    /// Reads and drops what the client still sends, for at most `limit`
    /// bytes or until it pauses for a second, so that an error written
    /// before closing is not lost to a reset (a close with unread input
    /// resets the connection).
    pub fn drain(&mut self, limit: usize) {
        let _ = self.writer.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = vec![0u8; 64 << 10];
        let mut total = 0;
        while total < limit {
            match self.reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    }
}

fn read_some(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}
