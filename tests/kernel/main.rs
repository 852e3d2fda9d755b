//! The kernel paths, one module per kernel function (fair.c NOHZ, tick-sched, the idle loop,
//! irqtime), each branch exercised for both policies where they differ. Every test drives the
//! real `Machine` with the recording `HostPlatform` and a jiffies clock that starts 20 ticks
//! before the wrap. One test binary keeps link time down.

mod can_stop_idle_tick;
mod do_idle;
mod hotplug;
mod irqtime;
mod kick_ilb;
mod nohz_balance_enter_idle;
mod nohz_balance_exit_idle;
mod nohz_balancer_kick;
mod nohz_csd_func;
mod nohz_idle_balance;
mod nohz_newidle_balance;
mod nohz_run_idle_balance;
mod sched_init;
mod sched_tick;
mod seed_000;
mod seed_001;
mod tick_nohz_full;
mod tick_nohz_idle_enter_exit;
mod tick_nohz_idle_stop_tick;
mod tick_nohz_irq_enter_exit;
mod tick_nohz_next_event;
mod tick_nohz_stop_tick;
mod tick_sched_timer;
mod update_blocked_load_status;

use nohz::KickDecision;
use nohz::testing::{Event, HostPlatform};
use nohz::{CpuId, Jiffies, Machine, NrCpuIds, Policy};

pub const N: usize = 8;
pub type Plat = HostPlatform<N>;
pub const START: usize = usize::MAX - 20;

/// A machine and its platform.
pub struct World<P: Policy> {
    pub m: nohz::machine!(P, N),
    pub p: Plat,
}

impl<P: Policy> World<P> {
    /// `nr` CPUs in one LLC, all housekeeping, all idle, NO_HZ active everywhere, CPU 0 the
    /// timekeeper, jiffies at `START`.
    pub fn new(nr: usize) -> Self {
        let p = Plat::new(NrCpuIds::new(nr).unwrap(), Jiffies::new(START));
        let m = Machine::new();
        m.init(nr, 0, &p).unwrap();
        for cpu in m.nr_cpu_ids().iter() {
            m.tick_nohz_activate(cpu, true);
        }
        World { m, p }
    }

    /// Makes CPU `i` NO_HZ_FULL: in the nohz_full mask, out of housekeeping, vtime-accounted.
    pub fn nohz_full(&self, i: usize) {
        let cpu = self.cpu(i);
        self.m.nohz_full().set(cpu);
        self.m.housekeeping().clear(cpu);
        self.p.set_vtime_accounting(cpu, true);
    }

    /// `tick_sched(i)`.
    pub fn ts(&self, i: usize) -> &nohz::TickSched {
        self.m.tick_sched(self.cpu(i))
    }

    /// Same, with LLCs of `size` CPUs.
    pub fn with_llcs(nr: usize, size: usize) -> Self {
        let w = Self::new(nr);
        w.p.set_llc_size(size);
        w.rebuild();
        w
    }

    pub fn cpu(&self, i: usize) -> CpuId<N> {
        self.m.cpu(i).unwrap()
    }

    /// CPU `i` runs `n` tasks (n >= 1).
    pub fn busy(&self, i: usize, n: u32) {
        let rq = self.m.rq(self.cpu(i));
        rq.set_curr_is_idle(false);
        rq.set_nr_running(n);
        rq.set_h_nr_runnable(n);
    }

    /// CPU `i` runs its idle task with nothing queued.
    pub fn idle(&self, i: usize) {
        let rq = self.m.rq(self.cpu(i));
        rq.set_curr_is_idle(true);
        rq.set_nr_running(0);
        rq.set_h_nr_runnable(0);
    }

    /// CPU `i` goes idle and stops its tick: `nohz_balance_enter_idle`.
    pub fn enter(&self, i: usize) {
        self.idle(i);
        self.m.nohz_balance_enter_idle(self.cpu(i), &self.p);
    }

    /// `rebuild_sched_domains` from the platform's current topology. Drops every event
    /// recorded so far, and checks that the rebuild's own was its grace period.
    pub fn rebuild(&self) {
        self.p.take_events();
        self.m.rebuild_sched_domains(&self.p).unwrap();
        assert_eq!(self.p.take_events(), [Event::SynchronizeRcu]);
    }

    /// CPU `i` goes inactive through the crate's hotplug path (`sched_cpu_deactivate`); the
    /// events it recorded (its grace period) are dropped.
    pub fn deactivate(&self, i: usize) {
        self.m.sched_cpu_deactivate(self.cpu(i), &self.p).unwrap();
        self.p.take_events();
    }

    /// A scheduler tick on CPU `i`.
    pub fn tick(&self, i: usize) -> Option<KickDecision<N>> {
        self.m.sched_tick(self.cpu(i), &self.p)
    }

    pub fn now(&self) -> Jiffies {
        self.p.clock().get()
    }

    pub fn advance(&self, ticks: usize) {
        self.p.clock().advance(ticks);
    }

    /// The idle mask as indices.
    pub fn mask(&self) -> Vec<usize> {
        self.m
            .nohz()
            .idle_cpus_mask()
            .iter(self.m.nr_cpu_ids())
            .map(|c| c.index())
            .collect()
    }

    pub fn ipis(&self) -> Vec<(usize, usize)> {
        self.p
            .ipis()
            .into_iter()
            .map(|(f, t)| (f.index(), t.index()))
            .collect()
    }

    pub fn events(&self) -> Vec<Event<N>> {
        self.p.events()
    }

    pub fn warnings(&self) -> u64 {
        self.m.warnings().total(self.m.nr_cpu_ids())
    }

    /// The LLC busy count of CPU `i`'s LLC.
    pub fn busy_count(&self, i: usize) -> i32 {
        self.m.llc_nr_busy_cpus(self.cpu(i)).unwrap()
    }
}

/// Runs a generic test body for every policy (`Scalable` must behave exactly as `Patched`).
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod patched {
            $(#[test] fn $name() { super::$name::<nohz::Patched>() })*
        }
        mod legacy {
            $(#[test] fn $name() { super::$name::<nohz::Legacy>() })*
        }
        mod scalable {
            $(#[test] fn $name() { super::$name::<nohz::Scalable>() })*
        }
    };
}
