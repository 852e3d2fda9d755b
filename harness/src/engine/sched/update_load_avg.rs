//! PELT: each CPU's and each task's utilization and load, the signals placement reads.
//!
//! C source: kernel/sched/pelt.c (`___update_load_sum`, `accumulate_sum`, `decay_load`,
//! `___update_load_avg`), kernel/sched/fair.c (`update_load_avg`, `attach_entity_load_avg`,
//! `detach_entity_load_avg`, `init_entity_runnable_average`, `post_init_entity_util_avg`,
//! `cpu_util_cfs`, `cpu_load`).
//!
//! A signal is a geometric average over periods of 1024 x 1024 ns (the kernel's 1024 "us" of
//! 1024 ns), each period weighing `y` times the one after it, `y^32 = 1/2`: at each period's
//! end `v = y * v + (1 - y) * c`, `c` the period's mean contribution. `y` is found by five
//! square roots of 0.5 and its powers by repeated products (IEEE operations, exact to the bit on
//! every host: never `powf` or `exp`), as the kernel's table `runnable_avg_yN_inv` of `y^n`
//! in 32-bit fixed point, `n < 32`; `y^32` halves.
//!
//! What each signal follows (1024 = one task, all the time):
//! - a CPU's utilization (`cfs_rq->avg.util_avg`): 1024 while a task runs on it;
//! - a CPU's load (`cfs_rq->avg.load_avg`): 1024 per task on its run queue, the running one
//!   included. The model's tasks are all nice-0 CFS tasks with no cgroup, so the kernel's
//!   load (weights) and runnable (counts) averages follow the same sum, and this one signal
//!   stands for both (`cpu_load`, `cpu_runnable`);
//! - a task's utilization: 1024 while it runs; its load: 1024 while it is runnable.
//!
//! As in the kernel, a task's signals stay on the CPU it last ran on while it sleeps (blocked
//! load, decaying there) and move when it is queued elsewhere: detached from the old CPU's
//! signals, attached to the new one's (`migrate_task_rq_fair`, `attach_entity_load_avg`);
//! an exiting task's are detached. A new task starts with a load of 1024 (heavy until it
//! has a history, `init_entity_runnable_average`) and a utilization from its new CPU's
//! (`post_init_entity_util_avg`). Because the averages are linear, a CPU's signal stays the
//! sum of its attached tasks' (up to rounding; never below 0).
//!
//! Updates are lazy and O(1): each signal is brought to the present and stored at a
//! transition (a task starting or stopping to run, a change of a run queue's length, a
//! wakeup, a block, a move). A read projects it to the present without storing it, so what
//! placement reads never depends on how often it read before. The kernel reads a signal as
//! last updated (at a tick, an enqueue or a dequeue); a signal here counts the period in
//! progress only when it ends (the kernel's average counts it at once, weighted by how far
//! it is). Not modelled: `util_est`, frequency and capacity invariance (every CPU has the
//! capacity 1024), irq and RT pressure.

use crate::engine::Engine;
use nohz::Policy;
use std::cell::Cell;
use std::sync::OnceLock;

/// `SCHED_CAPACITY_SCALE`: a CPU's capacity, and a task's full contribution.
pub(in crate::engine) const SCALE: u64 = 1024;

/// A period is `1 << PERIOD_SHIFT` ns (1024 x 1024 ns).
const PERIOD_SHIFT: u32 = 20;

/// Fixed-point bits a signal keeps below 1 (of the 0..1024 scale).
const FRAC: u32 = 10;

/// One task's full contribution, in fixed point.
const ONE: u64 = SCALE << FRAC;

/// After this many periods a signal of any size has decayed to nothing (`decay_load`:
/// `LOAD_AVG_PERIOD * 63`).
const DECAYED: u64 = 32 * 63;

/// `y^n` for `n < 32` in 32-bit fixed point (`y^0` is 2^32), `y^32 = 1/2`.
fn y_pow() -> &'static [u64; 32] {
    static TABLE: OnceLock<[u64; 32]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut y = 0.5f64;
        for _ in 0..5 {
            y = y.sqrt();
        }
        let mut t = [0u64; 32];
        let mut p = 1.0f64;
        for slot in &mut t {
            // Times 2^32 is exact; the truncation is the same on every host.
            *slot = (p * 4_294_967_296.0) as u64;
            p *= y;
        }
        t
    })
}

/// `decay_load(v, n)`: `v * y^n`.
fn decay(v: u64, n: u64) -> u64 {
    if n == 0 {
        return v;
    }
    if n > DECAYED {
        return 0;
    }
    let v = v >> (n / 32);
    ((u128::from(v) * u128::from(y_pow()[(n % 32) as usize])) >> 32) as u64
}

