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
    /// `cpu`'s scheduling domains, lowest first: SMT, MC (the cache), PKG (the socket) and
    /// NUMA (the machine), each cut to the cpuset; a level that spans no more than the one
    /// below it is degenerate and dropped (`sd_degenerate`), as is a level of one CPU.
    pub(in crate::engine) fn domains(&self, cpu: usize) -> Vec<Domain> {
        let set = self.cpuset(cpu);
        let levels = [
            (Level::Smt, aligned(cpu, self.smt)),
            (Level::Mc, aligned(cpu, self.llc)),
            (Level::Pkg, aligned(cpu, self.socket)),
            (Level::Numa, 0..self.cpus),
        ];
        let mut out: Vec<Domain> = Vec::new();
        for (level, span) in levels {
            let span = intersect(span, set.clone());
            if span.len() <= 1 || out.last().is_some_and(|d| d.span == span) {
                continue;
            }
            out.push(Domain::new(level, span));
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

    fn two_sockets() -> Shape {
        Shape {
            cpus: 16,
            smt: 2,
            llc: 4,
            socket: 8,
            cpusets: 1,
            nohz_full: 0,
        }
    }

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
