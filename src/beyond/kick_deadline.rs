//! `KickDeadline`: `Scalable`'s precomputed not-due deadline of `nohz_balancer_kick` (no
//! kernel counterpart).
//!
//! C source: none (beyond the kernel); it shortcuts `kernel/sched/fair.c`'s `nohz_balancer_kick`.
//!
//! # Design
//!
//! The kernel's busy tick reads four `nohz` scalars to learn that balancing is not due yet:
//! the kick can have anything to do only from `next_balance` on, from `next_blocked + 1` on
//! while `has_blocked_load` is set, and at once while `needs_update` is set. Before that,
//! `Patched` returns without a kick; `Scalable` folds the four into one word and decides after
//! one load.
//!
//! The word holds the deadline in its low 32 bits (the low 32 bits of a jiffies value) and,
//! from bit 33 up, the number of bumps since it was computed (bit 32 stays clear); it is fresh
//! while that count is 0 (the word is below 2^32). The not-due test is one subtraction and one
//! unsigned compare ([`KickDeadline::not_due`]): the word is fresh and `now`'s low 32 bits are
//! below the deadline by less than 2^31. A stale word is at least 2^33, so the one compare
//! fails on it whatever its deadline. A deadline that lies ahead across a 32-bit wrap of `now`
//! fails it too and takes the full path, which decides exactly; that happens once every 2^32
//! jiffies, for at most the deadline's distance from now (every deadline it folds lies within a
//! minute of now).
//!
//! **Who keeps it true.**
//! - Writers that make the kick due sooner [`bump`](KickDeadline::bump) it with one Release
//!   `fetch_add` (a single locked add on x86, no compare-exchange loop on the idle path):
//!   `nohz_balance_enter_idle` when it sets `needs_update` or `has_blocked_load`. The word is
//!   stale from then on, so the kick takes the full path.
//! - Refreshers recompute the deadline from the scalars after an Acquire load of the word and
//!   replace it only if no bump landed meanwhile (compare-exchange), so a bump that raced with
//!   them is never undone: the end of an idle balance pass (complete or aborted), `kick_ilb`'s
//!   `next_balance` bump, init, and the first kick that finds the word stale with a deadline
//!   ahead of `jiffies` (one not ahead would decide no tick: the kick leaves the word stale
//!   and runs the full path).
//!
//! The ILB's clears at the start of a pass leave it early, which is safe: an early deadline
//! only sends the kick down the full path. The bump (NOHZ_DEADLINE_BUMP) pairs with the
//! refresh's load (NOHZ_DEADLINE_REFRESH): loom model `o7::deadline_against_ilb`.

use crate::jiffies::Jiffies;
use crate::sync::{AtomicU64, Ordering, Ordering::Relaxed, Site, SiteKind};

/// `Scalable` only: the `fetch_add` that bumps `nohz.kick_deadline` (marks it stale) after a
/// writer made the kick due sooner (`needs_update` or `has_blocked_load` set).
pub static NOHZ_DEADLINE_BUMP: Site = Site::access_site(
    "nohz.kick_deadline.bump",
    SiteKind::Rmw,
    Ordering::Release,
    "kick deadline (Scalable)",
    "nohz.kick_deadline.refresh: a refresher loads the word (Acquire), reads the flags and \
     deadlines, and replaces the word only if no bump landed meanwhile",
    "a refresher that read this writer's bump still reading the flag from before the writer set \
     it, and so making the word fresh with a deadline past a kick that is due: the kick's \
     not-due test then skips a NEXT or STATS kick that Patched would send",
);

/// `Scalable` only: the load of `nohz.kick_deadline` that starts a refresh.
pub static NOHZ_DEADLINE_REFRESH: Site = Site::access_site(
    "nohz.kick_deadline.refresh",
    SiteKind::Load,
    Ordering::Acquire,
    "kick deadline (Scalable)",
    "nohz.kick_deadline.bump: each writer stores its flag, then bumps the word with a Release RMW",
    "reading a bumped word but a flag older than the bump, and computing a later deadline from \
     it (a due kick skipped)",
);

/// One bump of the deadline word (its bits 33..64 count them; bit 32 stays clear, so a bumped
/// word is at least 2^33 whatever deadline it holds).
const BUMP: u64 = 1 << 33;

/// [`not_due`] holds while `d - n - 1` is below this: the deadline is 1 to 2^31 - 1 jiffies
/// ahead, the span in which the 32-bit wrap-safe "before" says so.
const NOT_DUE_SPAN: u64 = (1 << 31) - 1;

