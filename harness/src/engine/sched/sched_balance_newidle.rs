//! The newidle balance's domain walk: a CPU about to idle pulls one task, domain by domain,
//! for as long as it expects to stay idle longer than the walk has cost; and the idle-time
//! average the gate reads.
//!
//! C source: kernel/sched/fair.c (`sched_balance_newidle`: its walk over the domains,
//! `update_newidle_cost`, `update_next_balance`), kernel/sched/core.c (`ttwu_do_activate`:
//! `rq->avg_idle` from `rq->idle_stamp`; `update_avg`).
//!
//! The crate runs the rest of `sched_balance_newidle` (the root domain's overload test and the
//! base domain's gate, the blocked-load refresh, `nohz_newidle_balance`) and hands the walk to
//! the platform's `newidle_balance` with `t0`, the clock read before the refresh. Here each
//! domain, lowest first: stop if `avg_idle` is below the walk's cost so far plus the domain's
//! `max_newidle_lb_cost`; otherwise balance it (its cost in modelled time, [`BalanceCosts`]),
//! asking for one task, and feed the time since `t0` (the refresh's too, for the first domain)
//! into `max_newidle_lb_cost`, which decays by 253/256 a second. The walk's total becomes
//! `max_idle_balance_cost` if larger. Not modelled: the 2025 proportional newidle balance
//! (`NI_RANDOM`, which skips a domain by a dice roll weighted by its recent successes).
//!
//! [`BalanceCosts`]: super::BalanceCosts

use crate::engine::metrics::Work;
use crate::engine::{Ctx, Engine};
use nohz::platform::{CpuIdleType, NewidleDomain, NewidleOutcome};
use nohz::{Jiffies, Policy, SCHED_MIGRATION_COST_NS};
use std::cell::Cell;

/// A CPU's newidle state (`rq->idle_stamp` is placement's, which reads it too:
/// [`CpuPlace`](super::CpuPlace)).
#[derive(Debug)]
pub(in crate::engine) struct NewidleSt {
    /// `rq->avg_idle`, in ns.
    avg_idle: Cell<u64>,
    /// `rq->max_idle_balance_cost`, in ns: the most a whole walk cost lately.
    max_idle_balance_cost: Cell<u64>,
}

impl Default for NewidleSt {
    /// `sched_init`: `avg_idle` twice the migration cost (the crate's boot sets the same in
    /// its rq), `max_idle_balance_cost` the migration cost.
    fn default() -> Self {
        NewidleSt {
            avg_idle: Cell::new(2 * SCHED_MIGRATION_COST_NS),
            max_idle_balance_cost: Cell::new(SCHED_MIGRATION_COST_NS),
        }
    }
}

