//! [`Scalable`]: `Patched` with a `nohz` line of its own, [`ScalableLine`] (no kernel
//! counterpart; feature `scalable`).
//!
//! C source: none (beyond the kernel); it changes how `kernel/sched/fair.c`'s
//! `nohz_balance_enter_idle` writes `nohz.has_blocked_load` and `nohz.needs_update`, and
//! shortcuts `nohz_balancer_kick`'s not-due tick.
//!
//! # Design
//!
//! `Scalable` keeps every kernel object of `Patched` but one: the `nohz` line hook
//! (`crate::fair::hooks::NohzLine`), whose state is the [`KickDeadline`] word on the `nohz`
//! scalar line.
//!
//! - **Read before write** (spec §6 O7): idle entry stores 1 into `nohz.has_blocked_load` and
//!   `nohz.needs_update` only if it reads 0 there, so a registered CPU re-entering idle (every
//!   idle pass, after seed 001) writes no shared line. Its idempotent path sets
//!   `rq.has_blocked_load` with an RMW and then fences (`NOHZ_ENTER_IDLE_REPEAT_FENCE`, below):
//!   the flag it may skip storing is read after the fence, which pairs with the ILB's clear
//!   before its runqueue reads (`NOHZ_ILB_FENCE`). The kernel needs no barrier there because
//!   its store is blind.
//! - **The not-due gate**: the busy tick's "balancing not due" test is one load of the
//!   precomputed deadline (`kick_deadline`'s docs say who keeps it true).
//!
//! Observably identical to `Patched`: loom (`o7`, and every model run under `Scalable`), the
//! property tests against the reference model and every kernel-path test check it.

use super::kick_deadline::KickDeadline;
use crate::cpu::CpuId;
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::fair::hooks::{NohzLine, Policy, sealed};
use crate::fair::rq::Rq;
use crate::fair::{Fair, KickDecision, Scalars};
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::sync::{AtomicU32, Ordering, Ordering::Relaxed, Site};

/// `Patched`, with the `nohz` flags read before they are written and the busy tick's not-due
/// test one load of a precomputed deadline: the same observable behaviour, no shared-line store
/// on a repeated idle entry. Recommended where its proofs and numbers matter (feature
/// `scalable`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Scalable;

impl sealed::Sealed for Scalable {
    type IdleCpus<const W: usize> = CpuMask<W>;
    type NohzLine = ScalableLine;
}

impl Policy for Scalable {
    const NAME: &'static str = "scalable";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    #[cfg(feature = "testing")]
    const READ_BEFORE_WRITE: bool = true;
    #[cfg(feature = "testing")]
    const KICK_DEADLINE: bool = true;
    #[cfg(feature = "testing")]
    const SHARDED: bool = false;
}

/// `Scalable` only (O6 made safe for O7): on `nohz_balance_enter_idle`'s idempotent path,
/// between storing `rq.has_blocked_load = 1` and reading `nohz.has_blocked_load` to decide
/// whether to store 1 there. The kernel needs no barrier here because its store is blind.
pub static NOHZ_ENTER_IDLE_REPEAT_FENCE: Site = Site::fence_site(
    "nohz.nohz_balance_enter_idle.repeat_fence",
    Ordering::SeqCst,
    "O6/O7 (Scalable)",
    "nohz.ilb.clear_fence: the ILB clears has_blocked_load, fences, then reads each visited rq's \
     has_blocked_load",
    "this CPU reading nohz.has_blocked_load as 1 from before the ILB cleared it (so storing \
     nothing) while the ILB reads this CPU's rq.has_blocked_load as 0 (so decaying nothing): the \
     flag ends 0 with this CPU's new blocked load never decayed",
);

/// `Scalable`'s `nohz` line (and `Sharded`'s): idle entry reads `nohz.has_blocked_load` and
/// `nohz.needs_update` before it stores 1 into them (spec §6 O7), so a registered CPU that
/// re-enters idle (every idle pass, after seed 001) writes no shared line; and the busy tick's
/// not-due test is one load of the precomputed [`KickDeadline`], its state on the `nohz` line.
#[derive(Debug)]
pub struct ScalableLine {
    kick_deadline: KickDeadline,
}

impl NohzLine for ScalableLine {
    #[cfg(not(nohz_loom))]
    const NEW: Self = ScalableLine {
        kick_deadline: KickDeadline::new(),
    };
    #[cfg(nohz_loom)]
    fn new() -> Self {
        ScalableLine {
            kick_deadline: KickDeadline::new(),
        }
    }

    /// The repeat entry, whole: `rq.has_blocked_load` set with an RMW, so that the fence after
    /// it is free on x86; then the fence, so that the flag read after it pairs with the ILB's
    /// clear before its rq reads (NOHZ_ENTER_IDLE_REPEAT_FENCE against NOHZ_ILB_FENCE, O7);
    /// then `nohz.has_blocked_load` only if it reads 0. Never a compare-exchange (T9).
    #[inline(always)]
    fn reenter_idle(&self, line: &Scalars, rq: &Rq) -> bool {
        rq.raise_has_blocked_load();
        NOHZ_ENTER_IDLE_REPEAT_FENCE.fence_after_rmw();
        let raised = self.raise(&line.has_blocked_load);
        self.raised(raised);
        true
    }

