//! The line-touch counting build (`--cfg nohz_linecount`, spec `sharded-idle.md` §3.3, target
//! T8f): every atomic of the crate records, per access, which logical CPU touched which
//! 64-byte cache line and whether it needed the line exclusively (a store or an RMW) or only
//! to read it. `ci/guards.sh` replays the records through a small coherence model and checks
//! the counts the sharded design promises (enter writes one machine-wide line, a due tick's
//! test reads one, ...): properties of the code and of the access pattern, not of the host,
//! so they are exact and CI can gate on them.
//!
//! Only this build has the module; in every other build the crate's atomics are
//! `core::sync::atomic`'s (or loom's) and nothing here exists. The counted types wrap
//! `core`'s, so the orderings and the results are the normal build's; recording happens only
//! inside [`as_cpu`], on the calling thread, so a driver that plays several logical CPUs on one
//! thread (the guard does) gets one deterministic trace.
//!
//! What is not recorded: fences (they move no line), non-atomic fields (the crate's shared
//! state is all atomics) and the platform's own memory.

use core::cell::{Cell, RefCell};
use core::fmt;
use core::sync::atomic::Ordering;
use std::vec::Vec;

/// The coherence granule the records use: an x86-64 cache line. (`CachePadded` pads to 128
/// bytes there, for the adjacent-line prefetcher; a 128-byte block is two of these lines.)
pub const LINE: usize = 64;

/// One recorded access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// The logical CPU [`as_cpu`] named.
    pub cpu: usize,
    /// The line: the address divided by [`LINE`].
    pub line: usize,
    /// A store or a read-modify-write (the line is needed exclusively); `false`: a load.
    pub write: bool,
    /// A read-modify-write (`swap`, `fetch_*`, `compare_exchange*`): a locked instruction on
    /// x86, which costs several nanoseconds even on a line the CPU owns.
    pub rmw: bool,
}

