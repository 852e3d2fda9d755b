//! A kernel-shaped user of `nohz`: `const` statics, no heap, no std, no C runtime. It links a
//! `static Machine` and every entry point a kernel calls, through the smallest platform that
//! implements the traits.
//!
//! If `nohz` (or anything it depends on) pulled in `std`, this would fail to link: `std` brings
//! its own panic handler and runtime.
#![no_std]
#![no_main]

use core::panic::PanicInfo;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, IdleHooks, Ipi, NewidleOutcome, Softirq, TickHardware,
    Topology,
};
use nohz::{
    CpuId, CpuMask, Jiffies, Machine, NrCpuIds, Patched, PerCpu, StaticKey, Timekeeper, WarnSink,
    Warnings, per_cpu,
};

const NR_CPUS: usize = 256;
const HZ: u32 = 1000;

static IDLE_CPUS: CpuMask<{ NR_CPUS / 64 }> = CpuMask::new();
static TIME: Timekeeper<HZ> = Timekeeper::new();
static IRQTIME: StaticKey = StaticKey::new_false();
static WARNINGS: Warnings<NR_CPUS> = Warnings::new();
static TICKS: PerCpu<core::sync::atomic::AtomicU64, NR_CPUS> =
    per_cpu![core::sync::atomic::AtomicU64::new(0)];

/// The whole NOHZ state of the kernel: one `static`, in `.bss`.
static MACHINE: nohz::machine!(Patched, NR_CPUS) = Machine::new();
static NOW_NS: AtomicU64 = AtomicU64::new(0);
static NEED_RESCHED: AtomicBool = AtomicBool::new(false);
/// Each CPU's sched timer: its expiry (kept after a cancel), and whether it is armed.
static TICK_AT: PerCpu<AtomicU64, NR_CPUS> = per_cpu![AtomicU64::new(0)];
static TICK_ARMED: PerCpu<AtomicBool, NR_CPUS> = per_cpu![AtomicBool::new(false)];

type Cpu = CpuId<NR_CPUS>;

/// The smallest kernel-shaped platform: every trait the machine's entry points need, each
/// method answering from a static or doing nothing a real kernel's driver would not.
struct Kernel;

impl Clock for Kernel {
    const HZ: u32 = HZ;
    fn jiffies(&self) -> Jiffies {
        TIME.jiffies()
    }
}
impl CpuState<NR_CPUS> for Kernel {
    fn need_resched(&self, _cpu: Cpu) -> bool {
        NEED_RESCHED.load(Relaxed)
    }
    fn this_cpu(&self) -> Option<Cpu> {
        MACHINE.cpu(0).ok()
    }
    fn synchronize_rcu(&self) {}
}
impl Ipi<NR_CPUS> for Kernel {
    fn send_nohz_ipi(&self, _from: Cpu, _target: Cpu) {}
}
impl Softirq<NR_CPUS> for Kernel {}
impl Topology<NR_CPUS> for Kernel {}
impl Balance<NR_CPUS> for Kernel {
    fn balance_domains(&self, _by: Cpu, _cpu: Cpu, _idle: CpuIdleType) -> Jiffies {
        TIME.jiffies().add(4)
    }
    fn newidle_balance(&self, _cpu: Cpu, _t0: u64) -> NewidleOutcome {
        NewidleOutcome::pulled(false)
    }
}
impl TickHardware<NR_CPUS> for Kernel {
    fn ktime_get(&self) -> u64 {
        NOW_NS.load(Relaxed)
    }
    fn jiffies_update(&self) -> (Jiffies, u64) {
        TIME.jiffies_update()
    }
    fn update_jiffies(&self, now: u64) {
        TIME.update(now);
    }
    fn program_tick(&self, cpu: Cpu, expires: u64) {
        TICK_AT.get(cpu).store(expires, Relaxed);
        TICK_ARMED.get(cpu).store(true, Relaxed);
    }
    fn cancel_tick(&self, cpu: Cpu) {
        TICK_ARMED.get(cpu).store(false, Relaxed);
    }
    fn tick_expiry(&self, cpu: Cpu) -> u64 {
        TICK_AT.get(cpu).load(Relaxed)
    }
}
impl IdleHooks<NR_CPUS> for Kernel {
    fn cpuidle_enter(&self, _cpu: Cpu) {
        NEED_RESCHED.store(true, Relaxed);
    }
}

/// Every entry point a kernel calls, from where it calls them (the embedding layer): boot,
/// each CPU starting, the timer interrupt, the nohz IPI, newidle and the idle loop, hotplug.
fn run_machine() -> usize {
    let k = &Kernel;
    let Ok(nr) = MACHINE.init(4, 0, k) else {
        return 0;
    };
    MACHINE.enable_sched_clock_irqtime();
    for cpu in nr.iter() {
        MACHINE.cpu_starting(cpu, k);
    }
    let (c0, c1) = (
        nr.cpu(0).unwrap_or_else(|_| halt()),
        nr.cpu(1).unwrap_or_else(|_| halt()),
    );
    // CPU 1 idles: newidle, then the idle loop (its tick stops, it registers).
    MACHINE.sched_balance_newidle(c1, k);
    MACHINE.do_idle(c1, k);
    // CPU 0's timer interrupt (irq entry, the tick, irq exit with the softirq), then the
    // nohz IPI on CPU 1.
    let _ = MACHINE.timer_interrupt(c0, k);
    MACHINE.kick_interrupt(c1, k);
    // CPU 1 goes down and comes back.
    let down = MACHINE.sched_cpu_deactivate(c1, k).is_ok() && MACHINE.cpu_dying(c1, k).is_ok();
    MACHINE.cpu_starting(c1, k);
    let up = MACHINE.sched_cpu_activate(c1, k).is_ok();
    let _ = MACHINE.rebuild_sched_domains(k);
    usize::from(down) + usize::from(up) + MACHINE.warnings().total(nr) as usize
}

/// The primitives on their own, with the machine's CPU count (a kernel has no other): flip a
/// key, touch each per-CPU slot and the mask.
fn primitives(nr: NrCpuIds<NR_CPUS>) -> usize {
    IRQTIME.enable(&WARNINGS.cpu_less());
    for cpu in nr.iter() {
        TICKS
            .get(cpu)
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        if cpu.index() % 2 == 0 {
            IDLE_CPUS.set(cpu);
        }
    }
    TIME.update(TIME.jiffies_update().1 + 1_000_000);
    let cpu = IDLE_CPUS.iter_wrap_after(nr.cpu(3).unwrap_or_else(|_| halt()), nr);
    WARNINGS
        .cpu_less()
        .warn_on(!IRQTIME.likely(), nohz::Warning::WrongCpu);
    cpu.count() + IDLE_CPUS.weight(nr)
}

fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    core::hint::black_box(run_machine());
    core::hint::black_box(primitives(MACHINE.nr_cpu_ids()));
    halt()
}

/// The host target's prebuilt `core` was compiled with unwinding tables that name this symbol;
/// with `panic = "abort"` nothing ever calls it. (A bare-metal target's `core` would not need it.)
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    halt()
}
