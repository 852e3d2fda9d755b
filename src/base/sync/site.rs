//! Named memory-ordering sites: every fence and every ordering stronger than `Relaxed` in the
//! crate is one [`Site`], a `static` that names the operation, the obligation of the ordering
//! contract it serves (spec §6, O1..O8 and the protocols), the operation it pairs with and the
//! outcome it forbids. The kernel's are here; a policy beyond the kernel declares its own
//! beside its code, and the test rigs' `internals::SITES` lists them all.
//!
//! In a normal build [`Site::ordering`] and [`Site::fence`] read an immutable `static` and
//! inline to the declared ordering: a named site costs exactly what the bare ordering costs.
//! In a loom build a test may weaken one site at a time (see `mutation`, present only under
//! `nohz_loom`): the loom models then prove that each ordering is *needed* (the weakened model
//! fails), not only that the declared one is sufficient. In a probe build (`--cfg nohz_probe`)
//! a run-time switch weakens one site machine-wide (`probe::weaken_globally`), for the harness
//! soak's planted-bug runs on real threads.

use super::{Ordering, raw_fence};

/// What kind of operation a [`Site`] orders; it decides which orderings are legal and which
/// weakenings a mutation run tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteKind {
    /// A `fence`. Weakening goes down the orderings and finally removes the fence.
    Fence,
    /// An atomic load (legal: `Acquire`, `SeqCst`).
    Load,
    /// An atomic store (legal: `Release`, `SeqCst`).
    Store,
    /// A read-modify-write (legal: anything but `Relaxed`, which needs no site).
    Rmw,
}

/// One way to weaken a [`Site`] in a mutation run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub enum Weakening {
    /// Use this ordering instead of the declared one.
    To(Ordering),
    /// Drop the fence altogether (fences only).
    Removed,
}

/// A named memory-ordering site: one fence or one non-`Relaxed` atomic access of the crate.
///
/// Declare sites as `static`s with [`Site::fence_site`] / [`Site::access_site`]; both check at
/// compile time that the ordering is legal for the kind and stronger than `Relaxed`.
// Its name and description serve the test rigs (feature `testing`: the mutation table, the
// site registry's checks, the probe builds); a kernel's build reads only the ordering.
#[derive(Debug)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub struct Site {
    name: &'static str,
    kind: SiteKind,
    ordering: Ordering,
    obligation: &'static str,
    pairs_with: &'static str,
    forbids: &'static str,
}

const fn legal(kind: SiteKind, ordering: Ordering) -> bool {
    match kind {
        SiteKind::Fence | SiteKind::Rmw => !matches!(ordering, Ordering::Relaxed),
        SiteKind::Load => matches!(ordering, Ordering::Acquire | Ordering::SeqCst),
        SiteKind::Store => matches!(ordering, Ordering::Release | Ordering::SeqCst),
    }
}

#[cfg_attr(not(feature = "testing"), allow(dead_code))]
impl Site {
    /// A fence site. `obligation` names the contract item (e.g. `"O1"`), `pairs_with` the
    /// fence or access on the other side, `forbids` the outcome the pair rules out.
    ///
    /// Evaluated in a `static`, an illegal ordering (`Relaxed`) fails the build.
    pub const fn fence_site(
        name: &'static str,
        ordering: Ordering,
        obligation: &'static str,
        pairs_with: &'static str,
        forbids: &'static str,
    ) -> Site {
        Site::access_site(
            name,
            SiteKind::Fence,
            ordering,
            obligation,
            pairs_with,
            forbids,
        )
    }

