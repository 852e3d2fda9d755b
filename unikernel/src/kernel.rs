//! The kernel proper: tasks, per-CPU run queues, the scheduler loop, wakeups, the balancer's
//! pull, the tick's round robin, the sched timer's software state and the model RCU. It calls
//! `nohz` where it does the thing each call is about (`k.0.` is the machine), and through
//! [`crate::glue`] for the CPU id, the run-queue facts and the interrupt dispatch.

use crate::hw::{self, MAX_CPUS};
use crate::{checks, glue};
use core::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
};
use nohz::platform::CpuIdleType;
use nohz::{IdleExit, Policy};
use spin::Mutex;

/// `NR_CPUS`.
pub const NR: usize = MAX_CPUS;
/// Ticks per second.
pub const HZ: u32 = 250;
/// A task's slice, in ticks of its CPU, before round robin puts it back at the tail.
pub const SLICE_TICKS: u64 = 3;
/// Tasks one run queue holds.
const QCAP: usize = 32;
/// Hash iterations in one chunk of work (the preemption granularity).
const CHUNK_ITERS: u32 = 20_000;
/// Work of a task that runs until its generation is killed.
pub const FOREVER: u32 = u32::MAX;

/// The machine type for policy `P`.
pub type Mach<P> = nohz::machine!(P, NR);

/// The kernel under policy `P`: its machine. Every platform trait is implemented on it.
pub struct Kernel<P: Policy + 'static>(pub &'static Mach<P>);

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Chunks of hashing.
    Work,
    /// Hashing until its CPU's tick is seen stopped under it, then a few chunks more.
    UntilTickless,
    /// CPU 0's scenario driver: one step of the scenario, then a chunk.
    Control,
}

/// A task: real CPU work, in chunks.
#[derive(Debug, Clone, Copy)]
pub struct Task {
    /// Chunks left ([`FOREVER`]: until killed).
    pub work: u32,
    /// Its generation: tasks of a generation up to [`KILLED`] end at their next chunk.
    pub generation: u32,
    /// Bound to its CPU: the balancer never moves it.
    pub pinned: bool,
    /// What it does.
    pub kind: Kind,
}

impl Task {
    const NONE: Task = Task {
        work: 0,
        generation: 0,
        pinned: true,
        kind: Kind::Work,
    };
    fn killed(&self) -> bool {
        self.generation != 0 && self.generation <= KILLED.load(Relaxed)
    }
}

/// A FIFO run queue of fixed capacity, and whether the CPU runs its idle task.
pub struct Queue {
    tasks: [Task; QCAP],
    len: usize,
    /// The idle task is current (`rq->curr == rq->idle`); set by the scheduler loop.
    pub curr_idle: bool,
}

impl Queue {
    const fn new() -> Self {
        Queue {
            tasks: [Task::NONE; QCAP],
            len: 0,
            curr_idle: true,
        }
    }
    /// Queued tasks.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether none is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn push(&mut self, t: Task) {
        if self.len == QCAP {
            hw::fatal("run queue full");
        }
        self.tasks[self.len] = t;
        self.len += 1;
    }
    fn pop_front(&mut self) -> Option<Task> {
        if self.len == 0 {
            return None;
        }
        let t = self.tasks[0];
        self.tasks.copy_within(1..self.len, 0);
        self.len -= 1;
        Some(t)
    }
    fn remove(&mut self, i: usize) -> Task {
        let t = self.tasks[i];
        self.tasks.copy_within(i + 1..self.len, i);
        self.len -= 1;
        t
    }
    /// Queued tasks the balancer may move.
    pub fn movable(&self) -> usize {
        self.tasks[..self.len].iter().filter(|t| !t.pinned).count()
    }
    /// Queued tasks of generation `g`.
    pub fn of_generation(&self, g: u32) -> usize {
        self.tasks[..self.len]
            .iter()
            .filter(|t| t.generation == g)
            .count()
    }
}

