//! SIS_UTIL: how many CPUs a wakeup's idle scan may look at, from the cache's utilization.
//!
//! C source: kernel/sched/fair.c (`update_idle_cpu_scan`, called at the end of
//! `update_sd_lb_stats`); the feature `SIS_UTIL`, on by default (kernel/sched/features.h);
//! introduced by Chen Yu, "sched/fair: Introduce SIS_UTIL to search idle CPU based on sum of
//! util_avg" (70fb5ccf2ebb, 2022).
//!
//! Run when a CPU's own cache domain (the domain spanning `sd_llc_size` CPUs) is balanced by
//! a periodic or an idle-balancer pass, never by a newidle one: the engine's
//! `sched_balance_domains` calls it as it visits that domain. With `x` the cache's mean
//! utilization per CPU (0..1024), `W` its CPUs and `pct` the domain's `imbalance_pct` (117):
//! `nr_idle_scan = (1024 - min(1024, x^2 pct^2 / (10^4 * 1024))) * W / 1024`, in integers. The
//! scan shrinks with the square of the utilization and stops (0) from `x = 100 / pct` of the
//! capacity (85.5 %).

use crate::engine::Engine;
use crate::engine::sched::update_load_avg::SCALE;
use nohz::Policy;
use std::ops::Range;

/// `nr_idle_scan` for a cache of `weight` CPUs whose utilizations sum to `sum_util`, `pct`
/// its domain's `imbalance_pct`.
pub(in crate::engine) fn nr_idle_scan(sum_util: u64, weight: u64, pct: u64) -> usize {
    let x = sum_util / weight;
    let tmp = (x * x * pct * pct / (10_000 * SCALE)).min(SCALE);
    ((SCALE - tmp) * weight / SCALE) as usize
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `update_idle_cpu_scan` for `cpu`'s non-newidle balance of the domain over `span`
    /// (`pct` its `imbalance_pct`): only if the domain is `cpu`'s cache.
    pub(in crate::engine) fn update_idle_cpu_scan(
        &self,
        cpu: usize,
        span: &Range<usize>,
        pct: u64,
    ) {
        let llc = self.shape.llc_of(cpu);
        if *span != llc {
            return;
        }
        let sum: u64 = llc.clone().map(|c| self.cpu_util(c)).sum();
        let nr = nr_idle_scan(sum, llc.len() as u64, pct);
        self.llc_shared(cpu).nr_idle_scan.set(Some(nr));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula's values for an 80-CPU cache (seed 001's Altra) and a 128-CPU one, at
    /// given mean utilizations (research notes §1.6).
    #[test]
    fn the_scan_shrinks_with_the_square_of_the_cache_utilization() {
        let at = |w: u64, pct_util: u64| nr_idle_scan(w * 1024 * pct_util / 100, w, 117);
        assert_eq!(at(80, 0), 80);
        assert_eq!(at(80, 25), 73);
        assert_eq!(at(80, 50), 52);
        assert_eq!(at(80, 60), 40);
        assert_eq!(at(80, 70), 26);
        assert_eq!(at(80, 75), 18);
        assert_eq!(at(80, 80), 10);
        assert_eq!(at(80, 86), 0);
        assert_eq!(at(80, 100), 0);
        assert_eq!(at(128, 50), 84);
        assert_eq!(at(128, 75), 29);
        assert_eq!(at(128, 80), 16);
        // The SMT level's margin (110) would scan more at the same utilization.
        assert_eq!(nr_idle_scan(80 * 768, 80, 110), 25);
    }
}
