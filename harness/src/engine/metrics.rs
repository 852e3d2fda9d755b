//! The run's metrics in one place: what the engine counts as it goes ([`Counts`]), the time
//! each CPU spends running, halted and halted invisible to the idle balancer, and what a run
//! reports ([`Outcome`], assembled by [`Engine::outcome`] at the end).
//!
//! Everything here is a function of the configuration and the seed: no host clock is read.

use super::{CpuSt, Engine, cost};
use nohz::Policy;

/// What one run did. Everything here is a function of the configuration and the seed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    /// The policy's name.
    pub policy: &'static str,
    /// The bug planted (`none` for the crate as it is).
    pub plant: &'static str,
    /// Logical CPUs.
    pub cpus: usize,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Tasks that ran to their end.
    pub tasks_completed: u64,
    /// Runs completed (a task's run before it blocks or exits).
    pub runs_completed: u64,
    /// Ticks that ran on a CPU running a task.
    pub busy_ticks: u64,
    /// Busy ticks whose balance trigger found balancing due (it got as far as a decision).
    pub due_ticks: u64,
    /// Ticks that ran on an idle CPU (its tick not stopped).
    pub idle_ticks: u64,
    /// nohz kick IPIs sent.
    pub kicks_sent: u64,
    /// ILB passes run (a kick handled with flags, on a CPU still idle).
    pub ilb_passes: u64,
    /// ILB passes per CPU, CPU 0 first.
    pub ilb_duty: Vec<u64>,
    /// Tasks pulled by newidle balancing.
    pub pulled_newidle: u64,
    /// Tasks pulled by a CPU's own periodic balancing.
    pub pulled_periodic: u64,
    /// Tasks pulled by an ILB pass on an idle CPU's behalf.
    pub pulled_ilb: u64,
    /// Idle-loop entries.
    pub idle_entries: u64,
    /// Idle states entered (`cpuidle_enter` that halted): more than the entries when
    /// interrupts end an idle state without ending the idle loop.
    pub halts: u64,
    /// Of those, entered with the tick stopped (the governor, if any, let it stop).
    pub stopped_halts: u64,
    /// CPUs taken offline and brought back.
    pub hotplug_cycles: u64,
    /// Takedowns the crate refused (`sched_cpu_deactivate`'s errors).
    pub hotplug_refused: u64,
    /// Nanoseconds all CPUs together spent running tasks.
    pub busy_ns: u64,
    /// Nanoseconds all CPUs together spent halted in their idle state.
    pub idle_ns: u64,
    /// Of those, halted with the tick stopped but out of the idle mask: invisible to the idle
    /// balancer (what seed 001 fixes).
    pub invisible_idle_ns: u64,
    /// Invariant checks made (each predicate on each CPU).
    pub checks: u64,
    /// Invariant violations.
    pub violations: u64,
    /// The first violation, with its time.
    pub first_violation: Option<String>,
    /// Warnings the crate counted.
    pub warnings: u64,
    /// Batches finished (closed-loop batch sources; a llama load's decodes).
    pub batches_done: u64,
    /// Median time from a batch's arrival to its last task's end (a llama decode's, from its
    /// first node's round to its last's release), in milliseconds.
    pub batch_ms: Option<f64>,
    /// The workload's own throughput after the warm-up ([`warmup`]), in `work_unit`s: a
    /// llama load's decodes (a decode's barrier rounds counted as they pass, so fractions of
    /// one count), hackbench's messages read.
    pub work_done: f64,
    /// What `work_done` counts (`decodes`, `messages`; empty for loads that count none).
    pub work_unit: &'static str,
    /// Nanoseconds all CPUs together spent in the crate's code after the warm-up
    /// ([`warmup`]), by the cost model (0 without the counting build).
    pub kernel_ns: u64,
    /// The cost model's findings (the counting build only).
    pub cost: Option<cost::CostReport>,
}

/// Counters of the run.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) events: u64,
    pub(super) tasks_completed: u64,
    pub(super) runs_completed: u64,
    pub(super) busy_ticks: u64,
    pub(super) due_ticks: u64,
    pub(super) idle_ticks: u64,
    pub(super) kicks_sent: u64,
    pub(super) ilb_passes: u64,
    pub(super) pulled_newidle: u64,
    pub(super) pulled_periodic: u64,
    pub(super) pulled_ilb: u64,
    pub(super) idle_entries: u64,
    pub(super) halts: u64,
    pub(super) stopped_halts: u64,
    pub(super) hotplug_cycles: u64,
    pub(super) hotplug_refused: u64,
    pub(super) checks: u64,
    pub(super) violations: u64,
    pub(super) first_violation: Option<String>,
    pub(super) batches_done: u64,
    pub(super) batch_ns: Vec<u64>,
    pub(super) work_done: f64,
}