/// Hotplug requests and states ([`Cpu::hotplug`]).
pub mod hp {
    /// Nothing asked.
    pub const NONE: u8 = 0;
    /// Go offline.
    pub const DOWN: u8 = 1;
    /// Offline, parked.
    pub const PARKED: u8 = 2;
    /// Come back.
    pub const UP: u8 = 3;
}

/// One CPU's kernel state.
pub struct Cpu {
    /// The run queue (queued tasks; the running one is the scheduler loop's).
    pub rq: Mutex<Queue>,
    /// `need_resched`.
    pub need_resched: AtomicBool,
    /// The sched timer: armed, and when.
    pub tick_armed: AtomicBool,
    /// The sched timer's expiry.
    pub tick_expiry: AtomicU64,
    /// Another CPU changed this CPU's sched timer: apply it on the next interrupt.
    pub timer_dirty: AtomicBool,
    /// NO_HZ_FULL.
    pub nohz_full: AtomicBool,
    /// `cpu_online`.
    pub online: AtomicBool,
    /// Deactivated and not back yet: no nohz kick may reach it.
    pub down: AtomicBool,
    /// [`hp`] request or state.
    pub hotplug: AtomicU8,
    /// Model RCU: bumped on every interrupt and idle entry.
    pub rcu: AtomicU64,
    /// Sched timer interrupts handled.
    pub ticks: AtomicU64,
    /// Ticks the running task has had.
    pub slice: AtomicU64,
    /// Blocked load for the balancer to decay.
    pub blocked_load: AtomicU32,
    /// The idle loop got past its tick-stop attempt.
    pub stop_attempt_ran: AtomicBool,
    /// `idle_calls` at idle entry.
    pub calls_at_entry: AtomicU64,
    /// Tasks completed here.
    pub completed: AtomicU64,
    /// Tasks the balancer pulled onto this CPU.
    pub pulled_in: AtomicU64,
    /// Tasks picked to run here.
    pub started: AtomicU64,
    /// Nohz kicks handled here.
    pub kicks_handled: AtomicU64,
    /// Kick IPIs that found their csd already run (by `do_idle`'s flush on the way out).
    pub kicks_flushed_before: AtomicU64,
    /// Idle-loop entries.
    pub idle_entries: AtomicU64,
}

impl Cpu {
    const fn new() -> Self {
        Cpu {
            rq: Mutex::new(Queue::new()),
            need_resched: AtomicBool::new(false),
            tick_armed: AtomicBool::new(false),
            tick_expiry: AtomicU64::new(0),
            timer_dirty: AtomicBool::new(false),
            nohz_full: AtomicBool::new(false),
            online: AtomicBool::new(false),
            down: AtomicBool::new(false),
            hotplug: AtomicU8::new(hp::NONE),
            rcu: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            slice: AtomicU64::new(0),
            blocked_load: AtomicU32::new(0),
            stop_attempt_ran: AtomicBool::new(false),
            calls_at_entry: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            pulled_in: AtomicU64::new(0),
            started: AtomicU64::new(0),
            kicks_handled: AtomicU64::new(0),
            kicks_flushed_before: AtomicU64::new(0),
            idle_entries: AtomicU64::new(0),
        }
    }
}

/// Every CPU's state.
pub static CPUS: [Cpu; NR] = [const { Cpu::new() }; NR];
/// CPUs booted.
pub static NCPUS: AtomicUsize = AtomicUsize::new(1);
/// Tasks of generations up to this one are killed.
pub static KILLED: AtomicU32 = AtomicU32::new(0);
/// Balance passes an ILB ran on behalf of another idle CPU.
pub static ILB_VISITS: AtomicU64 = AtomicU64::new(0);
/// Nohz kick IPIs sent.
pub static KICKS_SENT: AtomicU64 = AtomicU64::new(0);
/// CPUs whose `UntilTickless` task saw its tick stopped under it.
pub static TICKLESS_BUSY: [AtomicBool; NR] = [const { AtomicBool::new(false) }; NR];
/// Invariant violations (a kick to a deactivated CPU, a hotplug state check failing).
pub static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

/// The CPUs booted, as indices.
pub fn cpus() -> core::ops::Range<usize> {
    0..NCPUS.load(Relaxed)
}

