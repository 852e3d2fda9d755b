//! Wakeup placement's fast path: an idle CPU sharing the target's cache.
//!
//! C source: kernel/sched/fair.c (`select_idle_sibling`, `select_idle_smt`,
//! `select_idle_cpu`, `select_idle_core`, `__select_idle_cpu`, `test_idle_cores`,
//! `set_idle_cores`, `__update_idle_core`), kernel/sched/core.c (`idle_cpu`,
//! `available_idle_cpu`, `cpus_share_cache`).
//!
//! The candidates in the kernel's order, the first idle one winning: the target (the waker's
//! CPU or where the task slept, as `select_task_rq_fair` chose), where the task slept if it
//! shares the target's cache, the CPU it used before that (`recent_used_cpu`, then set to
//! where it slept), then a scan of the target's cache from the CPU after the target,
//! wrapping, over the CPUs the task may run on: on an SMT machine whose cache has had a whole
//! idle core since the last scan found none (`has_idle_cores`), a scan for an idle core
//! (returning the first idle CPU seen if no core is idle), else first the SMT siblings of
//! where the task slept, then a scan of at most `nr_idle_scan` CPUs (SIS_UTIL, kept by
//! `update_idle_cpu_scan.rs`; 0 means no scan). If none is idle: the earlier
//! `recent_used_cpu` if it was idle but failed only the cluster test (no clusters here:
//! never), else the target.
//!
//! Idle is the kernel's `available_idle_cpu`: the idle task current, nothing queued and no
//! wakeup pending (a wakeup queues at once here); a CPU in a newidle balance after a task, or
//! running one, is not idle. Not modelled: clusters (`sched_cluster_active`), the per-CPU
//! kthread case (no kthread wakes a task here), asymmetric capacities, SCHED_IDLE tasks,
//! core scheduling. A CPU on its way offline counts as neither idle nor allowed, so it is
//! never picked; a target or prev that is leaving goes to the caller's fallback.

use crate::engine::Engine;
use crate::engine::topo::aligned;
use nohz::Policy;
use std::cell::Cell;
use std::ops::Range;

/// What the CPUs of one cache share (`struct sched_domain_shared`), kept by the cache's
/// first CPU.
#[derive(Debug, Default)]
pub(in crate::engine) struct LlcShared {
    /// `has_idle_cores`: a whole core of the cache went idle since a scan last found none.
    pub(super) has_idle_cores: Cell<bool>,
    /// `nr_idle_scan`: how many CPUs `select_idle_cpu` may look at (SIS_UTIL); `None` until
    /// the cache's first periodic balance sets it, read as the cache's weight. A kernel
    /// allocates it zeroed at boot, but a benchmark starts on a machine long up, whose idle
    /// caches' balances have set it to their weight; the engine's load starts at boot.
    pub(super) nr_idle_scan: Cell<Option<usize>>,
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `available_idle_cpu(c)`: the idle task is current, nothing is queued, no wakeup is
    /// pending; and (the engine's rule) `c` is not leaving.
    pub(in crate::engine) fn available_idle_cpu(&self, c: usize) -> bool {
        let (nr, idle_current) = self.rq_state(c);
        idle_current && nr == 0 && !self.leaving(c)
    }

    /// `c` is on its way offline, offline or coming back (only while a hotplug cycle runs).
    pub(super) fn leaving(&self, c: usize) -> bool {
        self.hotplug_busy.get() && self.cpus[c].leaving.get()
    }

    /// `cpus_share_cache(a, b)`: the same last-level cache (cut to the cpuset, as the
    /// domains are).
    pub(super) fn cpus_share_cache(&self, a: usize, b: usize) -> bool {
        self.shape.llc_of(a).contains(&b)
    }

    /// Task `t` may run on `c`: in its affinity, and `c` not leaving.
    pub(super) fn may_run(&self, allowed: &Range<usize>, c: usize) -> bool {
        allowed.contains(&c) && !self.leaving(c)
    }

    /// `c`'s cache's shared state (`sd_llc_shared`).
    pub(super) fn llc_shared(&self, c: usize) -> &LlcShared {
        &self.placement[self.shape.llc_of(c).start].llc
    }

    /// `c`'s SMT siblings, itself included (`cpu_smt_mask`).
    fn smt_siblings(&self, c: usize) -> Range<usize> {
        let core = aligned(c, self.shape.smt);
        core.start..core.end.min(self.shape.cpus)
    }

