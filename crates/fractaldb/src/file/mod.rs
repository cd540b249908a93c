//! The file layer: one data file per dictionary, holding numbered blocks.
//!
//! A block number maps to an extent through a translation table. Blocks are
//! never overwritten in place: a changed node goes to a fresh extent, and space
//! that the last durable checkpoint refers to is reused only after a newer
//! checkpoint's header is durable, so a crash always finds an intact checkpoint.
//! The byte layout is in `docs/format-file.md`.

mod alloc;
mod blockfile;
mod codec;
mod header;
mod io;
pub mod sim;
mod translation;
pub mod vfs;

pub use blockfile::{BlockFile, SpaceStats};
pub use codec::Codec;
pub(crate) use io::{direct_read_span, AlignedBuf, PAGE};
pub(crate) use translation::BlockNum;
pub use translation::Extent;
pub use vfs::{OpenMode, OsVfs, Vfs, VfsFile};
