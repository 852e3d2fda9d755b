//! loom models of the `nohz` crate's own code, and the ordering mutation runner.
//!
//! Everything here is compiled only with `RUSTFLAGS="--cfg nohz_loom"`, which makes `nohz`
//! take its atomics and fences from loom; run it as `ci/loom.sh` (all models and the mutation
//! table) or `ci/mutants.sh` (the mutation table, printed), which amount to
//!
//! ```text
//! RUSTFLAGS="--cfg nohz_loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p loom-tests --release
//! ```
//!
//! The model bodies live here, in `models`, as plain `pub fn`s, so that the model tests under
//! `tests/` (one file per obligation or protocol) and the mutation runner (`mutants`) run the
//! very same code. Models drive the crate's real types (`Machine`, `HostPlatform`,
//! `StaticKey`; built at run time: loom atomics cannot be `const`), keep to at most four
//! threads with the main thread playing one CPU, and never use `LOOM_MAX_DURATION` or
//! `LOOM_MAX_PERMUTATIONS` (both stop silently and report success). `loom-tests/README.md`
//! maps each model to the obligation it proves and the code sites it covers.

#![cfg_attr(not(nohz_loom), allow(unused))]
#![deny(missing_docs)]

#[cfg(nohz_loom)]
pub mod models;
#[cfg(nohz_loom)]
pub mod mutants;

/// Runs `f` under `loom::model` with the preemption bound from `LOOM_MAX_PREEMPTIONS`
/// (default 2, the bound CI uses), and returns how many executions loom explored.
///
/// Panics, as `loom::model` does, with the first failing execution's panic.
#[cfg(nohz_loom)]
pub fn model<F>(f: F) -> usize
where
    F: Fn() + Sync + Send + 'static,
{
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    // A std counter, outside loom's view: loom runs every execution on this OS thread.
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = executions.clone();
    builder.check(move || {
        counter.fetch_add(1, Relaxed);
        f();
    });
    executions.load(Relaxed)
}

/// What one model run explored: the number of executions, and how many of them reached each
/// of the model's named cases (the interesting outcomes of its race).
#[cfg(nohz_loom)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explored {
    /// Executions loom explored.
    pub executions: usize,
    /// Each case's name and the number of executions that reached it.
    pub cases: Vec<(&'static str, usize)>,
}

#[cfg(nohz_loom)]
impl Explored {
    /// Panics, naming them, if some case was reached by no execution: the model would then
    /// pass without exploring the race it is about (a vacuous model).
    pub fn assert_all_reached(&self) -> &Self {
        let missed: Vec<&str> = self
            .cases
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| *name)
            .collect();
        assert!(
            missed.is_empty(),
            "cases no execution reached (a vacuous model): {missed:?}"
        );
        self
    }
}

/// The case counters a model body bumps (plain `std` atomics: loom does not see them).
#[cfg(nohz_loom)]
#[derive(Debug, Clone)]
pub struct Cases {
    names: &'static [&'static str],
    counts: std::sync::Arc<Vec<std::sync::atomic::AtomicUsize>>,
}

#[cfg(nohz_loom)]
impl Cases {
    /// Counts one execution that reached case `name` (one of the names the model declared).
    pub fn hit(&self, name: &str) {
        let i = self
            .names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("undeclared case {name:?}"));
        self.counts[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// [`model`] for a body that reports which of the named `cases` each execution reached.
#[cfg(nohz_loom)]
pub fn model_cases<F>(cases: &'static [&'static str], f: F) -> Explored
where
    F: Fn(&Cases) + Sync + Send + 'static,
{
    let counters = Cases {
        names: cases,
        counts: std::sync::Arc::new(
            cases
                .iter()
                .map(|_| std::sync::atomic::AtomicUsize::new(0))
                .collect(),
        ),
    };
    let seen = counters.clone();
    let executions = model(move || f(&counters));
    Explored {
        executions,
        cases: cases
            .iter()
            .zip(seen.counts.iter())
            .map(|(name, n)| (*name, n.load(std::sync::atomic::Ordering::Relaxed)))
            .collect(),
    }
}

/// Runs `f` with the panic hook silenced and reports how it ended: `None` if it returned,
/// `Some(message)` with the panic's message if it panicked (a killed mutant's model does).
///
/// The panic hook is process-wide: call this only from a test binary whose other tests do not
/// panic concurrently (the mutation runner is one test in a binary of its own).
#[cfg(nohz_loom)]
pub fn fails_quietly(f: impl FnOnce()) -> Option<String> {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.err().map(|payload| {
        if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "(a panic without a message)".to_owned()
        }
    })
}
