// jemalloc's compiled-in settings, shared by the `fractaldb` program
// (`alloc.rs`, where they are explained) and the engine's memory test
// (crates/fractaldb/tests/memory.rs), which measures resident memory under
// them: both `include!` this file, so the two cannot drift apart.

/// A C string pointer that may live in a `static`: it points at a literal.
#[repr(transparent)]
struct ConfPtr(*const std::ffi::c_char);
// SAFETY: the pointer is to an immutable, 'static C string literal.
unsafe impl Sync for ConfPtr {}

/// jemalloc's compiled-in settings, under the prefixed name that
/// `tikv-jemalloc-sys` gives jemalloc's `malloc_conf` symbol on this
/// platform (jemalloc reads a `const char *`).
#[used]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: ConfPtr =
    ConfPtr(c"background_thread:true,narenas:2,dirty_decay_ms:500,muzzy_decay_ms:0".as_ptr());
