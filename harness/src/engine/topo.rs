//! The simulated machine's shape: SMT siblings, last-level caches, sockets (NUMA nodes),
//! cpusets and NO_HZ_FULL CPUs, and the scheduling domains the kernel builds from them.
//!
//! CPUs are numbered the way the kernel's topology code usually enumerates a simple machine:
//! the threads of a core are adjacent, a cache's cores are adjacent, a socket's caches are
//! adjacent. Every span is then a range of CPU indices, and a cpuset (a partition of the
//! machine into root domains, each balanced on its own) is a range too.

use std::ops::Range;

/// What the machine looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Logical CPUs.
    pub cpus: usize,
    /// Hardware threads per core (1: no SMT, 2: SMT2).
    pub smt: usize,
    /// CPUs sharing a last-level cache.
    pub llc: usize,
    /// CPUs per socket (NUMA node). A machine of one socket has no NUMA level.
    pub socket: usize,
    /// Equal cpusets the machine is partitioned into (1: one root domain over all CPUs).
    pub cpusets: usize,
    /// The NO_HZ_FULL CPUs (`nohz_full=`): the last `nohz_full` CPUs of each cpuset.
    pub nohz_full: usize,
}

/// Why a shape cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Shape {
    /// A machine of `cpus` CPUs in one socket and one cache, no SMT, no cpuset, no NO_HZ_FULL.
    pub fn flat(cpus: usize) -> Shape {
        Shape {
            cpus,
            smt: 1,
            llc: cpus,
            socket: cpus,
            cpusets: 1,
            nohz_full: 0,
        }
    }

    /// Checks that every level divides the next: threads into caches, caches into sockets,
    /// sockets into the machine, cpusets into the machine, and that each cpuset keeps a
    /// housekeeping CPU.
    pub fn check(&self) -> Result<(), ShapeError> {
        let err = |m: String| Err(ShapeError(m));
        if self.cpus == 0 || self.smt == 0 || self.llc == 0 || self.socket == 0 {
            return err("every level of the machine needs at least one CPU".into());
        }
        if !self.llc.is_multiple_of(self.smt)
            || !self.socket.is_multiple_of(self.llc)
            || !self.cpus.is_multiple_of(self.socket)
        {
            return err(format!(
                "{} CPUs: SMT {} must divide the cache ({}), the cache the socket ({}), the \
                 socket the machine",
                self.cpus, self.smt, self.llc, self.socket
            ));
        }
        if self.cpusets == 0 || !self.cpus.is_multiple_of(self.cpusets) {
            return err(format!(
                "{} cpusets do not split {} CPUs evenly",
                self.cpusets, self.cpus
            ));
        }
        if self.nohz_full >= self.cpus / self.cpusets {
            return err(format!(
                "{} NO_HZ_FULL CPUs per cpuset leave no housekeeping CPU in a cpuset of {}",
                self.nohz_full,
                self.cpus / self.cpusets
            ));
        }
        Ok(())
    }

    /// The cpuset `cpu` belongs to, as a range of CPUs.
    pub fn cpuset(&self, cpu: usize) -> Range<usize> {
        let size = self.cpus / self.cpusets;
        let start = self.cpuset_index(cpu) * size;
        start..start + size
    }

    /// Which cpuset `cpu` belongs to, from 0.
    pub fn cpuset_index(&self, cpu: usize) -> usize {
        cpu / (self.cpus / self.cpusets)
    }

    /// Whether `cpu` is a NO_HZ_FULL CPU: one of the last [`nohz_full`](Self::nohz_full) of
    /// its cpuset. CPU 0, the boot CPU that keeps time, never is.
    pub fn is_nohz_full(&self, cpu: usize) -> bool {
        let set = self.cpuset(cpu);
        cpu >= set.end - self.nohz_full && cpu != 0
    }

    /// `cpu`'s last-level cache within its cpuset (the crate's LLC domain).
    pub fn llc_of(&self, cpu: usize) -> Range<usize> {
        intersect(aligned(cpu, self.llc), self.cpuset(cpu))
    }

    /// `cpu`'s scheduling domains, lowest first: SMT, MC (the cache), PKG (the socket) and
    /// NUMA (the machine), each cut to the cpuset; a level that spans no more than the one
    /// below it is degenerate and dropped (`sd_degenerate`), as is a level of one CPU.
    pub fn domains(&self, cpu: usize) -> Vec<Domain> {
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
pub enum Level {
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
pub struct Domain {
    /// The level.
    pub level: Level,
    /// The CPUs it spans.
    pub span: Range<usize>,
    /// `sd->last_balance`, in jiffies.
    pub last_balance: usize,
    /// `sd->balance_interval`, in milliseconds: starts at the domain's weight, doubles while
    /// balancing finds nothing to move, back to the minimum when it moves something.
    pub balance_interval: u64,
}

/// `sd->busy_factor`: a busy CPU balances this many times less often.
pub const BUSY_FACTOR: u64 = 16;

impl Domain {
    fn new(level: Level, span: Range<usize>) -> Domain {
        let weight = span.len() as u64;
        Domain {
            level,
            span,
            last_balance: 0,
            balance_interval: weight,
        }
    }

    /// `sd->min_interval`: the domain's weight in milliseconds.
    pub fn min_interval(&self) -> u64 {
        self.span.len() as u64
    }

    /// `sd->max_interval`: twice the weight.
    pub fn max_interval(&self) -> u64 {
        2 * self.span.len() as u64
    }

    /// `get_sd_balance_interval(sd, busy)` in jiffies: the interval, times the busy factor on
    /// a busy CPU, clamped to one jiffy and to `max_load_balance_interval` (a tenth of a
    /// second per online CPU).
    pub fn interval(&self, busy: bool, hz: u32, online: usize) -> usize {
        let ms = self.balance_interval * if busy { BUSY_FACTOR } else { 1 };
        let j = (ms * u64::from(hz)).div_ceil(1000) as usize;
        let max = (hz as usize * online / 10).max(1);
        j.clamp(1, max)
    }
}

/// The block of `size` CPUs holding `cpu`.
fn aligned(cpu: usize, size: usize) -> Range<usize> {
    let start = cpu / size * size;
    start..start + size
}

fn intersect(a: Range<usize>, b: Range<usize>) -> Range<usize> {
    a.start.max(b.start)..a.end.min(b.end).max(a.start.max(b.start))
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

    #[test]
    fn nohz_full_cpus_are_the_last_of_each_cpuset() {
        let s = Shape {
            cpusets: 2,
            nohz_full: 2,
            ..two_sockets()
        };
        let full: Vec<_> = (0..16).filter(|&c| s.is_nohz_full(c)).collect();
        assert_eq!(full, [6, 7, 14, 15]);
        assert!(s.check().is_ok());
        let bad = Shape {
            nohz_full: 8,
            ..s.clone()
        };
        assert!(bad.check().is_err());
        assert!(Shape { llc: 3, ..s }.check().is_err());
    }

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
