//! The invariants, checked between events. The engine is sequential, so between two events no
//! crate code runs: what the threaded soak can check only at a quiescent snapshot (and gives
//! up on when a CPU stays busy) holds here at every check, exactly, except what a balancing
//! pass in progress legitimately leaves half done (a pass spans events: its CPU waits in its
//! work with `nohz.has_blocked_load` cleared until its end). So do the cross-CPU
//! consistencies the reference model in `tests/model` asserts after each of its steps, and
//! the engine's own (the run-queue facts the crate reads, no lost wakeup).
//!
//! What only the engine can link, also checked:
//! - blocked load is never lost: a CPU idling registered while the platform's blocked load
//!   there is not gone has `rq->has_blocked_load` set (the crate clears it only after a decay
//!   that found none, and a set made during that decay survives the clear);
//! - idle time accounted equals idle time spent: the ticks a tickless idle period accounts
//!   (`account_idle_ticks`) and the ticks that ran on its idle task are the jiffies from the
//!   tick's stop to its restart;
//! - the deadlines a kick's pass leaves are the kernel's: a completed STATS pass re-arms
//!   `nohz.next_blocked` a `LOAD_AVG_PERIOD` after its start, an aborted one leaves it and
//!   `nohz.next_balance` as they were, and re-arms `nohz.needs_update` if it had NEXT
//!   (whenever no other writer of them ran meanwhile);
//! - the LLC busy counts match their CPUs after every event, a rebuild spanning events
//!   included.