    /// An access site (load, store or RMW); see [`Site::fence_site`] for the text fields.
    ///
    /// Evaluated in a `static`, an ordering that is illegal for `kind` (or `Relaxed`) fails the
    /// build.
    pub const fn access_site(
        name: &'static str,
        kind: SiteKind,
        ordering: Ordering,
        obligation: &'static str,
        pairs_with: &'static str,
        forbids: &'static str,
    ) -> Site {
        assert!(
            legal(kind, ordering),
            "a named site needs an ordering stronger than Relaxed that is legal for its kind"
        );
        Site {
            name,
            kind,
            ordering,
            obligation,
            pairs_with,
            forbids,
        }
    }

    /// The site's unique name (`module.function.what`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// What kind of operation the site orders.
    pub const fn kind(&self) -> SiteKind {
        self.kind
    }

    /// The ordering the crate declares for this site.
    pub const fn declared(&self) -> Ordering {
        self.ordering
    }

    /// The obligation of the ordering contract this site serves (`"O1"`, `"O3"`, ...).
    pub const fn obligation(&self) -> &'static str {
        self.obligation
    }

    /// The operation on the other side of the pair.
    pub const fn pairs_with(&self) -> &'static str {
        self.pairs_with
    }

    /// The outcome the pair forbids.
    pub const fn forbids(&self) -> &'static str {
        self.forbids
    }

    /// Every strictly weaker variant of this site, strongest first: the list a mutation run
    /// walks (`SeqCst -> AcqRel -> Release | Acquire -> Relaxed`; a fence ends removed).
    pub const fn weakenings(&self) -> &'static [Weakening] {
        use Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
        use Weakening::{Removed, To};
        match (self.kind, self.ordering) {
            (SiteKind::Fence, SeqCst) => &[To(AcqRel), To(Release), To(Acquire), Removed],
            (SiteKind::Fence, AcqRel) => &[To(Release), To(Acquire), Removed],
            (SiteKind::Fence, _) => &[Removed],
            (SiteKind::Rmw, SeqCst) => &[To(AcqRel), To(Release), To(Acquire), To(Relaxed)],
            (SiteKind::Rmw, AcqRel) => &[To(Release), To(Acquire), To(Relaxed)],
            (SiteKind::Load, SeqCst) => &[To(Acquire), To(Relaxed)],
            (SiteKind::Store, SeqCst) => &[To(Release), To(Relaxed)],
            _ => &[To(Relaxed)],
        }
    }

    /// The ordering to use for this site's access: the declared one, or in a loom mutation run
    /// the weakened one.
    #[inline(always)]
    pub fn ordering(&'static self) -> Ordering {
        #[cfg(nohz_loom)]
        if let Some(Weakening::To(o)) = mutation::active_for(self) {
            return o;
        }
        #[cfg(all(nohz_probe, not(nohz_loom)))]
        if let Some(Weakening::To(o)) = super::probe::active_for(self) {
            return o;
        }
        self.ordering
    }

    /// The failure ordering to pair with [`Site::ordering`] in a compare-exchange: the success
    /// ordering without its release half.
    #[inline(always)]
    pub fn failure_ordering(&'static self) -> Ordering {
        match self.ordering() {
            Ordering::AcqRel => Ordering::Acquire,
            Ordering::Release => Ordering::Relaxed,
            other => other,
        }
    }

    /// Executes this site's fence (or, in a loom mutation run, its weakened form or nothing).
    #[inline(always)]
    #[doc(alias = "smp_mb")]
    #[doc(alias = "smp_mb__after_atomic")]
    pub fn fence(&'static self) {
        #[cfg(nohz_loom)]
        match mutation::active_for(self) {
            Some(Weakening::Removed) => return,
            Some(Weakening::To(o)) => return raw_fence(o),
            None => {}
        }
        #[cfg(all(nohz_probe, not(nohz_loom)))]
        match super::probe::active_for(self) {
            Some(Weakening::Removed) => return,
            Some(Weakening::To(o)) => return raw_fence(o),
            None => {}
        }
        raw_fence(self.ordering)
    }

    /// This site's fence where it directly follows an atomic read-modify-write of the same
    /// thread: the kernel's `smp_mb__after_atomic()`.
    ///
    /// On x86 every atomic RMW is a `lock`-prefixed instruction (or `xchg`), which is already
    /// a full barrier in hardware, so there this is only a compiler fence: it keeps the
    /// compiler from moving memory accesses across it and costs no instruction (the portable
    /// `fence(SeqCst)` would add an `mfence`). This steps outside the language's abstract
    /// memory model, where a relaxed RMW orders nothing, and relies on the hardware exactly as
    /// the kernel does. Everywhere else, and in loom builds (where the models need the real
    /// fence, and a mutation run may weaken or remove it), it is [`Site::fence`].
    ///
    /// Callers must place it right after an RMW, with no plain access in between that the
    /// barrier has to order; `ci/guards.sh` (T9) checks the x86 code for a leftover `mfence`.
    #[inline(always)]
    #[doc(alias = "smp_mb__after_atomic")]
    pub fn fence_after_rmw(&'static self) {
        #[cfg(all(any(target_arch = "x86", target_arch = "x86_64"), not(nohz_loom)))]
        core::sync::atomic::compiler_fence(self.ordering);
        #[cfg(not(all(any(target_arch = "x86", target_arch = "x86_64"), not(nohz_loom))))]
        self.fence();
    }
}