/// One chunk of CPU work: an integer hash, `CHUNK_ITERS` rounds.
fn work_chunk(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..CHUNK_ITERS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    core::hint::black_box(x)
}

/// Queues `tasks` on CPU `i` and wakes it (`ttwu`). Interrupts off.
pub fn enqueue<P: Policy>(k: &Kernel<P>, i: usize, tasks: &[Task]) {
    {
        let mut q = CPUS[i].rq.lock();
        for &t in tasks {
            q.push(t);
        }
        glue::publish(k, i, &q);
    }
    wake(i);
}

/// Sets `need_resched` on CPU `i` and, unless it is this CPU, sends it the reschedule IPI.
pub fn wake(i: usize) {
    CPUS[i].need_resched.store(true, Relaxed);
    if i != hw::cpu_index() {
        hw::apic::send_ipi(i, hw::idt::RESCHED_VECTOR);
    }
}

/// Moves up to `want` movable tasks from the busiest other run queue (from its tail, leaving
/// it at least as busy as `to` will be) onto `to`, and wakes `to`. Returns how many moved.
pub fn pull<P: Policy>(k: &Kernel<P>, to: usize, want: usize) -> usize {
    let busiest = cpus()
        .filter(|&j| j != to)
        .max_by_key(|&j| CPUS[j].rq.lock().movable());
    let Some(from) = busiest else { return 0 };
    let mut moved = [Task::NONE; 4];
    let mut n = 0;
    {
        let mut q = CPUS[from].rq.lock();
        let movable = q.movable();
        let take = want.min(movable / 2 + movable % 2).min(moved.len());
        while n < take {
            let Some(pos) = q.tasks[..q.len].iter().rposition(|t| !t.pinned) else {
                break;
            };
            moved[n] = q.remove(pos);
            n += 1;
        }
        glue::publish(k, from, &q);
    }
    if n > 0 {
        CPUS[to].pulled_in.fetch_add(n as u64, Relaxed);
        enqueue(k, to, &moved[..n]);
    }
    n
}

/// The sched timer's software state after another CPU or this one changed it.
pub fn set_timer(i: usize, expires: Option<u64>) {
    let c = &CPUS[i];
    if let Some(t) = expires {
        c.tick_expiry.store(t, Relaxed);
    }
    c.tick_armed.store(expires.is_some(), Relaxed);
    if i == hw::cpu_index() {
        apply_timer(i);
    } else {
        c.timer_dirty.store(true, Relaxed);
        hw::apic::send_ipi(i, hw::idt::RESCHED_VECTOR);
    }
}

fn apply_timer(i: usize) {
    let c = &CPUS[i];
    if c.tick_armed.load(Relaxed) {
        hw::apic::timer_oneshot(c.tick_expiry.load(Relaxed));
    } else {
        hw::apic::timer_stop();
    }
}

/// Interrupt entry bookkeeping: the model RCU's quiescent point, and a timer change another
/// CPU asked for.
pub fn irq_enter(i: usize) {
    CPUS[i].rcu.fetch_add(1, Relaxed);
    if CPUS[i].timer_dirty.swap(false, Relaxed) {
        apply_timer(i);
    }
}

/// After the crate's tick: count it, and end the running task's slice if others wait.
pub fn on_tick<P: Policy>(k: &Kernel<P>, i: usize) {
    let c = &CPUS[i];
    c.ticks.fetch_add(1, Relaxed);
    if c.slice.fetch_add(1, Relaxed) + 1 >= SLICE_TICKS && !c.rq.lock().is_empty() {
        c.need_resched.store(true, Relaxed);
    }
    if i == 0 {
        crate::scenario::on_cpu0_tick(k);
    }
}

/// The load tracking's decay of CPU `i`'s blocked load (halved per pass): whether any is left.
pub fn decay_blocked_load(i: usize) -> bool {
    let load = &CPUS[i].blocked_load;
    load.store(load.load(Relaxed) / 2, Relaxed);
    load.load(Relaxed) > 0
}

