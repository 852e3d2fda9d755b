//! The newidle balance's domain walk: a CPU about to idle pulls one task.
//!
//! C source: kernel/sched/fair.c (`sched_balance_newidle`: its walk over the domains).
//!
//! The crate runs the rest of `sched_balance_newidle` (the root domain's overload test, the
//! blocked-load refresh, `nohz_newidle_balance`) and hands the walk to the platform's
//! `newidle_balance`: here it asks each domain, lowest first, for one task
//! ([`Engine::sched_balance_rq`] with a cap of one) and stops at the first that gives one. No
//! `max_newidle_lb_cost` against the average idle time.

use crate::engine::Engine;
use nohz::Policy;
use std::ops::Range;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// The newidle domain walk: one task from the busiest CPU of the lowest domain that has
    /// one to give.
    pub(in crate::engine) fn newidle_pull(&self, c: usize) -> bool {
        let spans: Vec<Range<usize>> = self.cpus[c]
            .domains
            .borrow()
            .iter()
            .map(|d| d.span.clone())
            .collect();
        for span in spans {
            if self.sched_balance_rq(c, span, 1) > 0 {
                self.count(|n| n.pulled_newidle += 1);
                return true;
            }
        }
        false
    }
}