// ---- The kernel's NOHZ ordering contract (spec §6). Everything else in the kernel paths is
// Relaxed. The policies beyond the kernel declare their own sites beside their code
// (`src/beyond/`); `internals::SITES` (feature `testing`) lists every site of the crate. ----

/// O1/O2, writer side: `nohz_balance_enter_idle`'s `smp_mb__after_atomic()` between setting
/// this CPU's bit in `nohz.idle_cpus_mask` and storing `nohz.needs_update = 1` /
/// `nohz.has_blocked_load = 1`. Under `Sharded` the bit is in the CPU's shard word, and the
/// same fence also orders it before the summary read (S1, against the sharded idle set's
/// `NOHZ_SHARD_GC_FENCE`).
pub static NOHZ_ENTER_IDLE_FENCE: Site = Site::fence_site(
    "nohz.nohz_balance_enter_idle.mask_fence",
    Ordering::SeqCst,
    "O1, O2",
    "nohz.ilb.clear_fence: the ILB clears has_blocked_load / needs_update, fences, then scans the mask",
    "the ILB's scan missing this CPU's new bit while the ILB's store of 0 lands after this CPU's \
     store of 1: the flag ends 0 and this CPU's blocked load (or next_balance) is never folded in",
);

/// O1/O2, reader side: `_nohz_idle_balance`'s `smp_mb()` between clearing
/// `nohz.has_blocked_load` / `nohz.needs_update` and scanning `nohz.idle_cpus_mask`.
pub static NOHZ_ILB_FENCE: Site = Site::fence_site(
    "nohz.ilb.clear_fence",
    Ordering::SeqCst,
    "O1, O2",
    "nohz.nohz_balance_enter_idle.mask_fence: nohz_balance_enter_idle sets its mask bit, fences, then stores the flags = 1",
    "this scan missing a CPU that just registered while that CPU's store of 1 is overwritten by \
     this pass's 0: nobody refreshes its blocked load (or folds its next_balance)",
);

/// O3, kicker side: `kick_ilb`'s `atomic_fetch_or` on the target's `nohz_flags`.
pub static NOHZ_KICK_FETCH_OR: Site = Site::access_site(
    "nohz.kick_ilb.fetch_or",
    SiteKind::Rmw,
    Ordering::AcqRel,
    "O3",
    "nohz.csd.fetch_andnot: the handler frees the csd, then consumes the bits with an AcqRel RMW",
    "Release half: the handler that consumes this kicker's bits missing the kicker's earlier \
     writes. Acquire half: the new owner of the csd finding it still busy from the previous \
     round, so the IPI is never sent and the bits stay stuck",
);

