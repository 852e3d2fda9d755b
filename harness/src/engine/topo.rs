//! The simulated machine's shape: SMT siblings, last-level caches, sockets (NUMA nodes),
//! cpusets and NO_HZ_FULL CPUs. The scheduling domains the kernel builds from it are the
//! scheduler's (`sched/topology.rs`).
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
}

/// The block of `size` CPUs holding `cpu`.
pub(super) fn aligned(cpu: usize, size: usize) -> Range<usize> {
    let start = cpu / size * size;
    start..start + size
}

pub(super) fn intersect(a: Range<usize>, b: Range<usize>) -> Range<usize> {
    a.start.max(b.start)..a.end.min(b.end).max(a.start.max(b.start))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// 16 CPUs: two sockets of two SMT2 caches of four CPUs, one cpuset, no NO_HZ_FULL.
    pub(crate) fn two_sockets() -> Shape {
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
}
