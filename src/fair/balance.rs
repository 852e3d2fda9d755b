//! The idle side: the balance softirq, the ILB pass `_nohz_idle_balance` with
//! `update_nohz_stats`, and the newidle path that asks for a blocked-load refresh before
//! entering idle (spec §5.4, §5.5, §5.7).
//!
//! C source: `kernel/sched/fair.c` (`sched_balance_softirq`, `nohz_idle_balance`, `_nohz_idle_balance`, `update_nohz_stats`, `sched_balance_update_blocked_averages`, `update_blocked_load_status`, `sched_balance_newidle`, `nohz_newidle_balance`, `nohz_run_idle_balance`).
//!
//! The ILB pass clears `nohz.has_blocked_load` / `nohz.needs_update` *before* scanning the
//! mask, with the O1/O2 fence in between; a CPU registering concurrently either is seen by the
//! scan or re-sets the flag after the clear. Several passes may run at once (a softirq ILB and
//! `nohz_run_idle_balance` on other CPUs); their racy scalar stores are accepted, as in the
//! kernel.
//!
//! A visited CPU's own `rq.has_blocked_load` is cleared after the platform's decay returned,
//! outside the rq lock the decay held, so the clear is limited: it covers the sets up to a
//! reading taken before the decay, and a set the CPU made since (it ran a task and re-entered
//! idle meanwhile) keeps the flag. All `Relaxed`; the argument is in [`crate::rq`]'s docs.

use super::Fair;
use crate::cpu::CpuId;
use crate::cpus::Cpus;
use crate::fair::hooks::{IdleCpus, NohzLine, Policy};
use crate::fair::rq::NohzFlags;
use crate::jiffies::{Jiffies, LOAD_AVG_PERIOD_MS};
use crate::platform::{CpuIdleType, Platform};
use crate::sync::NOHZ_ILB_FENCE;
use crate::warn::{WarnSink, Warning};

/// `sysctl_sched_migration_cost`: newidle does not ask for a blocked-load refresh when the CPU
/// expects to be idle for less than this (nanoseconds).
#[doc(alias = "sysctl_sched_migration_cost")]
pub const SCHED_MIGRATION_COST_NS: u64 = 500_000;

/// How one `_nohz_idle_balance` pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IlbPass {
    /// The scan finished; `nohz.next_balance` / `nohz.next_blocked` were updated as asked.
    Completed,
    /// This CPU got work mid-scan: the pass stopped, re-armed what it had cleared, and left
    /// the deadlines alone.
    Aborted,
}

