//! The invariants, checked between events. The engine is sequential, so between two events no
//! crate path is half done: what the threaded soak can check only at a quiescent snapshot
//! (and gives up on when a CPU stays busy) holds here at every check, exactly.

use super::Engine;
use nohz::{NohzFlags, Policy, TsFlags};

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Checks every invariant on every CPU, counting each predicate and recording each
    /// violation with the time it was seen.
    pub(super) fn check(&self) {
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
            if settled && in_mask && rq.has_blocked_load() {
                expect(global_blocked, &|| {
                    format!(
                        "O1: CPU {i} idles registered with blocked load, nohz.has_blocked_load \
                         is 0 (an ILB pass missed it)"
                    )
                });
            }
            // A CPU asleep with work queued has its wakeup coming: need_resched is set (and
            // its reschedule IPI on its way), or the work waits forever.
            expect(
                !s.halted.get() || s.queue.borrow().is_empty() || s.need_resched.get(),
                &|| format!("CPU {i}: asleep with tasks queued and no wakeup (a lost wakeup)"),
            );
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
}