/// One PELT signal: its average at the end of the last whole period, what the period in
/// progress has accumulated (contribution x ns), and when it was last brought up to date.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::engine) struct Signal {
    value: u64,
    acc: u64,
    last: u64,
}

impl Signal {
    /// A signal worth `v` (0..1024 per task) at `now`.
    fn at(now: u64, v: u64) -> Signal {
        Signal {
            value: v << FRAC,
            acc: 0,
            last: now,
        }
    }

    /// Brings the signal to `now`, its contribution `c` (fixed point) since it was last
    /// updated (`___update_load_sum`).
    fn advance(&mut self, now: u64, c: u64) {
        if now <= self.last {
            return;
        }
        let (p0, p1) = (self.last >> PERIOD_SHIFT, now >> PERIOD_SHIFT);
        if p0 == p1 {
            self.acc += c * (now - self.last);
        } else {
            let acc = self.acc + c * (((p0 + 1) << PERIOD_SHIFT) - self.last);
            let mean = acc >> PERIOD_SHIFT;
            let one_less_y = (1u64 << 32) - y_pow()[1];
            self.value =
                decay(self.value, 1) + ((u128::from(mean) * u128::from(one_less_y)) >> 32) as u64;
            let whole = p1 - p0 - 1;
            if whole > 0 {
                self.value = decay(self.value, whole) + c - decay(c, whole);
            }
            self.acc = c * (now - (p1 << PERIOD_SHIFT));
        }
        self.last = now;
    }

    /// The average, 0..1024 per task.
    pub(in crate::engine) fn avg(&self) -> u64 {
        self.value >> FRAC
    }

    /// Whether the signal is not gone: its average, or the period in progress, holds some.
    fn holds(&self) -> bool {
        self.avg() > 0 || self.acc > 0
    }
}

/// A CPU's signals (its CFS run queue's), with the state they follow since their last
/// update: its run queue's length, whether a task runs, whether its idle task is current.
/// Every change of these goes through `update_load_avg` before anything else happens, so
/// placement reads them here (one array, not the engine's larger per-CPU state).
#[derive(Debug)]
pub(in crate::engine) struct CpuPelt {
    nr: Cell<usize>,
    idle_current: Cell<bool>,
    running: Cell<bool>,
    util: Cell<Signal>,
    load: Cell<Signal>,
    /// The averages read last, and the period they were read in: a read counts whole
    /// periods only, so until the period ends or the state changes it reads the same
    /// (a fork reads every CPU of a domain, often many times a period).
    read: Cell<Option<(u64, u64, u64)>>,
}

impl Default for CpuPelt {
    /// A CPU at boot: its idle task current, nothing queued.
    fn default() -> CpuPelt {
        CpuPelt {
            nr: Cell::new(0),
            idle_current: Cell::new(true),
            running: Cell::new(false),
            util: Cell::new(Signal::default()),
            load: Cell::new(Signal::default()),
            read: Cell::new(None),
        }
    }
}

/// A task's signals, with its state and the CPU whose signals hold them.
#[derive(Debug, Clone, Default)]
pub(in crate::engine) struct TaskPelt {
    util: Signal,
    load: Signal,
    running: bool,
    runnable: bool,
    attached: Option<usize>,
}

impl TaskPelt {
    /// A task just made at `now` (`init_entity_runnable_average`): a load of one full task,
    /// no utilization, attached nowhere until it is queued.
    pub(in crate::engine) fn new(now: u64) -> TaskPelt {
        TaskPelt {
            util: Signal::at(now, 0),
            load: Signal::at(now, SCALE),
            ..TaskPelt::default()
        }
    }

    fn advance(&mut self, now: u64) {
        self.util.advance(now, if self.running { ONE } else { 0 });
        self.load.advance(now, if self.runnable { ONE } else { 0 });
    }
}

impl CpuPelt {
    /// The signals at `now`, projected from the state they followed (nothing stored).
    fn at(&self, now: u64) -> (Signal, Signal) {
        let (mut u, mut l) = (self.util.get(), self.load.get());
        u.advance(now, if self.running.get() { ONE } else { 0 });
        l.advance(now, self.nr.get() as u64 * ONE);
        (u, l)
    }
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Brings `c`'s signals to the present under the state they followed, and stores them.
    fn advance_cpu(&self, c: usize) -> &CpuPelt {
        let p = &self.placement[c].pelt;
        let (u, l) = p.at(self.now());
        p.util.set(u);
        p.load.set(l);
        p.read.set(None);
        p
    }

