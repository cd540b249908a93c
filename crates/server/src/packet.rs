//! Packet framing: a 3-byte little-endian length and a sequence id before
//! each payload; payloads of 16 MiB - 1 and more go in chunks of 0xffffff
//! bytes, ended by a shorter chunk (maybe empty), and are joined on read.

use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
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

    /// The socket's descriptor, for the thread pool's poller.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
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

/// What carries the packets: the socket, or TLS over it once the client
/// asked for it (SSLRequest).
enum Transport {
    Plain(Stream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, Prefixed>>),
    /// Only while switching to TLS.
    Switching,
}

/// The socket, after the bytes the packet reader had already taken from
/// it (a client may send its TLS ClientHello right behind the SSLRequest).
struct Prefixed {
    pre: Vec<u8>,
    at: usize,
    s: Stream,
}

impl Read for Prefixed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at < self.pre.len() {
            let n = buf.len().min(self.pre.len() - self.at);
            buf[..n].copy_from_slice(&self.pre[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        self.s.read(buf)
    }
}

impl Write for Prefixed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.s.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.s.flush()
    }
}

fn switching() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the TLS handshake failed")
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
            Transport::Switching => Err(switching()),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(t) => t.write(buf),
            Transport::Switching => Err(switching()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(s) => s.flush(),
            Transport::Tls(t) => t.flush(),
            Transport::Switching => Err(switching()),
        }
    }
}

/// The negotiated TLS session: `Ssl_version` and `Ssl_cipher`.
#[derive(Clone, Debug)]
pub struct TlsInfo {
    pub version: String,
    pub cipher: String,
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
    /// Reads and (through `get_mut`) writes: one transport both ways,
    /// because a TLS session cannot be split in two.
    reader: BufReader<Transport>,
    /// The raw socket, for timeouts (the transport may be TLS over it).
    raw: Stream,
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
        let raw = stream.try_clone()?;
        Ok(PacketIo {
            reader: BufReader::with_capacity(64 << 10, Transport::Plain(stream)),
            raw,
            out: Vec::new(),
            seq: 0,
            bytes_in: 0,
            bytes_out: 0,
        })
    }

    pub fn stream(&self) -> &Stream {
        &self.raw
    }

    /// Bytes of the client's next packet already read from the socket
    /// (into the buffer, or into the TLS session's plaintext): the socket
    /// may then look idle though a command is waiting, so the thread pool
    /// runs it before it parks the connection.
    pub fn has_buffered(&mut self) -> bool {
        if !self.reader.buffer().is_empty() {
            return true;
        }
        match self.reader.get_mut() {
            Transport::Tls(t) => {
                t.conn.process_new_packets().map_or(true, |s| s.plaintext_bytes_to_read() > 0)
            }
            _ => false,
        }
    }

    /// Switches to TLS (after the client's SSLRequest) and completes the
    /// TLS handshake; bytes already read past the SSLRequest are the
    /// start of it. Sequence ids go on from where they were. On an error
    /// the connection is unusable and must be closed.
    pub fn start_tls(&mut self, config: Arc<rustls::ServerConfig>) -> io::Result<TlsInfo> {
        debug_assert!(self.out.is_empty(), "replies queued before the TLS switch would go out in clear");
        let pre = self.reader.buffer().to_vec();
        let old = std::mem::replace(&mut self.reader, BufReader::new(Transport::Switching));
        let Transport::Plain(s) = old.into_inner() else {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "TLS asked for twice"));
        };
        let conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
        let mut tls = rustls::StreamOwned::new(conn, Prefixed { pre, at: 0, s });
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        let info = TlsInfo {
            version: tls.conn.protocol_version().map(crate::tls::version_name).unwrap_or_default(),
            cipher: tls
                .conn
                .negotiated_cipher_suite()
                .map(|s| crate::tls::cipher_name(s.suite()))
                .unwrap_or_default(),
        };
        self.reader = BufReader::with_capacity(64 << 10, Transport::Tls(Box::new(tls)));
        Ok(info)
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
        let w = self.reader.get_mut();
        if !self.out.is_empty() {
            w.write_all(&self.out)?;
            self.out.clear();
        }
        w.flush()
    }

    /// Reads and drops what the client still sends, for at most `limit`
    /// bytes or until it pauses for a second, so that an error written
    /// before closing is not lost to a reset (a close with unread input
    /// resets the connection).
    pub fn drain(&mut self, limit: usize) {
        let _ = self.raw.set_read_timeout(Some(Duration::from_secs(1)));
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