std::thread_local! {
    static CPU: Cell<Option<usize>> = const { Cell::new(None) };
    static LOG: RefCell<Vec<Access>> = const { RefCell::new(Vec::new()) };
    static OBSERVER: Cell<Option<fn(Access)>> = const { Cell::new(None) };
    static APART: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The line [`set_apart`]'s variable is recorded on: one no address maps to.
pub const APART_LINE: usize = usize::MAX;

/// Hands every access recorded on this thread to `f` as it happens, instead of logging it,
/// until `observe(None)`: for a driver that models each access's cost in its own time (the
/// virtual-time engine's coherence model), where the log would grow without end. `f` runs
/// inside the atomic operation's call, before the operation itself, on the calling thread;
/// it must not touch the crate's atomics.
pub fn observe(f: Option<fn(Access)>) {
    OBSERVER.with(|o| o.set(f));
}

/// Runs `f` as logical CPU `cpu`: every atomic access `f` makes on this thread is recorded as
/// that CPU's. Nests (the inner CPU wins until it returns).
pub fn as_cpu<R>(cpu: usize, f: impl FnOnce() -> R) -> R {
    let outer = CPU.with(|c| c.replace(Some(cpu)));
    let r = f();
    CPU.with(|c| c.set(outer));
    r
}

/// Runs `f` with nothing recorded: for a driver's own reads of the crate's state (its checks
/// and reports) in the middle of a CPU's work, which no kernel would make. Nests.
pub fn unrecorded<R>(f: impl FnOnce() -> R) -> R {
    let outer = CPU.with(|c| c.replace(None));
    let r = f();
    CPU.with(|c| c.set(outer));
    r
}

/// The accesses recorded on this thread since the last call, in program order.
pub fn take() -> Vec<Access> {
    LOG.with(|l| core::mem::take(&mut *l.borrow_mut()))
}

/// Records this thread's accesses to the atomic at address `addr` as made to a line of its own
/// ([`APART_LINE`]), until `set_apart(None)`: for a driver that models a layout in which that
/// variable does not share its line with its neighbours (the link order of another build).
/// Nothing else changes: the access, its ordering and its result are the atomic's own.
pub fn set_apart(addr: Option<usize>) {
    APART.with(|a| a.set(addr));
}

/// The address `x` starts at (what [`set_apart`] takes; recording nothing).
pub fn addr_of<T: ?Sized>(x: &T) -> usize {
    core::ptr::from_ref(x).cast::<u8>() as usize
}

/// The line `x` starts on (a driver's way to name a structure's lines; recording nothing).
pub fn line_of<T: ?Sized>(x: &T) -> usize {
    addr_of(x) / LINE
}

/// The lines `x` spans, first and one past the last.
pub fn lines_of<T: ?Sized>(x: &T) -> core::ops::Range<usize> {
    let start = addr_of(x);
    let end = start + core::mem::size_of_val(x).max(1);
    start / LINE..end.div_ceil(LINE)
}

#[inline(always)]
fn touch<T>(x: &T, write: bool, rmw: bool) {
    if let Some(cpu) = CPU.with(Cell::get) {
        let addr = addr_of(x);
        let line = if APART.with(Cell::get) == Some(addr) {
            APART_LINE
        } else {
            addr / LINE
        };
        let access = Access {
            cpu,
            line,
            write,
            rmw,
        };
        match OBSERVER.with(Cell::get) {
            Some(f) => f(access),
            None => LOG.with(|l| l.borrow_mut().push(access)),
        }
    }
}

macro_rules! counted {
    ($(#[$meta:meta])* $name:ident, $raw:ident, $int:ty) => {
        $(#[$meta])*
        #[derive(Default)]
        #[repr(transparent)]
        pub struct $name(core::sync::atomic::$raw);

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        #[allow(dead_code)] // each type offers what any atomic of the crate calls
        impl $name {
            /// As `core`'s `new`.
            pub const fn new(v: $int) -> Self {
                $name(core::sync::atomic::$raw::new(v))
            }
            /// As `core`'s `load`; recorded as a read.
            #[inline(always)]
            pub fn load(&self, o: Ordering) -> $int {
                touch(self, false, false);
                self.0.load(o)
            }
            /// As `core`'s `store`; recorded as a write.
            #[inline(always)]
            pub fn store(&self, v: $int, o: Ordering) {
                touch(self, true, false);
                self.0.store(v, o)
            }
            /// As `core`'s `swap`; recorded as a write.
            #[inline(always)]
            pub fn swap(&self, v: $int, o: Ordering) -> $int {
                touch(self, true, true);
                self.0.swap(v, o)
            }
            /// As `core`'s `fetch_or`; recorded as a write.
            #[inline(always)]
            pub fn fetch_or(&self, v: $int, o: Ordering) -> $int {
                touch(self, true, true);
                self.0.fetch_or(v, o)
            }
            /// As `core`'s `fetch_and`; recorded as a write.
            #[inline(always)]
            pub fn fetch_and(&self, v: $int, o: Ordering) -> $int {
                touch(self, true, true);
                self.0.fetch_and(v, o)
            }
            /// As `core`'s `compare_exchange`; recorded as a write, failed or not (the
            /// instruction takes the line exclusively either way).
            #[inline(always)]
            pub fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                touch(self, true, true);
                self.0.compare_exchange(current, new, success, failure)
            }
            /// As `core`'s `compare_exchange_weak`; recorded as [`compare_exchange`](Self::compare_exchange) is.
            #[inline(always)]
            pub fn compare_exchange_weak(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                touch(self, true, true);
                self.0.compare_exchange_weak(current, new, success, failure)
            }
        }
    };
}

macro_rules! counted_int {
    ($(#[$meta:meta])* $name:ident, $raw:ident, $int:ty) => {
        counted!($(#[$meta])* $name, $raw, $int);

        #[allow(dead_code)] // each type offers what any atomic of the crate calls
        impl $name {
            /// As `core`'s `fetch_add`; recorded as a write.
            #[inline(always)]
            pub fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                touch(self, true, true);
                self.0.fetch_add(v, o)
            }
            /// As `core`'s `fetch_sub`; recorded as a write.
            #[inline(always)]
            pub fn fetch_sub(&self, v: $int, o: Ordering) -> $int {
                touch(self, true, true);
                self.0.fetch_sub(v, o)
            }
        }
    };
}

counted!(
    /// The counting build's `AtomicBool`.
    AtomicBool, AtomicBool, bool
);
counted_int!(
    /// The counting build's `AtomicU16`.
    AtomicU16, AtomicU16, u16
);
counted_int!(
    /// The counting build's `AtomicU32`.
    AtomicU32, AtomicU32, u32
);
counted_int!(
    /// The counting build's `AtomicI32`.
    AtomicI32, AtomicI32, i32
);
counted_int!(
    /// The counting build's `AtomicU64`. Public so that a rig can build a design the crate
    /// does not ship (the guard's rejected exact summary) from counted atomics too.
    AtomicU64, AtomicU64, u64
);
counted_int!(
    /// The counting build's `AtomicUsize`.
    AtomicUsize, AtomicUsize, usize
);
