//! The periodic balance: each of a CPU's domains in turn, when its interval is due.
//!
//! C source: kernel/sched/fair.c (`sched_balance_domains`, `get_sd_balance_interval`).
//!
//! Run by the crate's tick path (`sched_balance_softirq`) for the CPU itself, and by an ILB
//! pass for each idle CPU it balances on its behalf (through [`nohz::platform::Balance`]). A
//! domain whose balance moved nothing doubles its `balance_interval` up to `max_interval`; one
//! that moved tasks goes back to `min_interval` and counts the CPU as no longer busy for the
//! domains above it. The earliest next balance over the domains is returned, as
//! `rq->next_balance`.

use super::Domain;
use super::topology::BUSY_FACTOR;
use crate::engine::metrics::Work;
use crate::engine::{Ctx, Engine};
use nohz::platform::CpuIdleType;
use nohz::{Jiffies, Policy};

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `sched_balance_domains` for `cpu`, run by `by` (on `by`'s coroutine when `ctx` has
    /// one): each due domain's balance takes its modelled time ([`BalanceCosts`]) before it
    /// pulls, so what it pulls is what is there when its scan ends; every domain's
    /// `max_newidle_lb_cost` gets its once-a-second decay (`update_newidle_cost(sd, 0)`), and
    /// if one decayed `max_idle_balance_cost` follows.
    ///
    /// [`BalanceCosts`]: super::BalanceCosts
    pub(in crate::engine) fn sched_balance_domains(
        &self,
        by: usize,
        cpu: usize,
        idle: CpuIdleType,
        ctx: &Ctx<'_, P, HZ>,
    ) -> Jiffies {
        let online = self.shape.cpus;
        let mut busy = idle == CpuIdleType::NotIdle;
        let mut next = self.time.jiffies().add(60 * HZ as usize);
        let mut decayed = false;
        let mut max_cost = 0;
        let mut continue_balancing = true;
        let levels = self.cpus[cpu].domains.borrow().len();
        for k in 0..levels {
            decayed |= self.update_newidle_cost(cpu, k, 0);
            let (span, last, interval, pct) = {
                let d = &self.cpus[cpu].domains.borrow()[k];
                max_cost += d.max_newidle_lb_cost;
                (
                    d.span.clone(),
                    d.last_balance,
                    d.interval(busy, HZ, online),
                    d.imbalance_pct(),
                )
            };
            if !continue_balancing {
                continue;
            }
            let mut last = Jiffies::new(last);
            let mut interval = interval;
            if self.time.jiffies().is_after_eq(last.add(interval)) {
                let (ours, read) = self.should_we_balance(cpu, k);
                let moved = if ours {
                    self.spend(by, self.costs.domain(span.len()), Work::Domains, ctx);
                    // SIS_UTIL: the cache's own balance updates its scan depth.
                    self.update_idle_cpu_scan(cpu, &span, pct);
                    self.sched_balance_rq(cpu, span, usize::MAX)
                } else {
                    self.spend(by, self.costs.declined(read), Work::Domains, ctx);
                    continue_balancing = false;
                    0
                };
                if moved > 0 {
                    self.count(|n| {
                        if by == cpu {
                            n.pulled_periodic += moved as u64;
                        } else {
                            n.pulled_ilb += moved as u64;
                        }
                    });
                    busy = false;
                }
                let now = self.time.jiffies();
                let mut doms = self.cpus[cpu].domains.borrow_mut();
                let d = &mut doms[k];
                if moved > 0 {
                    d.balance_interval = d.min_interval();
                } else if d.balance_interval < d.max_interval() {
                    d.balance_interval *= 2;
                }
                d.last_balance = now.get();
                last = now;
                interval = d.interval(busy, HZ, online);
            }
            if next.is_after(last.add(interval)) {
                next = last.add(interval);
            }
        }
        if decayed {
            self.newidle_costs_decayed(cpu, max_cost);
        }
        next
    }

    /// `should_we_balance(env)` for a periodic or idle balance of `cpu`'s domain `k`: of the
    /// domain's local group (the child domain's span, or `cpu` alone at the lowest level),
    /// only its first idle CPU balances it, or with none idle its first CPU; the others decline
    /// and stop going up. Returns whether `cpu` balances, and how many CPUs' idle state it
    /// read to know.
    fn should_we_balance(&self, cpu: usize, k: usize) -> (bool, usize) {
        let group = if k == 0 {
            cpu..cpu + 1
        } else {
            self.cpus[cpu].domains.borrow()[k - 1].span.clone()
        };
        let first = group.start;
        for (read, c) in group.enumerate() {
            if self.idle_cpu(c) {
                return (c == cpu, read + 1);
            }
        }
        (first == cpu, (first..cpu + 1).len())
    }

    /// `update_next_balance(sd, &next)`'s deadline for domain `d` of an `idle` CPU:
    /// `sd->last_balance` plus its interval.
    pub(in crate::engine) fn next_balance_of(&self, d: &Domain, idle: CpuIdleType) -> Jiffies {
        let busy = idle == CpuIdleType::NotIdle;
        Jiffies::new(d.last_balance).add(d.interval(busy, HZ, self.shape.cpus))
    }
}

impl Domain {
    /// `get_sd_balance_interval(sd, busy)` in jiffies: the interval, times the busy factor on
    /// a busy CPU, clamped to one jiffy and to `max_load_balance_interval` (a tenth of a
    /// second per online CPU).
    fn interval(&self, busy: bool, hz: u32, online: usize) -> usize {
        let ms = self.balance_interval * if busy { BUSY_FACTOR } else { 1 };
        let j = (ms * u64::from(hz)).div_ceil(1000) as usize;
        let max = (hz as usize * online / 10).max(1);
        j.clamp(1, max)
    }
}

#[cfg(test)]
mod tests {
    use super::super::topology::Level;
    use super::*;

    #[test]
    fn busy_intervals_are_longer_and_clamped() {
        let d = Domain::new(Level::Mc, 0..64);
        assert_eq!(d.interval(false, 1000, 768), 64);
        assert_eq!(d.interval(true, 1000, 768), 1024);
        // A tenth of a second per online CPU caps it: 4 CPUs at HZ 1000, 400 jiffies.
        assert_eq!(d.interval(true, 1000, 4), 400);
        assert_eq!(d.interval(false, 100, 768), 7);
    }
}
