//! The one place atomics and fences come from: `core::sync::atomic` in a normal build,
//! loom's under `--cfg nohz_loom` (only the `loom-tests` crate builds that way), so the loom
//! models check the crate's own code rather than a copy of it. It switches between the two and
//! does nothing else, as tokio's `loom` shim does; loom atomics cannot be built in `const`
//! context, so the constructor macros that hide that difference live here too.
//!
//! C source: the kernel's barriers and atomics (`smp_mb`, `smp_mb__after_atomic`, `READ_ONCE`, `atomic_fetch_or`), as Rust atomics.
//!
//! Relaxed operations are written inline as `Ordering::Relaxed`: they promise nothing, so there
//! is nothing to name. Every *stronger* ordering and every fence is taken from a named [`Site`]
//! (module `site`, re-exported here: its docs, the kernel's sites and the mutation hook; a
//! policy beyond the kernel declares its own sites beside its code).
//! Module `probe` weakens a site machine-wide for the harness's planted-bug soak (probe builds
//! only). The line-touch records of targets T8f and T10 are module `linecount`, present only in
//! the counting build (`--cfg nohz_linecount`), whose atomics are that module's recording
//! wrappers.

#[cfg(all(nohz_linecount, not(nohz_loom)))]
pub mod linecount;
pub mod probe;
mod site;

pub use site::*;

// `AtomicBool` serves the `testing` feature only.
#[cfg(not(any(nohz_loom, nohz_linecount)))]
#[allow(unused_imports)]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(all(nohz_linecount, not(nohz_loom)))]
#[allow(unused_imports)]
pub(crate) use linecount::{AtomicBool, AtomicI32, AtomicU16, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(nohz_loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
};

#[cfg(not(nohz_loom))]
pub(crate) use core::sync::atomic::fence as raw_fence;
#[cfg(nohz_loom)]
pub(crate) use loom::sync::atomic::fence as raw_fence;

pub use core::sync::atomic::Ordering;

/// Declares a function that is `const fn` in normal builds and a plain `fn` under
/// `--cfg nohz_loom`, where loom's atomics cannot be constructed in `const` context.
///
/// This is the one place that difference is spelled out; constructors of the crate's types use
/// it so that a kernel can declare them as `static`s.
#[doc(hidden)]
#[macro_export]
macro_rules! maybe_const_fn {
    ($(#[$meta:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(nohz_loom))]
        $(#[$meta])* $vis const fn $($rest)*
        #[cfg(nohz_loom)]
        $(#[$meta])* $vis fn $($rest)*
    };
}

/// `[expr; n]` for a non-`Copy` atomic initialiser: an inline-`const` repeat in normal builds
/// (usable inside a `const fn`), `core::array::from_fn` under loom.
macro_rules! atomic_array {
    ($init:expr; $n:expr) => {{
        #[cfg(not(nohz_loom))]
        let array = [const { $init }; $n];
        #[cfg(nohz_loom)]
        let array = core::array::from_fn(|_| $init);
        array
    }};
}
pub(crate) use atomic_array;

/// A [`PerCpu`](crate::PerCpu) of `$init` in each slot: built in `const` context in normal
/// builds, with `PerCpu::from_fn` under loom.
macro_rules! per_cpu_array {
    ($init:expr; $n:expr) => {{
        #[cfg(not(nohz_loom))]
        let per_cpu =
            $crate::PerCpu::from_padded([const { crossbeam_utils::CachePadded::new($init) }; $n]);
        #[cfg(nohz_loom)]
        let per_cpu = $crate::PerCpu::from_fn(|_| $init);
        per_cpu
    }};
}
pub(crate) use per_cpu_array;