    /// `__update_idle_core`, as `c` switches to its idle task: if every other thread of its
    /// core is idle, its cache has an idle core.
    pub(in crate::engine) fn update_idle_core(&self, c: usize) {
        if self.shape.smt == 1 || self.shape.llc_of(c).len() <= 1 {
            return;
        }
        let shared = self.llc_shared(c);
        if shared.has_idle_cores.get() {
            return;
        }
        if self
            .smt_siblings(c)
            .all(|s| s == c || self.available_idle_cpu(s))
        {
            shared.has_idle_cores.set(true);
        }
    }

    /// `select_idle_sibling(p, prev, target)` for task `t`.
    pub(in crate::engine) fn select_idle_sibling(
        &self,
        t: usize,
        prev: usize,
        target: usize,
    ) -> usize {
        if self.available_idle_cpu(target) {
            return target;
        }
        if prev != target && self.cpus_share_cache(prev, target) && self.available_idle_cpu(prev) {
            return prev;
        }
        let (recent, allowed) = {
            let mut tasks = self.tasks.borrow_mut();
            let task = &mut tasks[t];
            let r = std::mem::replace(&mut task.place.recent_used_cpu, prev);
            (r, task.allowed.clone())
        };
        if recent != prev
            && recent != target
            && self.cpus_share_cache(recent, target)
            && self.available_idle_cpu(recent)
            && self.may_run(&allowed, recent)
        {
            return recent;
        }
        let llc = self.shape.llc_of(target);
        if llc.len() <= 1 {
            return target;
        }
        let mut has_idle_core = false;
        if self.shape.smt > 1 {
            has_idle_core = self.llc_shared(target).has_idle_cores.get();
            if !has_idle_core
                && self.cpus_share_cache(prev, target)
                && let Some(i) = self.select_idle_smt(&allowed, &llc, prev)
            {
                return i;
            }
        }
        self.select_idle_cpu(&allowed, &llc, has_idle_core, target)
            .unwrap_or(target)
    }

    /// `select_idle_smt`: an idle SMT sibling of `prev` in the cache.
    fn select_idle_smt(
        &self,
        allowed: &Range<usize>,
        llc: &Range<usize>,
        prev: usize,
    ) -> Option<usize> {
        self.smt_siblings(prev).find(|&c| {
            c != prev && self.may_run(allowed, c) && llc.contains(&c) && self.available_idle_cpu(c)
        })
    }

    /// `select_idle_cpu`: the cache's CPUs the task may run on, from the one after `target`,
    /// wrapping: with an idle core hinted, the first whole idle core (else the first idle CPU
    /// seen, and the hint is cleared); without, the first idle CPU among at most
    /// `nr_idle_scan` looked at.
    fn select_idle_cpu(
        &self,
        allowed: &Range<usize>,
        llc: &Range<usize>,
        has_idle_core: bool,
        target: usize,
    ) -> Option<usize> {
        let scan = self.llc_shared(target).nr_idle_scan.get();
        let mut nr = scan.unwrap_or(llc.len()) + 1;
        if nr == 1 {
            return None;
        }
        let n = llc.len();
        let from = (target + 1 - llc.start) % n;
        let cpus = (0..n)
            .map(|k| llc.start + (from + k) % n)
            .filter(|&c| self.may_run(allowed, c));
        let mut idle_cpu = None;
        if has_idle_core {
            // Each core once: its threads leave the scan with it (they are adjacent, so only
            // the core the scan began in comes round again, at its end).
            let smt = self.shape.smt;
            let (mut first, mut last) = (None, None);
            for c in cpus {
                let core = c / smt;
                if last == Some(core) || (first == Some(core) && last != first) {
                    continue;
                }
                first.get_or_insert(core);
                last = Some(core);
                if let Some(i) = self.select_idle_core(allowed, llc, c, &mut idle_cpu) {
                    return Some(i);
                }
            }
            self.llc_shared(target).has_idle_cores.set(false);
            return idle_cpu;
        }
        for c in cpus {
            nr -= 1;
            if nr == 0 {
                return None;
            }
            if self.available_idle_cpu(c) {
                return Some(c);
            }
        }
        None
    }

    /// `select_idle_core`: `core` if all its threads are idle; on the way, the first idle
    /// thread the task may run on, kept in `idle_cpu` for when no core is.
    fn select_idle_core(
        &self,
        allowed: &Range<usize>,
        llc: &Range<usize>,
        core: usize,
        idle_cpu: &mut Option<usize>,
    ) -> Option<usize> {
        let mut idle = true;
        for c in self.smt_siblings(core) {
            if !self.available_idle_cpu(c) {
                idle = false;
                if idle_cpu.is_none() {
                    continue;
                }
                break;
            }
            if idle_cpu.is_none() && llc.contains(&c) && self.may_run(allowed, c) {
                *idle_cpu = Some(c);
            }
        }
        idle.then_some(core)
    }
}