/// `synchronize_rcu` for this kernel: every other online CPU passes an interrupt or an idle
/// entry after the call started (each is outside every interrupts-off NOHZ path). A reschedule
/// IPI makes a halted CPU take one at once.
pub fn synchronize_rcu() {
    let me = hw::cpu_index();
    let mut seen = [0u64; NR];
    for j in cpus().filter(|&j| j != me && CPUS[j].online.load(Relaxed)) {
        seen[j] = CPUS[j].rcu.load(Relaxed);
        hw::apic::send_ipi(j, hw::idt::RESCHED_VECTOR);
    }
    for j in cpus().filter(|&j| j != me && CPUS[j].online.load(Relaxed)) {
        while CPUS[j].rcu.load(Relaxed) == seen[j] {
            core::hint::spin_loop();
        }
    }
}

fn pick<P: Policy>(k: &Kernel<P>, i: usize) -> Option<Task> {
    let task = {
        let mut q = CPUS[i].rq.lock();
        let task = loop {
            let t = q.pop_front()?;
            if !t.killed() {
                break t;
            }
        };
        q.curr_idle = false;
        glue::publish(k, i, &q);
        task
    };
    CPUS[i].started.fetch_add(1, Relaxed);
    Some(task)
}

fn run<P: Policy>(k: &Kernel<P>, i: usize, mut task: Task) {
    let c = &CPUS[i];
    c.slice.store(0, Relaxed);
    while !task.killed() {
        match task.kind {
            Kind::Control => crate::scenario::step(k),
            Kind::UntilTickless if checks::tick_stopped(k, i) => {
                TICKLESS_BUSY[i].store(true, Relaxed);
                task.work = task.work.min(8);
            }
            _ => {}
        }
        hw::with_interrupts(|| work_chunk(u64::from(task.work)));
        if task.work != FOREVER {
            task.work -= 1;
            if task.work == 0 {
                c.completed.fetch_add(1, Relaxed);
                break;
            }
        }
        let hotplug = c.hotplug.load(Relaxed) == hp::DOWN;
        if c.need_resched.swap(false, Relaxed) || hotplug {
            let mut q = c.rq.lock();
            if !q.is_empty() || hotplug {
                q.push(task);
                glue::publish(k, i, &q);
                return;
            }
        }
    }
    let q = c.rq.lock();
    glue::publish(k, i, &q);
}

/// Takes CPU `i` down (its hotplug thread: this loop), parks it with its timer stopped until
/// asked back, and brings it up again.
fn hotplug_cycle<P: Policy>(k: &Kernel<P>, i: usize) {
    let c = &CPUS[i];
    // Its tasks go to the lowest other online CPU (balance_push, simplified).
    let mut q = c.rq.lock();
    let target = cpus().find(|&j| j != i && CPUS[j].online.load(Relaxed));
    while let (Some(t), Some(to)) = (q.pop_front(), target) {
        enqueue(k, to, &[t]);
    }
    // The hotplug thread runs on the CPU.
    q.curr_idle = false;
    glue::publish(k, i, &q);
    drop(q);
    let cpu = glue::cpu(k, i);
    let deactivated = hw::with_interrupts(|| k.0.sched_cpu_deactivate(cpu, k)).is_ok();
    // From here no nohz kick may reach it (send_kick checks), and it is out of the mask.
    c.down.store(true, Relaxed);
    let out = !checks::in_idle_mask(k, i);
    let died = k.0.cpu_dying(cpu, k).is_ok();
    c.online.store(false, Relaxed);
    let mut q = c.rq.lock();
    q.curr_idle = true;
    glue::publish(k, i, &q);
    drop(q);
    if !(deactivated && out && died) {
        VIOLATIONS.fetch_add(1, Relaxed);
    }
    c.hotplug.store(hp::PARKED, Relaxed);
    let ticks = c.ticks.load(Relaxed);
    while c.hotplug.load(Relaxed) != hp::UP {
        hw::halt();
    }
    if c.ticks.load(Relaxed) != ticks {
        VIOLATIONS.fetch_add(1, Relaxed);
    }
    c.online.store(true, Relaxed);
    k.0.cpu_starting(cpu, k);
    let up = hw::with_interrupts(|| k.0.sched_cpu_activate(cpu, k)).is_ok();
    c.down.store(false, Relaxed);
    if !(up && checks::fresh(k, i)) {
        VIOLATIONS.fetch_add(1, Relaxed);
    }
    c.hotplug.store(hp::NONE, Relaxed);
}