/// The precomputed not-due deadline of `nohz_balancer_kick` and the bumps since it was
/// computed, in one word on the `nohz` line.
#[derive(Debug)]
pub struct KickDeadline(AtomicU64);

impl KickDeadline {
    crate::maybe_const_fn! {
        /// Deadline 0, fresh (init refreshes it).
        pub fn new() -> Self {
            KickDeadline(AtomicU64::new(0))
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// The deadline, or `None` while it is stale (a writer made the kick due sooner since it
    /// was last computed).
    pub fn get(&self) -> Option<Jiffies> {
        let w = self.0.load(Relaxed);
        fresh(w).then(|| Jiffies::new(w as u32 as usize))
    }

    /// `now` is before a fresh deadline: balancing is not due, nothing to kick for. False on a
    /// stale word.
    #[inline(always)]
    pub fn not_due(&self, now: Jiffies) -> bool {
        not_due(self.0.load(Relaxed), now)
    }

    /// `nohz_balancer_kick`'s prelude under `Scalable`: whether this tick is the common one
    /// that the whole sequence would end with no kick: the tick did not land on an idle CPU
    /// and the CPU is not registered (`idle_or_registered` false: no `IdleTick`, and
    /// `nohz_balance_exit_idle` would find nothing to do), the caller runs on its own CPU (no
    /// wrong-CPU warning to count), and the deadline says not due at `now`. The tests are
    /// plain loads with no side effects, so all of them are made and combined without
    /// short-circuiting: the common tick runs straight through to one branch.
    #[inline(always)]
    pub fn prelude(&self, idle_or_registered: bool, on_own_cpu: bool, now: Jiffies) -> bool {
        !idle_or_registered & on_own_cpu & self.not_due(now)
    }

    /// Marks the deadline stale: a writer just made the kick due sooner.
    #[inline]
    pub fn bump(&self) {
        // Release (NOHZ_DEADLINE_BUMP): the flags this writer set before are visible to a
        // refresher that loads this word (NOHZ_DEADLINE_REFRESH). Result unused: one
        // `lock add` on x86. The count only grows until a refresh zeroes it, so a refresher's
        // compare-exchange fails if any bump landed after its load. (It would take 2^31 bumps
        // without a refresh to wrap it; each bump needs a flag cleared by an ILB pass, and
        // every pass ends with a refresh.)
        self.0.fetch_add(BUMP, NOHZ_DEADLINE_BUMP.ordering());
    }

    /// Recomputes the deadline with `deadline` (which reads the scalars), giving way to any
    /// bump that lands meanwhile, then trying again. With `only_if_stale` it stops as soon as
    /// the word is fresh (someone else refreshed it), so busy CPUs racing to refresh write it
    /// once between them.
    #[inline]
    pub fn refresh(&self, only_if_stale: bool, deadline: impl Fn() -> Jiffies) {
        loop {
            // Acquire (NOHZ_DEADLINE_REFRESH): the flags `deadline` reads are at least as new
            // as the last bump this load observes (NOHZ_DEADLINE_BUMP).
            let seen = self.0.load(NOHZ_DEADLINE_REFRESH.ordering());
            if only_if_stale && fresh(seen) {
                return;
            }
            let next = u64::from(deadline().get() as u32);
            if self
                .0
                .compare_exchange(seen, next, Relaxed, Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The busy tick's refresh of a stale word (the first kick to find it stale): as
    /// [`refresh`](Self::refresh) with `only_if_stale`, but it leaves the word stale when the
    /// deadline it folds is not after `now`. A fresh word with such a deadline would decide no
    /// tick (the not-due test fails on it from `now` on, as on a stale word), so its write
    /// would buy nothing; the next refresh that finds the deadline ahead (a later tick's, or
    /// the pass's at its end) makes it fresh.
    #[inline]
    pub fn refresh_if_ahead(&self, now: Jiffies, deadline: impl Fn() -> Jiffies) {
        loop {
            // Acquire (NOHZ_DEADLINE_REFRESH): as in `refresh`.
            let seen = self.0.load(NOHZ_DEADLINE_REFRESH.ordering());
            if fresh(seen) {
                return;
            }
            let d = deadline();
            if !d.is_after(now) {
                return;
            }
            let next = u64::from(d.get() as u32);
            if self
                .0
                .compare_exchange(seen, next, Relaxed, Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The raw word, for tests.
    #[cfg(test)]
    fn word(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

impl Default for KickDeadline {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// No bump landed on the word `w` since it was computed.
#[inline(always)]
fn fresh(w: u64) -> bool {
    w >> 32 == 0
}

/// The whole not-due test on the word `w` in one compare: `w` is fresh and its deadline `d` is
/// ahead of `now`'s low 32 bits `n`, `1 <= d - n < 2^31`.
///
/// `w - n - 1` lands below [`NOT_DUE_SPAN`] exactly then: for a fresh word (below 2^32) with
/// `d > n` it is `d - n - 1`; with `d <= n` it wraps to at least 2^64 - 2^32 (due, or a
/// deadline ahead across a wrap of `n`: the full path decides); for a stale word (at least
/// 2^33) it is at least 2^32.
#[inline(always)]
fn not_due(w: u64, now: Jiffies) -> bool {
    w.wrapping_sub(u64::from(now.get() as u32) + 1) < NOT_DUE_SPAN
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fresh_exactly_while_no_bump_landed() {
        assert!(fresh(0));
        assert!(fresh(0xffff_ffff));
        assert!(!fresh(BUMP));
        assert!(!fresh(u64::MAX));
    }

    #[test]
    fn bumps_never_carry_into_the_deadline_and_a_refresh_zeroes_them() {
        let d = KickDeadline::new();
        let at = || Jiffies::new(0x1_ffff_fffe);
        d.refresh(false, at);
        assert_eq!(d.get(), Some(Jiffies::new(0xffff_fffe)), "the low 32 bits");
        for i in 1..=3u64 {
            d.bump();
            let w = d.word();
            assert_eq!(w as u32, 0xffff_fffe, "no carry into the deadline");
            assert_eq!(w >> 33, i);
            assert!(!not_due(w, Jiffies::new(0x1_0000_0000)), "stale");
        }
        assert_eq!(d.get(), None);
        d.refresh(true, at);
        assert_eq!(d.get(), Some(Jiffies::new(0xffff_fffe)));
        assert_eq!(d.word() >> 32, 0);
        // A fresh word is left alone by a refresh that only wants a stale one.
        d.refresh(true, || Jiffies::new(7));
        assert_eq!(d.get(), Some(Jiffies::new(0xffff_fffe)));
    }

    #[test]
    fn the_ticks_refresh_writes_only_a_deadline_ahead() {
        let d = KickDeadline::new();
        d.refresh(false, || Jiffies::new(100));
        d.bump();
        let stale = d.word();
        // Due now or earlier: the word stays as it was (stale), no write.
        for at in [99, 100] {
            d.refresh_if_ahead(Jiffies::new(100), || Jiffies::new(at));
            assert_eq!(d.word(), stale, "deadline {at} at jiffies 100");
        }
        // Ahead: written fresh.
        d.refresh_if_ahead(Jiffies::new(100), || Jiffies::new(101));
        assert_eq!(d.get(), Some(Jiffies::new(101)));
        // A fresh word is left alone.
        d.refresh_if_ahead(Jiffies::new(100), || Jiffies::new(150));
        assert_eq!(d.get(), Some(Jiffies::new(101)));
    }

    #[test]
    fn the_one_compare_not_due_test() {
        let at = |d: u32, n: usize| not_due(u64::from(d), Jiffies::new(n));
        // Ahead by 1 .. 2^31 - 1: not due, whatever the high bits of now.
        assert!(at(4, 3));
        assert!(at(0x8000_0002, 3));
        assert!(at(0xffff_fffe, 0x1_ffff_fff0));
        // At or past the deadline, or 2^31 or more ahead (wrap-safe "before" says no): due.
        assert!(!at(3, 3));
        assert!(!at(3, 4));
        assert!(!at(0x8000_0003, 3));
        assert!(!at(3, 0x8000_0004));
        // Ahead across a 32-bit wrap of now: the full path decides (it is exact there).
        assert!(!at(3, 0xffff_fff0));
        // A stale word, whatever its deadline.
        for bumps in [1u64, 2, (1 << 31) - 1] {
            for d in [0u32, 4, 0xffff_ffff] {
                let w = u64::from(d) + bumps * BUMP;
                for n in [0usize, 3, 0xffff_fff0, 0x7fff_ffff] {
                    assert!(!not_due(w, Jiffies::new(n)), "{bumps} {d:#x} {n:#x}");
                }
            }
        }
    }
}
