//! Machine-wide run-time weakening of one named ordering site, for probe builds only
//! (`--cfg nohz_probe`): the harness's soak plants a missing fence in the real ILB pass, on
//! every thread at once, and shows its invariant checks catch it. In every other build the
//! module has nothing in it.

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