/// Nothing to run on CPU `i`: the crate's idle loop, with the rq published as idle first.
fn idle<P: Policy>(k: &Kernel<P>, i: usize) {
    let c = &CPUS[i];
    c.rcu.fetch_add(1, Relaxed);
    c.idle_entries.fetch_add(1, Relaxed);
    let mut q = c.rq.lock();
    q.curr_idle = true;
    glue::publish(k, i, &q);
    drop(q);
    // Idle adds blocked load for the ILB to decay.
    c.blocked_load.store(4, Relaxed);
    c.calls_at_entry.store(checks::idle_calls(k, i), Relaxed);
    if k.0.do_idle(glue::cpu(k, i), k) == IdleExit::Resched {
        c.need_resched.store(false, Relaxed);
    }
    c.stop_attempt_ran.store(false, Relaxed);
}

/// `IdleHooks::cpuidle_enter` on CPU `i`: `sti; hlt` unless a reschedule is already due,
/// noting whether the idle loop's tick-stop attempt ran first (for the checks).
pub fn halt_idle<P: Policy>(k: &Kernel<P>, i: usize) {
    let c = &CPUS[i];
    if checks::idle_calls(k, i) > c.calls_at_entry.load(Relaxed) {
        c.stop_attempt_ran.store(true, Relaxed);
    }
    if !c.need_resched.load(Relaxed) {
        hw::halt();
    }
}

/// `Ipi::send_nohz_ipi` to CPU `to`: the kick vector, counted, and checked against a CPU that
/// was deactivated.
pub fn send_kick(to: usize) {
    if CPUS[to].down.load(Relaxed) {
        VIOLATIONS.fetch_add(1, Relaxed);
    }
    KICKS_SENT.fetch_add(1, Relaxed);
    hw::apic::send_ipi(to, hw::idt::KICK_VECTOR);
}

/// The kick IPI was taken on CPU `i`; `queued`: its csd was still queued (not flushed by the
/// idle loop's exit first).
pub fn kick_handled(i: usize, queued: bool) {
    CPUS[i].kicks_handled.fetch_add(1, Relaxed);
    CPUS[i]
        .kicks_flushed_before
        .fetch_add(u64::from(!queued), Relaxed);
}

/// `Balance::balance_domains` run by `by` for `cpu`: an idle CPU pulls up to two tasks from
/// the busiest run queue. Returns the jiffies until `cpu` balances again: 4 idle, 16 busy (the
/// kernel's busy factor, `get_sd_balance_interval`).
pub fn balance<P: Policy>(k: &Kernel<P>, by: usize, cpu: usize, idle: CpuIdleType) -> usize {
    ILB_VISITS.fetch_add(u64::from(by != cpu), Relaxed);
    let idle = idle == CpuIdleType::Idle;
    if idle && checks::idle_cpu(k, cpu) {
        pull(k, cpu, 2);
    }
    if idle { 4 } else { 16 }
}

/// One CPU's life: run tasks, balance when out of them, idle when nothing came. Interrupts
/// are off here except inside a task's chunks and the idle halt.
pub fn cpu_loop<P: Policy>(k: &Kernel<P>, i: usize) -> ! {
    x86_64::instructions::interrupts::disable();
    let cpu = glue::cpu(k, i);
    k.0.cpu_starting(cpu, k);
    loop {
        if CPUS[i].hotplug.load(Relaxed) == hp::DOWN {
            hotplug_cycle(k, i);
            continue;
        }
        if let Some(task) = pick(k, i) {
            run(k, i, task);
            continue;
        }
        if k.0.sched_balance_newidle(cpu, k) {
            continue;
        }
        idle(k, i);
    }
}