/// `update_avg(avg, sample)`: an eighth of the way to the sample.
fn update_avg(avg: u64, sample: u64) -> u64 {
    let diff = sample as i64 - avg as i64;
    (avg as i64 + diff / 8) as u64
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `c` begins a newidle balance (`this_rq->idle_stamp = rq_clock(this_rq)`).
    pub(in crate::engine) fn newidle_begins(&self, c: usize) {
        self.placement[c].idle_stamp.set(Some(self.now()));
    }

    /// A task woke onto `c` (`ttwu_do_activate`): an open idle period ends, and its length
    /// enters `avg_idle`, capped at twice `max_idle_balance_cost`; the crate's rq gets it.
    pub(in crate::engine) fn newidle_woken(&self, c: usize) {
        let st = &self.cpus[c].newidle;
        let Some(stamp) = self.placement[c].idle_stamp.take() else {
            return;
        };
        let max = 2 * st.max_idle_balance_cost.get();
        let avg = update_avg(st.avg_idle.get(), self.now() - stamp).min(max);
        st.avg_idle.set(avg);
        self.m.rq(self.id(c)).set_avg_idle(avg);
    }

    /// What the crate reads of `c`'s base domain before it walks: the root domain's
    /// overload, the base domain's `max_newidle_lb_cost`, and its next balance
    /// (`update_next_balance` with the idle interval).
    pub(in crate::engine) fn newidle_domain(&self, c: usize) -> NewidleDomain {
        let set = self.shape.cpuset_index(c);
        let doms = self.cpus[c].domains.borrow();
        let base = doms.first();
        NewidleDomain {
            rd_overloaded: self.overloaded[set].get() > 0,
            max_newidle_lb_cost: base.map_or(0, |d| d.max_newidle_lb_cost),
            next_balance: base.map(|d| self.next_balance_of(d, CpuIdleType::Idle)),
        }
    }

    /// The newidle walk on `c` (its coroutine), `t0` the clock before the crate's refresh.
    pub(in crate::engine) fn sched_balance_newidle(
        &self,
        c: usize,
        t0: u64,
        ctx: &Ctx<'_, P, HZ>,
    ) -> NewidleOutcome {
        let st = &self.cpus[c].newidle;
        let avg_idle = st.avg_idle.get();
        let levels = self.cpus[c].domains.borrow().len();
        let mut t0 = t0;
        let mut curr_cost = 0;
        let mut next: Option<Jiffies> = None;
        let mut pulled = false;
        for k in 0..levels {
            let (span, max_cost, deadline) = {
                let doms = self.cpus[c].domains.borrow();
                let d = &doms[k];
                (
                    d.span.clone(),
                    d.max_newidle_lb_cost,
                    self.next_balance_of(d, CpuIdleType::Idle),
                )
            };
            if next.is_none_or(|n| n.is_after(deadline)) {
                next = Some(deadline);
            }
            if avg_idle < curr_cost + max_cost {
                break;
            }
            self.spend(c, self.costs.domain(span.len()), Work::Domains, ctx);
            pulled = self.sched_balance_rq(c, span, 1) > 0;
            let t1 = self.now();
            let cost = t1 - t0;
            self.update_newidle_cost(c, k, cost);
            curr_cost += cost;
            t0 = t1;
            if pulled {
                self.count(|n| n.pulled_newidle += 1);
                break;
            }
        }
        if curr_cost > st.max_idle_balance_cost.get() {
            st.max_idle_balance_cost.set(curr_cost);
        }
        // A task queued here while the walk ran: the kernel's recheck of `h_nr_queued`.
        pulled |= !self.cpus[c].queue.borrow().is_empty();
        if crate::engine::trace::on(self.now()) {
            let queued: Vec<(usize, usize)> = self
                .shape
                .cpuset(c)
                .map(|o| (o, self.cpus[o].queue.borrow().len()))
                .filter(|&(_, n)| n > 0)
                .collect();
            crate::engine::trace::line(
                self.now(),
                format_args!(
                    "newidle cpu={c} avg_idle={avg_idle} cost={curr_cost} pulled={pulled} \
                     waiting_in_cpuset={} queued_on={queued:?}",
                    queued.iter().map(|q| q.1).sum::<usize>()
                ),
            );
        }
        if pulled {
            self.placement[c].idle_stamp.set(None);
        }
        NewidleOutcome {
            pulled_task: pulled,
            next_balance: next,
        }
    }

    /// `update_newidle_cost(sd, cost)` for `c`'s domain `k`: a new maximum, or (at most once a
    /// second) a decay by 253/256. Returns whether it decayed.
    pub(in crate::engine) fn update_newidle_cost(&self, c: usize, k: usize, cost: u64) -> bool {
        let now = self.time.jiffies();
        let mut doms = self.cpus[c].domains.borrow_mut();
        let d = &mut doms[k];
        if cost > d.max_newidle_lb_cost {
            d.max_newidle_lb_cost = cost;
            d.last_decay_max_lb_cost = now.get();
            false
        } else if now.is_after(Jiffies::new(d.last_decay_max_lb_cost).add(HZ as usize)) {
            d.max_newidle_lb_cost = d.max_newidle_lb_cost * 253 / 256;
            d.last_decay_max_lb_cost = now.get();
            true
        } else {
            false
        }
    }

    /// `sched_balance_domains`' end when a domain's cost decayed: `max_idle_balance_cost`
    /// is the sum of the domains' maxima, at least the migration cost.
    pub(in crate::engine) fn newidle_costs_decayed(&self, c: usize, sum: u64) {
        self.cpus[c]
            .newidle
            .max_idle_balance_cost
            .set(sum.max(SCHED_MIGRATION_COST_NS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_average_moves_an_eighth_of_the_way() {
        assert_eq!(update_avg(800, 1600), 900);
        assert_eq!(update_avg(800, 0), 700);
        assert_eq!(update_avg(800, 800), 800);
    }
}