use super::metrics::PassStart;
use super::{Engine, cost};
use crate::sim::CAP;
use nohz::{
    KickDecision, KickOutcome, LOAD_AVG_PERIOD_MS, NohzFlags, NrCpuIds, Policy, TsFlags,
    msecs_to_jiffies,
};
use std::num::NonZeroU32;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Checks every invariant on every CPU, counting each predicate and recording each
    /// violation with the time it was seen; `last`: the run's final check, which also makes
    /// the checks too slow for every event.
    pub(super) fn check(&self, last: bool) {
        let mut checks = 0u64;
        let mut bad: Vec<String> = Vec::new();
        let mut expect = |holds: bool, what: &dyn Fn() -> String| {
            checks += 1;
            if !holds {
                bad.push(what());
            }
        };
        let m = &*self.m;
        let global_blocked = m.nohz().has_blocked_load();
        // The policy's balance kick carries STATS (the kernel's always does).
        let stats_with_balance = m
            .nohz_balance_kick_flags(NohzFlags::empty())
            .contains(NohzFlags::STATS);
        // An ILB pass in progress (its CPU balancing in its time) cleared
        // `nohz.has_blocked_load` at its start and sets it again at its end if it left blocked
        // load: until then a registered CPU's blocked load is the pass's to find, not the
        // flag's (O1's other half).
        let pass_running = (0..self.cpus.len()).any(|c| {
            self.cpus[c].busy.get() && self.balancing(c) == super::metrics::Balancing::Ilb
        });
        for (i, s) in self.cpus.iter().enumerate() {
            let cpu = self.id(i);
            let rq = m.rq(cpu);
            let in_mask = m.nohz_idle_test(cpu);
            let registered = rq.nohz_tick_stopped();
            expect(in_mask == registered, &|| {
                format!("CPU {i}: in the idle mask {in_mask}, registered {registered}")
            });
            expect(
                !in_mask || (m.cpu_active(cpu) && m.cpu_online(cpu)),
                &|| format!("CPU {i}: an inactive or offline CPU is in the idle mask"),
            );
            let kicked = rq.nohz_flags().load().intersects(NohzFlags::KICK_MASK);
            let busy = rq.csd_busy();
            expect(kicked == busy, &|| {
                format!("CPU {i}: kick bits set {kicked}, csd busy {busy} (a csd never released?)")
            });
            expect(!busy || s.kicks_in_flight.get() > 0, &|| {
                format!("CPU {i}: a busy csd with no kick IPI on its way (never released)")
            });
            // The run-queue facts the crate reads are the scheduler's.
            let nr = self.nr(i) as u32;
            expect(rq.nr_running() == nr, &|| {
                format!(
                    "CPU {i}: the crate reads {} tasks, {nr} are queued",
                    rq.nr_running()
                )
            });
            // O1: a CPU settled in its idle state, registered with blocked load, is covered by
            // `nohz.has_blocked_load` (or an ILB pass would skip it).
            let settled = s.halted.get()
                && !s.need_resched.get()
                && m.tick_sched(cpu).flags().contains(TsFlags::STOPPED)
                && (P::ENTER_IDLE_WHENEVER_STOPPED || !s.nohz_full);
            // Blocked load is never lost: the platform's is not gone, so the flag is set (a
            // registered CPU set it at its idle entry; only a decay that found none clears it).
            if settled && in_mask && P::ENTER_IDLE_WHENEVER_STOPPED && self.pelt_blocked_stored(i) {
                expect(rq.has_blocked_load(), &|| {
                    format!(
                        "CPU {i} idles registered with blocked load left, but \
                         rq.has_blocked_load is clear (lost)"
                    )
                });
            }
            if settled && in_mask && rq.has_blocked_load() && !pass_running {
                expect(global_blocked, &|| {
                    format!(
                        "O1: CPU {i} idles registered with blocked load, nohz.has_blocked_load \
                         is 0 (an ILB pass missed it)"
                    )
                });
            }
            // BALANCE is never requested without STATS (pending kick bits, or the flags
            // handed to the softirq), under a policy whose balance kick always carries STATS
            // (not `Paced`'s, which asks STATS only when nohz.next_blocked is due).
            for f in [rq.nohz_flags().load(), rq.nohz_idle_balance()] {
                expect(
                    !f.contains(NohzFlags::BALANCE)
                        || f.contains(NohzFlags::STATS)
                        || !stats_with_balance,
                    &|| format!("CPU {i}: BALANCE without STATS ({f:?})"),
                );
            }
            // Seed 001 (the reference model's check): a CPU idling with its tick stopped,
            // active and with a domain, is in the idle mask, under every policy but Legacy.
            if P::ENTER_IDLE_WHENEVER_STOPPED
                && s.halted.get()
                && m.tick_sched(cpu).flags().contains(TsFlags::STOPPED)
                && m.cpu_active(cpu)
                && rq.has_sched_domain()
                && self.shape.cpus > 1
            {
                expect(in_mask, &|| {
                    format!("seed 001: CPU {i} idles with its tick stopped, out of the idle mask")
                });
            }
            // A CPU asleep with work queued has its wakeup coming: need_resched is set (and
            // its reschedule IPI on its way), or the work waits forever.
            expect(
                !s.halted.get() || s.queue.borrow().is_empty() || s.need_resched.get(),
                &|| format!("CPU {i}: asleep with tasks queued and no wakeup (a lost wakeup)"),
            );
        }
        // The reference model's cross-CPU checks. Nothing in the mask at or above
        // nr_cpu_ids (at the end of the run only: it takes a pass over the machine's
        // capacity); Legacy's nohz.nr_cpus counts the mask, the others keep no counter.
        let nr = self.shape.cpus;
        if last {
            for cpu in NrCpuIds::<CAP>::full().iter().skip(nr) {
                expect(!m.nohz_idle_test(cpu), &|| {
                    format!("mask bit {} above nr_cpu_ids", cpu.index())
                });
            }
        }
        let weight = m.nohz_idle_cpus().count() as u32;
        let counter = m.nohz().nr_cpus();
        let want = if P::NR_CPUS_COUNTER { weight } else { 0 };
        expect(counter == want, &|| {
            format!("nohz.nr_cpus is {counter}, the mask holds {weight} CPUs")
        });
        // Each LLC's busy count is its weight less its CPUs counted idle.
        let mut llcs: Vec<(usize, usize)> = vec![(0, 0); nr];
        for c in 0..nr {
            if let Some(leader) = m.llc_leader(self.id(c)) {
                llcs[leader].0 += 1;
                llcs[leader].1 += usize::from(m.nohz_idle(self.id(c)));
            }
        }
        for (leader, &(members, idle)) in llcs.iter().enumerate().filter(|(_, l)| l.0 > 0) {
            let busy = m.llc_nr_busy_cpus(self.id(leader));
            expect(busy == Some((members - idle) as i32), &|| {
                format!(
                    "the LLC led by CPU {leader}: nr_busy_cpus {busy:?}, {members} members, \
                     {idle} idle"
                )
            });
        }
        // After an ILB pass with STATS, an idle registered CPU that kept blocked load is
        // covered by nohz.has_blocked_load.
        if self.stats_pass_done.take() && !pass_running {
            let kept = m
                .nohz_idle_cpus()
                .find(|&cpu| m.rq(cpu).idle_cpu() && m.rq(cpu).has_blocked_load());
            expect(kept.is_none() || global_blocked, &|| {
                format!(
                    "a STATS pass left blocked load on idle CPU {} but nohz.has_blocked_load is \
                     clear",
                    kept.map_or(0, |c| c.index())
                )
            });
        }
        // I-S1 (sharded idle set): every shard holding an idle CPU is flagged in the summary.
        if P::SHARDED {
            for s in 0..m.nr_shards() {
                let word = m.shard_word(s);
                expect(word == 0 || m.shard_flagged(s), &|| {
                    format!("I-S1: shard {s} holds idle CPUs ({word:#x}) but is not flagged")
                });
            }
        }
        self.count(|n| n.checks += checks);
        let at = self.now();
        for what in bad {
            self.record_violation(format!("at {at} ns: {what}"));
        }
    }

    /// A kick's flags are on its target right after it (the reference model's check).
    pub(super) fn check_kick(&self, decision: Option<KickDecision<CAP>>) {
        let Some(KickDecision::Kick { flags, outcome }) = decision else {
            return;
        };
        let (KickOutcome::Sent(t) | KickOutcome::RodeAlong(t) | KickOutcome::AlreadyPending(t)) =
            outcome
        else {
            return;
        };
        let on = cost::unrecorded(|| self.m.rq(t).nohz_flags().load());
        self.count(|n| n.checks += 1);
        if !on.contains(flags) {
            self.record_violation(format!(
                "at {} ns: the kick's flags {flags:?} are not on CPU {} ({on:?})",
                self.now(),
                t.index()
            ));
        }
    }

    /// The deadlines a kick's pass on `c` with `flags` left (`aborted` or not), against what
    /// the kernel's `_nohz_idle_balance` leaves, when no other writer of them ran since
    /// `start`.
    pub(super) fn check_pass_deadlines(
        &self,
        c: usize,
        flags: NohzFlags,
        aborted: bool,
        start: &PassStart,
    ) {
        if self.passes_ended.get() != start.passes_ended {
            return;
        }
        let nohz = cost::unrecorded(|| self.m.nohz());
        let (next_balance, next_blocked, needs_update) = cost::unrecorded(|| {
            (
                nohz.next_balance(),
                nohz.next_blocked(),
                nohz.needs_update(),
            )
        });
        let hz = NonZeroU32::new(HZ).expect("HZ is not zero");
        let period = msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz);
        let mut bad = Vec::new();
        if aborted {
            if next_blocked != start.next_blocked {
                bad.push(format!(
                    "an aborted pass moved nohz.next_blocked ({} -> {})",
                    start.next_blocked.get(),
                    next_blocked.get()
                ));
            }
            if self.balance_kicks.get() == start.balance_kicks && next_balance != start.next_balance
            {
                bad.push(format!(
                    "an aborted pass moved nohz.next_balance ({} -> {})",
                    start.next_balance.get(),
                    next_balance.get()
                ));
            }
            if flags.contains(NohzFlags::NEXT) && !needs_update {
                bad.push("an aborted NEXT pass left nohz.needs_update clear".into());
            }
        } else if flags.contains(NohzFlags::STATS) {
            // The pass's `now` is the handler's jiffies, or later after its catch-up; never
            // after the pass's end.
            let earliest = start.jiffies.add(period);
            let latest = self.time.jiffies().add(period);
            if next_blocked.is_before(earliest) || next_blocked.is_after(latest) {
                bad.push(format!(
                    "a completed STATS pass left nohz.next_blocked at {}, not its start plus \
                     {period} jiffies ({}..={})",
                    next_blocked.get(),
                    earliest.get(),
                    latest.get()
                ));
            }
        }
        self.count(|n| n.checks += 3);
        for what in bad {
            self.record_violation(format!("at {} ns: CPU {c}: {what}", self.now()));
        }
    }

    /// `c`'s idle tick stopped (`tick_stopped`, the first stop): a tickless idle period
    /// begins, for tick-based idle accounting (not on a CPU whose idle time vtime accounts).
    pub(super) fn idle_tick_stopped(&self, c: usize) {
        let s = &self.cpus[c];
        if s.nohz_full {
            return;
        }
        self.idle_account_left(c);
        s.tick_stop_j.set(Some(self.time.jiffies()));
        s.stopped_ticks.set(0);
    }

    /// `c`'s tick restarted: the period's jiffies, less the ticks that ran on its idle task
    /// meanwhile, are what `account_idle_ticks` must account (nothing when none).
    pub(super) fn idle_tick_restarted(&self, c: usize) {
        let s = &self.cpus[c];
        let Some(at) = s.tick_stop_j.take() else {
            return;
        };
        let spent = self.time.jiffies().since(at);
        let due = spent.saturating_sub(s.stopped_ticks.take());
        s.account_due.set((due > 0).then_some(due));
    }

    /// `account_idle_ticks(c, ticks)`: the ticks the restart left to account, exactly.
    pub(super) fn idle_ticks_accounted(&self, c: usize, ticks: usize) {
        let due = self.cpus[c].account_due.take();
        self.count(|n| n.checks += 1);
        if due != Some(ticks) {
            self.record_violation(format!(
                "at {} ns: CPU {c} accounted {ticks} idle ticks, its tickless idle period \
                 spent {}",
                self.now(),
                due.map_or("none to account".into(), |d| d.to_string())
            ));
        }
    }

    /// Before a new tickless period (or a hotplug reset) of `c`: ticks the last one left to
    /// account were accounted.
    pub(super) fn idle_account_left(&self, c: usize) {
        if let Some(due) = self.cpus[c].account_due.take() {
            self.count(|n| n.checks += 1);
            self.record_violation(format!(
                "at {} ns: CPU {c}'s tickless idle period spent {due} ticks, none accounted",
                self.now()
            ));
        }
    }

    /// Counts a violation, keeping the first's text.
    pub(super) fn record_violation(&self, what: String) {
        self.count(|n| {
            n.violations += 1;
            if n.first_violation.is_none() {
                n.first_violation = Some(what);
            }
        });
    }
}
