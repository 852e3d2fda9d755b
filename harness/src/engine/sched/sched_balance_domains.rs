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
use crate::engine::Engine;
use nohz::platform::CpuIdleType;
use nohz::{Jiffies, Policy};

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `sched_balance_domains` for `cpu`, run by `by`.
    pub(in crate::engine) fn sched_balance_domains(
        &self,
        by: usize,
        cpu: usize,
        idle: CpuIdleType,
    ) -> Jiffies {
        let now = self.time.jiffies();
        let online = self.shape.cpus;
        let mut busy = idle == CpuIdleType::NotIdle;
        let mut next = now.add(60 * HZ as usize);
        let levels = self.cpus[cpu].domains.borrow().len();
        for k in 0..levels {
            let (span, last, interval, pct) = {
                let d = &self.cpus[cpu].domains.borrow()[k];
                let pct = d.imbalance_pct();
                (
                    d.span.clone(),
                    d.last_balance,
                    d.interval(busy, HZ, online),
                    pct,
                )
            };
            let mut last = Jiffies::new(last);
            let mut interval = interval;
            if now.is_after_eq(last.add(interval)) {
                self.update_idle_cpu_scan(cpu, &span, pct);
                let moved = self.sched_balance_rq(cpu, span, usize::MAX);
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
        next
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
