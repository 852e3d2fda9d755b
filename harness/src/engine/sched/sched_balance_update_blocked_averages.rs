//! Blocked load: what a CPU keeps after its tasks block, decaying until it is gone.
//!
//! C source: kernel/sched/fair.c (`sched_balance_update_blocked_averages`, named
//! `update_blocked_averages` before Linux 6.10; `update_blocked_load_status`,
//! `cfs_rq_has_blocked`).
//!
//! A task that blocks leaves its PELT signals on its CPU, decaying there
//! (`update_load_avg.rs`); a task that exits takes them away. The platform's
//! `update_blocked_averages`, which the crate calls from the balance softirq, an ILB pass and
//! a newidle balance, brings the CPU's signals to the present and says whether any is left (a
//! non-zero load or utilization average, `cfs_rq_has_blocked`): about a third of a second
//! after a task that ran all the time blocked there, which is how long the kernel's
//! `rq->has_blocked_load` keeps an idle CPU on the ILB pass's list. The crate's bookkeeping
//! (`rq->has_blocked_load`, `nohz.has_blocked_load`) reads only that.

use crate::engine::metrics::Work;
use crate::engine::{Ctx, Engine, Plant};
use nohz::Policy;

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
        self.spend(by, self.costs.decay_ns, Work::Blocked, ctx);
        if self.plant == Plant::BlockedClear && !left {
            nohz_testing::clear_has_blocked_load_unconditionally(self.m.rq(self.id(c)));
            return true;
        }
        left
    }

    /// The decay of `c`'s blocked load up to now: its signals brought to the present;
    /// whether any is left.
    fn decay(&self, c: usize) -> bool {
        self.pelt_blocked_left(c)
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
        self.spend(by, ns, Work::RqLock, ctx);
    }
}
