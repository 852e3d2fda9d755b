//! The busy side: the scheduler tick's balance trigger, `nohz_balancer_kick`'s decision tree,
//! `kick_ilb`, `find_new_ilb`, and the csd that carries the kick (spec §5.1-§5.4).
//!
//! C source: `kernel/sched/fair.c` (`sched_balance_trigger`, `nohz_balancer_kick`, `check_cpu_capacity`, `kick_ilb`, `find_new_ilb`).
//!
//! Ownership of a CPU's csd follows its `nohz_flags`: the kicker whose `fetch_or` turns the
//! kick bits from all-clear to any-set owns the csd and sends the IPI; later kickers' bits
//! ride along. The handler frees the csd, then consumes every bit with one `fetch_andnot`, so
//! the next kicker to set a bit owns a free csd. Both RMWs are AcqRel (O3): a kicker's writes
//! before its `fetch_or` reach the handler that consumes its bits, and the handler's free of
//! the csd reaches the next owner.

use super::Fair;
use crate::cpu::CpuId;
use crate::cpus::Cpus;
use crate::fair::ExitFrom;
use crate::fair::hooks::{IdleCpus, NohzLine, Policy};
use crate::fair::rq::NohzFlags;
use crate::platform::Platform;
use crate::sync::Ordering::Relaxed;
use crate::warn::{WarnSink, Warning};

/// What one `nohz_balancer_kick` call decided; returned for tests and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KickDecision<const N: usize> {
    /// The tick landed on an idle CPU (`rq.idle_balance`): nothing done.
    IdleTick,
    /// `Legacy`: `nohz.nr_cpus` was 0, so nothing further was read.
    NobodyTickless,
    /// `Patched`: balancing was due but the idle mask was empty: returned before `out`,
    /// dropping any STATS or NEXT (a `return`, not a `goto out`). Beyond the kernel, also:
    /// the idle set had no CPU `find_new_ilb` could pick (`HegdeHk`, feature `posted`), due
    /// or not.
    EmptyMask,
    /// Nothing to request.
    NoFlags,
    /// `kick_ilb` ran with these flags.
    Kick {
        /// The flags requested.
        flags: NohzFlags,
        /// What `kick_ilb` did with them.
        outcome: KickOutcome<N>,
    },
}

/// What one `kick_ilb` call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KickOutcome<const N: usize> {
    /// `find_new_ilb` found no idle housekeeping CPU other than the kicker.
    NoIlb,
    /// The chosen CPU already had every requested bit: nothing written.
    AlreadyPending(CpuId<N>),
    /// The bits were added to a kick already in flight to this CPU; no IPI.
    RodeAlong(CpuId<N>),
    /// This call owned the csd and sent the IPI to this CPU.
    Sent(CpuId<N>),
    /// This call owned the csd but found it busy (never expected; counted as
    /// [`Warning::CsdBusy`]); no IPI.
    CsdBusy(CpuId<N>),
}

impl<P: Policy, const N: usize, const W: usize> Fair<P, N, W> {
    /// `sched_balance_trigger(rq)`: nothing for a CPU without a domain or an inactive one;
    /// otherwise raise `SCHED_SOFTIRQ` if this rq's own balance is due, then
    /// `nohz_balancer_kick`.
    pub fn sched_balance_trigger<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<KickDecision<N>> {
        let rq = self.rq(cpu);
        if !rq.has_sched_domain() || !cpus.cpu_active(cpu) {
            return None;
        }
        if plat.jiffies().is_after_eq(rq.next_balance()) {
            rq.raise_sched_softirq(cpu, plat);
        }
        Some(self.nohz_balancer_kick_gated(cpus, cpu, plat))
    }