    /// `c`'s run queue changed (a task queued, taken off, started or stopped): its signals
    /// are brought to the present and follow its new state. Called wherever the run queue's
    /// length or its running task changes (`count_overload`).
    pub(in crate::engine) fn update_load_avg(&self, c: usize) {
        let p = self.advance_cpu(c);
        let s = &self.cpus[c];
        p.running.set(s.curr.get().is_some());
        p.nr.set(self.nr(c));
        p.idle_current.set(s.idle_current.get());
    }

    /// `c`'s run queue length (`rq->nr_running`) and whether its idle task is current, as
    /// last recorded (checked against the engine's in debug builds).
    pub(in crate::engine) fn rq_state(&self, c: usize) -> (usize, bool) {
        let p = &self.placement[c].pelt;
        let (nr, idle) = (p.nr.get(), p.idle_current.get());
        debug_assert_eq!(
            (nr, idle),
            (self.nr(c), self.cpus[c].idle_current.get()),
            "CPU {c}: a run-queue change placement did not see"
        );
        (nr, idle)
    }

    /// `cpu_util_cfs(c)`: its utilization now, at most its capacity.
    pub(in crate::engine) fn cpu_util(&self, c: usize) -> u64 {
        self.cpu_util_load(c).0
    }

    /// `cpu_load(c)` (and `cpu_runnable(c)`, the same for nice-0 tasks): its load now.
    pub(in crate::engine) fn cpu_load(&self, c: usize) -> u64 {
        self.cpu_util_load(c).1
    }

    /// `cpu_util_cfs(c)` and `cpu_load(c)` together.
    pub(in crate::engine) fn cpu_util_load(&self, c: usize) -> (u64, u64) {
        let p = &self.placement[c].pelt;
        let now = self.now();
        let period = now >> PERIOD_SHIFT;
        if let Some((at, util, load)) = p.read.get()
            && at == period
        {
            return (util, load);
        }
        let (u, l) = p.at(now);
        let (util, load) = (u.avg().min(SCALE), l.avg());
        p.read.set(Some((period, util, load)));
        (util, load)
    }

    /// `cfs_rq_has_blocked` after a decay of `c`'s signals to the present: a load or a
    /// utilization average is left, counting what the period in progress has accumulated
    /// (the kernel's average counts it at once; this model folds it in at the period's end).
    pub(in crate::engine) fn pelt_blocked_left(&self, c: usize) -> bool {
        let p = self.advance_cpu(c);
        p.util.get().holds() || p.load.get().holds()
    }

    /// Whether `c`'s signals held anything when last brought up to date, not decayed since:
    /// load the platform has not yet found gone.
    pub(in crate::engine) fn pelt_blocked_stored(&self, c: usize) -> bool {
        let p = &self.placement[c].pelt;
        p.util.get().holds() || p.load.get().holds()
    }

    /// `task_h_load(t)`: task `t`'s load now (no cgroups: its own).
    pub(in crate::engine) fn task_load(&self, t: usize) -> u64 {
        let mut p = self.tasks.borrow()[t].place.pelt.clone();
        p.advance(self.now());
        p.load.avg()
    }

    /// Adds a task's signals to `c`'s (`attach_entity_load_avg`), or takes them away.
    fn attach(&self, c: usize, util: u64, load: u64, add: bool) {
        let p = self.advance_cpu(c);
        let (mut u, mut l) = (p.util.get(), p.load.get());
        if add {
            u.value += util;
            l.value += load;
        } else {
            u.value = u.value.saturating_sub(util);
            l.value = l.value.saturating_sub(load);
        }
        p.util.set(u);
        p.load.set(l);
        p.read.set(None);
    }

    /// Task `t` is queued on `c` (woken, forked or moved there): runnable from now; its
    /// signals move to `c` if they were elsewhere. Called by `enqueue` before it queues.
    pub(in crate::engine) fn pelt_enqueue(&self, c: usize, t: usize) {
        let now = self.now();
        let (from, util, load) = {
            let mut tasks = self.tasks.borrow_mut();
            let p = &mut tasks[t].place.pelt;
            p.advance(now);
            p.runnable = true;
            let from = p.attached.replace(c);
            (from, p.util.value, p.load.value)
        };
        if from == Some(c) {
            return;
        }
        if let Some(old) = from {
            self.attach(old, util, load, false);
        }
        self.attach(c, util, load, true);
    }

    /// Task `t` starts (`true`) or stops (`false`) running. Called by `run` and `take_curr`.
    pub(in crate::engine) fn pelt_running(&self, t: usize, running: bool) {
        let now = self.now();
        let p = &mut self.tasks.borrow_mut()[t].place.pelt;
        p.advance(now);
        p.running = running;
    }

