//! Fork placement: the idlest group of each domain, from the top down, then its idlest CPU;
//! and the engine's fork entry point.
//!
//! C source: kernel/sched/core.c (`wake_up_new_task`), kernel/sched/fair.c
//! (`select_task_rq_fair` for `WF_FORK`, `sched_balance_find_dst_cpu`,
//! `sched_balance_find_dst_group` and `sched_balance_find_dst_group_cpu`, named
//! `find_idlest_cpu`, `find_idlest_group` and `find_idlest_group_cpu` before Linux 6.10;
//! `update_sg_wakeup_stats`, `group_classify`, `group_is_overloaded`, `group_has_capacity`,
//! `update_pick_idlest`, `adjust_numa_imbalance`).
//!
//! A new task starts on the CPU its parent forks it from, which looks for a better one:
//! `SD_BALANCE_FORK` is set on every level (`sd_init`; the engine's one NUMA level is taken
//! as one hop, within `node_reclaim_distance`, which keeps it), so the walk starts at the
//! forking CPU's top domain. In a domain, each group (the child domain's spans; single CPUs
//! under the lowest) the task may run in gets the stats of `update_sg_wakeup_stats`: load,
//! utilization, runnable, tasks, idle CPUs, capacity 1024 per CPU, and a type from
//! `group_classify` (overloaded: more tasks than CPUs and utilization or runnable over the
//! capacity by the domain's margin; fully busy: no spare capacity by the same tests; else
//! has spare). The idlest other group is the one of the lowest type; among groups with
//! spare capacity the most idle CPUs (then the least utilization), among busy ones the least
//! load per capacity. The task leaves the local group only for an idlest group of a lower
//! type, or of the same type and: with spare capacity, strictly more idle CPUs (at a NUMA
//! level, only once the local node would hold more than `imb_numa_nr` tasks or the
//! difference in idle CPUs exceeds 2); busy, a load per capacity lower by both the absolute
//! margin (1024 x (pct - 100) / 100) and the relative one (pct), never across NUMA unless
//! the margin still leaves it lower. In the group chosen, the CPU is the idle one that went
//! idle last (no cpuidle exit latencies here), else the least loaded; the walk then goes
//! down that CPU's domains below the level it chose at. Not modelled: NUMA balancing's
//! preferred node, misfit and asymmetric capacities, core scheduling cookies.

use super::Domain;
use super::topology::Level;
use super::update_load_avg::SCALE;
use crate::engine::Engine;
use nohz::Policy;
use std::ops::Range;

/// `enum group_type`, the kinds a fork sees (the others need asymmetric capacities, misfit
/// tasks or the load balancer's own flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    /// `group_has_spare`.
    HasSpare,
    /// `group_fully_busy`.
    FullyBusy,
    /// `group_overloaded`.
    Overloaded,
}

/// `struct sg_lb_stats`, as `update_sg_wakeup_stats` fills it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GroupStats {
    pub(super) load: u64,
    pub(super) util: u64,
    pub(super) runnable: u64,
    pub(super) nr_running: usize,
    pub(super) idle_cpus: usize,
    pub(super) capacity: u64,
    pub(super) weight: usize,
    pub(super) group_type: GroupType,
    /// Load per capacity, for the busy types only.
    pub(super) avg_load: u64,
    /// Whether `load`, `util` and `runnable` were read: a group with fewer tasks than CPUs
    /// has spare capacity whatever they are, and its utilization matters only to break a tie
    /// of idle CPUs, so it is read then (reads store nothing: the same values).
    pub(super) signals: bool,
}

/// `group_classify(imbalance_pct, sgs)` for the stats a fork sees.
pub(super) fn group_classify(pct: u64, sgs: &GroupStats) -> GroupType {
    let over_util = sgs.capacity * 100 < sgs.util * pct;
    let over_runnable = sgs.capacity * pct < sgs.runnable * 100;
    if sgs.nr_running > sgs.weight && (over_util || over_runnable) {
        return GroupType::Overloaded;
    }
    let has_capacity =
        sgs.nr_running < sgs.weight || (!over_runnable && sgs.capacity * 100 > sgs.util * pct);
    if has_capacity {
        GroupType::HasSpare
    } else {
        GroupType::FullyBusy
    }
}

/// `adjust_numa_imbalance(imbalance, dst_running, imb_numa_nr)`: no imbalance while the
/// destination runs no more than `imb_numa_nr` tasks and it is at most
/// `NUMA_IMBALANCE_MIN` (2).
pub(super) fn adjust_numa_imbalance(
    imbalance: usize,
    dst_running: usize,
    imb_numa_nr: usize,
) -> usize {
    if dst_running > imb_numa_nr || imbalance > 2 {
        imbalance
    } else {
        0
    }
}

