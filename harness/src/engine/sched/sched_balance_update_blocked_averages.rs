//! Blocked load: what a CPU keeps after its tasks block, decaying until it is gone.
//!
//! C source: kernel/sched/fair.c (`sched_balance_update_blocked_averages`, named
//! `update_blocked_averages` before Linux 6.10; `update_blocked_load_status`),
//! kernel/sched/pelt.c (`decay_load`).
//!
//! A task that blocks on a CPU leaves its utilization there (the PELT signal of a task that
//! runs `run` out of every `run + sleep` is about `1024 * run / (run + sleep)`); a task that
//! exits leaves nothing (its load is removed, `remove_entity_load_avg`). The CPU's blocked
//! load then decays as PELT's does, by `y` a 1024-us period with `y^32 = 1/2`, until the
//! integer reaches 0: a task's full 1024 takes about 330 ms, which is how long the kernel's
//! `rq->has_blocked_load` keeps an idle CPU on the ILB pass's list of CPUs to refresh. The
//! platform's `update_blocked_averages`, which the crate calls from the balance softirq, an
//! ILB pass and a newidle balance, brings it up to date and says whether any is left; the
//! crate's bookkeeping (`rq->has_blocked_load`, `nohz.has_blocked_load`) reads only that.

use crate::engine::work::TaskKind;
use crate::engine::{Ctx, Engine, Plant};
use nohz::Policy;

/// PELT's period: 1024 us of 1024 ns (`delta >> 10` microseconds, 1024 of them).
const PERIOD_NS: u64 = 1 << 20;

/// `y`, PELT's decay per period: `y^32 = 1/2`, so five square roots of one half (each IEEE
/// exact, so every host gets the same bits).
fn y() -> f64 {
    (0..5).fold(0.5f64, |v, _| v.sqrt())
}

/// `decay_load(v, n)`: `v` after `ns` nanoseconds of PELT decay, rounded down.
pub(in crate::engine) fn decayed(v: u32, ns: u64) -> u32 {
    let periods = ns / PERIOD_NS;
    let halvings = periods / 32;
    if halvings >= 32 {
        return 0;
    }
    let rest = (periods % 32) as i32;
    ((v >> halvings) as f64 * y().powi(rest)) as u32
}

/// What a task of `kind` leaves on its CPU when it blocks: its utilization, the share of its
/// time it runs, as PELT's 0-1024 scale; 1024 for a task that never sleeps.
pub(in crate::engine) fn blocked_util(kind: &TaskKind) -> u32 {
    let cycle = kind.run_ns + kind.sleep_ns;
    if cycle == 0 {
        return 1024;
    }
    ((1024 * kind.run_ns / cycle) as u32).max(1)
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `sched_balance_update_blocked_averages(c)`, run by `by`: decays `c`'s blocked load as
    /// the rq lock finds it, then takes its modelled time on `by`
    /// ([`BalanceCosts::decay_ns`](super::BalanceCosts)); whether any was left. The crate
    /// clears `rq->has_blocked_load` after this returns `false`, so a set `c` makes while the
    /// decay runs (it ran a task and idled again meanwhile) meets the crate's conditional
    /// clear, or, with [`Plant::BlockedClear`], the unconditional one it used to make.
    pub(in crate::engine) fn update_blocked_averages(
        &self,
        by: usize,
        c: usize,
        ctx: &Ctx<'_, P, HZ>,
    ) -> bool {
        let left = self.decay(c);
        self.spend(by, self.costs.decay_ns, ctx);
        if self.plant == Plant::BlockedClear && !left {
            nohz_testing::clear_has_blocked_load_unconditionally(self.m.rq(self.id(c)));
            return true;
        }
        left
    }

    /// The decay of `c`'s blocked load up to now; whether any is left.
    fn decay(&self, c: usize) -> bool {
        let s = &self.cpus[c];
        let now = self.now();
        let v = decayed(s.blocked.get(), now - s.blocked_at.get());
        s.blocked.set(v);
        s.blocked_at.set(now);
        v > 0
    }

    /// A task that runs `util` of its time blocked on `c`: its load joins `c`'s blocked load.
    pub(in crate::engine) fn leave_blocked(&self, c: usize, util: u32) {
        let s = &self.cpus[c];
        let now = self.now();
        let v = decayed(s.blocked.get(), now - s.blocked_at.get());
        s.blocked.set(v.saturating_add(util));
        s.blocked_at.set(now);
    }

    /// `rq_lock_irqsave` and `update_rq_clock` on `c`'s run queue by `by`, in an ILB pass
    /// before it balances a due CPU: one transfer of that lock's line, across sockets or not
    /// ([`BalanceCosts`](super::BalanceCosts)); nothing for `by`'s own.
    pub(in crate::engine) fn lock_remote_rq(&self, by: usize, c: usize, ctx: &Ctx<'_, P, HZ>) {
        if by == c {
            return;
        }
        let same = by / self.shape.socket == c / self.shape.socket;
        let ns = if same {
            self.costs.rq_lock_local_ns
        } else {
            self.costs.rq_lock_remote_ns
        };
        self.spend(by, ns, ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_load_halves_every_32_periods_and_is_gone_in_a_third_of_a_second() {
        assert!((y().powi(32) - 0.5).abs() < 1e-12);
        assert_eq!(decayed(1024, 32 * PERIOD_NS), 512);
        assert_eq!(decayed(1024, 64 * PERIOD_NS), 256);
        assert_eq!(decayed(1024, PERIOD_NS - 1), 1024);
        let one = decayed(1024, PERIOD_NS);
        assert!((1001..1024).contains(&one), "{one}");
        // A full task's load is gone after 11 halvings (about 369 ms), not before 10.
        assert!(decayed(1024, 320 * PERIOD_NS) > 0);
        assert_eq!(decayed(1024, 352 * PERIOD_NS), 0);
    }

    #[test]
    fn a_task_leaves_its_share_of_the_cpu() {
        let kind = |run_ns, sleep_ns| TaskKind {
            run_ns,
            sleep_ns,
            runs: 0,
            bound: false,
        };
        assert_eq!(blocked_util(&kind(500_000, 2_000_000)), 204);
        assert_eq!(blocked_util(&kind(10_000, 0)), 1024);
        assert_eq!(blocked_util(&kind(1, 1_000_000_000)), 1);
    }
}