impl CpuSt {
    /// A task ran `ran` ns on this CPU (its run ended, or it was taken off).
    pub(super) fn credit_busy(&self, ran: u64) {
        self.busy_ns.set(self.busy_ns.get() + ran);
    }

    /// The CPU slept `slept` ns in its idle state; invisible to the idle balancer if it
    /// halted so (`halted_invisible`).
    pub(super) fn credit_idle(&self, slept: u64) {
        self.idle_ns.set(self.idle_ns.get() + slept);
        if self.halted_invisible.get() {
            self.invisible_ns.set(self.invisible_ns.get() + slept);
        }
    }

    /// The crate's code took `spent` ns of this CPU's time (the cost model).
    pub(super) fn credit_kernel(&self, spent: u64) {
        self.kernel_ns.set(self.kernel_ns.get() + spent);
    }

    /// Busy, idle and invisible-idle ns up to `now`, the run or halt in progress included.
    fn times_at(&self, now: u64) -> (u64, u64, u64) {
        let busy = self.busy_ns.get() + self.curr.get().map_or(0, |_| now - self.run_start.get());
        let halted = if self.halted.get() {
            now - self.halted_at.get()
        } else {
            0
        };
        let idle = self.idle_ns.get() + halted;
        let mut invisible = self.invisible_ns.get();
        if self.halted_invisible.get() {
            invisible += halted;
        }
        (busy, idle, invisible)
    }
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Updates the run's counters.
    pub(super) fn count(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.borrow_mut());
    }

    /// The warm-up ([`warmup`]) is over: the crate's time so far (the boot's storm, every CPU
    /// starting at once) is not the load's cost, and the cost model forgets its counts; the
    /// load's own throughput counts from here.
    pub(super) fn forget_warmup(&self) {
        #[cfg(nohz_linecount)]
        cost::reset_counts();
        self.cpus.iter().for_each(|s| s.kernel_ns.set(0));
        self.count(|n| n.work_done = 0.0);
    }

    /// What the run did, at its end (`sim_ns`), with the cost model's report if any.
    pub(super) fn outcome(&self, sim_ns: u64, cost: Option<cost::CostReport>) -> Outcome {
        let now = self.now();
        let mut busy = 0;
        let mut idle = 0;
        let mut invisible = 0;
        for s in &self.cpus {
            let (b, i, v) = s.times_at(now);
            busy += b;
            idle += i;
            invisible += v;
        }
        let n = self.counts.borrow();
        Outcome {
            policy: P::NAME,
            plant: self.plant.name(),
            cpus: self.shape.cpus,
            sim_seconds: sim_ns as f64 / 1e9,
            events: n.events,
            tasks_completed: n.tasks_completed,
            runs_completed: n.runs_completed,
            busy_ticks: n.busy_ticks,
            due_ticks: n.due_ticks,
            idle_ticks: n.idle_ticks,
            kicks_sent: n.kicks_sent,
            ilb_passes: n.ilb_passes,
            ilb_duty: self.cpus.iter().map(|s| s.ilb_passes.get()).collect(),
            pulled_newidle: n.pulled_newidle,
            pulled_periodic: n.pulled_periodic,
            pulled_ilb: n.pulled_ilb,
            idle_entries: n.idle_entries,
            halts: n.halts,
            stopped_halts: n.stopped_halts,
            hotplug_cycles: n.hotplug_cycles,
            hotplug_refused: n.hotplug_refused,
            busy_ns: busy,
            idle_ns: idle,
            invisible_idle_ns: invisible,
            checks: n.checks,
            violations: n.violations,
            first_violation: n.first_violation.clone(),
            warnings: self.m.warnings().total(self.m.nr_cpu_ids()),
            batches_done: n.batches_done,
            batch_ms: {
                let ms: Vec<f64> = n.batch_ns.iter().map(|&ns| ns as f64 / 1e6).collect();
                crate::measure::median(&ms)
            },
            work_done: n.work_done,
            work_unit: self.workload.work_unit(),
            kernel_ns: self.cpus.iter().map(|s| s.kernel_ns.get()).sum(),
            cost,
        }
    }
}

/// The first fifth of a run, whose kernel-function time the cost model does not count: every
/// CPU starts at time 0 and takes the shared lines at once.
pub fn warmup(sim_ns: u64) -> u64 {
    sim_ns / 5
}
