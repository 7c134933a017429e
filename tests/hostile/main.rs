//! Untrusted files: one regression test per class of hostile input that once got through — the
//! GPU path refusing what the CPU path refuses, linear-time readers, bounded memory and reads,
//! refusals of inconsistent files, short errors and non-finite outputs.

mod cli;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the bytes each thread has live and the allocations it makes, so a test can bound
/// what one call allocates while other tests run on other threads.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static COMPARISONS: Cell<u64> = const { Cell::new(0) };
}

fn tally(counter: &'static std::thread::LocalKey<Cell<u64>>) {
    let _ = counter.try_with(|c| c.set(c.get() + 1));
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        tally(&ALLOCATIONS);
        count(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        tally(&ALLOCATIONS);
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

/// Byte-string comparisons, counted: `==` on strings and byte slices (what a lookup by name
/// does) ends in `memcmp` or `bcmp`, and this binary's own definitions take the place of the C
/// library's for every call from Rust code linked into it (shared libraries keep theirs). A
/// name lookup through a hash map compares about once; a scan compares once per entry, so the
/// count tells linear from quadratic work without a clock. Byte by byte through volatile reads,
/// so the compiler cannot turn the loop back into a call to `memcmp`. Linux only (what CI runs):
/// elsewhere a C runtime linked statically may define these symbols too, and only allocations
/// are counted.
#[cfg(target_os = "linux")]
unsafe fn compare_bytes(a: *const u8, b: *const u8, n: usize) -> i32 {
    tally(&COMPARISONS);
    for i in 0..n {
        // SAFETY: the caller's contract (memcmp's): both ranges are readable for n bytes.
        let (x, y) = unsafe { (std::ptr::read_volatile(a.add(i)), std::ptr::read_volatile(b.add(i))) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
    }
    0
}

/// # Safety
/// C's `memcmp`: `a` and `b` are readable for `n` bytes.
#[cfg(target_os = "linux")]
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { compare_bytes(a, b, n) }
}

/// # Safety
/// C's `bcmp`: `a` and `b` are readable for `n` bytes.
#[cfg(target_os = "linux")]
#[no_mangle]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { compare_bytes(a, b, n) }
}

/// The work one call does on this thread, counted: allocations and byte-string comparisons.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub allocations: u64,
    pub comparisons: u64,
}

pub fn work<T>(f: impl FnOnce() -> T) -> (T, Work) {
    let now = || Work { allocations: ALLOCATIONS.with(Cell::get), comparisons: COMPARISONS.with(Cell::get) };
    let before = now();
    let out = f();
    let after = now();
    (
        out,
        Work {
            allocations: after.allocations - before.allocations,
            comparisons: after.comparisons - before.comparisons,
        },
    )
}

/// Asserts that `run` does linear work: on an input twice as large (`make(2n)` against
/// `make(n)`) it allocates and compares at most 3 times as often (linear work doubles,
/// quadratic quadruples), give or take a constant. Inputs are made outside the count.
#[track_caller]
pub fn assert_linear<I, T>(what: &str, n: usize, make: impl Fn(usize) -> I, run: impl Fn(I) -> T) {
    const CONSTANT: u64 = 1000;
    let (small, large) = (make(n), make(2 * n));
    let (_, a) = work(|| run(small));
    let (_, b) = work(|| run(large));
    println!("{what}: {a:?} at n = {n}, {b:?} at n = {}", 2 * n);
    assert!(
        b.allocations <= 3 * a.allocations + CONSTANT && b.comparisons <= 3 * a.comparisons + CONSTANT,
        "{what}: work grows faster than linearly: {a:?} at n = {n}, {b:?} at n = {}",
        2 * n
    );
}

/// The count [`assert_linear`] relies on really counts: were the definitions above bypassed (a
/// toolchain whose `==` no longer calls `memcmp`), every comparison count would read 0 and
/// only allocations would be checked.
#[test]
#[cfg(target_os = "linux")]
fn a_scan_by_name_counts_one_comparison_per_entry() {
    let names: Vec<String> = (0..100).map(|i| format!("t{i:07}")).collect();
    let wanted = std::hint::black_box(format!("t{:07}", 99));
    let (found, w) = work(|| names.iter().position(|n| *n == wanted));
    assert_eq!(found, Some(99));
    assert!(w.comparisons >= 100, "a scan of 100 names: {w:?}");
}

mod files;
mod gpu;
mod models;
mod payloads;
mod readers;