    #[inline(always)]
    fn raise(&self, flag: &AtomicU32) -> bool {
        let store = flag.load(Relaxed) == 0;
        if store {
            flag.store(1, Relaxed);
        }
        store
    }

    /// A flag this entry set makes the kick due sooner: one bump covers both. A CPU that read
    /// 1 stores nothing: whoever stored that 1 bumps before its entry returns, and if an ILB
    /// pass cleared it meanwhile, that pass's scan sees this CPU (O7).
    #[inline(always)]
    fn raised(&self, raised: bool) {
        if raised {
            self.kick_deadline.bump();
        }
    }

    /// The common tick is decided by a handful of plain loads with no side effect, combined
    /// without short-circuiting so that it runs straight through to one branch; any other
    /// tick goes behind the gate, out of line, so that the common tick saves no registers
    /// (`ci/guards.sh`, T5a: 44 -> 28 instructions).
    #[inline(always)]
    fn gate<P: Policy, const N: usize, const W: usize, Pl: Platform<N>>(
        &self,
        fair: &Fair<P, N, W>,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> KickDecision<N> {
        let rq = fair.rq(cpu);
        let now = plat.jiffies();
        let idle_or_registered = rq.idle_balance() | rq.nohz_tick_stopped();
        let on_own_cpu = match plat.this_cpu() {
            Some(me) => me == cpu,
            None => true,
        };
        if self
            .kick_deadline
            .prelude(idle_or_registered, on_own_cpu, now)
        {
            return KickDecision::NoFlags;
        }
        let common = !idle_or_registered & on_own_cpu;
        self.behind_gate(&Tick {
            fair,
            cpus,
            cpu,
            plat,
            common,
            now,
        })
    }

    #[inline]
    fn moved(&self, line: &Scalars, now: Jiffies) {
        self.kick_deadline
            .refresh(false, || deadline_from_scalars(line, now));
    }

    #[cfg(feature = "testing")]
    fn deadline(&self) -> Option<Jiffies> {
        self.kick_deadline.get()
    }
}

/// A tick the gate's first look did not decide, handed behind the gate: built on that path
/// alone, so that the common tick moves no register for the call.
struct Tick<'a, P: Policy, const N: usize, const W: usize, Pl> {
    fair: &'a Fair<P, N, W>,
    cpus: &'a Cpus<N, W>,
    cpu: CpuId<N>,
    plat: &'a Pl,
    /// The tick is not idle, the CPU not registered, the caller on it.
    common: bool,
    now: Jiffies,
}

impl ScalableLine {
    /// Behind the gate, for a tick the first look did not decide: refresh a stale word from
    /// the scalars (once per bump: the first kick to find it stale and its deadline ahead; a
    /// deadline already due would decide no tick, so it is not written), look again, and run the
    /// kernel's `nohz_balancer_kick` if the tick is still not decided. Out of line: see
    /// [`gate`](NohzLine::gate).
    #[inline(never)]
    fn behind_gate<P: Policy, const N: usize, const W: usize, Pl: Platform<N>>(
        &self,
        tick: &Tick<'_, P, N, W, Pl>,
    ) -> KickDecision<N> {
        let (fair, now) = (tick.fair, tick.now);
        let line: &Scalars = &fair.nohz().scalars;
        self.kick_deadline
            .refresh_if_ahead(now, || deadline_from_scalars(line, now));
        if tick.common && self.kick_deadline.not_due(now) {
            return KickDecision::NoFlags;
        }
        fair.nohz_balancer_kick(tick.cpus, tick.cpu, tick.plat)
    }
}

/// The deadline `now`'s kick would fold from the scalars: now while `needs_update` is set,
/// else `next_blocked + 1` while `has_blocked_load` is set and that is earlier, else
/// `next_balance`.
fn deadline_from_scalars(line: &Scalars, now: Jiffies) -> Jiffies {
    if line.needs_update() {
        return now;
    }
    let balance = line.next_balance();
    let blocked = line.next_blocked().add(1);
    if line.has_blocked_load() && blocked.is_before(balance) {
        blocked
    } else {
        balance
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Legacy, Patched};

    fn seeds<P: Policy>() -> [bool; 4] {
        [
            !P::NR_CPUS_COUNTER,
            P::TIME_CHECKS_FIRST,
            P::ENTER_IDLE_WHENEVER_STOPPED,
            P::IRQTIME_STATIC_KEY,
        ]
    }

    #[test]
    fn scalable_is_patched_plus_read_before_write() {
        assert_eq!(seeds::<Scalable>(), seeds::<Patched>());
        let rbw = [
            Scalable::READ_BEFORE_WRITE,
            Patched::READ_BEFORE_WRITE,
            Legacy::READ_BEFORE_WRITE,
        ];
        assert_eq!(rbw, [true, false, false]);
        assert_ne!(Scalable::NAME, Patched::NAME);
    }
}