/// O3, handler side: `nohz_csd_func`'s `atomic_fetch_andnot(NOHZ_KICK_MASK | NOHZ_NEWILB_KICK)`.
pub static NOHZ_CSD_FETCH_ANDNOT: Site = Site::access_site(
    "nohz.csd.fetch_andnot",
    SiteKind::Rmw,
    Ordering::AcqRel,
    "O3",
    "nohz.kick_ilb.fetch_or: each kicker's RMW that set the bits consumed here",
    "Acquire half: the handler missing the writes a kicker made before its fetch_or. Release \
     half: the next kicker that owns the csd seeing it still busy (the free came before this RMW)",
);

/// `build_sched_domains`' publish of a rebuilt domain generation: the LLC busy counts and
/// every CPU's LLC leader and `nohz_idle` of the new copy are written, then the generation
/// word is stored with Release (the crate's stand-in for `rcu_assign_pointer(rq->sd, ...)`).
pub static SCHED_DOMAINS_PUBLISH: Site = Site::access_site(
    "sched.domains.publish",
    SiteKind::Store,
    Ordering::Release,
    "domain rebuild (RCU publish)",
    "sched.domains.load: set_cpu_sd_state_idle/busy and the kick load the generation word      (Acquire) before they read the copy it names",
    "a CPU seeing the new generation but the copy's contents from two generations ago: it      then leaves or joins the LLC's busy count twice, or not at all, until the next rebuild",
);

/// The load of the domain generation word by `set_cpu_sd_state_idle/busy`, the balancer
/// kick's LLC test and the accessors (the crate's `rcu_dereference(rq->sd)`).
pub static SCHED_DOMAINS_LOAD: Site = Site::access_site(
    "sched.domains.load",
    SiteKind::Load,
    Ordering::Acquire,
    "domain rebuild (RCU publish)",
    "sched.domains.publish: the rebuild fills the new copy, then stores the generation with      Release",
    "reading the new generation but stale contents of its copy (the busy count or this CPU's      nohz_idle from two generations ago), with the same miscount as above",
);

/// Mutation runs: weaken one [`Site`] while a closure (a `loom::model` call) runs.
///
/// Present only under `--cfg nohz_loom`. The override lives in a `std` thread-local of the OS
/// thread that calls `loom::model`; loom runs every model thread as a coroutine on that same
/// OS thread, so all of them see it, and tests running in parallel on other OS threads do not.
#[cfg(nohz_loom)]
pub mod mutation {
    use super::{Site, Weakening};
    use core::cell::Cell;

