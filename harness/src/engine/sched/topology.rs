//! The scheduling domains: which CPUs each CPU balances with, level by level, and each
//! domain's balancing state.
//!
//! C source: kernel/sched/topology.c (`build_sched_domains`, `sd_init`, `sd_degenerate`).
//!
//! The machine itself (threads, caches, sockets, cpusets) is [`Shape`], in `engine/topo.rs`;
//! this room builds each CPU's domains from it at boot. The interval a domain is balanced at
//! is the periodic balance's (`get_sd_balance_interval`, in `sched_balance_domains.rs`).

use crate::engine::topo::{Shape, aligned, intersect};
use std::ops::Range;

impl Shape {
    /// The span of `level` around `cpu`, cut to `cpu`'s cpuset (`tl->mask(cpu)` and
    /// `cpu_map`): what a domain of that level spans, and what each group of the domain above
    /// it spans.
    pub(super) fn level_span(&self, level: Level, cpu: usize) -> Range<usize> {
        let span = match level {
            Level::Smt => aligned(cpu, self.smt),
            Level::Mc => aligned(cpu, self.llc),
            Level::Pkg => aligned(cpu, self.socket),
            Level::Numa => 0..self.cpus,
        };
        intersect(span, self.cpuset(cpu))
    }

    /// `cpu`'s scheduling domains, lowest first: SMT, MC (the cache), PKG (the socket) and
    /// NUMA (the machine), each cut to the cpuset; a level that spans no more than the one
    /// below it is degenerate and dropped (`sd_degenerate`), as is a level of one CPU.
    ///
    /// The NUMA domain's `imb_numa_nr` is computed as `build_sched_domains` does, on the
    /// levels as built before the degenerate ones are dropped (building stops at the first
    /// level that spans the whole cpuset): the first level above the cache (PKG) allows an
    /// imbalance of its number of caches, or an eighth of its CPUs if it has one cache, at
    /// least 1; the NUMA level above it inherits that times its span over the first NUMA
    /// level's, which it is itself: times 1.
    pub(in crate::engine) fn domains(&self, cpu: usize) -> Vec<Domain> {
        let set = self.cpuset(cpu);
        let mut out: Vec<Domain> = Vec::new();
        for level in [Level::Smt, Level::Mc, Level::Pkg, Level::Numa] {
            let span = self.level_span(level, cpu);
            if span.len() <= 1 || out.last().is_some_and(|d| d.span == span) {
                continue;
            }
            out.push(Domain::new(level, span));
        }
        let llc = self.level_span(Level::Mc, cpu);
        let pkg = self.level_span(Level::Pkg, cpu);
        if llc != set {
            let nr_llcs = pkg.len() / llc.len();
            let imb = if nr_llcs == 1 {
                pkg.len() >> 3
            } else {
                nr_llcs
            }
            .max(1);
            for d in out.iter_mut().filter(|d| d.level == Level::Numa) {
                d.imb_numa_nr = imb;
            }
        }
        out
    }
}

/// A scheduling-domain level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// Hardware threads of one core.
    Smt,
    /// Cores sharing a last-level cache.
    Mc,
    /// One socket.
    Pkg,
    /// The whole machine (across sockets).
    Numa,
}

/// One scheduling domain of one CPU, with its balancing state (`struct sched_domain`'s
/// `last_balance`, `balance_interval`, `min_interval`, `max_interval`, `busy_factor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::engine) struct Domain {
    /// The level.
    pub(super) level: Level,
    /// The CPUs it spans.
    pub(super) span: Range<usize>,
    /// `sd->last_balance`, in jiffies.
    pub(in crate::engine) last_balance: usize,
    /// `sd->balance_interval`, in milliseconds: starts at the domain's weight, doubles while
    /// balancing finds nothing to move, back to the minimum when it moves something.
    pub(super) balance_interval: u64,
    /// `sd->max_newidle_lb_cost`, in ns: the most a newidle balance of this domain cost
    /// lately (0 at build, as `sd_init` leaves it).
    pub(in crate::engine) max_newidle_lb_cost: u64,
    /// `sd->last_decay_max_lb_cost`, in jiffies.
    pub(in crate::engine) last_decay_max_lb_cost: usize,
    /// `sd->imb_numa_nr`: how many more tasks than the idlest group a NUMA domain's local
    /// group may take at fork before it counts as imbalanced (0 below the NUMA level, where
    /// nothing reads it).
    pub(super) imb_numa_nr: usize,
}

/// `sd->busy_factor`: a busy CPU balances this many times less often.
pub(super) const BUSY_FACTOR: u64 = 16;

impl Domain {
    pub(super) fn new(level: Level, span: Range<usize>) -> Domain {
        let weight = span.len() as u64;
        Domain {
            level,
            span,
            last_balance: 0,
            balance_interval: weight,
            max_newidle_lb_cost: 0,
            last_decay_max_lb_cost: 0,
            imb_numa_nr: 0,
        }
    }

    /// `sd->imbalance_pct` as `sd_init` sets it: 110 for the SMT level
    /// (`SD_SHARE_CPUCAPACITY`), 117 for every other (the cache's `SD_SHARE_LLC` level sets
    /// 117 again; the others keep the default).
    pub(super) fn imbalance_pct(&self) -> u64 {
        match self.level {
            Level::Smt => 110,
            Level::Mc | Level::Pkg | Level::Numa => 117,
        }
    }

    /// `sd->min_interval`: the domain's weight in milliseconds.
    pub(super) fn min_interval(&self) -> u64 {
        self.span.len() as u64
    }

    /// `sd->max_interval`: twice the weight.
    pub(super) fn max_interval(&self) -> u64 {
        2 * self.span.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::topo::tests::two_sockets;

    #[test]
    fn domains_climb_smt_cache_socket_machine() {
        let d = two_sockets().domains(5);
        let spans: Vec<_> = d.iter().map(|d| (d.level, d.span.clone())).collect();
        assert_eq!(
            spans,
            [
                (Level::Smt, 4..6),
                (Level::Mc, 4..8),
                (Level::Pkg, 0..8),
                (Level::Numa, 0..16)
            ]
        );
        assert_eq!(d[1].balance_interval, 4);
    }

    #[test]
    fn cpusets_cut_the_domains_and_degenerate_levels_drop() {
        let s = Shape {
            cpusets: 2,
            ..two_sockets()
        };
        // The NUMA level, cut to the cpuset, equals the socket: dropped.
        let spans: Vec<_> = s.domains(9).iter().map(|d| d.span.clone()).collect();
        assert_eq!(spans, [8..10, 8..12, 8..16]);
        // No SMT, one cache per socket: one level left of three.
        let flat = Shape::flat(8);
        assert_eq!(flat.domains(3).len(), 1);
        assert!(Shape::flat(1).domains(0).is_empty());
    }
}