    /// The busy tick's `nohz_balancer_kick`, behind the policy's not-due gate: beyond the
    /// kernel, the `nohz` line may decide the tick first (`NohzLine::gate`,
    /// `crate::fair::hooks`). The kernel has no gate: this is
    /// [`nohz_balancer_kick`](Self::nohz_balancer_kick), inline. `Scalable`'s decides the
    /// common tick (not idle, not registered, on its own CPU, balancing not due) with one
    /// precomputed word, and runs the function, out of line, for the others.
    #[inline]
    pub(crate) fn nohz_balancer_kick_gated<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> KickDecision<N> {
        self.nohz.scalars.hook.gate(self, cpus, cpu, plat)
    }

    /// `nohz_balancer_kick(rq)`: on a busy CPU's tick, decide whether an idle CPU should
    /// balance on behalf of the tickless idle CPUs, and with which flags (spec §5.2), in the
    /// kernel's order: each `goto out` is a `break 'out` to [`out`](Self::nohz_balancer_kick_out).
    /// Once balancing is due, the rest of the C function runs in
    /// [`nohz_balancer_kick_due`](Self::nohz_balancer_kick_due), which ends at the same `out`.
    ///
    /// `Patched` (seed 000): the blocked-load and balance-time checks come first; only when
    /// balancing is due is the idle mask tested for emptiness (the cold case), and an empty
    /// mask returns without kicking even if STATS was wanted. `Legacy`: `nohz.nr_cpus` is read
    /// first and nothing else happens while it is 0. Both sides are inline below, each reading
    /// as the seed's diff.
    ///
    /// Nothing beyond the kernel enters here: the policy's not-due gate, if any, runs before
    /// it ([`nohz_balancer_kick_gated`](Self::nohz_balancer_kick_gated)).
    #[inline]
    pub fn nohz_balancer_kick<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> KickDecision<N> {
        let rq = self.rq(cpu);
        let nohz = &*self.nohz.scalars;
        let now = plat.jiffies();
        let mut flags = NohzFlags::empty();
        // A tick on an idle CPU: no exit, no kick.
        if rq.idle_balance() {
            return KickDecision::IdleTick;
        }
        // The first busy tick after idle takes this CPU out of the mask.
        self.nohz_balance_exit_idle(cpus, cpu, ExitFrom::Tick, plat);
        // Before seed 000: nobody tickless, read first, before any time check.
        if !P::TIME_CHECKS_FIRST && nohz.nr_cpus.load(Relaxed) == 0 {
            return KickDecision::NobodyTickless;
        }
        'out: {
            if nohz.has_blocked_load() && now.is_after(nohz.next_blocked()) {
                flags = NohzFlags::STATS;
            }
            // Not due: straight to `out`, which may still kick for STATS / NEXT.
            if now.is_before(nohz.next_balance()) {
                // Beyond the kernel, the idle set may end the kick here (`IdleCpus::no_ilb`).
                if self.no_ilb(cpus, cpu, flags, false) {
                    return empty_mask();
                }
                break 'out;
            }
            // Balancing is due: the rest, down to `out`, in a function of its own, so that the
            // common not-due tick above keeps no register live across a call and saves none
            // (ci/guards.sh, T5a: 49 -> 44 instructions for Patched).
            return self.nohz_balancer_kick_due(cpus, cpu, plat, flags);
        }
        self.nohz_balancer_kick_out(cpus, cpu, plat, flags)
    }

    /// `nohz_balancer_kick` from "balancing is due" on, `flags` as the time checks left them:
    /// the emptiness test, then the `rcu_read_lock()` section's domain tests in the kernel's
    /// order, each `goto unlock` a `break 'unlock`, then [`out`](Self::nohz_balancer_kick_out).
    #[inline(never)]
    fn nohz_balancer_kick_due<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
        mut flags: NohzFlags,
    ) -> KickDecision<N> {
        let rq = self.rq(cpu);
        // What each test below asks for when it wants balancing (the kernel's: STATS and
        // BALANCE; the `nohz` line's hook).
        let balance = self.nohz.scalars.hook.balance_kick(flags);
        'out: {
            // Beyond the kernel, the idle set may end the kick here (`IdleCpus::no_ilb`).
            if self.no_ilb(cpus, cpu, flags, true) {
                return empty_mask();
            }
            // Seed 000: the emptiness test after the time checks, and unlikely.
            if P::TIME_CHECKS_FIRST && self.idle_set_empty(cpus, cpu) {
                return empty_mask();
            }
            if rq.nr_running() >= 2 {
                flags = balance;
                break 'out;
            }
            let nr = cpus.nr_cpu_ids();
            // rcu_read_lock: the domain facts below are this generation's.
            'unlock: {
                if rq.has_sched_domain()
                    && rq.h_nr_runnable() >= 1
                    && check_cpu_capacity(rq, rq.sd_capacity(self.domains_slot()))
                {
                    flags = balance;
                    break 'unlock;
                }
                if plat.has_asym_packing(cpu) {
                    let (set, line) = self.nohz.idle_set();
                    for i in set.for_each_cpu(line, nr) {
                        if plat.asym_prefers(i, cpu) {
                            flags = balance;
                            break 'unlock;
                        }
                    }
                }
                if plat.has_asym_cpucapacity(cpu) {
                    // Asymmetric capacity systems skip the LLC test.
                    if rq.misfit_task_load() != 0 {
                        flags = balance;
                    }
                    break 'unlock;
                }
                if let Some((nr_busy_cpus, _)) = self.llc_of(nr, cpu)
                    && nr_busy_cpus.load(Relaxed) > 1
                {
                    flags = balance;
                }
            }
            // unlock: rcu_read_unlock
        }
        self.nohz_balancer_kick_out(cpus, cpu, plat, flags)
    }

    /// `nohz_balancer_kick`'s `out:` label: NEXT if an update is wanted, then the kick, if
    /// there is anything to ask for.
    #[inline(always)]
    fn nohz_balancer_kick_out<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
        mut flags: NohzFlags,
    ) -> KickDecision<N> {
        let line = &self.nohz.scalars;
        // The `nohz` line's hook may keep NEXT off a kick (the kernel's never does).
        if line.needs_update() && line.hook.next_kick(line, flags, || plat.jiffies()) {
            flags |= NohzFlags::NEXT;
        }
        if flags.is_empty() {
            return KickDecision::NoFlags;
        }
        KickDecision::Kick {
            flags,
            outcome: self.kick_ilb(cpus, cpu, flags, plat),
        }
    }

    /// `cpumask_empty(nohz.idle_cpus_mask)` as `cpu`'s busy tick asks it.
    #[inline]
    fn idle_set_empty(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>) -> bool {
        let (set, line) = self.nohz.idle_set();
        set.empty(line, self.idle_at(cpu), cpus)
    }

    /// Beyond the kernel: whether `cpu`'s kick ends here because the idle set has no CPU
    /// `find_new_ilb` could pick (`IdleCpus::no_ilb`; the kernel's set: never, and this is
    /// `false`, inline).
    #[inline(always)]
    fn no_ilb(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>, flags: NohzFlags, due: bool) -> bool {
        let (set, line) = self.nohz.idle_set();
        set.no_ilb(
            line,
            self.idle_at(cpu),
            &self.housekeeping,
            cpus,
            flags,
            due,
        )
    }

    #[cfg(feature = "testing")]
    /// "Is any CPU tickless?" as `cpu`'s busy tick asks it once balancing is due: `Legacy`
    /// reads `nohz.nr_cpus`, the others test the idle set for emptiness. Side-effect free; for
    /// reports and tests.
    pub(crate) fn anyone_tickless(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>) -> bool {
        if P::NR_CPUS_COUNTER {
            self.nohz.nr_cpus() != 0
        } else {
            !self.idle_set_empty(cpus, cpu)
        }
    }

    /// `kick_ilb(flags)`: pick an idle CPU and hand it `flags`; send the IPI if this call
    /// turned its kick bits on. With BALANCE, `nohz.next_balance` moves to the next jiffy
    /// first, so balancing is kicked at most once per jiffy even when no CPU is found.
    pub fn kick_ilb<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        flags: NohzFlags,
        plat: &Pl,
    ) -> KickOutcome<N> {
        if flags.contains(NohzFlags::BALANCE) {
            // A rate limiter, not a publication: nothing relies on its order (O4).
            let now = plat.jiffies();
            self.nohz.store_next_balance(now.add(1));
            self.nohz.scalars.hook.moved(&self.nohz.scalars, now);
        }
        let Some(ilb) = self.find_new_ilb_at(cpus, cpu, || plat.jiffies()) else {
            return KickOutcome::NoIlb;
        };
        let target = self.rq(ilb);
        // Cheap pre-check: nothing new to ask for. A stale read only costs an extra fetch_or
        // or skips one whose bits were already set.
        if target.nohz_flags().load().contains(flags) {
            return KickOutcome::AlreadyPending(ilb);
        }
        // O3: AcqRel fetch_or (NOHZ_KICK_FETCH_OR), pairs with nohz_csd_func's fetch_andnot.
        let old = target.nohz_flags().kick(flags);
        if old.intersects(NohzFlags::KICK_MASK) {
            return KickOutcome::RodeAlong(ilb);
        }
        // This call owns the csd.
        if !target.csd_lock() {
            cpus.warn_at(cpu).warn(Warning::CsdBusy);
            return KickOutcome::CsdBusy(ilb);
        }
        plat.send_nohz_ipi(cpu, ilb);
        KickOutcome::Sent(ilb)
    }

    #[cfg(feature = "testing")]
    /// `find_new_ilb()`: the first CPU, ascending, that is in both the idle mask and the
    /// housekeeping mask, is not `cpu`, and is idle right now. `Sharded`: in the policy's
    /// order (`LocalFirst` rotates its start slot with jiffies, taken as 0 here; `kick_ilb`
    /// passes the current jiffies), clearing stale summary bits on the way.
    pub fn find_new_ilb(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>) -> Option<CpuId<N>> {
        self.find_new_ilb_at(cpus, cpu, || crate::jiffies::Jiffies::new(0))
    }

    /// [`find_new_ilb`](Self::find_new_ilb) at jiffies `now()` (read only by an idle set
    /// whose order rotates with time).
    pub(crate) fn find_new_ilb_at(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        now: impl FnOnce() -> crate::jiffies::Jiffies,
    ) -> Option<CpuId<N>> {
        let (set, line) = self.nohz.idle_set();
        set.find_ilb(
            line,
            self.idle_at(cpu),
            &self.housekeeping,
            cpus.nr_cpu_ids(),
            now,
            |ilb| ilb != cpu && self.rq(ilb).idle_cpu(),
        )
    }
}

/// `check_cpu_capacity(rq, sd)`: this CPU lost a noticeable share of its capacity to RT, DL or
/// IRQ pressure (`cpu_capacity * imbalance_pct < arch_capacity * 100`), computed without
/// overflow. `sd` is the current domain generation's capacity facts: `imbalance_pct` and the
/// capacity as the domain build took them from the platform, so that the tick, with
/// interrupts off, calls no platform method for them (the kernel reads `sd->imbalance_pct`
/// from the domain).
fn check_cpu_capacity(rq: &crate::fair::rq::Rq, sd: &crate::fair::rq::SdCapacity) -> bool {
    (rq.cpu_capacity() as u128) * (sd.imbalance_pct() as u128) < (sd.arch_capacity() as u128) * 100
}

/// The "nobody tickless" return after the time checks, out of line: seed 000 marks it
/// unlikely.
#[cold]
#[inline(never)]
fn empty_mask<const N: usize>() -> KickDecision<N> {
    KickDecision::EmptyMask
}
