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

/// Machine-wide run-time weakening of one named site, for probe builds only: the harness's
/// soak plants a missing fence (`nohz.ilb.clear_fence`) in the real pass, on every thread at
/// once, and shows its invariant checks catch it. Loom builds use their own, per-model
/// `mutation` instead; in every other build [`Site::fence`] and [`Site::ordering`] are the
/// declared orderings and nothing here exists.
#[cfg(all(nohz_probe, not(nohz_loom)))]
mod weaken {
    use super::super::site::{Site, Weakening};
    use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

    /// The weakened site's address (0: none) and its weakening's code.
    static SITE: AtomicUsize = AtomicUsize::new(0);
    static HOW: AtomicU8 = AtomicU8::new(0);

    const ORDERINGS: [Ordering; 5] = [
        Ordering::Relaxed,
        Ordering::Release,
        Ordering::Acquire,
        Ordering::AcqRel,
        Ordering::SeqCst,
    ];

    fn encode(w: Weakening) -> u8 {
        match w {
            Weakening::Removed => 1,
            Weakening::To(o) => 2 + ORDERINGS.iter().position(|&x| x == o).unwrap_or(0) as u8,
        }
    }

    /// The weakening in force for `site`, if any (one relaxed load when none is).
    #[inline(always)]
    pub(crate) fn active_for(site: &Site) -> Option<Weakening> {
        let at = SITE.load(Ordering::Relaxed);
        if at == 0 || at != core::ptr::from_ref(site) as usize {
            return None;
        }
        match HOW.load(Ordering::Relaxed) {
            1 => Some(Weakening::Removed),
            c @ 2..=6 => Some(Weakening::To(ORDERINGS[usize::from(c - 2)])),
            _ => None,
        }
    }

    /// Why [`weaken_globally`] refused.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum WeakenError {
        /// The weakening is not in [`Site::weakenings`] for that site.
        NotWeaker,
        /// Another site is weakened already.
        Busy,
    }

    /// While the returned guard lives, `site` runs `weakening` on every thread (set it before
    /// the threads start: a thread may see the change late). Dropping the guard restores the
    /// declared ordering.
    pub fn weaken_globally(
        site: &'static Site,
        weakening: Weakening,
    ) -> Result<Weakened, WeakenError> {
        if !site.weakenings().contains(&weakening) {
            return Err(WeakenError::NotWeaker);
        }
        HOW.store(encode(weakening), Ordering::SeqCst);
        SITE.compare_exchange(
            0,
            core::ptr::from_ref(site) as usize,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .map_err(|_| WeakenError::Busy)?;
        Ok(Weakened(()))
    }

    /// The guard of [`weaken_globally`].
    #[derive(Debug)]
    pub struct Weakened(());

    impl Drop for Weakened {
        fn drop(&mut self) {
            SITE.store(0, Ordering::SeqCst);
        }
    }
}

#[cfg(all(nohz_probe, not(nohz_loom)))]
pub(crate) use weaken::active_for;
#[cfg(all(nohz_probe, not(nohz_loom)))]
pub use weaken::{WeakenError, Weakened, weaken_globally};