/// `update_pick_idlest`: whether `sgs` beats the idlest so far.
fn beats(idlest: Option<&GroupStats>, sgs: &GroupStats) -> bool {
    let Some(idlest) = idlest else { return true };
    if sgs.group_type != idlest.group_type {
        return sgs.group_type < idlest.group_type;
    }
    match sgs.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => sgs.avg_load < idlest.avg_load,
        GroupType::HasSpare => {
            sgs.idle_cpus > idlest.idle_cpus
                || (sgs.idle_cpus == idlest.idle_cpus && sgs.util < idlest.util)
        }
    }
}

/// The local group against the idlest other one (`sched_balance_find_dst_group`'s end):
/// whether the task goes to the idlest. `local_allowed`: the local group's CPUs the task may
/// run on.
pub(super) fn go_to_idlest(
    domain: &Domain,
    local: &GroupStats,
    idlest: &GroupStats,
    local_allowed: usize,
) -> bool {
    if local.group_type != idlest.group_type {
        return local.group_type > idlest.group_type;
    }
    let pct = domain.imbalance_pct();
    let numa = domain.level == Level::Numa;
    match local.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            let imbalance = SCALE * (pct - 100) / 100;
            if numa && idlest.avg_load + imbalance >= local.avg_load {
                return false;
            }
            if idlest.avg_load >= local.avg_load + imbalance {
                return false;
            }
            100 * local.avg_load > pct * idlest.avg_load
        }
        GroupType::HasSpare => {
            if numa {
                let imb_numa_nr = local_allowed.min(domain.imb_numa_nr);
                let imbalance = local.idle_cpus.abs_diff(idlest.idle_cpus);
                if adjust_numa_imbalance(imbalance, local.nr_running + 1, imb_numa_nr) == 0 {
                    return false;
                }
            }
            local.idle_cpus < idlest.idle_cpus
        }
    }
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Forks task `t` (made by `new_task`) from `parent_cpu` (`wake_up_new_task`): places it
    /// and queues it there.
    ///
    /// Called for every new task: the load's initial tasks (from the CPU each names), each
    /// arrival (from the CPU its timer fires on), each task of a batch (from the
    /// dispatcher's CPU), and the loads' own forks.
    pub(in crate::engine) fn fork(&self, parent_cpu: usize, t: usize) {
        self.tasks.borrow_mut()[t].place.recent_used_cpu = parent_cpu;
        let to = self.select_task_rq_fork(t, parent_cpu);
        self.post_init_entity_util_avg(to, t);
        self.enqueue(to, t);
    }

    /// `select_task_rq` for a fork of `t` on `cpu`.
    pub(in crate::engine) fn select_task_rq_fork(&self, t: usize, cpu: usize) -> usize {
        let allowed = self.tasks.borrow()[t].allowed.clone();
        let to = if allowed.len() == 1 {
            allowed.start
        } else {
            let top = self.cpus[cpu].domains.borrow().len().checked_sub(1);
            match top {
                Some(k) => self.sched_balance_find_dst_cpu(k, &allowed, cpu),
                None => cpu,
            }
        };
        if self.cpus[to].leaving.get() {
            self.fallback(to)
        } else {
            to
        }
    }

    /// `sched_balance_find_dst_cpu(sd, p, cpu, prev_cpu, SD_BALANCE_FORK)`, `sd` being
    /// `cpu`'s domain `k`.
    fn sched_balance_find_dst_cpu(&self, k: usize, allowed: &Range<usize>, cpu: usize) -> usize {
        let span = self.cpus[cpu].domains.borrow()[k].span.clone();
        if !span.clone().any(|c| self.may_run(allowed, c)) {
            return cpu;
        }
        let (mut cpu, mut new_cpu, mut k) = (cpu, cpu, Some(k));
        while let Some(level) = k {
            let Some(group) = self.sched_balance_find_dst_group(cpu, level, allowed) else {
                k = level.checked_sub(1);
                continue;
            };
            new_cpu = self.sched_balance_find_dst_group_cpu(group, allowed, cpu);
            if new_cpu == cpu {
                k = level.checked_sub(1);
                continue;
            }
            let weight = self.cpus[cpu].domains.borrow()[level].span.len();
            cpu = new_cpu;
            k = self.cpus[cpu]
                .domains
                .borrow()
                .iter()
                .rposition(|d| d.span.len() < weight);
        }
        new_cpu
    }

    /// The groups of `cpu`'s domain `k`, the local one first, then on round the span.
    fn groups(&self, cpu: usize, k: usize) -> (Domain, Vec<Range<usize>>) {
        let doms = self.cpus[cpu].domains.borrow();
        let d = doms[k].clone();
        let child = k.checked_sub(1).map(|j| doms[j].level);
        drop(doms);
        let group_of = |c: usize| match child {
            Some(level) => self.shape.level_span(level, c),
            None => c..c + 1,
        };
        let mut out = Vec::new();
        let mut g = group_of(cpu);
        while out.len() < d.span.len() {
            out.push(g.clone());
            let next = if g.end >= d.span.end {
                d.span.start
            } else {
                g.end
            };
            g = group_of(next);
            if g.contains(&cpu) {
                break;
            }
        }
        (d, out)
    }

    /// `update_sg_wakeup_stats` for a fork into `group` (the new task is on no CPU yet, so
    /// nothing of it is taken out), with how many of the group's CPUs the task may run on;
    /// `None` if none.
    fn update_sg_wakeup_stats(
        &self,
        pct: u64,
        group: &Range<usize>,
        allowed: &Range<usize>,
    ) -> Option<(GroupStats, usize)> {
        let mut s = GroupStats {
            load: 0,
            util: 0,
            runnable: 0,
            nr_running: 0,
            idle_cpus: 0,
            capacity: SCALE * group.len() as u64,
            weight: group.len(),
            group_type: GroupType::HasSpare,
            avg_load: 0,
            signals: false,
        };
        let mut mine = 0;
        for c in group.clone().filter(|&c| self.may_run(allowed, c)) {
            mine += 1;
            let (nr, idle_current) = self.rq_state(c);
            s.nr_running += nr;
            if nr == 0 && idle_current {
                s.idle_cpus += 1;
            }
        }
        if mine == 0 {
            return None;
        }
        if s.nr_running >= s.weight {
            self.read_signals(&mut s, group, allowed);
        }
        s.group_type = group_classify(pct, &s);
        if s.group_type != GroupType::HasSpare {
            s.avg_load = s.load * SCALE / s.capacity;
        }
        Some((s, mine))
    }

    /// The group's load, utilization and runnable sums, over the CPUs the task may run on.
    fn read_signals(&self, s: &mut GroupStats, group: &Range<usize>, allowed: &Range<usize>) {
        let (mut util, mut load) = (0, 0);
        for c in group.clone().filter(|&c| self.may_run(allowed, c)) {
            let (u, l) = self.cpu_util_load(c);
            util += u;
            load += l;
        }
        s.util = util;
        s.load = load;
        s.runnable = load;
        s.signals = true;
    }

    /// `sched_balance_find_dst_group(sd, p, cpu)`, `sd` being `cpu`'s domain `k`: the group
    /// to go to, or `None` to stay in the local one.
    fn sched_balance_find_dst_group(
        &self,
        cpu: usize,
        k: usize,
        allowed: &Range<usize>,
    ) -> Option<Range<usize>> {
        let (domain, groups) = self.groups(cpu, k);
        let pct = domain.imbalance_pct();
        let mut local: Option<(GroupStats, usize)> = None;
        let mut idlest: Option<(GroupStats, Range<usize>)> = None;
        for g in groups {
            let Some((mut sgs, mine)) = self.update_sg_wakeup_stats(pct, &g, allowed) else {
                continue;
            };
            if g.contains(&cpu) {
                local = Some((sgs, mine));
                continue;
            }
            if let Some((best, best_g)) = idlest.as_mut()
                && best.group_type == GroupType::HasSpare
                && sgs.group_type == GroupType::HasSpare
                && best.idle_cpus == sgs.idle_cpus
            {
                if !best.signals {
                    self.read_signals(best, best_g, allowed);
                }
                if !sgs.signals {
                    self.read_signals(&mut sgs, &g, allowed);
                }
            }
            if beats(idlest.as_ref().map(|(s, _)| s), &sgs) {
                idlest = Some((sgs, g));
            }
        }
        let (idlest_sgs, idlest) = idlest?;
        let Some((local_sgs, local_allowed)) = local else {
            return Some(idlest);
        };
        go_to_idlest(&domain, &local_sgs, &idlest_sgs, local_allowed).then_some(idlest)
    }

    /// `sched_balance_find_dst_group_cpu(group, p, this_cpu)`: the idle CPU of `group` that
    /// went idle last, else its least loaded (`this_cpu` if none is lighter than no load at
    /// all, which cannot be).
    pub(super) fn sched_balance_find_dst_group_cpu(
        &self,
        group: Range<usize>,
        allowed: &Range<usize>,
        this_cpu: usize,
    ) -> usize {
        if group.len() == 1 {
            return group.start;
        }
        let mut latest: Option<u64> = None;
        let mut shallowest = None;
        let mut min_load = u64::MAX;
        let mut least_loaded = this_cpu;
        for c in group.filter(|&c| self.may_run(allowed, c)) {
            if self.available_idle_cpu(c) {
                let stamp = self.placement[c].idle_stamp.get();
                if stamp > latest {
                    latest = stamp;
                    shallowest = Some(c);
                }
            } else if shallowest.is_none() {
                let load = self.cpu_load(c);
                if load < min_load {
                    min_load = load;
                    least_loaded = c;
                }
            }
        }
        shallowest.unwrap_or(least_loaded)
    }
}