impl<P: Policy, const N: usize, const W: usize> Fair<P, N, W> {
    /// `sched_balance_softirq()` on `cpu`: the ILB work a kick handed over, if any and if the
    /// CPU is still idle, covers this CPU too; otherwise the CPU refreshes its own blocked
    /// load and balances its own domains.
    pub fn sched_balance_softirq<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        // __do_softirq clears the pending bits before running the handlers.
        self.rq(cpu).take_sched_softirq();
        let idle = if self.rq(cpu).idle_balance() {
            CpuIdleType::Idle
        } else {
            CpuIdleType::NotIdle
        };
        if self.nohz_idle_balance(cpus, cpu, idle, plat) {
            return;
        }
        self.update_blocked_averages(cpu, cpu, plat);
        let next = plat.balance_domains(cpu, cpu, idle);
        self.rq(cpu).set_next_balance(next);
    }

    /// `nohz_idle_balance(this_rq, idle)`: takes the flags the csd handler left; runs the ILB
    /// pass with them if the CPU is idle. Returns whether it ran.
    fn nohz_idle_balance<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        idle: CpuIdleType,
        plat: &Pl,
    ) -> bool {
        let rq = self.rq(cpu);
        let flags = rq.nohz_idle_balance();
        if flags.is_empty() {
            return false;
        }
        rq.set_nohz_idle_balance(NohzFlags::empty());
        if idle != CpuIdleType::Idle {
            return false;
        }
        self.nohz_idle_balance_pass(cpus, cpu, flags, plat);
        true
    }

    /// `_nohz_idle_balance(this_rq, flags)`: on behalf of every idle CPU in the mask, starting
    /// after `cpu` and wrapping round to it: refresh blocked load (STATS), run periodic
    /// balancing where due (BALANCE), and recompute `nohz.next_balance` (NEXT, or whenever a
    /// visited rq's deadline is earlier than 60 s from now).
    ///
    /// If `cpu` itself gets work during the scan it aborts: what it cleared is re-armed
    /// (`has_blocked_load` if STATS, `needs_update` if NEXT) and the deadlines stay as they
    /// were.
    #[doc(alias = "_nohz_idle_balance")]
    pub fn nohz_idle_balance_pass<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        flags: NohzFlags,
        plat: &Pl,
    ) -> IlbPass {
        let now = plat.jiffies();
        let mut next = now.add(60 * Pl::HZ as usize);
        let mut has_blocked = false;
        let mut update_next = false;
        let stats = flags.contains(NohzFlags::STATS);

        // Under a line whose balance kick may leave STATS out (`NohzLine::balance_kick`), a
        // BALANCE alone is its design, not the kernel's WARN.
        let hook = &self.nohz.scalars.hook;
        cpus.warn_at(cpu).warn_on(
            flags & NohzFlags::KICK_MASK == NohzFlags::BALANCE
                && hook
                    .balance_kick(NohzFlags::empty())
                    .contains(NohzFlags::STATS),
            Warning::BalanceWithoutStats,
        );
        if stats {
            self.nohz.store_has_blocked_load(false);
        }
        if flags.contains(NohzFlags::NEXT) {
            self.nohz.store_needs_update(false);
        }
        // O1/O2: order the clears above before the mask scan below, against nohz_balance_enter_idle's mask
        // bit before its stores of 1 (NOHZ_ENTER_IDLE_FENCE).
        NOHZ_ILB_FENCE.fence();

        let mut outcome = IlbPass::Completed;
        let nr = cpus.nr_cpu_ids();
        // Each word read after the fence, as the walk reaches it.
        let (set, line) = self.nohz.idle_set();
        let walk = set.for_each_cpu_wrap(line, self.idle_at(cpu), cpu, nr);
        for balance_cpu in walk {
            let rq = self.rq(balance_cpu);
            if !rq.idle_cpu() {
                continue;
            }
            // This CPU got work: stop balancing for others, re-arm what was cleared.
            if !self.rq(cpu).idle_cpu() && plat.need_resched(cpu) {
                if stats {
                    has_blocked = true;
                }
                if flags.contains(NohzFlags::NEXT) {
                    self.nohz.store_needs_update(true);
                }
                outcome = IlbPass::Aborted;
                break;
            }
            if stats {
                has_blocked |= self.update_nohz_stats(cpu, balance_cpu, plat);
            }
            if plat.jiffies().is_after_eq(rq.next_balance()) {
                plat.update_rq_clock(cpu, balance_cpu);
                if flags.contains(NohzFlags::BALANCE) {
                    let next_balance = plat.balance_domains(cpu, balance_cpu, CpuIdleType::Idle);
                    rq.set_next_balance(next_balance);
                }
            }
            // Read after any balancing moved it.
            let rq_next = rq.next_balance();
            if next.is_after(rq_next) {
                next = rq_next;
                update_next = true;
            }
        }

        if outcome == IlbPass::Completed {
            // Also when only STATS or only NEXT was asked for.
            if update_next {
                // The policy's `nohz` line may move it (`NohzLine::next_balance`); the
                // kernel's stores `next`.
                let next = self
                    .nohz
                    .scalars
                    .hook
                    .next_balance(next, || set.weight(line, nr));
                self.nohz.store_next_balance(next);
            }
            if stats {
                self.nohz
                    .store_next_blocked(now.add(plat.msecs_to_jiffies(LOAD_AVG_PERIOD_MS)));
            }
        }
        // abort:
        if has_blocked {
            self.nohz.store_has_blocked_load(true);
        }
        self.nohz
            .scalars
            .hook
            .moved(&self.nohz.scalars, plat.jiffies());
        outcome
    }

    /// `update_nohz_stats(rq)`, run by `by` for `cpu`: refresh `cpu`'s blocked load if it has
    /// some and is still registered; returns whether blocked load may remain (true, without
    /// work, if it was refreshed this very jiffy).
    fn update_nohz_stats<Pl: Platform<N>>(&self, by: CpuId<N>, cpu: CpuId<N>, plat: &Pl) -> bool {
        let rq = self.rq(cpu);
        if !rq.has_blocked_load() {
            return false;
        }
        if !self.nohz_idle_test(cpu) {
            return false;
        }
        if !plat.jiffies().is_after(rq.last_blocked_load_update_tick()) {
            return true;
        }
        self.update_blocked_averages(by, cpu, plat);
        rq.has_blocked_load()
    }

    /// `sched_balance_update_blocked_averages(cpu)`, run by `by`: stamps
    /// `last_blocked_load_update_tick`, has the platform decay the averages, and if nothing
    /// remains clears `rq.has_blocked_load` (`update_blocked_load_status`; it is never set
    /// here), unless `cpu` set it again after the decay began.
    #[doc(alias = "sched_balance_update_blocked_averages")]
    #[doc(alias = "update_blocked_load_status")]
    #[doc(alias = "__sched_balance_update_blocked_averages")]
    fn update_blocked_averages<Pl: Platform<N>>(&self, by: CpuId<N>, cpu: CpuId<N>, plat: &Pl) {
        let rq = self.rq(cpu);
        // Read before the platform's decay: the clear below covers the sets up to this
        // reading, and a set landing after it survives. One the reading saw was made after
        // its load was enqueued under the rq lock, so the decay sees that load (the lock
        // orders them).
        let before = rq.blocked_load_snapshot();
        rq.set_last_blocked_load_update_tick(plat.jiffies());
        if !plat.update_blocked_averages(by, cpu) {
            rq.clear_has_blocked_load(before);
        }
    }

    /// The NOHZ-visible part of `sched_balance_newidle()` on `cpu`, about to go idle: the
    /// misfit status is cleared if the machine has asymmetric CPU capacity
    /// ([`sched_asym_cpucap_active`](Self::sched_asym_cpucap_active); on a symmetric machine
    /// `update_misfit_status(NULL, rq)` returns at once and `misfit_task_load` is left as it
    /// was); a CPU with a queued wakeup or an inactive one stops there. A CPU with a domain
    /// walks its domains only if the root domain is overloaded and `avg_idle` is at least the
    /// base domain's `max_newidle_lb_cost` (the platform's
    /// [`newidle_domain`](crate::platform::Balance::newidle_domain)); before the walk it
    /// reads the cost window's start (`t0`, the platform's
    /// [`sched_clock_cpu`](crate::platform::Balance::sched_clock_cpu)), then refreshes its own
    /// blocked averages, exactly as `update_nohz_stats` does for a remote CPU (stamp, decay,
    /// `update_blocked_load_status`), and hands `t0` to the walk, so that the refresh counts
    /// toward the first domain's cost as in the kernel. A CPU without a domain goes on
    /// without a walk. Then `rq.next_balance` is pulled in to `jiffies + HZ` or the domains'
    /// earlier deadline (a policy's `nohz` line may hold it back after a look that found
    /// nothing to pull, `NohzLine::newidle_next_balance`), and if nothing was pulled
    /// `nohz_newidle_balance` may ask for a blocked-load refresh of the idle CPUs. Returns
    /// whether a task was pulled.
    #[doc(alias = "update_misfit_status")]
    pub fn sched_balance_newidle<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> bool {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let rq = self.rq(cpu);
        // update_misfit_status(NULL, rq), before any early return: without a task it only
        // clears the status, and only once asymmetric capacity is active.
        if self.sched_asym_cpucap_active() {
            rq.set_misfit_task_load(0);
        }
        if rq.ttwu_pending() || !cpus.cpu_active(cpu) {
            return false;
        }
        let mut next: Jiffies = plat.jiffies().add(Pl::HZ as usize);
        let mut pulled = false;
        // Whether the look found nothing to pull: no overloaded CPU in the root domain, or a
        // walk that pulled nothing (not: a walk skipped for too short an expected idle).
        let mut found_nothing = false;
        if rq.has_sched_domain() {
            let sd = plat.newidle_domain(cpu);
            let deadline = if !sd.rd_overloaded || rq.avg_idle() < sd.max_newidle_lb_cost {
                found_nothing = !sd.rd_overloaded;
                sd.next_balance
            } else {
                // The cost window opens before the refresh (t0 = sched_clock_cpu()), so the
                // refresh counts toward the first domain's cost; then
                // __sched_balance_update_blocked_averages(this_rq), then the walk.
                let t0 = plat.sched_clock_cpu(cpu);
                self.update_blocked_averages(cpu, cpu, plat);
                let outcome = plat.newidle_balance(cpu, t0);
                pulled = outcome.pulled_task;
                found_nothing = !pulled;
                outcome.next_balance
            };
            if let Some(deadline) = deadline
                && next.is_after(deadline)
            {
                next = deadline;
            }
        }
        // The policy's `nohz` line may hold it back (`NohzLine::newidle_next_balance`); the
        // kernel's pulls `rq->next_balance` in to `next`.
        let current = rq.next_balance();
        let keep =
            self.nohz
                .scalars
                .hook
                .newidle_next_balance(current, next, found_nothing, || plat.jiffies());
        if keep != current {
            rq.set_next_balance(keep);
        }
        if !pulled {
            self.nohz_newidle_balance(cpu, plat);
        }
        pulled
    }

    /// `nohz_newidle_balance(this_rq)`: if this CPU expects a long enough idle and blocked load
    /// refresh is due, set NEWILB on itself so its idle entry runs a STATS pass (no IPI).
    fn nohz_newidle_balance<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        let rq = self.rq(cpu);
        if rq.avg_idle() < SCHED_MIGRATION_COST_NS {
            return;
        }
        if !self.nohz.has_blocked_load() || plat.jiffies().is_before(self.nohz.next_blocked()) {
            return;
        }
        rq.nohz_flags().request_newilb();
    }

    /// `nohz_run_idle_balance(cpu)`, first thing in the idle loop: consume NEWILB; if it was
    /// the only bit (no kick pending, whose softirq would do the same) and nothing needs to
    /// run, do a STATS pass here, even though this CPU may not be in the mask yet. Returns the
    /// pass's outcome if one ran.
    pub fn nohz_run_idle_balance<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<IlbPass> {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let flags = self.rq(cpu).nohz_flags().take_newilb();
        if flags == NohzFlags::NEWILB && !plat.need_resched(cpu) {
            return Some(self.nohz_idle_balance_pass(cpus, cpu, NohzFlags::STATS, plat));
        }
        None
    }
}