    /// Task `t` blocks: no longer runnable; its signals stay on its CPU, decaying there.
    pub(in crate::engine) fn pelt_block(&self, t: usize) {
        let now = self.now();
        let p = &mut self.tasks.borrow_mut()[t].place.pelt;
        p.advance(now);
        p.running = false;
        p.runnable = false;
    }

    /// Task `t` exits (`task_dead_fair`): its signals leave its CPU's.
    pub(in crate::engine) fn pelt_dead(&self, t: usize) {
        let now = self.now();
        let (from, util, load) = {
            let p = &mut self.tasks.borrow_mut()[t].place.pelt;
            p.advance(now);
            (p.attached.take(), p.util.value, p.load.value)
        };
        if let Some(c) = from {
            self.attach(c, util, load, false);
        }
    }

    /// `post_init_entity_util_avg`: a new task about to be queued on `c` starts with a share
    /// of `c`'s utilization as its load stands to `c`'s, at most half of `c`'s spare capacity
    /// (all of that half when `c` has no utilization).
    pub(in crate::engine) fn post_init_entity_util_avg(&self, c: usize, t: usize) {
        let (util, load) = {
            let (u, l) = self.placement[c].pelt.at(self.now());
            (u.avg(), l.avg())
        };
        let cap = (SCALE as i64 - util as i64) / 2;
        let mine = if cap <= 0 {
            0
        } else if util != 0 {
            (util * SCALE / (load + 1)).min(cap as u64)
        } else {
            cap as u64
        };
        self.tasks.borrow_mut()[t].place.pelt.util = Signal::at(self.now(), mine);
    }

    /// Sets `c`'s signals to `util` and `load` now (tests on hand-built machines).
    #[cfg(test)]
    pub(super) fn set_signals(&self, c: usize, util: u64, load: u64) {
        self.update_load_avg(c);
        let p = &self.placement[c].pelt;
        p.util.set(Signal::at(self.now(), util));
        p.load.set(Signal::at(self.now(), load));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1 << PERIOD_SHIFT;

    #[test]
    fn y_halves_in_32_periods_and_matches_the_kernel_table() {
        let t = y_pow();
        assert_eq!(t[0], 1 << 32);
        // `runnable_avg_yN_inv[16]`: 2^32 / sqrt(2).
        assert_eq!(t[16], 0xb504_f333);
        // `runnable_avg_yN_inv[1]`, to the last bit or one off (the kernel rounds its own).
        assert!(t[1].abs_diff(0xfa83_b2da) <= 1, "{:#x}", t[1]);
        assert!(t.windows(2).all(|w| w[1] < w[0]));
        assert_eq!(decay(ONE, 32), ONE / 2);
        assert_eq!(decay(ONE, 64), ONE / 4);
        assert_eq!(decay(ONE, DECAYED + 1), 0);
    }

    #[test]
    fn a_busy_signal_climbs_to_full_and_an_idle_one_decays_by_half_in_32_periods() {
        let mut s = Signal::default();
        s.advance(1000 * MS, ONE);
        assert!(s.avg() >= 1023, "{}", s.avg());
        let full = s.value;
        s.advance(1032 * MS, 0);
        // 32 idle periods: half (to the fixed point's rounding).
        assert!(
            (s.value as i64 - (full / 2) as i64).abs() < 64,
            "{}",
            s.avg()
        );
        assert!((511..=512).contains(&s.avg()), "{}", s.avg());
        // Half a period's running, then its end: one period's step of a half contribution.
        let mut h = Signal::default();
        h.advance(MS / 2, ONE);
        h.advance(MS, 0);
        let step = ((u128::from(ONE / 2) * u128::from((1u64 << 32) - y_pow()[1])) >> 32) as u64;
        assert_eq!(h.value, step);
        assert_eq!(h.avg(), 10);
    }

    #[test]
    fn updates_split_anywhere_in_a_period_give_the_same_signal() {
        let mut once = Signal::at(0, 300);
        once.advance(5 * MS + 123, ONE);
        let mut twice = Signal::at(0, 300);
        twice.advance(MS / 3, ONE);
        twice.advance(MS / 2, ONE);
        twice.advance(5 * MS + 123, ONE);
        assert_eq!(once, twice);
        // Five whole periods at full from 300: 1024 - 724 y^5, to rounding.
        let want = 1024.0 - 724.0 * 0.5f64.powf(5.0 / 32.0);
        assert!((once.avg() as f64 - want).abs() <= 1.0, "{}", once.avg());
    }
}