    std::thread_local! {
        static ACTIVE: Cell<Option<(&'static str, Weakening)>> = const { Cell::new(None) };
        static CODE: Cell<Option<u32>> = const { Cell::new(None) };
    }

    /// Whether the code mutant numbered `m` by its policy's code is active.
    #[allow(dead_code)]
    pub(crate) fn code_mutant_active(m: u32) -> bool {
        CODE.with(Cell::get) == Some(m)
    }

    struct ResetCode;
    impl Drop for ResetCode {
        fn drop(&mut self) {
            CODE.with(|a| a.set(None));
        }
    }

    /// Runs `f` with the code mutant numbered `m` active (a rejected design, reachable in a
    /// policy's own code in loom builds only; the policy numbers its mutants and offers its
    /// own `with_code_mutant`), restoring the real code afterwards, also when `f` panics.
    #[allow(dead_code)]
    pub(crate) fn with_code_mutant<R>(m: u32, f: impl FnOnce() -> R) -> Result<R, MutationError> {
        if CODE.with(Cell::get).is_some() || ACTIVE.with(Cell::get).is_some() {
            return Err(MutationError::Nested);
        }
        CODE.with(|a| a.set(Some(m)));
        let _reset = ResetCode;
        Ok(f())
    }

    pub(super) fn active_for(site: &Site) -> Option<Weakening> {
        ACTIVE
            .with(Cell::get)
            .and_then(|(name, w)| (name == site.name).then_some(w))
    }

    /// Why a weakening was refused.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum MutationError {
        /// The weakening is not in [`Site::weakenings`] for that site.
        NotWeaker,
        /// Another weakening is already active on this thread.
        Nested,
    }

    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(None));
        }
    }

    /// Runs `f` with `site` weakened to `weakening`, restoring the declared ordering afterwards
    /// (also when `f` panics, as a killed mutant's model does).
    pub fn with_weakened<R>(
        site: &'static Site,
        weakening: Weakening,
        f: impl FnOnce() -> R,
    ) -> Result<R, MutationError> {
        if !site.weakenings().contains(&weakening) {
            return Err(MutationError::NotWeaker);
        }
        if ACTIVE.with(Cell::get).is_some() || CODE.with(Cell::get).is_some() {
            return Err(MutationError::Nested);
        }
        ACTIVE.with(|a| a.set(Some((site.name, weakening))));
        let _reset = Reset;
        Ok(f())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SB_FENCE: Site = Site::fence_site(
        "test.sb.fence",
        Ordering::SeqCst,
        "O1",
        "the other side's fence",
        "both loads missing both stores",
    );
    static HANDOFF: Site = Site::access_site(
        "test.handoff.rmw",
        SiteKind::Rmw,
        Ordering::AcqRel,
        "O3",
        "the consumer's RMW",
        "the consumer missing the producer's data",
    );

    #[test]
    fn declared_orderings_are_used_unchanged() {
        assert_eq!(SB_FENCE.ordering(), Ordering::SeqCst);
        assert_eq!(HANDOFF.ordering(), Ordering::AcqRel);
        assert_eq!(HANDOFF.failure_ordering(), Ordering::Acquire);
        SB_FENCE.fence();
    }

    #[test]
    fn weakenings_are_strictly_weaker_and_legal() {
        use Ordering::*;
        let rank = |o: Ordering| match o {
            Relaxed => 0,
            Release | Acquire => 1,
            AcqRel => 2,
            _ => 3,
        };
        let cases = [
            (SiteKind::Fence, SeqCst, 4),
            (SiteKind::Fence, AcqRel, 3),
            (SiteKind::Fence, Acquire, 1),
            (SiteKind::Rmw, SeqCst, 4),
            (SiteKind::Rmw, AcqRel, 3),
            (SiteKind::Rmw, Release, 1),
            (SiteKind::Load, SeqCst, 2),
            (SiteKind::Load, Acquire, 1),
            (SiteKind::Store, SeqCst, 2),
            (SiteKind::Store, Release, 1),
        ];
        for (kind, ord, n) in cases {
            let site = Site::access_site("t", kind, ord, "", "", "");
            let ws = site.weakenings();
            assert_eq!(ws.len(), n, "{kind:?} {ord:?}");
            for w in ws {
                match *w {
                    Weakening::Removed => assert_eq!(kind, SiteKind::Fence),
                    Weakening::To(o) => {
                        assert!(rank(o) < rank(ord), "{kind:?} {ord:?} -> {o:?}");
                        assert!(o == Relaxed || legal(kind, o), "{kind:?} -> {o:?}");
                        assert!(!(kind == SiteKind::Fence && o == Relaxed));
                    }
                }
            }
        }
    }

    #[test]
    fn legality_by_kind() {
        use Ordering::*;
        assert!(!legal(SiteKind::Fence, Relaxed));
        assert!(!legal(SiteKind::Rmw, Relaxed));
        assert!(!legal(SiteKind::Load, Release));
        assert!(!legal(SiteKind::Load, AcqRel));
        assert!(!legal(SiteKind::Store, Acquire));
        assert!(legal(SiteKind::Load, Acquire));
        assert!(legal(SiteKind::Store, SeqCst));
    }
}
