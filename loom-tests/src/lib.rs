//! loom models of the `nohz` crate's own code.
//!
//! Everything here is compiled only with `RUSTFLAGS="--cfg nohz_loom"`, which makes `nohz`
//! take its atomics and fences from loom; run it as
//!
//! ```text
//! RUSTFLAGS="--cfg nohz_loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p loom-tests --release
//! ```
//!
//! Each file under `tests/` models one primitive or protocol. Models drive the crate's real
//! types (built at run time: loom atomics cannot be `const`), keep to at most four threads with
//! the main thread playing one CPU, and never use `LOOM_MAX_DURATION` or
//! `LOOM_MAX_PERMUTATIONS` (both stop silently and report success).

#![cfg_attr(not(nohz_loom), allow(unused))]

/// Runs `f` under `loom::model` with the preemption bound from `LOOM_MAX_PREEMPTIONS`
/// (default 2, the bound CI uses).
#[cfg(nohz_loom)]
pub fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}
