//! The `fractaldb` program's memory allocator: jemalloc, with its settings.
//!
//! Why not glibc's malloc: the engine frees and reallocates node-sized
//! buffers (message buffers growing by a quarter, basements rebuilt,
//! nodes serialized and compressed) from several threads at once. glibc
//! keeps what each thread's arena freed and returns it only on
//! `malloc_trim`, so at a 64 MiB cache the process stayed 50-80 MiB above
//! its live heap (`fractaldb bench insert`: 90 MiB live at the peak,
//! 161-173 MiB resident). jemalloc returns freed pages to the kernel on a
//! timer and spent 5-25% less CPU on the same load. The figures are in
//! docs/benchmarks.md ("the allocator").
//!
//! The settings, read by jemalloc before `main` from the symbol below
//! (`_RJEM_MALLOC_CONF` in the environment overrides them, e.g.
//! `_RJEM_MALLOC_CONF=stats_print:true` to see them at exit):
//! - `background_thread:true`: a jemalloc thread returns freed pages, so
//!   no allocating thread pays for it and an idle process shrinks too;
//! - `dirty_decay_ms:500`, `muzzy_decay_ms:0`: freed pages go back to the
//!   kernel within about half a second, instead of jemalloc's 10 s (at 0 ms
//!   the load ran 30% slower: every free became an `madvise`);
//! - `narenas:2`: two arenas instead of four per CPU; each arena keeps its
//!   own freed pages, and the per-thread caches take most allocations
//!   without touching an arena's lock. Resident memory fell by a further
//!   10-15 MiB against the default count.
//!
//! Only this program chooses the allocator: the `fractaldb` library and
//! the SQL crates use whatever global allocator their embedder has, and
//! their tests run on the system's, except the engine's memory test
//! (crates/fractaldb/tests/memory.rs), which measures resident memory
//! under this allocator and these settings (`alloc_conf.rs`, included by
//! both).

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

include!("alloc_conf.rs");
