//! A kernel-shaped user of `nohz`: `const` statics, no heap, no std, no C runtime.
//!
//! If `nohz` (or anything it depends on) pulled in `std`, this would fail to link: `std` brings
//! its own panic handler and runtime.
#![no_std]
#![no_main]

use core::panic::PanicInfo;
use nohz::{
    CpuMask, Jiffies, JiffiesCell, NrCpuIdsCell, PerCpu, StaticKey, WarnSink, Warnings, per_cpu,
};

const NR_CPUS: usize = 256;

static NR_CPU_IDS: NrCpuIdsCell<NR_CPUS> = NrCpuIdsCell::new();
static IDLE_CPUS: CpuMask<{ NR_CPUS / 64 }> = CpuMask::new();
static JIFFIES: JiffiesCell = JiffiesCell::new(Jiffies::initial(1000));
static IRQTIME: StaticKey = StaticKey::new_false();
static WARNINGS: Warnings<NR_CPUS> = Warnings::new();
static TICKS: PerCpu<core::sync::atomic::AtomicU64, NR_CPUS> =
    per_cpu![core::sync::atomic::AtomicU64::new(0)];

/// Boot: fix the CPU count, flip a key, touch each per-CPU slot and the mask.
fn boot() -> usize {
    let Ok(nr) = NR_CPU_IDS.init(8) else {
        return 1;
    };
    IRQTIME.enable(&WARNINGS.cpu_less());
    for cpu in nr.iter() {
        TICKS
            .get(cpu)
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        if cpu.index() % 2 == 0 {
            IDLE_CPUS.set(cpu);
        }
    }
    JIFFIES.advance(1);
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
    core::hint::black_box(boot());
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
