//! The per-thread count of stores to machine-wide shared lines (the idle mask, the `nohz`
//! scalars, an LLC's busy count), for `ci/guards.sh`'s target T10. Only probe builds
//! (`--cfg nohz_probe`) count and offer `shared_stores`; in every other build the marker is
//! free and this module has nothing public.

#[cfg(nohz_probe)]
use core::cell::Cell;

#[cfg(nohz_probe)]
std::thread_local! {
    static STORES: Cell<u64> = const { Cell::new(0) };
}

/// Marks a store (or RMW) to one of the machine-wide shared lines. Free in normal builds; in
/// probe builds it counts, per thread, so a test can assert that a path writes no shared line.
#[inline(always)]
pub(crate) fn shared_store() {
    #[cfg(nohz_probe)]
    STORES.with(|s| s.set(s.get() + 1));
}

/// Stores to shared lines this thread made since the last [`reset`].
#[cfg(nohz_probe)]
pub fn shared_stores() -> u64 {
    STORES.with(Cell::get)
}

/// Zeroes this thread's count.
#[cfg(nohz_probe)]
pub fn reset() {
    STORES.with(|s| s.set(0));
}
