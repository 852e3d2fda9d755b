//! The waker's CPU or where the task slept: the target of a wakeup's idle search.
//!
//! C source: kernel/sched/fair.c (`wake_affine`, `wake_affine_idle`, `wake_affine_weight`;
//! the features `WA_IDLE`, `WA_WEIGHT`, `WA_BIAS`, all on by default in
//! kernel/sched/features.h).
//!
//! Run by `select_task_rq_fair` when the waker's CPU (`this`) differs from where the task
//! slept (`prev`) and a domain of the waker's spans both. By idleness first (`WA_IDLE`): an
//! idle waker's CPU (an interrupt's wakeup) takes the task if it shares `prev`'s cache,
//! unless `prev` is idle too; a sync waker alone on its CPU hands it over; an idle `prev`
//! keeps it. Else by load (`WA_WEIGHT`): the waker's CPU wins if its load with the task
//! (less the sync waker's own) is below `prev`'s without it, `prev`'s counted with half the
//! domain's imbalance margin on top (`WA_BIAS`: 108 % for an imbalance_pct of 117) and, for
//! a sync wakeup, one more. Every CPU has the capacity 1024, so the capacity factors cancel;
//! they are kept for the kernel's arithmetic.

use super::select_task_rq_fair::Current;
use super::update_load_avg::SCALE;
use crate::engine::Engine;
use nohz::Policy;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// `wake_affine(sd, p, this_cpu, prev_cpu, sync)`, `pct` the domain's `imbalance_pct`:
    /// `this` or `prev`.
    pub(super) fn wake_affine(
        &self,
        pct: u64,
        t: usize,
        current: Current,
        this: usize,
        prev: usize,
        sync: bool,
    ) -> usize {
        let target = self
            .wake_affine_idle(this, prev, sync)
            .or_else(|| self.wake_affine_weight(pct, t, current, this, prev, sync));
        if target == Some(this) { this } else { prev }
    }

    /// `wake_affine_idle`: a choice by idleness, if one follows.
    pub(super) fn wake_affine_idle(&self, this: usize, prev: usize, sync: bool) -> Option<usize> {
        if self.available_idle_cpu(this) && self.cpus_share_cache(this, prev) {
            return Some(if self.available_idle_cpu(prev) {
                prev
            } else {
                this
            });
        }
        if sync && self.rq_state(this).0 == 1 {
            return Some(this);
        }
        if self.available_idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    /// `wake_affine_weight`: `this` if its load with the task is the smaller, by the biased
    /// comparison.
    pub(super) fn wake_affine_weight(
        &self,
        pct: u64,
        t: usize,
        current: Current,
        this: usize,
        prev: usize,
        sync: bool,
    ) -> Option<usize> {
        let capacity = SCALE as i64;
        let mut this_eff = self.cpu_load(this) as i64;
        if sync {
            let waker = match current {
                Current::Task(w) => self.task_load(w) as i64,
                Current::Idle(_) => 0,
            };
            if waker > this_eff {
                return Some(this);
            }
            this_eff -= waker;
        }
        let task = self.task_load(t) as i64;
        this_eff += task;
        this_eff *= 100;
        this_eff *= capacity;
        let mut prev_eff = self.cpu_load(prev) as i64 - task;
        prev_eff *= 100 + (pct as i64 - 100) / 2;
        prev_eff *= capacity;
        if sync {
            prev_eff += 1;
        }
        (this_eff < prev_eff).then_some(this)
    }
}
