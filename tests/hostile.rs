//! Untrusted files: one regression test per class of hostile input that once got through — the
//! GPU path refusing what the CPU path refuses, linear-time readers, bounded memory and reads,
//! refusals of inconsistent files, short errors and non-finite outputs.

#[path = "hostile/cli.rs"]
mod cli;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the bytes each thread has live, so a test can bound what one call allocates while
/// other tests run on other threads.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The most bytes `f` had allocated at once on this thread, beyond what was live before.
pub fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, (PEAK.with(Cell::get) - base).max(0) as usize)
}

#[path = "hostile/files.rs"]
mod files;
#[path = "hostile/gpu.rs"]
mod gpu;
#[path = "hostile/payloads.rs"]
mod payloads;
#[path = "hostile/readers.rs"]
mod readers;
